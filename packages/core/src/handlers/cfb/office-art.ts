/**
 * OfficeArt ([MS-ODRAW]) as Word and PowerPoint 97-2003 store it: the record header, the BLIP
 * store entries (FBSE) and the pictures (BLIPs) they name. A picture is rebuilt by the engine's
 * image or metafile rebuild, or refused; {@link checkBlip} reads a written one back for verify.
 */
import { deflateSync, inflateSync } from 'node:zlib';

import { u16le, u32le } from '../../_internal/bytes.ts';
import { Rejection } from '../../_internal/rejection.ts';
import type { FindingTally } from '../../findings.ts';
import { dibLayout, DIB_RGB_COLORS, dibAsBmpFile, keptDib } from '../image/metafile/dib.ts';
import { checkMetafile, rebuildMetafile } from '../image/metafile/metafile.ts';
import type { MetafileKind } from '../image/metafile/metafile.ts';
import type { MetafileLimits } from '../image/metafile/types.ts';
import { assertPixelsOnly } from '../image/verify.ts';
import { decodeBmp } from '../image/bmp/decode.ts';
import { VerifyFailure } from '../types.ts';
import type { DetectedFile, EngineContext } from '../types.ts';

/** [MS-ODRAW] 2.2.1 OfficeArtRecordHeader: recVer/recInstance (2 bytes), recType (2), recLen (4). */
export const RECORD_HEADER_BYTES = 8;
/** [MS-ODRAW] 2.2.1: `recVer` 0xF marks a container, whose body is a run of records. */
const CONTAINER_VERSION = 0xf;

/** [MS-ODRAW] 2.2.32 OfficeArtFBSE: offsets in its body, and the size of its fixed part. */
export const FBSE_SIZE_OFFSET = 20;
export const FBSE_DELAY_OFFSET = 28;
export const FBSE_CB_NAME_OFFSET = 33;
export const FBSE_FIXED_BYTES = 36;
/** [MS-ODRAW] 2.2.32: `foDelay` of a BLIP that is not in the delay stream. */
export const NOT_DELAYED = 0xffffffff;
/** [MS-ODRAW] 2.2.32, 2.2.20, 2.2.13: BLIP store entry, BLIP store, shape container. */
export const ART = {
  dggContainer: 0xf000,
  bStoreContainer: 0xf001,
  spContainer: 0xf004,
  fbse: 0xf007,
} as const;
/** [MS-ODRAW] 2.2.23: the OfficeArtBlip record types. */
const FIRST_BLIP_TYPE = 0xf018;
const LAST_BLIP_TYPE = 0xf117;

/** [MS-ODRAW] 2.2.24-2.2.31: a BLIP's MD4 UIDs, one or (odd `recInstance`) two. */
const UID_BYTES = 16;
/** [MS-ODRAW] 2.2.27-2.2.31: raster BLIPs follow their UIDs with a one-byte tag. */
const TAG_BYTES = 1;
/** [MS-ODRAW] 2.2.31 OfficeArtMetafileHeader: cbSize, rcBounds, ptSize, cbSave, compression, filter. */
const METAFILE_HEADER_BYTES = 34;
const METAFILE_CB_SIZE_OFFSET = 0;
const METAFILE_CB_SAVE_OFFSET = 28;
const METAFILE_COMPRESSION_OFFSET = 32;
const METAFILE_FILTER_OFFSET = 33;
/** [MS-ODRAW] 2.2.31: `compression` 0 is DEFLATE, 0xFE none; `filter` 0xFE none. */
const COMPRESSION_DEFLATE = 0;
const COMPRESSION_NONE = 0xfe;
const FILTER_NONE = 0xfe;

/** [MS-ODRAW] 2.2.23 BLIP record types rebuilt, with the file type or metafile kind each holds. */
const RASTER_BLIPS: ReadonlyMap<number, string> = new Map([
  [0xf01d, 'jpg'],
  [0xf01e, 'png'],
  [0xf029, 'tif'],
  [0xf02a, 'jpg'],
]);
const METAFILE_BLIPS: ReadonlyMap<number, MetafileKind> = new Map([
  [0xf01a, 'emf'],
  [0xf01b, 'wmf'],
]);
/** [MS-ODRAW] 2.2.30 OfficeArtBlipDIB: a bitmap without its file header. */
const DIB_BLIP = 0xf01f;

/** One OfficeArt record, its header read and its extent checked. */
export interface ArtRecord {
  readonly recVer: number;
  readonly recInstance: number;
  readonly recType: number;
  /** Offset of the header. */
  readonly offset: number;
  /** Offset of the body, past the header. */
  readonly body: number;
  /** Offset past the body. */
  readonly end: number;
}

/**
 * The record whose header starts at `offset`, its body within `limit` (the enclosing container's
 * end, or the stream's).
 * @param what the file as a rejection's detail names it ("the PowerPoint presentation").
 * @throws {Rejection} `invalid_file` when the header or body runs past `limit`.
 */
export function readArtRecord(
  bytes: Uint8Array,
  offset: number,
  limit: number,
  what: string,
): ArtRecord {
  if (!Number.isSafeInteger(offset) || offset < 0 || offset + RECORD_HEADER_BYTES > limit) {
    throw new Rejection(
      'invalid_file',
      `${what} has a record header at offset ${offset} past the end of its container`,
    );
  }
  const versionAndInstance = u16le(bytes, offset);
  const body = offset + RECORD_HEADER_BYTES;
  const end = body + u32le(bytes, offset + 4);
  if (end > limit) {
    throw new Rejection(
      'invalid_file',
      `${what} has a record at offset ${offset} whose length runs past the end of its container`,
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

/** Whether `record` is a container ([MS-ODRAW] 2.2.1 `recVer` 0xF). */
export function isContainer(record: ArtRecord): boolean {
  return record.recVer === CONTAINER_VERSION;
}

/**
 * The records of a container's body, which must fill it exactly.
 * @throws {Rejection} `invalid_file` when a child runs past the container.
 */
export function artChildren(bytes: Uint8Array, container: ArtRecord, what: string): ArtRecord[] {
  const children: ArtRecord[] = [];
  // Every record is at least a header long, so the loop ends within body/8 turns.
  for (let offset = container.body; offset < container.end;) {
    const child = readArtRecord(bytes, offset, container.end, what);
    children.push(child);
    offset = child.end;
  }
  return children;
}

/**
 * Containers nested inside one another. PowerPoint nests a slide's shape groups about ten deep;
 * past this the file is refused rather than walked.
 */
export const MAX_ART_DEPTH = 64;

/**
 * Visits `record` and every record nested in it, depth first, parents before children.
 * @throws {Rejection} `invalid_file` for a child past its container; `policy_violation` past
 *   {@link MAX_ART_DEPTH}.
 */
export function walkArtRecords(
  bytes: Uint8Array,
  record: ArtRecord,
  what: string,
  visit: (record: ArtRecord, parent: ArtRecord | undefined) => void,
): void {
  walkArtFrom(bytes, record, undefined, 0, what, visit);
}

/**
 * {@link walkArtRecords} below `parent`: the recursion, bounded by {@link MAX_ART_DEPTH}, keeps
 * no entry per record, and a container's children are all read before the first is visited.
 */
function walkArtFrom(
  bytes: Uint8Array,
  record: ArtRecord,
  parent: ArtRecord | undefined,
  depth: number,
  what: string,
  visit: (record: ArtRecord, parent: ArtRecord | undefined) => void,
): void {
  visit(record, parent);
  if (!isContainer(record)) return;
  if (depth >= MAX_ART_DEPTH) {
    throw new Rejection(
      'policy_violation',
      `${what} nests records more than ${MAX_ART_DEPTH} deep`,
    );
  }
  for (const child of artChildren(bytes, record, what)) {
    walkArtFrom(bytes, child, record, depth + 1, what, visit);
  }
}

/** Whether `recType` is an OfficeArtBlip's ([MS-ODRAW] 2.2.23). */
export function isBlipType(recType: number): boolean {
  return recType >= FIRST_BLIP_TYPE && recType <= LAST_BLIP_TYPE;
}

/** What a picture's rebuild needs from the document's. */
export interface PictureRebuild {
  readonly input: DetectedFile;
  readonly context: EngineContext;
  readonly findings: FindingTally;
}

/**
 * A BLIP rebuilt as a whole record: a PNG, JPEG or TIFF through the whole engine (scan, detect,
 * the image handler and its verify); an EMF or WMF inflated, through the metafile rebuild and
 * deflated again; a DIB kept only as the fresh header, colour table and bits the engine's BMP
 * decoder reads whole (as a metafile's bitmaps are). `undefined` when the picture is refused
 * (counted as `hidden-data`): a PICT or another kind, or one that does not rebuild; a threat or
 * the size budget refuses the document.
 * @param index the picture's number, naming it for the scanners.
 */
export async function rebuildBlip(
  bytes: Uint8Array,
  blip: ArtRecord,
  index: number,
  rebuild: PictureRebuild,
): Promise<Uint8Array | undefined> {
  const uids = (blip.recInstance & 1) === 1 ? 2 : 1;
  const raster = RASTER_BLIPS.get(blip.recType);
  const metafile = METAFILE_BLIPS.get(blip.recType);
  const known = raster !== undefined || metafile !== undefined || blip.recType === DIB_BLIP;
  const prefix = uids * UID_BYTES + (metafile === undefined ? TAG_BYTES : METAFILE_HEADER_BYTES);
  if (!known || blip.end - blip.body < prefix) {
    refuse(rebuild);
    return undefined;
  }
  // A copy: the stream may be a view of the caller's bytes (a Buffer's slice is not a copy).
  const head = Uint8Array.from(bytes.subarray(blip.body, blip.body + prefix));
  const data = bytes.subarray(blip.body + prefix, blip.end);
  try {
    let body: Uint8Array;
    if (raster !== undefined) {
      const member = await rebuild.context.processMember(
        { bytes: data, fileName: `picture${index + 1}.${raster}` },
        rebuild.input.bytes,
      );
      if (member.converted) {
        refuse(rebuild);
        return undefined;
      }
      rebuild.findings.addAll(member.findings);
      body = member.bytes;
    } else if (metafile !== undefined) {
      body = rebuildMetafileBlip(head, data, metafile, rebuild);
    } else {
      const { infoBytes } = dibLayout(data, DIB_RGB_COLORS);
      const { limits } = rebuild.context;
      const kept = keptDib(
        data.subarray(0, infoBytes),
        data.subarray(infoBytes),
        DIB_RGB_COLORS,
        limits,
        rebuild.findings,
      );
      body = new Uint8Array(kept.info.length + kept.bits.length);
      body.set(kept.info);
      body.set(kept.bits, kept.info.length);
    }
    const record = new Uint8Array(RECORD_HEADER_BYTES + prefix + body.length);
    record.set(bytes.subarray(blip.offset, blip.body));
    new DataView(record.buffer).setUint32(4, prefix + body.length, true);
    record.set(head, RECORD_HEADER_BYTES);
    record.set(body, RECORD_HEADER_BYTES + prefix);
    return record;
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    if (error.reason === 'threat_detected' || error.reason === 'file_too_large') throw error;
    refuse(rebuild);
    return undefined;
  }
}

/** A metafile BLIP's data inflated within its stated size, rebuilt, deflated; `head` updated. */
function rebuildMetafileBlip(
  head: Uint8Array,
  data: Uint8Array,
  kind: MetafileKind,
  { context, findings }: PictureRebuild,
): Uint8Array {
  const at = head.length - METAFILE_HEADER_BYTES;
  const size = u32le(head, at + METAFILE_CB_SIZE_OFFSET);
  const compression = head[at + METAFILE_COMPRESSION_OFFSET];
  if (size > context.budget.remaining) {
    throw new Rejection('file_too_large', 'a picture of the document expands past the ceiling');
  }
  let raw: Uint8Array;
  if (compression === COMPRESSION_DEFLATE) {
    try {
      raw = inflateSync(data, { maxOutputLength: Math.max(size, 1) });
    } catch {
      throw new Rejection('invalid_file', 'a metafile picture does not inflate to its stated size');
    }
  } else if (compression === COMPRESSION_NONE) {
    raw = data;
  } else {
    throw new Rejection('invalid_file', 'a metafile picture names an unknown compression');
  }
  const rebuilt = rebuildMetafile(raw, kind, context.limits, findings);
  const packed = deflateSync(rebuilt);
  const view = new DataView(head.buffer, head.byteOffset);
  view.setUint32(at + METAFILE_CB_SIZE_OFFSET, rebuilt.length, true);
  view.setUint32(at + METAFILE_CB_SAVE_OFFSET, packed.length, true);
  view.setUint8(at + METAFILE_COMPRESSION_OFFSET, COMPRESSION_DEFLATE);
  view.setUint8(at + METAFILE_FILTER_OFFSET, FILTER_NONE);
  return packed;
}

/** Counts a refused picture; the caller leaves it out. */
function refuse({ findings }: PictureRebuild): void {
  findings.add('hidden-data');
}

/**
 * Reads a written BLIP back as verify does, with the image and metafile checks ODF and OOXML
 * pictures pass: a raster picture holds pixels only, a metafile is deflated as the rebuild writes
 * it and holds only kept records, a DIB is exactly a header, colour table and bits the BMP decoder
 * reads. Returns what is wrong, or `undefined`.
 */
export function checkBlip(
  bytes: Uint8Array,
  blip: ArtRecord,
  limits: MetafileLimits,
): string | undefined {
  const uids = (blip.recInstance & 1) === 1 ? 2 : 1;
  const raster = RASTER_BLIPS.get(blip.recType);
  const metafile = METAFILE_BLIPS.get(blip.recType);
  if (raster === undefined && metafile === undefined && blip.recType !== DIB_BLIP) {
    return `a picture record of type 0x${blip.recType.toString(16)}, which the rebuild never writes`;
  }
  const prefix = uids * UID_BYTES + (metafile === undefined ? TAG_BYTES : METAFILE_HEADER_BYTES);
  if (blip.end - blip.body < prefix) return 'a picture record shorter than its header';
  const data = bytes.subarray(blip.body + prefix, blip.end);
  if (raster !== undefined) {
    try {
      assertPixelsOnly(data, raster);
    } catch (error) {
      if (error instanceof VerifyFailure) return `a ${raster} picture: ${error.message}`;
      throw error;
    }
    return undefined;
  }
  if (metafile !== undefined) {
    const at = blip.body + prefix - METAFILE_HEADER_BYTES;
    if (bytes[at + METAFILE_COMPRESSION_OFFSET] !== COMPRESSION_DEFLATE) {
      return 'a metafile picture not deflated as the rebuild writes it';
    }
    const size = u32le(bytes, at + METAFILE_CB_SIZE_OFFSET);
    let raw: Uint8Array;
    try {
      raw = inflateSync(data, { maxOutputLength: Math.max(size, 1) });
    } catch {
      return 'a metafile picture does not inflate to its stated size';
    }
    const fault = checkMetafile(raw, metafile);
    return fault === undefined ? undefined : `a ${metafile} picture: ${fault}`;
  }
  try {
    const { infoBytes } = dibLayout(data, DIB_RGB_COLORS);
    const info = data.subarray(0, infoBytes);
    const bits = data.subarray(infoBytes);
    decodeBmp(dibAsBmpFile({ info, bits }), limits);
  } catch (error) {
    if (error instanceof Rejection) return `a bitmap picture: ${error.message}`;
    throw error;
  }
  return undefined;
}
