/**
 * What is removed inside the binary parts of a kept `.xlsb` workbook ([MS-XLSB]). Every binary
 * part is read as a whole record stream (`xlsb-records.ts`) and written back record by record;
 * the workbook part loses the sheets, names and links whose parts were dropped, worksheets lose
 * OLE objects, ActiveX controls and anchors of dropped relationships.
 */
import { Rejection } from '../../_internal/rejection.ts';
import type { FindingTally } from '../../findings.ts';
import { parseRecords, RecordReader, RT, wideString, writeRecords } from './xlsb-records.ts';
import type { XlsbRecord } from './xlsb-records.ts';
import { screenFormulas } from './xlsb-formulas.ts';
import { AUTO_RUN_NAME } from '../office/formulas.ts';

/** Binary part content types (lower-cased) -> the record that must open and close the part. */
export const BINARY_PART_TYPES: ReadonlyMap<string, number | undefined> = new Map([
  ['application/vnd.ms-excel.sheet.binary.macroenabled.main', RT.BrtBeginBook],
  ['application/vnd.ms-excel.worksheet', RT.BrtBeginSheet],
  // [MS-XLSB] Chart Sheet part: its stream is a BrtBeginSheet block too.
  ['application/vnd.ms-excel.chartsheet', RT.BrtBeginSheet],
  ['application/vnd.ms-excel.sharedstrings', RT.BrtBeginSst],
  ['application/vnd.ms-excel.styles', RT.BrtBeginStyleSheet],
  ['application/vnd.ms-excel.comments', RT.BrtBeginComments],
  ['application/vnd.ms-excel.table', RT.BrtBeginList],
  ['application/vnd.ms-excel.calcchain', undefined],
]);

const MAIN_TYPE = 'application/vnd.ms-excel.sheet.binary.macroenabled.main';
const WORKSHEET_TYPE = 'application/vnd.ms-excel.worksheet';

/** Whether a (lower-cased) content type is a binary record-stream part. */
export function isBinaryPartType(contentType: string): boolean {
  return BINARY_PART_TYPES.has(contentType);
}

/** How one binary part is rewritten. */
export interface BinaryPartRewrite {
  /** Ids of the part's relationships that were kept; any other id it names is dangling. */
  readonly keptIds: ReadonlySet<string>;
  /** Lower-cased content type of the part. */
  readonly contentType: string;
  readonly findings: FindingTally;
}

/**
 * Rewrites one kept binary part: parsed whole, then written back without what runs, links out
 * or names a dropped part.
 *
 * @throws Rejection `invalid_file` when the record stream or a record it reads does not validate.
 */
export function rewriteBinaryPart(
  bytes: Uint8Array,
  what: string,
  part: BinaryPartRewrite,
): Uint8Array {
  const records = parseRecords(bytes, what, BINARY_PART_TYPES.get(part.contentType));
  const kept =
    part.contentType === MAIN_TYPE
      ? rewriteWorkbook(records, what, part)
      : rewriteSheetLike(records, what, part);
  return writeRecords(kept);
}

/** [MS-XLSB] BrtName flags: B fFunc (XLM function), C fOB (VBA), D fProc (macro). */
const NAME_MACRO_FLAGS = 0b1110;
/** [MS-XLSB] BrtName flags: F fBuiltin (the name is `_xlnm.` + the stored name). */
const NAME_BUILTIN_FLAG = 0b10_0000;

/** One BrtName, as far as the rebuild reads it ([MS-XLSB] BrtName). */
export interface DefinedName {
  readonly flags: number;
  /** Sheet index of a local name; 0xFFFFFFFF for a workbook name. */
  readonly itab: number;
  readonly name: string;
  /**
   * The Xti index when the whole formula is one 3-D reference (`Sheet!A1`, `Sheet!A1:B2`),
   * the way a name pointing at a macro is written.
   */
  readonly reference: number | undefined;
}

/** [MS-XLSB] PtgRef3d (9 bytes) and PtgArea3d (15 bytes), in their three operand classes. */
const REF_3D = new Set([0x3a, 0x5a, 0x7a]);
const AREA_3D = new Set([0x3b, 0x5b, 0x7b]);

/** Offset of `itab` in BrtName: flags (4) and chKey (1) before it. */
const NAME_ITAB_OFFSET = 5;

/** Reads the flags, scope and name of a BrtName (not its formula). */
export function readDefinedName(record: XlsbRecord, what: string): DefinedName {
  const reader = new RecordReader(record, what);
  const flags = reader.u32();
  reader.u8();
  const itab = reader.u32();
  const name = reader.string() ?? '';
  // NameParsedFormula: cce, then rgce of cce bytes.
  const size = reader.u32();
  const start = reader.offset;
  reader.skip(size);
  const ptg = record.data[start] ?? 0;
  const single = (size === 9 && REF_3D.has(ptg)) || (size === 15 && AREA_3D.has(ptg));
  const reference = single
    ? (record.data[start + 1] ?? 0) | ((record.data[start + 2] ?? 0) << 8)
    : undefined;
  return { flags, itab, name, reference };
}

/** Whether a defined name runs something: an auto-run name, an XLM or VBA macro name. */
export function isRunningName(name: DefinedName): boolean {
  const full = (name.flags & NAME_BUILTIN_FLAG) !== 0 ? `_xlnm.${name.name}` : name.name;
  return AUTO_RUN_NAME.test(full) || (name.flags & NAME_MACRO_FLAGS) !== 0;
}

/** [MS-XLSB] 2.4.304 BrtBundleSh: iTabID is 1 to 65535. */
const MAX_TAB_ID = 0xffff;

/**
 * [MS-XLSB] 2.4.304 BrtBundleSh: hsState (4), iTabID (4), strRelID, strName. Beta builds of Excel 2007
 * wrote 4 more bytes after hsState (Apache POI's XSSFBReader reads them the same way); such a
 * record is read at that offset and written back in the published layout.
 */
export function readBundleSheet(
  record: XlsbRecord,
  what: string,
): { id: string; name: string; data: Uint8Array } {
  const read = (extra: number): { id: string; name: string } | undefined => {
    const reader = new RecordReader(record, what, 4 + extra);
    const tabId = reader.u32();
    if (tabId < 1 || tabId > MAX_TAB_ID) return undefined;
    const id = reader.string(true) ?? '';
    const name = reader.string() ?? '';
    return { id, name };
  };
  const published = read(0);
  if (published !== undefined) return { ...published, data: record.data };
  let beta: { id: string; name: string } | undefined;
  try {
    beta = read(4);
  } catch {
    beta = undefined;
  }
  if (beta === undefined) {
    throw new Rejection('invalid_file', `${what}: BrtBundleSh has no sheet id in range`);
  }
  return {
    ...beta,
    data: new Uint8Array([...record.data.subarray(0, 4), ...record.data.subarray(8)]),
  };
}

/** Whether a lower-cased content type is the main part of an `.xlsb` workbook. */
export function isBinaryWorkbookType(contentType: string): boolean {
  return contentType.toLowerCase() === MAIN_TYPE;
}

/**
 * The sheets a binary workbook part names ([MS-XLSB] 2.4.304 BrtBundleSh): relationship id ->
 * sheet name.
 * @throws {Rejection} `invalid_file` when the record stream does not validate.
 */
export function binarySheetNamesById(bytes: Uint8Array, what: string): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  for (const record of parseRecords(bytes, what, BINARY_PART_TYPES.get(MAIN_TYPE))) {
    if (record.type !== RT.BrtBundleSh) continue;
    const { id, name } = readBundleSheet(record, what);
    names.set(id, name);
  }
  return names;
}

/** Records whose first field is a RelID naming one of the part's relationships. */
const RELATIONSHIP_AT_START: ReadonlySet<number> = new Set([
  RT.BrtDrawing,
  RT.BrtLegacyDrawing,
  RT.BrtLegacyDrawingHF,
  RT.BrtBkHim,
  RT.BrtListPart,
  RT.BrtSupBookSrc,
]);

/** Blocks that only hold OLE objects, ActiveX controls or web add-ins: always dropped. */
const DROPPED_BLOCKS: ReadonlyMap<number, number> = new Map<number, number>([
  [RT.BrtBeginOleObjects, RT.BrtEndOleObjects],
  [RT.BrtBeginActiveXControls, RT.BrtEndActiveXControls],
  [RT.BrtBeginWebExtensions, RT.BrtEndWebExtensions],
  // Pivot caches are not in the allowlist; their ids in the workbook would dangle.
  [RT.BrtBeginPivotCacheIDs, RT.BrtEndPivotCacheIDs],
]);

/**
 * The relationship id a record names, or `undefined` for a record that names none. BrtHLink
 * ([MS-XLSB] BrtHLink) holds its RelID after an UncheckedRfX (16 bytes); an empty one is a link
 * inside the workbook.
 */
export function relationshipOf(record: XlsbRecord, what: string): string | undefined {
  if (record.type === RT.BrtHLink) {
    return new RecordReader(record, what, 16).string(true) ?? '';
  }
  if (RELATIONSHIP_AT_START.has(record.type)) {
    return new RecordReader(record, what).string(true) ?? '';
  }
  return undefined;
}

/**
 * Removes the blocks of {@link DROPPED_BLOCKS}, nested ones included (parseRecords has checked
 * that every block is closed), and passes every other record to `keep`.
 */
function withoutDroppedBlocks(
  records: readonly XlsbRecord[],
  keep: (record: XlsbRecord) => void,
): void {
  let open: number | undefined;
  let depth = 0;
  for (const record of records) {
    if (open !== undefined) {
      if (record.type === open) depth += 1;
      else if (record.type === DROPPED_BLOCKS.get(open) && --depth === 0) open = undefined;
      continue;
    }
    if (DROPPED_BLOCKS.has(record.type)) {
      open = record.type;
      depth = 1;
      continue;
    }
    keep(record);
  }
}

/** Whether a record is one the rebuild never keeps. */
export function isForbiddenRecord(type: number): boolean {
  return DROPPED_BLOCKS.has(type) || type === RT.BrtFileSharing || type === RT.BrtFileSharingIso;
}

/** Sheets, comments, tables, styles and the rest: dropped blocks and dangling anchors removed. */
function rewriteSheetLike(
  records: readonly XlsbRecord[],
  what: string,
  part: BinaryPartRewrite,
): XlsbRecord[] {
  const out: XlsbRecord[] = [];
  withoutDroppedBlocks(records, (record) => {
    // [MS-XLSB] 2.1.7.61: the sheet list belongs to the workbook part. Found by
    // `npm run fuzz -- ooxml`: one in a worksheet was kept, naming a relationship the sheet does
    // not have, and verify refused the output. Excel shows nothing of it there: it goes.
    if (record.type === RT.BrtBundleSh) {
      part.findings.add('hidden-data');
      return;
    }
    const id = relationshipOf(record, what);
    if (id !== undefined && id !== '' && !part.keptIds.has(id)) return;
    out.push(record);
  });
  const screened = part.contentType === WORKSHEET_TYPE ? screenFormulas(out, part.findings) : out;
  return screened.length === records.length ? screened : recountListParts(screened, what);
}

/** [MS-XLSB] BrtBeginListParts holds the count of BrtListPart records that follow it. */
function recountListParts(records: readonly XlsbRecord[], what: string): XlsbRecord[] {
  const out: XlsbRecord[] = [];
  // Index in `out` of the open BrtBeginListParts, and the parts counted since.
  let begin: number | undefined;
  let count = 0;
  for (const record of records) {
    if (record.type === RT.BrtBeginListParts) {
      new RecordReader(record, what).u32();
      begin = out.length;
      count = 0;
    } else if (record.type === RT.BrtListPart) {
      count += 1;
    } else if (record.type === RT.BrtEndListParts && begin !== undefined) {
      const opening = out[begin];
      if (count === 0 || opening === undefined) {
        // An empty block is not allowed: it goes, with what it held.
        out.length = begin;
        begin = undefined;
        continue;
      }
      out[begin] = { type: opening.type, data: withU32(opening.data, 0, count) };
      begin = undefined;
    }
    out.push(record);
  }
  return out;
}

function withU32(data: Uint8Array, offset: number, value: number): Uint8Array {
  // A copy, never `slice()`: on a Node Buffer that is a view of the part.
  const copy = new Uint8Array(data);
  new DataView(copy.buffer).setUint32(offset, value >>> 0, true);
  return copy;
}

/** [MS-XLSB] Xti, as [MS-XLS] 2.5.344 XTI: itabFirst/itabLast -1, the sheet is gone (#REF!). */
const DELETED_SHEET = -1;
const NO_SHEET = 0xffffffff;

/**
 * The workbook part. Sheets whose part was dropped (macro and dialog sheets) lose their
 * BrtBundleSh; since formulas, local names and views count sheets by position, every sheet index
 * after them is renumbered and references into them become #REF!. Auto-run and macro names are
 * removed. An external workbook link keeps its BrtSupBookSrc in place (formulas count supporting
 * links by position) with its relationship id emptied, and every Xti through it becomes #REF!:
 * cells keep the values Excel cached, and nothing can resolve or refresh the link.
 */
function rewriteWorkbook(
  records: readonly XlsbRecord[],
  what: string,
  part: BinaryPartRewrite,
): XlsbRecord[] {
  // Old sheet index -> new one, or DELETED_SHEET for a dropped sheet.
  const sheetIndex: number[] = [];
  let keptSheets = 0;
  let visibleKept = false;
  for (const record of records) {
    if (record.type !== RT.BrtBundleSh) continue;
    const kept = part.keptIds.has(readBundleSheet(record, what).id);
    sheetIndex.push(kept ? keptSheets++ : DELETED_SHEET);
    // [MS-XLSB] 2.4.304: hsState 0 is visible, 1 hidden, 2 very hidden.
    if (kept && new RecordReader(record, what).u32() === 0) visibleKept = true;
  }
  if (sheetIndex.length > 0 && keptSheets === 0) {
    throw new Rejection(
      'invalid_file',
      `${what} holds nothing but macro or dialog sheets: no sheet is left once they are removed`,
    );
  }
  // Excel shows a workbook only with a visible sheet: if the dropped ones were the only visible
  // sheets, the first kept sheet is shown (and made the active tab by remapBookView).
  let reveal = !visibleKept && keptSheets > 0;
  const sheets = createSheetMap(sheetIndex);
  const remap = sheets.remap;

  // Names in use (folded), so a disarmed name gets a name no other has.
  const names = new Set<string>();
  for (const record of records) {
    if (record.type === RT.BrtName) names.add(readDefinedName(record, what).name.toLowerCase());
  }
  const disarmed = new NameCounter();
  // Kind of each supporting link, by position: true when the link was cut.
  const cutLinks: boolean[] = [];
  // Xti indexes whose sheets of this workbook were all dropped.
  const lostReferences = new Set<number>();
  const out: XlsbRecord[] = [];
  let bundle = 0;
  withoutDroppedBlocks(records, (record) => {
    switch (record.type) {
      case RT.BrtBundleSh: {
        const index = sheetIndex[bundle++];
        if (index !== undefined && index >= 0) {
          const data = readBundleSheet(record, what).data;
          out.push({ type: record.type, data: reveal ? withU32(data, 0, 0) : data });
          reveal = false;
        }
        break;
      }
      case RT.BrtName: {
        const name = readDefinedName(record, what);
        const scope = name.itab === NO_SHEET ? NO_SHEET : remap(name.itab);
        const lost = name.reference !== undefined && lostReferences.has(name.reference);
        // A name that runs, or only points into a dropped (macro) sheet, is disarmed in place:
        // formulas find names by position (PtgName), so removing one would make every later
        // name's references point at its neighbour.
        if (isRunningName(name) || scope === DELETED_SHEET || lost) {
          part.findings.add('xlm-macro');
          out.push(disarmedName(disarmed.next(names)));
          break;
        }
        out.push(
          scope === name.itab
            ? record
            : { type: record.type, data: withU32(record.data, NAME_ITAB_OFFSET, scope) },
        );
        break;
      }
      case RT.BrtBookView:
        out.push(remapBookView(record, what, visibleKept ? remap : () => 0, keptSheets));
        break;
      case RT.BrtSupBookSrc: {
        const id = relationshipOf(record, what) ?? '';
        const cut = id !== '' && !part.keptIds.has(id);
        cutLinks.push(cut);
        out.push(cut ? { type: record.type, data: wideString('') } : record);
        break;
      }
      case RT.BrtSupSelf:
      case RT.BrtSupSame:
      case RT.BrtSupAddin:
        cutLinks.push(false);
        out.push(record);
        break;
      case RT.BrtExternSheet:
        out.push(remapExternSheet(record, what, { cutLinks, sheets, lostReferences }));
        break;
      case RT.BrtFileSharing:
      case RT.BrtFileSharingIso:
        // Write-reservation user name and password hash: hidden data, nothing Excel needs.
        part.findings.add('hidden-data');
        break;
      case RT.BrtWbProp: {
        // [MS-XLSB] 2.4.815: flags (4), dwThemeVersion (4), strName; read to validate the layout.
        const reader = new RecordReader(record, what, 8);
        reader.string(true);
        out.push(record);
        break;
      }
      default: {
        const id = relationshipOf(record, what);
        if (id !== undefined && id !== '' && !part.keptIds.has(id)) break;
        out.push(record);
      }
    }
  });
  return out;
}

/** Hands out `_disarmed_1`, `_disarmed_2`, ... skipping names the workbook already has. */
class NameCounter {
  #next = 1;

  next(taken: Set<string>): string {
    let name = `_disarmed_${this.#next++}`;
    while (taken.has(name)) name = `_disarmed_${this.#next++}`;
    taken.add(name);
    return name;
  }
}

/** [MS-XLSB] 2.4.647 BrtName flags: A fHidden. */
const NAME_HIDDEN_FLAG = 0b1;

/**
 * A BrtName that keeps its position and nothing else ([MS-XLSB] 2.4.647): hidden, no macro or
 * built-in flag, workbook scope, an inert name, the formula `=#REF!` (PtgErr 0x17, [MS-XLSB]
 * 2.5.98.39 and 2.5.97.2 BErr) and no comment. Nothing runs it and nothing reads through it.
 */
function disarmedName(name: string): XlsbRecord {
  const text = wideString(name);
  const data = new Uint8Array(4 + 1 + 4 + text.length + 4 + 2 + 4 + 4);
  const view = new DataView(data.buffer);
  let at = 0;
  view.setUint32(at, NAME_HIDDEN_FLAG, true);
  at += 5; // flags, then chKey 0
  view.setUint32(at, NO_SHEET, true);
  at += 4;
  data.set(text, at);
  at += text.length;
  view.setUint32(at, 2, true); // cce
  data.set([0x1c, 0x17], at + 4); // PtgErr #REF!
  at += 6;
  view.setUint32(at, 0, true); // cb: no extra formula data
  view.setUint32(at + 4, 0xffffffff, true); // comment: null
  return { type: RT.BrtName, data };
}

/** [MS-XLSB] BrtBookView: xWn, yWn, dxWn, dyWn, iTabRatio, itabFirst, itabCur (4 each), flags. */
function remapBookView(
  record: XlsbRecord,
  what: string,
  remap: (itab: number) => number,
  keptSheets: number,
): XlsbRecord {
  const reader = new RecordReader(record, what, 20);
  const first = reader.u32();
  const current = reader.u32();
  const fix = (itab: number): number => {
    const mapped = remap(itab);
    return mapped < 0 || mapped >= keptSheets ? 0 : mapped;
  };
  if (fix(first) === first && fix(current) === current) return record;
  return {
    type: record.type,
    data: withU32(withU32(record.data, 20, fix(first)), 24, fix(current)),
  };
}

/** Old sheet indexes to new ones, for single sheets and for ranges of them. */
interface SheetMap {
  /** Sheets before the rebuild. */
  readonly count: number;
  /** The new index of a sheet, DELETED_SHEET for a dropped one; out-of-range ones unchanged. */
  readonly remap: (itab: number) => number;
  /** The new first and last index of the sheets kept in `[first, last]`, or `undefined`. */
  readonly range: (first: number, last: number) => [number, number] | undefined;
}

function createSheetMap(sheetIndex: readonly number[]): SheetMap {
  const count = sheetIndex.length;
  // Nearest kept sheet at or after / at or before each index (its new index), -1 for none.
  const next = new Int32Array(count + 1).fill(-1);
  const previous = new Int32Array(count + 1).fill(-1);
  for (let i = count - 1; i >= 0; i -= 1) {
    const index = sheetIndex[i] ?? DELETED_SHEET;
    next[i] = index >= 0 ? index : (next[i + 1] ?? -1);
  }
  for (let i = 0; i < count; i += 1) {
    const index = sheetIndex[i] ?? DELETED_SHEET;
    previous[i] = index >= 0 ? index : i > 0 ? (previous[i - 1] ?? -1) : -1;
  }
  return {
    count,
    remap: (itab) => (itab >= 0 && itab < count ? (sheetIndex[itab] ?? DELETED_SHEET) : itab),
    range: (first, last) => {
      const newFirst = next[first] ?? -1;
      const newLast = previous[last] ?? -1;
      return newFirst < 0 || newLast < 0 || newFirst > newLast ? undefined : [newFirst, newLast];
    },
  };
}

/**
 * [MS-XLSB] BrtExternSheet: cXti, then cXti Xti (iSupBook, itabFirst, itabLast; 2.5.172). Links
 * into a cut supporting link, and ranges wholly inside dropped sheets, become #REF!.
 */
function remapExternSheet(
  record: XlsbRecord,
  what: string,
  links: {
    readonly cutLinks: readonly boolean[];
    readonly sheets: SheetMap;
    /** Filled with the Xti indexes left pointing at no sheet. */
    readonly lostReferences: Set<number>;
  },
): XlsbRecord {
  const { cutLinks, sheets } = links;
  const reader = new RecordReader(record, what);
  const count = reader.u32();
  if (count > (record.data.length - 4) / 12) {
    throw new Rejection('invalid_file', `${what}: BrtExternSheet counts more Xti than it holds`);
  }
  const data = new Uint8Array(record.data);
  const view = new DataView(data.buffer);
  for (let i = 0; i < count; i += 1) {
    const at = 4 + 12 * i;
    const link = view.getUint32(at, true);
    const first = view.getInt32(at + 4, true);
    const last = view.getInt32(at + 8, true);
    let newFirst = first;
    let newLast = last;
    if (cutLinks[link] === true) {
      newFirst = DELETED_SHEET;
      newLast = DELETED_SHEET;
    } else if (cutLinks[link] === false && first >= 0 && last >= first && last < sheets.count) {
      // Self and same-workbook links count this workbook's sheets: shrink the range to the
      // sheets that are left; nothing left is a deleted sheet.
      const range = sheets.range(first, last);
      if (range === undefined) links.lostReferences.add(i);
      [newFirst, newLast] = range ?? [DELETED_SHEET, DELETED_SHEET];
    }
    view.setInt32(at + 4, newFirst, true);
    view.setInt32(at + 8, newLast, true);
  }
  return { type: record.type, data };
}
