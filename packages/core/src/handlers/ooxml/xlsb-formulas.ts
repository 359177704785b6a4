/**
 * Formula screening for `.xlsb` worksheets ([MS-XLSB] 2.2.2 formulas, 2.5.98 Rgce and Ptg): the
 * binary counterpart of the function screening the XML path does on `<f>` text. A formula is kept
 * only when its token stream walks cleanly to its end and calls no function that runs code,
 * fetches or talks DDE. Any other formula cell is **flattened**: it becomes the plain value cell
 * of the value Excel cached (BrtFmlaNum -> BrtCellReal, BrtFmlaString -> BrtCellSt, BrtFmlaBool
 * -> BrtCellBool, BrtFmlaError -> BrtCellError), so the sheet shows the same and computes nothing.
 */
import type { FindingKind, FindingTally } from '../../findings.ts';
import { refusedTokens, tokenByte, tokenU16 } from '../office/formula-tokens.ts';
import type { PtgDialect } from '../office/formula-tokens.ts';
import type { XlsbRecord } from './xlsb-records.ts';

/** Cell records ([MS-XLSB] 2.4.4-2.4.x): formula record -> plain value record. */
const FLATTENED: ReadonlyMap<number, number> = new Map([
  [8, 6], // BrtFmlaString -> BrtCellSt
  [9, 5], // BrtFmlaNum -> BrtCellReal
  [10, 4], // BrtFmlaBool -> BrtCellBool
  [11, 3], // BrtFmlaError -> BrtCellError
]);
/** BrtArrFmla and BrtShrFmla: the token streams of array and shared formulas. */
const ARRAY_FORMULA = 426;
const SHARED_FORMULA = 427;
/** The Cell structure opening every cell record: column, style and flags ([MS-XLSB] 2.5.9). */
const CELL_BYTES = 8;

/**
 * Why a token stream may not stay, or undefined when it may: the shared walk
 * ({@link refusedTokens}) over [MS-XLSB] 2.5.98 token sizes.
 */
export function refusedFormula(rgce: Uint8Array): FindingKind | undefined {
  return refusedTokens(rgce, BIFF12);
}

/** Sizes (token included) of the tokens with a class in bits 5-6 ([MS-XLSB] 2.5.98.x). */
const CLASSED_SIZES: ReadonlyMap<number, number> = new Map([
  [0x00, 15], // PtgArray: its values are in the formula's extra data
  [0x03, 5], // PtgName
  [0x04, 7], // PtgRef: row (4), column and flags (2)
  [0x05, 13], // PtgArea
  [0x06, 7], // PtgMemArea (its subexpression follows as tokens)
  [0x07, 7], // PtgMemErr
  [0x08, 7], // PtgMemNoMem
  [0x09, 3], // PtgMemFunc
  [0x0a, 7], // PtgRefErr
  [0x0b, 13], // PtgAreaErr
  [0x0c, 7], // PtgRefN
  [0x0d, 13], // PtgAreaN
  [0x1a, 9], // PtgRef3d
  [0x1b, 15], // PtgArea3d
  [0x1c, 9], // PtgRefErr3d
  [0x1d, 15], // PtgAreaErr3d
]);

/** The BIFF12 token stream ([MS-XLSB] 2.5.98). */
const BIFF12: PtgDialect = {
  classedSizes: CLASSED_SIZES,
  groupSizes: new Map([[0x01, 5]]), // PtgExp: a row of the shared or array formula it follows
  readString: (rgce, at, end) => {
    // PtgStr: cch (2 bytes), then UTF-16 characters.
    const size = 3 + 2 * tokenU16(rgce, at + 1, end);
    if (at + size > end) return { size };
    return { size, text: Buffer.from(rgce.subarray(at + 3, at + size)).toString('utf16le') };
  },
  // PtgList (a table reference): 0x18 then 0x19.
  otherToken: (rgce, at, end) =>
    tokenByte(rgce, at, end) === 0x18 && tokenByte(rgce, at + 1, end) === 0x19 ? 14 : undefined,
};

/**
 * The token stream of a formula that starts at `offset` of a record: CellParsedFormula and its
 * kin are `cce` (4 bytes), the tokens, `cb` (4 bytes) and extra data; undefined unless they fill
 * the record exactly.
 */
function tokensAt(data: Uint8Array, offset: number): Uint8Array | undefined {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (offset + 4 > data.length) return undefined;
  const cce = view.getUint32(offset, true);
  const extraAt = offset + 4 + cce;
  if (extraAt + 4 > data.length) return undefined;
  const cb = view.getUint32(extraAt, true);
  if (extraAt + 4 + cb !== data.length) return undefined;
  return data.subarray(offset + 4, extraAt);
}

/** Length of the cached value of a formula cell record after its Cell structure. */
function valueBytes(record: XlsbRecord): number | undefined {
  if (record.type === 9) return 8; // Xnum
  if (record.type === 10 || record.type === 11) return 1;
  if (record.data.length < CELL_BYTES + 4) return undefined;
  const view = new DataView(record.data.buffer, record.data.byteOffset, record.data.byteLength);
  const characters = view.getUint32(CELL_BYTES, true);
  return characters > 0x7fff ? undefined : 4 + 2 * characters; // XLWideString
}

/**
 * Screens the formulas of one worksheet's records: cells whose formula is refused become their
 * cached value; a refused shared or array formula goes, and so do the formulas of the cells that
 * follow it (they become their cached values too). Every removal is counted.
 */
export function screenFormulas(
  records: readonly XlsbRecord[],
  findings: FindingTally,
): XlsbRecord[] {
  // Shared and array formulas come after the first cell that uses them: look at them first.
  let refusedGroup = false;
  for (const record of records) {
    if (record.type !== ARRAY_FORMULA && record.type !== SHARED_FORMULA) continue;
    // BrtShrFmla: a 16-byte range, then the formula; BrtArrFmla has a flags byte before it.
    const tokens = tokensAt(record.data, 16) ?? tokensAt(record.data, 17);
    if (tokens === undefined || refusedFormula(tokens) !== undefined) refusedGroup = true;
  }
  const out: XlsbRecord[] = [];
  for (const record of records) {
    if (record.type === ARRAY_FORMULA || record.type === SHARED_FORMULA) {
      const tokens = tokensAt(record.data, 16) ?? tokensAt(record.data, 17);
      const refused = tokens === undefined ? 'hidden-data' : refusedFormula(tokens);
      if (refused !== undefined) {
        findings.add(refused);
        continue;
      }
      // A kept group whose sheet lost another group loses its followers' formulas as well
      // (followers do not say which group they belong to): it has no cell left to serve.
      if (!refusedGroup) out.push(record);
      continue;
    }
    const plain = FLATTENED.get(record.type);
    if (plain === undefined) {
      out.push(record);
      continue;
    }
    const value = valueBytes(record);
    // The value, then grbitFlags (2 bytes), then the formula.
    const tokens = value === undefined ? undefined : tokensAt(record.data, CELL_BYTES + value + 2);
    // A follower (its formula is PtgExp) has its formula in a group, screened above.
    const follower = tokens?.[0] === 0x01;
    let refused: FindingKind | undefined;
    if (tokens === undefined) refused = 'hidden-data';
    else if (follower) refused = refusedGroup ? 'hidden-data' : undefined;
    else refused = refusedFormula(tokens);
    if (refused === undefined) {
      out.push(record);
      continue;
    }
    if (!follower) findings.add(refused);
    if (value === undefined) continue; // no value to keep: the cell goes
    // A view of the record: the value is written as it was, never changed here.
    out.push({ type: plain, data: record.data.subarray(0, CELL_BYTES + value) });
  }
  return out;
}
