/**
 * Formula screening for Excel 97-2003 workbooks ([MS-XLS] 2.5.198 Rgce and Ptg): the BIFF8 walk
 * of a formula's tokens, judged by the rules `.xlsb` formulas are judged by (the function table
 * indices are the same). A formula is kept only when its tokens walk cleanly to their end and call
 * no function that runs code, fetches or talks DDE.
 */
import { u16le } from '../../../_internal/bytes.ts';
import { latin1OrUtf16 } from './records.ts';
import type { FindingKind } from '../../../findings.ts';
import {
  HYPERLINK,
  OperandStack,
  PTG_CONCAT,
  REFUSED_FUNCTIONS,
  refusedHyperlink,
} from '../../office/formula-tokens.ts';

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
 * Why a BIFF8 token stream may not stay, or `undefined` when it may. A token the walk does not
 * know, or a walk that does not end exactly at the end of the stream, is refused too (fail
 * closed: the cell's cached value still shows). `PtgNameX` (a name in another workbook, a DDE
 * item, or an add-in function called by name such as `WEBSERVICE`) is refused as in `.xlsb`, and
 * so is a 3D reference through one of `externalXtis` (EXTERNSHEET entries into another workbook).
 */
export function refusedBiffFormula(
  rgce: Uint8Array,
  externalXtis: ReadonlySet<number> = NO_XTIS,
): FindingKind | undefined {
  const stack = new OperandStack();
  let at = 0;
  while (at < rgce.length) {
    const ptg = rgce[at] ?? 0;
    const base = ptg & 0x1f;
    let size: number | undefined;
    if ((ptg & 0x60) === 0) {
      if (ptg === PTG_EXP || ptg === 0x02) {
        size = 5; // PtgExp, PtgTbl: row and column of the group
        stack.push(null);
      } else if (ptg >= 0x03 && ptg <= 0x11) {
        size = 1; // binary operators
        stack.reduce(2, ptg === PTG_CONCAT ? stack.peek(2) : null);
      } else if (ptg >= 0x12 && ptg <= 0x14) {
        size = 1; // unary operators
        stack.reduce(1);
      } else if (ptg === 0x15) {
        size = 1; // PtgParen
      } else if (ptg === 0x16) {
        size = 1; // PtgMissArg
        stack.push(null);
      } else if (ptg === 0x17) {
        // PtgStr: ShortXLUnicodeString, cch then a flags byte (bit 0: UTF-16) ([MS-XLS] 2.5.240).
        const characters = rgce[at + 1] ?? 0;
        const wide = ((rgce[at + 2] ?? 0) & 0x01) !== 0;
        size = 3 + characters * (wide ? 2 : 1);
        if (at + size <= rgce.length) {
          stack.push(latin1OrUtf16(rgce.subarray(at + 3, at + size), wide));
        }
      } else if (ptg === 0x19) {
        // PtgAttr*: a flags byte and 2 bytes; PtgAttrChoose adds (cOffset + 1) offsets.
        const flags = rgce[at + 1] ?? 0;
        size = flags & 0x04 ? 4 + 2 * (u16le(rgce, at + 2) + 1) : 4;
        if (flags & 0x10) stack.reduce(1);
      } else if (ptg === 0x1c || ptg === 0x1d) {
        size = 2; // PtgErr, PtgBool
        stack.push(null);
      } else if (ptg === 0x1e) {
        size = 3; // PtgInt
        stack.push(null);
      } else if (ptg === 0x1f) {
        size = 9; // PtgNum
        stack.push(null);
      }
    } else if (base === 0x01) {
      // PtgFunc: a fixed-arity function.
      const refused = REFUSED_FUNCTIONS.get(u16le(rgce, at + 1));
      if (refused) return refused;
      size = 3;
      stack.followed = false;
    } else if (base === 0x02) {
      // PtgFuncVar: cparams, then the function; the high bit is a command equivalent (XLM).
      const count = rgce[at + 1] ?? 0;
      const tab = u16le(rgce, at + 2);
      if (tab & 0x8000) return 'xlm-macro';
      const refused = REFUSED_FUNCTIONS.get(tab);
      if (refused) return refused;
      if (tab === HYPERLINK && refusedHyperlink(stack, count)) return 'external-relationship';
      size = 4;
      stack.reduce(count);
    } else if (base === 0x19) {
      return 'external-relationship'; // PtgNameX
    } else if (
      base >= PTG_REF_3D &&
      base <= PTG_AREA_ERR_3D &&
      externalXtis.has(u16le(rgce, at + 1))
    ) {
      return 'external-relationship';
    } else {
      size = CLASSED_SIZES.get(base);
      if (base < 0x06 || base > 0x09) stack.push(null);
    }
    if (size === undefined) return 'hidden-data';
    at += size;
  }
  return at === rgce.length ? undefined : 'hidden-data';
}
