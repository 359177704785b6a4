/**
 * Formula screening for Excel 97-2003 workbooks ([MS-XLS] 2.5.198 Rgce and Ptg): the BIFF8 walk
 * of a formula's tokens, judged by the rules `.xlsb` formulas are judged by (the function table
 * indices are the same). A formula is kept only when its tokens walk cleanly to their end and call
 * no function that runs code, fetches or talks DDE.
 */
import { latin1OrUtf16 } from './records.ts';
import type { FindingKind } from '../../../findings.ts';
import { refusedTokens, tokenByte, tokenU16 } from '../../office/formula-tokens.ts';
import type { PtgDialect } from '../../office/formula-tokens.ts';

/** Sizes (token included) of the BIFF8 tokens with a class in bits 5-6 ([MS-XLS] 2.5.198). */
const CLASSED_SIZES: ReadonlyMap<number, number> = new Map([
  [0x00, 8], // PtgArray: its values are in the formula's extra data
  [0x03, 5], // PtgName
  [0x04, 5], // PtgRef: row (2), column and flags (2)
  [0x05, 9], // PtgArea
  [0x06, 7], // PtgMemArea (its subexpression follows as tokens)
  [0x07, 7], // PtgMemErr
  [0x08, 7], // PtgMemNoMem
  [0x09, 3], // PtgMemFunc
  [0x0a, 5], // PtgRefErr
  [0x0b, 9], // PtgAreaErr
  [0x0c, 5], // PtgRefN
  [0x0d, 9], // PtgAreaN
  [0x1a, 7], // PtgRef3d: ixti, row, column
  [0x1b, 11], // PtgArea3d
  [0x1c, 7], // PtgRefErr3d
  [0x1d, 11], // PtgAreaErr3d
]);

/** PtgRef3d, PtgArea3d, PtgRefErr3d, PtgAreaErr3d: an XTI index, then the cells. */
const PTG_REF_3D = 0x1a;
const PTG_AREA_ERR_3D = 0x1d;
const NO_XTIS: ReadonlySet<number> = new Set();

/** [MS-XLS] PtgExp: the formula is a row of the shared or array formula at (row, col). */
export const PTG_EXP = 0x01;

/**
 * Why a BIFF8 token stream may not stay, or `undefined` when it may: the walk `.xlsb` formulas
 * are judged by ({@link refusedTokens}), over BIFF8 token sizes, with a 3D reference through one
 * of `externalXtis` (EXTERNSHEET entries into another workbook) refused too. The formula is
 * `tokens` from `start` to `end`: a view of its own, or a record's field read in place.
 */
export function refusedBiffFormula(
  tokens: Uint8Array,
  externalXtis: ReadonlySet<number> = NO_XTIS,
  start = 0,
  end = tokens.length,
): FindingKind | undefined {
  const dialect = externalXtis.size === 0 ? BIFF8 : withExternalXtis(externalXtis);
  return refusedTokens(tokens, dialect, start, end);
}

/** The BIFF8 dialect that refuses 3D references through `externalXtis`, one per set. */
const EXTERNAL_DIALECTS = new WeakMap<ReadonlySet<number>, PtgDialect>();

function withExternalXtis(externalXtis: ReadonlySet<number>): PtgDialect {
  let dialect = EXTERNAL_DIALECTS.get(externalXtis);
  if (dialect === undefined) {
    // The set is read at each call: the rebuild adds to it as it meets EXTERNSHEET.
    dialect = {
      ...BIFF8,
      isExternal: (base, tokens, at, end) =>
        base >= PTG_REF_3D &&
        base <= PTG_AREA_ERR_3D &&
        externalXtis.has(tokenU16(tokens, at + 1, end)),
    };
    EXTERNAL_DIALECTS.set(externalXtis, dialect);
  }
  return dialect;
}

/** The BIFF8 token stream ([MS-XLS] 2.5.198). */
const BIFF8: PtgDialect = {
  classedSizes: CLASSED_SIZES,
  // PtgExp, PtgTbl: row and column of the shared or array formula, or data table.
  groupSizes: new Map([
    [PTG_EXP, 5],
    [0x02, 5],
  ]),
  readString: (rgce, at, end) => {
    // PtgStr: ShortXLUnicodeString, cch then a flags byte (bit 0: UTF-16) ([MS-XLS] 2.5.240).
    const characters = tokenByte(rgce, at + 1, end);
    const wide = (tokenByte(rgce, at + 2, end) & 0x01) !== 0;
    const size = 3 + characters * (wide ? 2 : 1);
    if (at + size > end) return { size };
    return { size, text: latin1OrUtf16(rgce.subarray(at + 3, at + size), wide) };
  },
};
