/**
 * Enhanced metafiles ([MS-EMF]): a header record, drawing records, an end-of-file record. The
 * rebuild keeps the drawing records it knows, each checked field by field against its record's
 * size and laid out afresh (no slack inside a record survives), and writes a new header.
 *
 * - Removed as `hidden-data`: comments (EMF+ drawing, GDI comments, application data) and
 *   printer escapes. Office writes "EMF+ dual" files, whose EMF records draw the same picture; a
 *   file drawn only in EMF+ is refused.
 * - Removed as `external-relationship`: records that name a colour profile by file
 *   (EMR_SETICMPROFILE, EMR_COLORMATCHTOTARGETW, EMR_CREATECOLORSPACE), which a renderer opens,
 *   from a UNC share if so named.
 * - Removed as `document-metadata`: the header's description (the writing application and the
 *   picture's title).
 * - Refused (the picture is dropped by its package): OpenGL records and any record type not
 *   listed here, a record whose fields do not fit it, and bitmaps the BMP decoder refuses.
 */
import type { FindingKind } from '../../../findings.ts';
import { DIB_RGB_COLORS, keptDib } from './dib.ts';
import {
  metafileFault,
  pad4,
  RecordView,
  RecordWriter,
  type MetafileFindings,
  type MetafileLimits,
} from './types.ts';

const EMR_HEADER = 1;
const EMR_EOF = 14;
const EMR_COMMENT = 70;
/** [MS-EMF] 2.2.9 Header: " EMF" at offset 40. */
const ENHMETA_SIGNATURE = 0x464d4520;
const HEADER_BYTES = 88;
const WRITTEN_HEADER_BYTES = 108;
/** [MS-EMFPLUS] 2.1.1.4: an EMF+ comment carries "EMF+" after its size. */
const EMR_COMMENT_EMFPLUS = 0x2b464d45;
const EMF_PLUS_HEADER = 0x4001;
/** [MS-EMFPLUS] 2.3.3.3 EmfPlusHeader Flags: the file holds EMF records that draw it too. */
const EMF_PLUS_DUAL = 0x0001;
/** [MS-EMF] 2.1.31 StockObject: indices with the high bit set name stock objects. */
const STOCK_OBJECT = 0x80000000;
/** [MS-EMF] 2.1.11 ExtTextOutOptions. */
const ETO_NO_RECT = 0x0100;
const ETO_SMALL_CHARS = 0x0200;
const ETO_PDY = 0x2000;
/** [MS-EMF] 2.1.15 GradientFill: triangles, else rectangles. */
const GRADIENT_FILL_TRIANGLE = 2;
const MAX_FONT_RECORD_BYTES = 1024;

/** Where a record's bitmap is described ([MS-EMF] 2.3.1): offsets of its fields in the record. */
interface BitmapFields {
  readonly usage?: number;
  readonly info: number;
  readonly bits: number;
  /** The record needs a 1-bit bitmap here (a mask). */
  readonly monochrome?: boolean;
}

type Rule =
  | { kind: 'fixed'; bytes: number; creates?: boolean; selects?: boolean }
  | { kind: 'poly'; point: 4 | 8 }
  | { kind: 'polypoly'; point: 4 | 8 }
  | { kind: 'polydraw'; point: 4 | 8 }
  | { kind: 'region'; size: number; data: number }
  | { kind: 'text'; wide: boolean }
  | { kind: 'smalltext' }
  | { kind: 'bitmap'; fixed: number; bitmaps: readonly BitmapFields[]; creates?: boolean }
  | { kind: 'pen' }
  | { kind: 'font' }
  | { kind: 'palette' }
  | { kind: 'palette-entries' }
  | { kind: 'gradient' }
  | { kind: 'drop'; finding?: FindingKind };

const fixed = (bytes: number): Rule => ({ kind: 'fixed', bytes });
const SOURCE: BitmapFields = { usage: 80, info: 84, bits: 92 };

/** [MS-EMF] 2.1.1 RecordType: the records kept, and the ones removed. */
const RULES: ReadonlyMap<number, Rule> = new Map<number, Rule>([
  [2, { kind: 'poly', point: 8 }], // EMR_POLYBEZIER
  [3, { kind: 'poly', point: 8 }], // EMR_POLYGON
  [4, { kind: 'poly', point: 8 }], // EMR_POLYLINE
  [5, { kind: 'poly', point: 8 }], // EMR_POLYBEZIERTO
  [6, { kind: 'poly', point: 8 }], // EMR_POLYLINETO
  [7, { kind: 'polypoly', point: 8 }], // EMR_POLYPOLYLINE
  [8, { kind: 'polypoly', point: 8 }], // EMR_POLYPOLYGON
  [9, fixed(16)], // EMR_SETWINDOWEXTEX
  [10, fixed(16)], // EMR_SETWINDOWORGEX
  [11, fixed(16)], // EMR_SETVIEWPORTEXTEX
  [12, fixed(16)], // EMR_SETVIEWPORTORGEX
  [13, fixed(16)], // EMR_SETBRUSHORGEX
  [15, fixed(20)], // EMR_SETPIXELV
  [16, fixed(12)], // EMR_SETMAPPERFLAGS
  [17, fixed(12)], // EMR_SETMAPMODE
  [18, fixed(12)], // EMR_SETBKMODE
  [19, fixed(12)], // EMR_SETPOLYFILLMODE
  [20, fixed(12)], // EMR_SETROP2
  [21, fixed(12)], // EMR_SETSTRETCHBLTMODE
  [22, fixed(12)], // EMR_SETTEXTALIGN
  [23, fixed(32)], // EMR_SETCOLORADJUSTMENT
  [24, fixed(12)], // EMR_SETTEXTCOLOR
  [25, fixed(12)], // EMR_SETBKCOLOR
  [26, fixed(16)], // EMR_OFFSETCLIPRGN
  [27, fixed(16)], // EMR_MOVETOEX
  [28, fixed(8)], // EMR_SETMETARGN
  [29, fixed(24)], // EMR_EXCLUDECLIPRECT
  [30, fixed(24)], // EMR_INTERSECTCLIPRECT
  [31, fixed(24)], // EMR_SCALEVIEWPORTEXTEX
  [32, fixed(24)], // EMR_SCALEWINDOWEXTEX
  [33, fixed(8)], // EMR_SAVEDC
  [34, fixed(12)], // EMR_RESTOREDC
  [35, fixed(32)], // EMR_SETWORLDTRANSFORM
  [36, fixed(36)], // EMR_MODIFYWORLDTRANSFORM
  [37, { kind: 'fixed', bytes: 12, selects: true }], // EMR_SELECTOBJECT
  [38, { kind: 'fixed', bytes: 28, creates: true }], // EMR_CREATEPEN
  [39, { kind: 'fixed', bytes: 24, creates: true }], // EMR_CREATEBRUSHINDIRECT
  [40, { kind: 'fixed', bytes: 12, selects: true }], // EMR_DELETEOBJECT
  [41, fixed(28)], // EMR_ANGLEARC
  [42, fixed(24)], // EMR_ELLIPSE
  [43, fixed(24)], // EMR_RECTANGLE
  [44, fixed(32)], // EMR_ROUNDRECT
  [45, fixed(40)], // EMR_ARC
  [46, fixed(40)], // EMR_CHORD
  [47, fixed(40)], // EMR_PIE
  [48, { kind: 'fixed', bytes: 12, selects: true }], // EMR_SELECTPALETTE
  [49, { kind: 'palette' }], // EMR_CREATEPALETTE
  [50, { kind: 'palette-entries' }], // EMR_SETPALETTEENTRIES
  [51, fixed(16)], // EMR_RESIZEPALETTE
  [52, fixed(8)], // EMR_REALIZEPALETTE
  [53, fixed(24)], // EMR_EXTFLOODFILL
  [54, fixed(16)], // EMR_LINETO
  [55, fixed(40)], // EMR_ARCTO
  [56, { kind: 'polydraw', point: 8 }], // EMR_POLYDRAW
  [57, fixed(12)], // EMR_SETARCDIRECTION
  [58, fixed(12)], // EMR_SETMITERLIMIT
  [59, fixed(8)], // EMR_BEGINPATH
  [60, fixed(8)], // EMR_ENDPATH
  [61, fixed(8)], // EMR_CLOSEFIGURE
  [62, fixed(24)], // EMR_FILLPATH
  [63, fixed(24)], // EMR_STROKEANDFILLPATH
  [64, fixed(24)], // EMR_STROKEPATH
  [65, fixed(8)], // EMR_FLATTENPATH
  [66, fixed(8)], // EMR_WIDENPATH
  [67, fixed(12)], // EMR_SELECTCLIPPATH
  [68, fixed(8)], // EMR_ABORTPATH
  [EMR_COMMENT, { kind: 'drop', finding: 'hidden-data' }],
  [71, { kind: 'region', size: 24, data: 32 }], // EMR_FILLRGN
  [72, { kind: 'region', size: 24, data: 40 }], // EMR_FRAMERGN
  [73, { kind: 'region', size: 24, data: 28 }], // EMR_INVERTRGN
  [74, { kind: 'region', size: 24, data: 28 }], // EMR_PAINTRGN
  [75, { kind: 'region', size: 8, data: 16 }], // EMR_EXTSELECTCLIPRGN
  [76, { kind: 'bitmap', fixed: 100, bitmaps: [SOURCE] }], // EMR_BITBLT
  [77, { kind: 'bitmap', fixed: 108, bitmaps: [SOURCE] }], // EMR_STRETCHBLT
  [
    78, // EMR_MASKBLT
    {
      kind: 'bitmap',
      fixed: 128,
      bitmaps: [SOURCE, { usage: 108, info: 112, bits: 120, monochrome: true }],
    },
  ],
  [
    79, // EMR_PLGBLT
    {
      kind: 'bitmap',
      fixed: 140,
      bitmaps: [
        { usage: 92, info: 96, bits: 104 },
        { usage: 120, info: 124, bits: 132, monochrome: true },
      ],
    },
  ],
  [80, { kind: 'bitmap', fixed: 76, bitmaps: [{ usage: 64, info: 48, bits: 56 }] }], // EMR_SETDIBITSTODEVICE
  [81, { kind: 'bitmap', fixed: 80, bitmaps: [{ usage: 64, info: 48, bits: 56 }] }], // EMR_STRETCHDIBITS
  [82, { kind: 'font' }], // EMR_EXTCREATEFONTINDIRECTW
  [83, { kind: 'text', wide: false }], // EMR_EXTTEXTOUTA
  [84, { kind: 'text', wide: true }], // EMR_EXTTEXTOUTW
  [85, { kind: 'poly', point: 4 }], // EMR_POLYBEZIER16
  [86, { kind: 'poly', point: 4 }], // EMR_POLYGON16
  [87, { kind: 'poly', point: 4 }], // EMR_POLYLINE16
  [88, { kind: 'poly', point: 4 }], // EMR_POLYBEZIERTO16
  [89, { kind: 'poly', point: 4 }], // EMR_POLYLINETO16
  [90, { kind: 'polypoly', point: 4 }], // EMR_POLYPOLYLINE16
  [91, { kind: 'polypoly', point: 4 }], // EMR_POLYPOLYGON16
  [92, { kind: 'polydraw', point: 4 }], // EMR_POLYDRAW16
  [
    93, // EMR_CREATEMONOBRUSH
    {
      kind: 'bitmap',
      fixed: 32,
      bitmaps: [{ usage: 12, info: 16, bits: 24, monochrome: true }],
      creates: true,
    },
  ],
  [
    94, // EMR_CREATEDIBPATTERNBRUSHPT
    { kind: 'bitmap', fixed: 32, bitmaps: [{ usage: 12, info: 16, bits: 24 }], creates: true },
  ],
  [95, { kind: 'pen' }], // EMR_EXTCREATEPEN
  [98, fixed(12)], // EMR_SETICMMODE
  [99, { kind: 'drop', finding: 'external-relationship' }], // EMR_CREATECOLORSPACE
  [100, { kind: 'drop' }], // EMR_SETCOLORSPACE (of a colour space removed above)
  [101, { kind: 'drop' }], // EMR_DELETECOLORSPACE
  [105, { kind: 'drop', finding: 'hidden-data' }], // EMR_DRAWESCAPE
  [106, { kind: 'drop', finding: 'hidden-data' }], // EMR_EXTESCAPE
  [108, { kind: 'smalltext' }], // EMR_SMALLTEXTOUT
  [109, { kind: 'drop', finding: 'hidden-data' }], // EMR_FORCEUFIMAPPING
  [110, { kind: 'drop', finding: 'hidden-data' }], // EMR_NAMEDESCAPE
  [111, { kind: 'drop', finding: 'hidden-data' }], // EMR_COLORCORRECTPALETTE
  [112, { kind: 'drop', finding: 'external-relationship' }], // EMR_SETICMPROFILEA
  [113, { kind: 'drop', finding: 'external-relationship' }], // EMR_SETICMPROFILEW
  [114, { kind: 'bitmap', fixed: 108, bitmaps: [SOURCE] }], // EMR_ALPHABLEND
  [115, fixed(12)], // EMR_SETLAYOUT
  [116, { kind: 'bitmap', fixed: 108, bitmaps: [SOURCE] }], // EMR_TRANSPARENTBLT
  [118, { kind: 'gradient' }], // EMR_GRADIENTFILL
  [119, { kind: 'drop', finding: 'hidden-data' }], // EMR_SETLINKEDUFIS
  [120, fixed(16)], // EMR_SETTEXTJUSTIFICATION
  [121, { kind: 'drop', finding: 'external-relationship' }], // EMR_COLORMATCHTOTARGETW
  [122, { kind: 'drop', finding: 'external-relationship' }], // EMR_CREATECOLORSPACEW
]);

/** The record types a rebuilt metafile may hold (for verify). */
export const KEPT_EMF_RECORDS: ReadonlySet<number> = new Set(
  [...RULES].filter(([, rule]) => rule.kind !== 'drop').map(([type]) => type),
);

/** Whether the bytes start like an enhanced metafile. */
export function isEmf(bytes: Uint8Array): boolean {
  if (bytes.length < HEADER_BYTES) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return view.getUint32(0, true) === EMR_HEADER && view.getUint32(40, true) === ENHMETA_SIGNATURE;
}

/**
 * Rebuilds an enhanced metafile from the records listed above.
 *
 * @throws {Rejection} `invalid_file` when it cannot be rebuilt with confidence.
 */
export function rebuildEmf(
  bytes: Uint8Array,
  limits: MetafileLimits,
  findings: MetafileFindings,
): Uint8Array {
  const file = new RecordView(bytes);
  if (!isEmf(bytes)) metafileFault('not an enhanced metafile (no EMR_HEADER with " EMF")');
  const headerSize = file.u32(4);
  if (headerSize < HEADER_BYTES || headerSize % 4 !== 0 || headerSize > bytes.length) {
    metafileFault(`a header record of ${headerSize} bytes`);
  }
  const header = new RecordView(file.sub(0, headerSize));
  const handles = header.u16(56);
  if (handles === 0) metafileFault('a header with no object handles (index 0 is reserved)');
  // [MS-EMF] 2.3.4.2: the header extensions are there when the description (or the pixel
  // format) starts after them; Adobe writes a 116-byte header whose description starts at 88.
  let extensionsEnd = headerSize;
  if (header.u32(60) > 0) {
    findings.add('document-metadata');
    extensionsEnd = Math.min(extensionsEnd, header.u32(64));
  }
  if (extensionsEnd >= 100 && header.u32(88) > 0) {
    extensionsEnd = Math.min(extensionsEnd, header.u32(92));
  }
  if (extensionsEnd >= 100 && header.u32(96) !== 0) {
    metafileFault('OpenGL records are not rebuilt');
  }

  const records = new RecordWriter();
  const context: Context = { handles, limits, findings, dropped: new Set() };
  let at = headerSize;
  let palette: Uint8Array | undefined;
  while (palette === undefined) {
    if (at + 8 > bytes.length) metafileFault('no EMR_EOF record before the end of the file');
    const type = file.u32(at);
    const size = file.u32(at + 4);
    if (size < 8 || size % 4 !== 0 || at + size > bytes.length) {
      metafileFault(`record ${type} at ${at} has size ${size}`);
    }
    const record = new RecordView(file.sub(at, size));
    at += size;
    if (type === EMR_EOF) {
      palette = eofPalette(record);
      continue;
    }
    if (type === EMR_COMMENT) checkComment(record);
    const rule = RULES.get(type);
    if (rule === undefined) metafileFault(`record type ${type} is not rebuilt`);
    if (rule.kind === 'drop') {
      if (rule.finding !== undefined) context.dropped.add(rule.finding);
      continue;
    }
    records.push(rebuildRecord(type, rule, record, context));
  }
  if (at < bytes.length) findings.add('trailing-data');
  for (const kind of context.dropped) findings.add(kind);

  const eof = new Uint8Array(20 + palette.length);
  const eofView = new DataView(eof.buffer);
  eofView.setUint32(0, EMR_EOF, true);
  eofView.setUint32(4, eof.length, true);
  eofView.setUint32(8, palette.length / 4, true);
  eofView.setUint32(12, 16, true);
  eof.set(palette, 16);
  eofView.setUint32(eof.length - 4, eof.length, true);
  records.push(eof);

  const out = new Uint8Array(WRITTEN_HEADER_BYTES + records.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, EMR_HEADER, true);
  view.setUint32(4, WRITTEN_HEADER_BYTES, true);
  out.set(header.sub(8, 32), 8); // Bounds, Frame
  view.setUint32(40, ENHMETA_SIGNATURE, true);
  view.setUint32(44, 0x00010000, true);
  view.setUint32(48, out.length, true);
  view.setUint32(52, records.count + 1, true);
  view.setUint16(56, handles, true);
  view.setUint32(68, palette.length / 4, true);
  out.set(header.sub(72, 16), 72); // Device, Millimeters
  // HeaderExtension2: the reference device in micrometres, from the millimetres when absent.
  const micrometers =
    extensionsEnd >= WRITTEN_HEADER_BYTES
      ? [header.u32(100), header.u32(104)]
      : [header.u32(80) * 1000, header.u32(84) * 1000];
  view.setUint32(100, micrometers[0] ?? 0, true);
  view.setUint32(104, micrometers[1] ?? 0, true);
  out.set(records.concat(), WRITTEN_HEADER_BYTES);
  return out;
}

interface Context {
  readonly handles: number;
  readonly limits: MetafileLimits;
  readonly findings: MetafileFindings;
  /** Kinds of the records removed (each counted once per metafile). */
  readonly dropped: Set<FindingKind>;
}

/** An EMF+ comment whose header says the file is not dual draws nothing without EMF+. */
function checkComment(record: RecordView): void {
  if (record.length < 28 || record.u32(12) !== EMR_COMMENT_EMFPLUS) return;
  if (record.u16(16) === EMF_PLUS_HEADER && (record.u16(18) & EMF_PLUS_DUAL) === 0) {
    metafileFault('the picture is drawn only with EMF+ records, which are not rebuilt');
  }
}

/** EMR_EOF ([MS-EMF] 2.3.4.1): its palette entries, checked. */
function eofPalette(record: RecordView): Uint8Array {
  const entries = record.u32(8);
  if (entries === 0) return new Uint8Array(0);
  const offset = record.u32(12);
  if (offset < 16) metafileFault('EMR_EOF palette inside its fixed fields');
  return record.fresh(offset, entries * 4);
}

function rebuildRecord(type: number, rule: Rule, record: RecordView, context: Context): Uint8Array {
  switch (rule.kind) {
    case 'fixed': {
      const bytes = copy(type, record, rule.bytes);
      if (rule.creates === true) checkCreated(record.u32(8), context);
      if (rule.selects === true) checkSelected(record.u32(8), context);
      return bytes;
    }
    case 'poly': {
      const count = record.u32(24);
      return copy(type, record, 28 + count * rule.point);
    }
    case 'polypoly': {
      const polys = record.u32(24);
      const points = record.u32(28);
      let sum = 0;
      for (let i = 0; i < polys; i++) sum += record.u32(32 + i * 4);
      if (sum !== points) metafileFault(`polygon counts add to ${sum}, not ${points}`);
      return copy(type, record, 32 + polys * 4 + points * rule.point);
    }
    case 'polydraw': {
      const count = record.u32(24);
      return copy(type, record, pad4(28 + count * (rule.point + 1)));
    }
    case 'region':
      return region(type, record, rule.size, rule.data);
    case 'text':
      return text(type, record, rule.wide);
    case 'smalltext': {
      const chars = record.u32(16);
      const options = record.u32(20);
      const bounds = (options & ETO_NO_RECT) === 0 ? 16 : 0;
      const charBytes = (options & ETO_SMALL_CHARS) === 0 ? 2 : 1;
      return copy(type, record, pad4(36 + bounds + chars * charBytes));
    }
    case 'bitmap':
      if (rule.creates === true) checkCreated(record.u32(8), context);
      return bitmapRecord(type, record, rule.fixed, rule.bitmaps, context);
    case 'pen': {
      checkCreated(record.u32(8), context);
      const fixedBytes = 52 + record.u32(48) * 4;
      return bitmapRecord(type, record, fixedBytes, [{ info: 12, bits: 20 }], context);
    }
    case 'font': {
      checkCreated(record.u32(8), context);
      if (record.length < 104 || record.length > MAX_FONT_RECORD_BYTES) {
        metafileFault(`a font record of ${record.length} bytes`);
      }
      return copy(type, record, record.length);
    }
    case 'palette': {
      checkCreated(record.u32(8), context);
      if (record.u16(12) !== 0x0300) metafileFault('a palette of an unknown version');
      return copy(type, record, 16 + record.u16(14) * 4);
    }
    case 'palette-entries':
      return copy(type, record, 20 + record.u32(16) * 4);
    case 'gradient':
      return gradient(type, record);
    case 'drop':
      return metafileFault('a removed record reached the writer');
  }
}

/** A fresh record of `bytes` bytes: the type, the size, then the fields copied. */
function copy(type: number, record: RecordView, bytes: number): Uint8Array {
  if (!Number.isSafeInteger(bytes) || bytes < 8 || bytes > record.length) {
    metafileFault(`record ${type} needs ${bytes} bytes and has ${record.length}`);
  }
  if (bytes % 4 !== 0) metafileFault(`record ${type} of ${bytes} bytes is not 4-byte aligned`);
  const out = record.fresh(0, bytes);
  const view = new DataView(out.buffer);
  view.setUint32(0, type, true);
  view.setUint32(4, bytes, true);
  return out;
}

function checkCreated(index: number, context: Context): void {
  if (index === 0 || index >= context.handles) {
    metafileFault(`an object created at handle ${index} of ${context.handles}`);
  }
}

function checkSelected(index: number, context: Context): void {
  // A renderer looks a stock index up in its own table and ignores one it does not know.
  if ((index & STOCK_OBJECT) === 0 && index >= context.handles) {
    metafileFault(`an object selected at handle ${index} of ${context.handles}`);
  }
}

/** [MS-EMF] 2.2.24 RegionData: a 32-byte header and `nCount` rectangles. */
function region(type: number, record: RecordView, sizeAt: number, dataAt: number): Uint8Array {
  const size = record.u32(sizeAt);
  if (size === 0) return copy(type, record, dataAt);
  if (record.u32(dataAt) !== 32 || record.u32(dataAt + 4) !== 1) {
    metafileFault('a region of an unknown kind');
  }
  const rectangles = record.u32(dataAt + 8);
  const needed = 32 + rectangles * 16;
  if (needed > size) metafileFault(`a region of ${rectangles} rectangles in ${size} bytes`);
  const out = copy(type, record, dataAt + needed);
  new DataView(out.buffer).setUint32(sizeAt, needed, true);
  return out;
}

/** EMR_EXTTEXTOUTA/W ([MS-EMF] 2.3.5.7-8, 2.2.5 EmrText): laid out as fields, string, spacing. */
function text(type: number, record: RecordView, wide: boolean): Uint8Array {
  const chars = record.u32(44);
  const options = record.u32(52);
  const fixedBytes = (options & ETO_NO_RECT) === 0 ? 76 : 60;
  const offDxAt = fixedBytes - 4;
  const stringBytes = chars * (wide ? 2 : 1);
  const string = chars === 0 ? new Uint8Array(0) : record.sub(record.u32(48), stringBytes);
  const offDx = record.u32(offDxAt);
  const dxBytes = chars * ((options & ETO_PDY) === 0 ? 4 : 8);
  const dx = offDx === 0 || chars === 0 ? new Uint8Array(0) : record.sub(offDx, dxBytes);
  const stringAt = fixedBytes;
  const dxAt = stringAt + pad4(stringBytes);
  const out = new Uint8Array(dxAt + dx.length);
  out.set(record.sub(0, fixedBytes));
  out.set(string, stringAt);
  out.set(dx, dxAt);
  const view = new DataView(out.buffer);
  view.setUint32(0, type, true);
  view.setUint32(4, out.length, true);
  view.setUint32(48, chars === 0 ? 0 : stringAt, true);
  view.setUint32(offDxAt, dx.length === 0 ? 0 : dxAt, true);
  return out;
}

/** EMR_GRADIENTFILL ([MS-EMF] 2.3.5.12): every vertex index must name a vertex. */
function gradient(type: number, record: RecordView): Uint8Array {
  const vertices = record.u32(24);
  const shapes = record.u32(28);
  const mode = record.u32(32);
  const indices = mode === GRADIENT_FILL_TRIANGLE ? 3 : 2;
  const shapesAt = 36 + vertices * 16;
  for (let i = 0; i < shapes * indices; i++) {
    if (record.u32(shapesAt + i * 4) >= vertices)
      metafileFault('a gradient names a missing vertex');
  }
  return copy(type, record, shapesAt + shapes * indices * 4);
}

/**
 * A record with bitmaps ([MS-EMF] 2.3.1): its fixed fields, then each bitmap's header and bits
 * as the decoder read them, the offsets and sizes written for the new layout. A record whose
 * bitmap fields are all zero draws without one (a raster operation on the destination).
 */
function bitmapRecord(
  type: number,
  record: RecordView,
  fixedBytes: number,
  bitmaps: readonly BitmapFields[],
  context: Context,
): Uint8Array {
  const head = record.fresh(0, fixedBytes);
  const view = new DataView(head.buffer);
  const parts = new RecordWriter();
  parts.push(head);
  for (const fields of bitmaps) {
    const infoOffset = record.u32(fields.info);
    const infoBytes = record.u32(fields.info + 4);
    const bitsOffset = record.u32(fields.bits);
    const bitsBytes = record.u32(fields.bits + 4);
    if (infoBytes === 0 && bitsBytes === 0) {
      for (const field of [fields.info, fields.info + 4, fields.bits, fields.bits + 4]) {
        view.setUint32(field, 0, true);
      }
      continue;
    }
    if (infoOffset < fixedBytes || bitsOffset < fixedBytes) {
      metafileFault('a bitmap inside its record’s fixed fields');
    }
    const kept = keptDib(
      record.sub(infoOffset, infoBytes),
      record.sub(bitsOffset, bitsBytes),
      fields.usage === undefined ? DIB_RGB_COLORS : record.u32(fields.usage),
      context.limits,
      context.findings,
      fields.monochrome === true,
    );
    for (const [field, bytes] of [
      [fields.info, kept.info],
      [fields.bits, kept.bits],
    ] as const) {
      view.setUint32(field, parts.length, true);
      view.setUint32(field + 4, bytes.length, true);
      parts.push(bytes);
      parts.push(new Uint8Array(pad4(bytes.length) - bytes.length));
    }
  }
  view.setUint32(0, type, true);
  view.setUint32(4, parts.length, true);
  return parts.concat();
}
