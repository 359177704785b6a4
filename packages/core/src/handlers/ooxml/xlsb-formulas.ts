/**
 * Formula screening for `.xlsb` worksheets ([MS-XLSB] 2.2.2 formulas, 2.5.98 Rgce and Ptg): the
 * binary counterpart of the function screening the XML path does on `<f>` text. A formula is kept
 * only when its token stream walks cleanly to its end and calls no function that runs code,
 * fetches or talks DDE. Any other formula cell is **flattened**: it becomes the plain value cell
 * of the value Excel cached (BrtFmlaNum -> BrtCellReal, BrtFmlaString -> BrtCellSt, BrtFmlaBool
 * -> BrtCellBool, BrtFmlaError -> BrtCellError), so the sheet shows the same and computes nothing.
 */
import type { FindingKind, FindingTally } from '../../findings.ts';
import { isRefusedHyperlinkTarget } from './content.ts';
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
 * Functions ([MS-XLSB] 2.5.98.10 Ftab, whose indices are those of [MS-XLS] Ftab) whose call is
 * refused: XLM file, code and DDE functions, RTD servers, and 0x00FF, the call of a user-defined, add-in or newer function by name (which
 * is how `WEBSERVICE`, `FILTERXML` and VBA functions are stored: the name is a PtgNameX).
 */
export const REFUSED_FUNCTIONS: ReadonlyMap<number, FindingKind> = new Map([
  [0x0036, 'xlm-macro'], // HALT
  [0x006e, 'xlm-macro'], // EXEC
  [0x0084, 'xlm-macro'], // FOPEN
  [0x0087, 'xlm-macro'], // FREADLN
  [0x0088, 'xlm-macro'], // FREAD
  [0x0089, 'xlm-macro'], // FWRITELN
  [0x008a, 'xlm-macro'], // FWRITE
  [0x0095, 'xlm-macro'], // REGISTER
  [0x0096, 'xlm-macro'], // CALL
  [0x010b, 'xlm-macro'], // REGISTER.ID
  [0x00af, 'dde-link'], // INITIATE
  [0x00b0, 'dde-link'], // REQUEST
  [0x00b1, 'dde-link'], // POKE
  [0x00b2, 'dde-link'], // EXECUTE
  [0x017b, 'external-relationship'], // RTD
  [0x00ff, 'external-relationship'], // a function called by name
]);

/** [MS-XLSB] 2.5.98.10 Ftab: HYPERLINK(link_location, [friendly_name]). */
export const HYPERLINK = 0x0167;
/** PtgConcat (`&`): its result starts with its left operand. */
export const PTG_CONCAT = 0x08;

/**
 * The operands a formula's tokens leave on Excel's evaluation stack (the tokens are in reverse
 * Polish order), each as the string literal its value starts with, or `null`. Kept to find the
 * target a `HYPERLINK` call is given, as the XML path reads it from `HYPERLINK("…"` in the
 * formula text. A fixed-arity function (PtgFunc) takes a number of operands only its function
 * table knows: after one, the stack is no longer followed and every literal of the formula is
 * judged instead.
 */
export class OperandStack {
  readonly #operands: (string | null)[] = [];
  readonly literals: string[] = [];
  followed = true;

  push(literal: string | null): void {
    this.#operands.push(literal);
    if (literal !== null) this.literals.push(literal);
  }

  /** Replaces the top `count` operands by a result starting with `literal`. */
  reduce(count: number, literal: string | null = null): void {
    if (this.#operands.length < count) this.followed = false;
    this.#operands.length = Math.max(0, this.#operands.length - count);
    this.#operands.push(literal);
  }

  /** The operand `count` from the top (1 is the top one), if followed. */
  peek(count: number): string | null | undefined {
    if (!this.followed || this.#operands.length < count) return undefined;
    return this.#operands[this.#operands.length - count];
  }
}

/**
 * Whether a `HYPERLINK` call of `count` arguments goes to a target a hyperlink relationship could
 * not keep: anything but http, https, mailto or a place in the workbook (`#Sheet2!A1`). `file:`
 * and UNC paths hand the user's credentials to whoever serves them. A target computed from cells
 * is the cells' text; a target that cannot be told (the stack not followed) is judged by every
 * literal of the formula.
 */
export function refusedHyperlink(stack: OperandStack, count: number): boolean {
  const target = stack.peek(count);
  if (target === undefined) return stack.literals.some(isRefusedHyperlinkTarget);
  return target !== null && isRefusedHyperlinkTarget(target);
}

/**
 * Why a token stream may not stay, or undefined when it may. The walk follows [MS-XLSB] 2.5.98
 * token sizes; a token it does not know, or a walk that does not end exactly at the end of the
 * stream, is refused too (fail closed: the cached value still shows).
 */
export function refusedFormula(rgce: Uint8Array): FindingKind | undefined {
  const u16 = (at: number): number => (rgce[at] ?? 0) | ((rgce[at + 1] ?? 0) << 8);
  const stack = new OperandStack();
  let at = 0;
  while (at < rgce.length) {
    const ptg = rgce[at] ?? 0;
    const base = ptg & 0x1f;
    const classed = (ptg & 0x60) !== 0;
    let size: number | undefined;
    if (!classed) {
      if (ptg === 0x01) {
        size = 5; // PtgExp: a row of the shared or array formula it follows
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
        size = 3 + 2 * u16(at + 1); // PtgStr: cch, UTF-16 characters
        if (at + size <= rgce.length) {
          stack.push(Buffer.from(rgce.subarray(at + 3, at + size)).toString('utf16le'));
        }
      } else if (ptg === 0x18 && rgce[at + 1] === 0x19) {
        size = 14; // PtgList (table reference)
        stack.push(null);
      } else if (ptg === 0x19) {
        // PtgAttr*: a flags byte and 2 bytes; PtgAttrChoose adds (cOffset + 1) offsets.
        const flags = rgce[at + 1] ?? 0;
        size = flags & 0x04 ? 4 + 2 * (u16(at + 2) + 1) : 4;
        // PtgAttrSum: SUM of the operand on top.
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
    } else {
      if (base === 0x01) {
        // PtgFunc: a fixed-arity function.
        const refused = REFUSED_FUNCTIONS.get(u16(at + 1));
        if (refused) return refused;
        size = 3;
        stack.followed = false;
      } else if (base === 0x02) {
        // PtgFuncVar: cparams, then the function; the high bit is a command equivalent (XLM).
        const count = rgce[at + 1] ?? 0;
        const tab = u16(at + 2);
        if (tab & 0x8000) return 'xlm-macro';
        const refused = REFUSED_FUNCTIONS.get(tab);
        if (refused) return refused;
        if (tab === HYPERLINK && refusedHyperlink(stack, count)) return 'external-relationship';
        size = 4;
        stack.reduce(count);
      } else if (base === 0x19) {
        // PtgNameX: a name in another workbook or an add-in (DDE and external names).
        return 'external-relationship';
      } else {
        size = CLASSED_SIZES.get(base);
        // PtgMem*: the subexpression that follows makes the operand.
        if (base < 0x06 || base > 0x09) stack.push(null);
      }
    }
    if (size === undefined) return 'hidden-data';
    at += size;
  }
  return at === rgce.length ? undefined : 'hidden-data';
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
