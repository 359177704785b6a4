import { u16le, u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';

/** [MS-PPT] 2.3.1 RecordHeader: recVer/recInstance (2 bytes), recType (2), recLen (4). */
export const RECORD_HEADER_BYTES = 8;
/** [MS-PPT] 2.3.1: `recVer` 0xF marks a container, whose body is a run of records. */
const CONTAINER_VERSION = 0xf;

/**
 * Containers nested inside one another within one persist object. PowerPoint nests a slide's
 * OfficeArt shape groups about ten deep; past this the file is refused rather than walked.
 */
export const MAX_RECORD_DEPTH = 64;

/** [MS-PPT] 2.13.24 RecordType values this handler reads, writes or screens. */
export const RT = {
  document: 0x03e8,
  slide: 0x03ee,
  notes: 0x03f0,
  mainMaster: 0x03f8,
  handout: 0x0fc9,
  vbaInfo: 0x03ff,
  vbaInfoAtom: 0x0400,
  exObjList: 0x0409,
  drawingGroup: 0x040b,
  exEmbed: 0x0fcc,
  exLink: 0x0fce,
  exHyperlink: 0x0fd7,
  exControl: 0x0fee,
  interactiveInfo: 0x0ff2,
  interactiveInfoAtom: 0x0ff3,
  exOleObjAtom: 0x0fc3,
  exObjRefAtom: 0x0bc1,
  exMediaAtom: 0x1004,
  userEditAtom: 0x0ff5,
  currentUserAtom: 0x0ff6,
  cString: 0x0fba,
  exAviMovie: 0x1006,
  exMciMovie: 0x1007,
  exWavAudioLink: 0x1010,
  externalOleObjectStg: 0x1011,
  persistDirectoryAtom: 0x1772,
  cryptSession10: 0x2f14,
  /** [MS-ODRAW] 2.2.12, 2.2.20, 2.2.32: drawing group, BLIP store, BLIP store entry. */
  officeArtDgg: 0xf000,
  officeArtBStore: 0xf001,
  officeArtFbse: 0xf007,
} as const;

/** One record of the `PowerPoint Document` stream, its header read and its extent checked. */
export interface PptRecord {
  readonly recVer: number;
  readonly recInstance: number;
  readonly recType: number;
  /** Offset of the header in the stream. */
  readonly offset: number;
  /** Offset of the body, past the header. */
  readonly body: number;
  /** Offset past the body. */
  readonly end: number;
}

/**
 * The record whose header starts at `offset`, its body within `limit` (the enclosing container's
 * end, or the stream's).
 * @throws {Rejection} `invalid_file` when the header or body runs past `limit`.
 */
export function readRecord(bytes: Uint8Array, offset: number, limit: number): PptRecord {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + RECORD_HEADER_BYTES > limit) {
    throw new Rejection(
      'invalid_file',
      `the PowerPoint presentation has a record header at offset ${offset} past the end of its container`,
    );
  }
  const versionAndInstance = u16le(bytes, offset);
  const body = offset + RECORD_HEADER_BYTES;
  const end = body + u32le(bytes, offset + 4);
  if (end > limit) {
    throw new Rejection(
      'invalid_file',
      `the PowerPoint presentation has a record at offset ${offset} whose length runs past the end of its container`,
    );
  }
  return {
    recVer: versionAndInstance & 0xf,
    recInstance: versionAndInstance >> 4,
    recType: u16le(bytes, offset + 2),
    offset,
    body,
    end,
  };
}

/** Whether `record` is a container ([MS-PPT] 2.3.1 `recVer` 0xF). */
export function isContainer(record: PptRecord): boolean {
  return record.recVer === CONTAINER_VERSION;
}

/**
 * The records of a container's body, which must fill it exactly.
 * @throws {Rejection} `invalid_file` when a child runs past the container.
 */
export function childrenOf(bytes: Uint8Array, container: PptRecord): PptRecord[] {
  const children: PptRecord[] = [];
  // Every record is at least a header long, so the loop ends within body/8 turns.
  for (let offset = container.body; offset < container.end;) {
    const child = readRecord(bytes, offset, container.end);
    children.push(child);
    offset = child.end;
  }
  return children;
}

/**
 * Visits `record` and every record nested in it, depth first, parents before children.
 * @throws {Rejection} `invalid_file` for a child past its container; `policy_violation` past
 *   {@link MAX_RECORD_DEPTH}.
 */
export function walkRecords(
  bytes: Uint8Array,
  record: PptRecord,
  visit: (record: PptRecord, parent: PptRecord | undefined) => void,
): void {
  walkFrom(bytes, record, undefined, 0, visit);
}

/** {@link walkRecords} below `parent`: the recursion is bounded by {@link MAX_RECORD_DEPTH}. */
function walkFrom(
  bytes: Uint8Array,
  record: PptRecord,
  parent: PptRecord | undefined,
  depth: number,
  visit: (record: PptRecord, parent: PptRecord | undefined) => void,
): void {
  visit(record, parent);
  if (!isContainer(record)) return;
  if (depth >= MAX_RECORD_DEPTH) {
    throw new Rejection(
      'policy_violation',
      `the PowerPoint presentation nests records more than ${MAX_RECORD_DEPTH} deep`,
    );
  }
  for (const child of childrenOf(bytes, record)) walkFrom(bytes, child, record, depth + 1, visit);
}

/** [MS-PPT] 2.3.5 CString: a record whose body is UTF-16LE text. */
export function cStringOf(bytes: Uint8Array, record: PptRecord): string {
  return Buffer.from(
    bytes.subarray(record.body, record.end - ((record.end - record.body) % 2)),
  ).toString('utf16le');
}
