/**
 * Windows metafiles ([MS-WMF]): an optional placeable header (the Aldus one, 2.3.2.3), a
 * META_HEADER, records, META_EOF. The rebuild keeps the drawing records it knows, each checked
 * against its size and written afresh, and writes new headers around them.
 *
 * - Removed as `hidden-data`: META_ESCAPE records (printer escapes, embedded EMF and PostScript,
 *   application comments).
 * - Refused (the picture is dropped by its package): record types not listed here (regions and
 *   device-dependent bitmaps among them), a record whose fields do not fit it, and bitmaps the
 *   BMP decoder refuses.
 */
import { DIB_PAL_INDICES, DIB_RGB_COLORS, dibLayout, keptDib, type KeptDib } from './dib.ts';
import {
  metafileFault,
  RecordView,
  RecordWriter,
  type MetafileFindings,
  type MetafileLimits,
} from './types.ts';

/** [MS-WMF] 2.3.2.3 META_PLACEABLE Key. */
const PLACEABLE_KEY = 0x9ac6cdd7;
const PLACEABLE_BYTES = 22;
const HEADER_BYTES = 18;
const META_EOF = 0x0000;
const META_ESCAPE = 0x0626;
const META_DIBCREATEPATTERNBRUSH = 0x0142;
const BS_PATTERN = 3;
/** [MS-WMF] 2.1.2.2 ExtTextOutOptions: a rectangle follows the options. */
const ETO_OPAQUE = 0x0002;
const ETO_CLIPPED = 0x0004;

type Rule =
  | { kind: 'fixed'; words: number; object?: boolean }
  | { kind: 'poly' }
  | { kind: 'polypoly' }
  | { kind: 'textout' }
  | { kind: 'exttextout' }
  | { kind: 'font' }
  | { kind: 'palette' }
  | { kind: 'dib'; words: number; usage?: number; withoutBitmap?: number }
  | { kind: 'drop' };

const fixed = (words: number): Rule => ({ kind: 'fixed', words });
const object = (words: number): Rule => ({ kind: 'fixed', words, object: true });

/** [MS-WMF] 2.1.1.1 RecordType: the records kept (parameter words after the 3-word prefix). */
const RULES: ReadonlyMap<number, Rule> = new Map<number, Rule>([
  [0x001e, fixed(0)], // META_SAVEDC
  [0x0035, fixed(0)], // META_REALIZEPALETTE
  [0x0037, { kind: 'palette' }], // META_SETPALENTRIES
  [0x00f7, { kind: 'palette' }], // META_CREATEPALETTE
  [0x0102, fixed(1)], // META_SETBKMODE
  [0x0103, fixed(1)], // META_SETMAPMODE
  [0x0104, fixed(1)], // META_SETROP2
  [0x0105, { kind: 'drop' }], // META_SETRELABS (undefined; "SHOULD be ignored")
  [0x0106, fixed(1)], // META_SETPOLYFILLMODE
  [0x0107, fixed(1)], // META_SETSTRETCHBLTMODE
  [0x0108, fixed(1)], // META_SETTEXTCHAREXTRA
  [0x0127, fixed(1)], // META_RESTOREDC
  [0x012a, object(1)], // META_INVERTREGION
  [0x012b, object(1)], // META_PAINTREGION
  [0x012c, object(1)], // META_SELECTCLIPREGION
  [0x012d, object(1)], // META_SELECTOBJECT
  [0x012e, fixed(1)], // META_SETTEXTALIGN
  [0x0139, fixed(1)], // META_RESIZEPALETTE
  [META_DIBCREATEPATTERNBRUSH, { kind: 'dib', words: 2, usage: 1 }],
  [0x0149, fixed(2)], // META_SETLAYOUT
  [0x01f0, object(1)], // META_DELETEOBJECT
  [0x0201, fixed(2)], // META_SETBKCOLOR
  [0x0209, fixed(2)], // META_SETTEXTCOLOR
  [0x020a, fixed(2)], // META_SETTEXTJUSTIFICATION
  [0x020b, fixed(2)], // META_SETWINDOWORG
  [0x020c, fixed(2)], // META_SETWINDOWEXT
  [0x020d, fixed(2)], // META_SETVIEWPORTORG
  [0x020e, fixed(2)], // META_SETVIEWPORTEXT
  [0x020f, fixed(2)], // META_OFFSETWINDOWORG
  [0x0211, fixed(2)], // META_OFFSETVIEWPORTORG
  [0x0213, fixed(2)], // META_LINETO
  [0x0214, fixed(2)], // META_MOVETO
  [0x0220, fixed(2)], // META_OFFSETCLIPRGN
  [0x0228, { kind: 'fixed', words: 2, object: true }], // META_FILLREGION
  [0x0231, fixed(2)], // META_SETMAPPERFLAGS
  [0x0234, object(1)], // META_SELECTPALETTE
  [0x02fa, fixed(5)], // META_CREATEPENINDIRECT
  [0x02fb, { kind: 'font' }], // META_CREATEFONTINDIRECT
  [0x02fc, fixed(4)], // META_CREATEBRUSHINDIRECT
  [0x0324, { kind: 'poly' }], // META_POLYGON
  [0x0325, { kind: 'poly' }], // META_POLYLINE
  [0x0410, fixed(4)], // META_SCALEWINDOWEXT
  [0x0412, fixed(4)], // META_SCALEVIEWPORTEXT
  [0x0415, fixed(4)], // META_EXCLUDECLIPRECT
  [0x0416, fixed(4)], // META_INTERSECTCLIPRECT
  [0x0418, fixed(4)], // META_ELLIPSE
  [0x0419, fixed(4)], // META_FLOODFILL
  [0x041b, fixed(4)], // META_RECTANGLE
  [0x041f, fixed(4)], // META_SETPIXEL
  [0x0429, { kind: 'fixed', words: 4, object: true }], // META_FRAMEREGION
  [0x0436, { kind: 'palette' }], // META_ANIMATEPALETTE
  [0x0521, { kind: 'textout' }], // META_TEXTOUT
  [0x0538, { kind: 'polypoly' }], // META_POLYPOLYGON
  [0x0548, fixed(5)], // META_EXTFLOODFILL
  [0x061c, fixed(6)], // META_ROUNDRECT
  [0x061d, fixed(6)], // META_PATBLT
  [META_ESCAPE, { kind: 'drop' }],
  [0x0817, fixed(8)], // META_ARC
  [0x081a, fixed(8)], // META_PIE
  [0x0830, fixed(8)], // META_CHORD
  [0x0940, { kind: 'dib', words: 8, withoutBitmap: 9 }], // META_DIBBITBLT
  [0x0a32, { kind: 'exttextout' }], // META_EXTTEXTOUT
  [0x0b41, { kind: 'dib', words: 10, withoutBitmap: 11 }], // META_DIBSTRETCHBLT
  [0x0d33, { kind: 'dib', words: 9, usage: 0 }], // META_SETDIBTODEV
  [0x0f43, { kind: 'dib', words: 11, usage: 2 }], // META_STRETCHDIB
]);

/** The record functions a rebuilt metafile may hold (for verify). */
export const KEPT_WMF_RECORDS: ReadonlySet<number> = new Set(
  [...RULES].filter(([, rule]) => rule.kind !== 'drop').map(([type]) => type),
);

/** Whether the bytes start like a Windows metafile (placeable or not). */
export function isWmf(bytes: Uint8Array): boolean {
  if (bytes.length < HEADER_BYTES) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length >= PLACEABLE_BYTES + HEADER_BYTES && view.getUint32(0, true) === PLACEABLE_KEY) {
    return true;
  }
  const type = view.getUint16(0, true);
  const version = view.getUint16(4, true);
  return (type === 1 || type === 2) && view.getUint16(2, true) === 9 && isKnownVersion(version);
}

function isKnownVersion(version: number): boolean {
  return version === 0x0100 || version === 0x0300;
}

/**
 * Rebuilds a Windows metafile from the records listed above.
 *
 * @throws {Rejection} `invalid_file` when it cannot be rebuilt with confidence.
 */
export function rebuildWmf(
  bytes: Uint8Array,
  limits: MetafileLimits,
  findings: MetafileFindings,
): Uint8Array {
  const file = new RecordView(bytes);
  if (!isWmf(bytes)) metafileFault('not a Windows metafile');
  const placeable = file.u32(0) === PLACEABLE_KEY;
  const start = placeable ? PLACEABLE_BYTES : 0;
  const type = file.u16(start);
  const version = file.u16(start + 4);
  if ((type !== 1 && type !== 2) || file.u16(start + 2) !== 9 || !isKnownVersion(version)) {
    metafileFault('a META_HEADER of an unknown kind');
  }
  const objects = file.u16(start + 10);

  const records = new RecordWriter();
  let escapes = 0;
  let maxRecordWords = 3;
  let at = start + HEADER_BYTES;
  for (;;) {
    if (at + 6 > bytes.length) metafileFault('no META_EOF record before the end of the file');
    const words = file.u32(at);
    const fn = file.u16(at + 4);
    if (fn === META_EOF) {
      at += 6;
      break;
    }
    if (words < 3 || at + words * 2 > bytes.length) {
      metafileFault(`record 0x${fn.toString(16)} at ${at} has ${words} words`);
    }
    const record = new RecordView(file.sub(at, words * 2));
    at += words * 2;
    const rule = RULES.get(fn);
    if (rule === undefined) metafileFault(`record function 0x${fn.toString(16)} is not rebuilt`);
    if (rule.kind === 'drop') {
      if (fn === META_ESCAPE) escapes += 1;
      continue;
    }
    const rebuilt = rebuildRecord(fn, rule, record, objects, limits, findings);
    maxRecordWords = Math.max(maxRecordWords, rebuilt.length / 2);
    records.push(rebuilt);
  }
  if (escapes > 0) findings.add('hidden-data');
  if (at < bytes.length && bytes.subarray(at).some((byte) => byte !== 0)) {
    findings.add('trailing-data');
  }
  records.push(new Uint8Array([3, 0, 0, 0, 0, 0])); // META_EOF

  const out = new Uint8Array(start + HEADER_BYTES + records.length);
  const view = new DataView(out.buffer);
  if (placeable) {
    view.setUint32(0, PLACEABLE_KEY, true);
    out.set(file.sub(6, 10), 6); // BoundingBox, Inch
    if (view.getUint16(14, true) === 0) metafileFault('a placeable header of 0 units per inch');
    let checksum = 0;
    for (let i = 0; i < 20; i += 2) checksum ^= view.getUint16(i, true);
    view.setUint16(20, checksum, true);
  }
  view.setUint16(start, type, true);
  view.setUint16(start + 2, 9, true);
  view.setUint16(start + 4, version, true);
  view.setUint32(start + 6, (HEADER_BYTES + records.length) / 2, true);
  view.setUint16(start + 10, objects, true);
  view.setUint32(start + 12, maxRecordWords, true);
  out.set(records.concat(), start + HEADER_BYTES);
  return out;
}

function rebuildRecord(
  fn: number,
  rule: Exclude<Rule, { kind: 'drop' }>,
  record: RecordView,
  objects: number,
  limits: MetafileLimits,
  findings: MetafileFindings,
): Uint8Array {
  switch (rule.kind) {
    case 'fixed':
      if (rule.object === true && record.u16(6) >= objects) {
        metafileFault(`object ${record.u16(6)} of a table of ${objects}`);
      }
      return copy(fn, record, 6 + rule.words * 2);
    case 'poly':
      return copy(fn, record, 8 + record.u16(6) * 4);
    case 'polypoly': {
      const polygons = record.u16(6);
      let points = 0;
      for (let i = 0; i < polygons; i++) points += record.u16(8 + i * 2);
      return copy(fn, record, 8 + polygons * 2 + points * 4);
    }
    case 'textout': {
      const length = record.u16(6);
      return copy(fn, record, 8 + even(length) + 4);
    }
    case 'exttextout':
      return extTextOut(fn, record);
    case 'font':
      // [MS-WMF] 2.2.1.2 Font: 18 bytes of fields, then a face name of at most 32 bytes.
      if (record.length < 6 + 18 || record.length > 6 + 18 + 32 + 2) {
        metafileFault(`a font record of ${record.length} bytes`);
      }
      return copy(fn, record, record.length - (record.length % 2));
    case 'palette':
      // [MS-WMF] 2.2.1.3 Palette: Start, NumberOfEntries, then 4-byte entries.
      return copy(fn, record, 10 + record.u16(8) * 4);
    case 'dib':
      return dibRecord(fn, rule, record, limits, findings);
  }
}

/**
 * The bitmap of a DIB record, with the colour usage its record gives. The bit-block transfers
 * give none: their colours are RGB, except that PowerPoint writes palette-indexed bitmaps there
 * with no colour table at all (the record then holds exactly header and bits).
 */
function dibOf(
  fn: number,
  rule: Extract<Rule, { kind: 'dib' }>,
  record: RecordView,
  dib: Uint8Array,
  limits: MetafileLimits,
  findings: MetafileFindings,
): KeptDib {
  // A META_DIBCREATEPATTERNBRUSH of style BS_PATTERN (3) reads its colours whatever it says.
  const usage =
    rule.usage === undefined || (fn === META_DIBCREATEPATTERNBRUSH && record.u16(6) === BS_PATTERN)
      ? DIB_RGB_COLORS
      : record.u16(6 + rule.usage * 2);
  const kept = (as: number): KeptDib => {
    const { infoBytes } = dibLayout(dib, as);
    return keptDib(dib, dib.subarray(infoBytes), as, limits, findings);
  };
  if (rule.usage !== undefined) return kept(usage);
  try {
    return kept(DIB_RGB_COLORS);
  } catch (error) {
    const indices = kept(DIB_PAL_INDICES);
    if (indices.info.length + indices.bits.length !== dib.length) throw error;
    return indices;
  }
}

/** A fresh record of `bytes` bytes (even): the size in words, the function, the fields copied. */
function copy(fn: number, record: RecordView, bytes: number): Uint8Array {
  if (bytes % 2 !== 0 || bytes > record.length) {
    metafileFault(`record 0x${fn.toString(16)} needs ${bytes} bytes and has ${record.length}`);
  }
  const out = record.fresh(0, bytes);
  const view = new DataView(out.buffer);
  view.setUint32(0, bytes / 2, true);
  view.setUint16(4, fn, true);
  return out;
}

function even(n: number): number {
  return n + (n % 2);
}

/** META_EXTTEXTOUT ([MS-WMF] 2.3.3.5): position, length, options, rectangle, string, spacing. */
function extTextOut(fn: number, record: RecordView): Uint8Array {
  const length = record.u16(10);
  const options = record.u16(12);
  const rectangle = (options & (ETO_OPAQUE | ETO_CLIPPED)) !== 0 ? 8 : 0;
  const stringEnd = 14 + rectangle + even(length);
  // The spacing array is optional: present when the record has room for it.
  const spacing = record.length >= stringEnd + length * 2 ? length * 2 : 0;
  return copy(fn, record, stringEnd + spacing);
}

/**
 * A record with a bitmap after its fields ([MS-WMF] 2.2.2.9 DeviceIndependentBitmap). Bit-block
 * transfers without a bitmap have one more field instead (their size tells which).
 */
function dibRecord(
  fn: number,
  rule: Extract<Rule, { kind: 'dib' }>,
  record: RecordView,
  limits: MetafileLimits,
  findings: MetafileFindings,
): Uint8Array {
  const fieldsEnd = 6 + rule.words * 2;
  if (rule.withoutBitmap !== undefined && record.length === 6 + rule.withoutBitmap * 2) {
    return copy(fn, record, record.length);
  }
  const dib = record.sub(fieldsEnd, record.length - fieldsEnd);
  const kept = dibOf(fn, rule, record, dib, limits, findings);
  const infoEnd = fieldsEnd + kept.info.length;
  const out = new Uint8Array(even(infoEnd + kept.bits.length));
  out.set(record.sub(0, fieldsEnd));
  out.set(kept.info, fieldsEnd);
  out.set(kept.bits, infoEnd);
  const view = new DataView(out.buffer);
  view.setUint32(0, out.length / 2, true);
  view.setUint16(4, fn, true);
  return out;
}
