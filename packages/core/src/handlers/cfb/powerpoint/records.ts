import { artChildren, readArtRecord, walkArtRecords } from '../office-art.ts';
import type { ArtRecord } from '../office-art.ts';

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

/** One record of the `PowerPoint Document` stream ([MS-PPT] 2.3.1 is [MS-ODRAW]'s header). */
export type PptRecord = ArtRecord;

/** The presentation as a rejection's detail names it. */
const WHAT = 'the PowerPoint presentation';

/**
 * The record whose header starts at `offset`, its body within `limit` (the enclosing container's
 * end, or the stream's).
 * @throws {Rejection} `invalid_file` when the header or body runs past `limit`.
 */
export function readRecord(bytes: Uint8Array, offset: number, limit: number): PptRecord {
  return readArtRecord(bytes, offset, limit, WHAT);
}

/**
 * The records of a container's body, which must fill it exactly.
 * @throws {Rejection} `invalid_file` when a child runs past the container.
 */
export function childrenOf(bytes: Uint8Array, container: PptRecord): PptRecord[] {
  return artChildren(bytes, container, WHAT);
}

/**
 * Visits `record` and every record nested in it, depth first, parents before children.
 * @throws {Rejection} `invalid_file` for a child past its container; `policy_violation` past
 *   the depth limit of the OfficeArt walk (64).
 */
export function walkRecords(
  bytes: Uint8Array,
  record: PptRecord,
  visit: (record: PptRecord, parent: PptRecord | undefined) => void,
): void {
  walkArtRecords(bytes, record, WHAT, visit);
}

/** [MS-PPT] 2.3.5 CString: a record whose body is UTF-16LE text. */
export function cStringOf(bytes: Uint8Array, record: PptRecord): string {
  return Buffer.from(
    bytes.subarray(record.body, record.end - ((record.end - record.body) % 2)),
  ).toString('utf16le');
}
