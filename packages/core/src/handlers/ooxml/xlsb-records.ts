/**
 * [MS-XLSB] 2.1.4 record streams: the binary parts of an `.xlsb` workbook are sequences of
 * records, each a record type (1-2 bytes, 7 bits each, high bit "more"), a record size (1-4 bytes,
 * the same encoding) and that many bytes. Read with every length checked, written back fresh.
 */
import { Rejection } from '../../_internal/rejection.ts';

/** One record: its type and its bytes (a view into the part it was read from). */
export interface XlsbRecord {
  readonly type: number;
  readonly data: Uint8Array;
}

/** [MS-XLSB] 2.1.4: a record type is at most 2 bytes, so below 2^14. */
const MAX_RECORD_TYPE = 0x3fff;
/** [MS-XLSB] 2.1.4: a record size is at most 4 bytes, so below 2^28. */
const MAX_RECORD_BYTES = 0x0fffffff;
/** Begin/End blocks nest far less deeply than this in anything Excel writes. */
const MAX_RECORD_DEPTH = 64;
/** Records in one part (each record is at least 2 bytes, so this also bounds the loop). */
const MAX_RECORDS_PER_PART = 50_000_000;
/**
 * [MS-XLSB] 2.5.169 XLWideString allows longer strings, but those the rebuild reads (relationship
 * ids, sheet and defined names) are far shorter, and cell strings stop at 32767 characters.
 */
const MAX_STRING_CHARACTERS = 32_767;

/** Record types the rebuild reads or writes by name ([MS-XLSB] record enumeration). */
export const RT = {
  BrtName: 39,
  BrtBeginSheet: 129,
  BrtEndSheet: 130,
  BrtBeginBook: 131,
  BrtEndBook: 132,
  BrtWbProp: 153,
  BrtBundleSh: 156,
  BrtBookView: 158,
  BrtBeginSst: 159,
  BrtEndSst: 160,
  BrtBeginStyleSheet: 278,
  BrtEndStyleSheet: 279,
  BrtBeginList: 343,
  BrtEndList: 344,
  BrtBeginExternals: 353,
  BrtEndExternals: 354,
  BrtSupBookSrc: 355,
  BrtSupSelf: 357,
  BrtSupSame: 358,
  BrtExternSheet: 362,
  BrtBeginPivotCacheIDs: 384,
  BrtEndPivotCacheIDs: 385,
  BrtHLink: 494,
  BrtFileSharing: 548,
  BrtDrawing: 550,
  BrtLegacyDrawing: 551,
  BrtLegacyDrawingHF: 552,
  BrtBkHim: 562,
  BrtBeginComments: 628,
  BrtEndComments: 629,
  BrtBeginOleObjects: 638,
  BrtOleObject: 639,
  BrtEndOleObjects: 640,
  BrtBeginActiveXControls: 643,
  BrtActiveX: 644,
  BrtEndActiveXControls: 645,
  BrtBeginListParts: 660,
  BrtListPart: 661,
  BrtEndListParts: 662,
  BrtSupAddin: 667,
  BrtFileSharingIso: 676,
  BrtBeginWebExtensions: 2068,
  BrtEndWebExtensions: 2069,
} as const;

/**
 * Begin record -> its End record, for the blocks whose nesting is checked ([MS-XLSB] part
 * grammars). Records outside this table are not containers as far as validation goes.
 */
const BLOCKS: ReadonlyMap<number, number> = new Map([
  [35, 36], // BrtFRTBegin / BrtFRTEnd
  [37, 38], // BrtACBegin / BrtACEnd
  [129, 130], // BrtBeginSheet
  [131, 132], // BrtBeginBook
  [133, 134], // BrtBeginWsViews
  [135, 136], // BrtBeginBookViews
  [137, 138], // BrtBeginWsView
  [139, 140], // BrtBeginCsViews
  [141, 142], // BrtBeginCsView
  [143, 144], // BrtBeginBundleShs
  [145, 146], // BrtBeginSheetData
  [159, 160], // BrtBeginSst
  [161, 162], // BrtBeginAFilter
  [177, 178], // BrtBeginMergeCells
  [278, 279], // BrtBeginStyleSheet
  [343, 344], // BrtBeginList
  [345, 346], // BrtBeginListCols
  [353, 354], // BrtBeginExternals
  [360, 588], // BrtBeginSupBook / BrtEndSupBook
  [384, 385], // BrtBeginPivotCacheIDs
  [390, 391], // BrtBeginColInfos
  [473, 474], // BrtBeginColorPalette
  [479, 480], // BrtBeginHeaderFooter
  [505, 506], // BrtBeginDXFs
  [508, 509], // BrtBeginTableStyles
  [565, 566], // BrtBeginIndexedColors
  [569, 570], // BrtBeginMRUColors
  [603, 604], // BrtBeginFills
  [611, 612], // BrtBeginFonts
  [613, 614], // BrtBeginBorders
  [615, 616], // BrtBeginFmts
  [617, 618], // BrtBeginCellXFs
  [619, 620], // BrtBeginStyles
  [626, 627], // BrtBeginCellStyleXFs
  [628, 629], // BrtBeginComments
  [630, 631], // BrtBeginCommentAuthors
  [633, 634], // BrtBeginCommentList
  [635, 636], // BrtBeginComment
  [638, 640], // BrtBeginOleObjects
  [643, 645], // BrtBeginActiveXControls
  [660, 662], // BrtBeginListParts
  [2068, 2069], // BrtBeginWebExtensions
]);

const END_RECORDS: ReadonlySet<number> = new Set(BLOCKS.values());

/**
 * Reads a whole record stream ([MS-XLSB] 2.1.4) and checks that the blocks of {@link BLOCKS} are
 * balanced, no deeper than {@link MAX_RECORD_DEPTH}, and, when `outer` is given, that the stream
 * is exactly one such block (`BrtBeginBook` … `BrtEndBook` for a workbook part).
 *
 * @throws Rejection `invalid_file` for a varint longer than allowed, a record running past the
 *   end of the part, or unbalanced nesting.
 */
export function parseRecords(bytes: Uint8Array, what: string, outer?: number): XlsbRecord[] {
  const records: XlsbRecord[] = [];
  const open: number[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (records.length >= MAX_RECORDS_PER_PART) {
      throw new Rejection('invalid_file', `${what} has too many records`);
    }
    const start = offset;
    let type = 0;
    for (let i = 0; ; i += 1) {
      const byte = bytes[offset];
      if (byte === undefined) throw truncated(what, start);
      offset += 1;
      type |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) break;
      if (i === 1) {
        throw new Rejection('invalid_file', `${what}: record type at ${start} is over 2 bytes`);
      }
    }
    let size = 0;
    for (let i = 0; ; i += 1) {
      const byte = bytes[offset];
      if (byte === undefined) throw truncated(what, start);
      offset += 1;
      size += (byte & 0x7f) * 2 ** (7 * i);
      if ((byte & 0x80) === 0) break;
      if (i === 3) {
        throw new Rejection('invalid_file', `${what}: record size at ${start} is over 4 bytes`);
      }
    }
    if (size > bytes.length - offset) {
      throw new Rejection(
        'invalid_file',
        `${what}: record ${type} at ${start} runs past the end of the part`,
      );
    }
    records.push({ type, data: bytes.subarray(offset, offset + size) });
    offset += size;
    if (records.length === 1 && outer !== undefined && type !== outer) {
      throw new Rejection('invalid_file', `${what} does not start with record ${outer}`);
    }
    const end = BLOCKS.get(type);
    if (end !== undefined) {
      if (open.length >= MAX_RECORD_DEPTH) {
        throw new Rejection('invalid_file', `${what} nests records too deeply`);
      }
      open.push(end);
    } else if (END_RECORDS.has(type)) {
      if (open.pop() !== type) {
        throw new Rejection('invalid_file', `${what}: record ${type} at ${start} closes no block`);
      }
      if (open.length === 0 && outer !== undefined && offset < bytes.length) {
        throw new Rejection('invalid_file', `${what} has records after its end`);
      }
    }
  }
  if (open.length > 0) throw new Rejection('invalid_file', `${what} ends inside a block`);
  if (outer !== undefined && records.length === 0) {
    throw new Rejection('invalid_file', `${what} is empty`);
  }
  return records;
}

function truncated(what: string, offset: number): Rejection {
  return new Rejection('invalid_file', `${what}: record header at ${offset} is truncated`);
}

/** Writes records as a fresh stream, each header in its shortest form ([MS-XLSB] 2.1.4). */
export function writeRecords(records: readonly XlsbRecord[]): Uint8Array {
  let total = 0;
  for (const record of records) {
    if (record.type > MAX_RECORD_TYPE || record.data.length > MAX_RECORD_BYTES) {
      throw new RangeError(`record ${record.type} cannot be written`);
    }
    total += varintLength(record.type) + varintLength(record.data.length) + record.data.length;
  }
  const out = new Uint8Array(total);
  let offset = 0;
  const varint = (value: number): void => {
    let rest = value;
    while (rest >= 0x80) {
      out[offset++] = (rest & 0x7f) | 0x80;
      rest >>>= 7;
    }
    out[offset++] = rest;
  };
  for (const record of records) {
    varint(record.type);
    varint(record.data.length);
    out.set(record.data, offset);
    offset += record.data.length;
  }
  return out;
}

function varintLength(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : 4;
}

/** A bounds-checked reader over one record's bytes. */
export class RecordReader {
  offset: number;
  readonly #data: Uint8Array;
  readonly #what: string;

  constructor(record: XlsbRecord, what: string, offset = 0) {
    this.#data = record.data;
    this.#what = `${what}: record ${record.type}`;
    this.offset = offset;
  }

  #need(count: number): void {
    if (count > this.#data.length - this.offset) {
      throw new Rejection('invalid_file', `${this.#what} is shorter than its fields`);
    }
  }

  skip(count: number): void {
    this.#need(count);
    this.offset += count;
  }

  u8(): number {
    this.#need(1);
    return this.#data[this.offset++] ?? 0;
  }

  u32(): number {
    this.#need(4);
    const view = new DataView(this.#data.buffer, this.#data.byteOffset + this.offset, 4);
    this.offset += 4;
    return view.getUint32(0, true);
  }

  i32(): number {
    return this.u32() | 0;
  }

  /** [MS-XLSB] 2.5.169 XLWideString (and XLNullableWideString: `null` for 0xFFFFFFFF). */
  string(nullable = false): string | null {
    const count = this.u32();
    if (nullable && count === 0xffffffff) return null;
    if (count > MAX_STRING_CHARACTERS) {
      throw new Rejection('invalid_file', `${this.#what} has a string over its length limit`);
    }
    this.#need(count * 2);
    let text = '';
    for (let i = 0; i < count; i += 1) {
      text += String.fromCharCode(
        (this.#data[this.offset + 2 * i] ?? 0) | ((this.#data[this.offset + 2 * i + 1] ?? 0) << 8),
      );
    }
    this.offset += count * 2;
    return text;
  }
}

/** [MS-XLSB] 2.5.169 XLWideString bytes of `text`. */
export function wideString(text: string): Uint8Array {
  const out = new Uint8Array(4 + text.length * 2);
  const view = new DataView(out.buffer);
  view.setUint32(0, text.length, true);
  for (let i = 0; i < text.length; i += 1) view.setUint16(4 + 2 * i, text.charCodeAt(i), true);
  return out;
}
