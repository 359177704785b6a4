import { deflateSync, inflateSync } from 'node:zlib';

import { u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import type { FindingTally } from '../../../findings.ts';
import { rebuildMetafile } from '../../image/metafile/metafile.ts';
import type { MetafileKind } from '../../image/metafile/metafile.ts';
import type { DetectedFile, EngineContext } from '../../types.ts';
import { RECORD_HEADER_BYTES } from './records.ts';
import type { PptRecord } from './records.ts';

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

/** What a picture's rebuild needs from the presentation's. */
export interface PictureRebuild {
  readonly input: DetectedFile;
  readonly context: EngineContext;
  readonly findings: FindingTally;
}

/**
 * A BLIP of the `Pictures` stream rebuilt as a whole record: a PNG, JPEG or TIFF through the whole
 * engine (scan, detect, the image handler and its verify), an EMF or WMF inflated, through the
 * metafile rebuild and deflated again; a DIB or PICT is kept as it is. `undefined` when the
 * picture is refused (counted as `hidden-data`); a threat or the size budget refuses the
 * presentation.
 */
export async function rebuildBlip(
  pictures: Uint8Array,
  blip: PptRecord,
  index: number,
  rebuild: PictureRebuild,
): Promise<Uint8Array | undefined> {
  const uids = (blip.recInstance & 1) === 1 ? 2 : 1;
  const raster = RASTER_BLIPS.get(blip.recType);
  const metafile = METAFILE_BLIPS.get(blip.recType);
  const prefix = uids * UID_BYTES + (raster === undefined ? METAFILE_HEADER_BYTES : TAG_BYTES);
  if ((raster === undefined && metafile === undefined) || blip.end - blip.body < prefix) {
    if (raster === undefined && metafile === undefined)
      return pictures.subarray(blip.offset, blip.end);
    refuse(rebuild);
    return undefined;
  }
  // A copy: the stream may be a view of the caller's bytes (a Buffer's slice is not a copy).
  const head = Uint8Array.from(pictures.subarray(blip.body, blip.body + prefix));
  const data = pictures.subarray(blip.body + prefix, blip.end);
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
    } else {
      body = rebuildMetafileBlip(head, data, metafile ?? 'emf', rebuild);
    }
    const record = new Uint8Array(RECORD_HEADER_BYTES + prefix + body.length);
    record.set(pictures.subarray(blip.offset, blip.body));
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
    throw new Rejection(
      'file_too_large',
      `a picture of the PowerPoint presentation expands past the ceiling`,
    );
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
