/**
 * What binary formulas are judged by, in `.xlsb` ([MS-XLSB] 2.5.98 Rgce) and Excel 97-2003
 * ([MS-XLS] 2.5.198 Rgce) alike: the function table entries whose call is refused (both formats
 * share the Ftab indices) and the operand stack that finds the target of a `HYPERLINK` call. Each
 * format walks its own token sizes.
 */
import type { FindingKind } from '../../findings.ts';
import { isRefusedHyperlinkTarget } from './hyperlinks.ts';

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
  /** How many operands the stack holds. */
  #depth = 0;
  /**
   * The operand at each depth, made at the first string literal: most formulas hold none, and a
   * sheet holds a million formulas, so until then the stack is only its depth.
   */
  #operands: (string | null)[] | undefined;
  #literals: string[] | undefined;
  followed = true;

  /** Every string literal pushed, in order. */
  get literals(): readonly string[] {
    return this.#literals ?? NO_LITERALS;
  }

  push(literal: string | null): void {
    this.#place(literal);
    if (literal !== null) (this.#literals ??= []).push(literal);
  }

  /** Replaces the top `count` operands by a result starting with `literal`. */
  reduce(count: number, literal: string | null = null): void {
    if (this.#depth < count) this.followed = false;
    this.#depth = Math.max(0, this.#depth - count);
    this.#place(literal);
  }

  /** The operand `count` from the top (1 is the top one), if followed. */
  peek(count: number): string | null | undefined {
    if (!this.followed || this.#depth < count) return undefined;
    return this.#operands?.[this.#depth - count] ?? null;
  }

  #place(literal: string | null): void {
    if (literal !== null) this.#operands ??= [];
    // Once made, every place is written: what a reduce left above the depth is overwritten.
    if (this.#operands !== undefined) this.#operands[this.#depth] = literal;
    this.#depth += 1;
  }
}

const NO_LITERALS: readonly string[] = [];

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
 * What differs between the token streams of BIFF8 (`.xls`, [MS-XLS] 2.5.198) and BIFF12
 * (`.xlsb`, [MS-XLSB] 2.5.98): token sizes, how a string literal is stored, and the tokens one of
 * them has alone. The walk itself ({@link refusedTokens}) is the same.
 */
export interface PtgDialect {
  /** Sizes (token included) of the tokens with a class in bits 5-6. */
  readonly classedSizes: ReadonlyMap<number, number>;
  /** Sizes of the tokens that make a row of a shared or array formula (PtgExp, PtgTbl). */
  readonly groupSizes: ReadonlyMap<number, number>;
  /**
   * The PtgStr at `at` of tokens that end at `end`: its size, and its text when it lies within
   * them.
   */
  readonly readString: (
    tokens: Uint8Array,
    at: number,
    end: number,
  ) => { size: number; text?: string };
  /** The size of an unclassed token only this dialect has (PtgList in BIFF12), if it is one. */
  readonly otherToken?: (tokens: Uint8Array, at: number, end: number) => number | undefined;
  /** Whether the classed token at `at` refers to another workbook (a 3D reference through it). */
  readonly isExternal?: (base: number, tokens: Uint8Array, at: number, end: number) => boolean;
}

/**
 * The byte at `at` of tokens that end at `end`, 0 at or past their end: a token cut short by the
 * end of its formula reads as zeros, whether the formula is a view or a field of a record.
 */
export function tokenByte(tokens: Uint8Array, at: number, end: number): number {
  return at < end ? (tokens[at] ?? 0) : 0;
}

/** The little-endian 16-bit field at `at` of tokens that end at `end` (see {@link tokenByte}). */
export function tokenU16(tokens: Uint8Array, at: number, end: number): number {
  return tokenByte(tokens, at, end) | (tokenByte(tokens, at + 1, end) << 8);
}

/**
 * Why a formula's token stream may not stay, or `undefined` when it may. A token the walk does not
 * know, or a walk that does not end exactly at the end of the stream, is refused too (fail closed:
 * the cell's cached value still shows). A function that runs code, fetches or talks DDE is refused
 * by {@link REFUSED_FUNCTIONS}, a command equivalent (XLM) always, `HYPERLINK` by its target, and
 * `PtgNameX` (a name in another workbook, a DDE item, or an add-in function called by name such as
 * `WEBSERVICE`) always. The formula is `tokens` from `start` to `end`: a view of its own, or a
 * field read in place in its record.
 */
export function refusedTokens(
  tokens: Uint8Array,
  dialect: PtgDialect,
  start = 0,
  end = tokens.length,
): FindingKind | undefined {
  const stack = new OperandStack();
  let at = start;
  while (at < end) {
    const ptg = tokens[at] ?? 0;
    const base = ptg & 0x1f;
    let size: number | undefined;
    if ((ptg & 0x60) === 0) {
      size = dialect.groupSizes.get(ptg);
      if (size !== undefined) {
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
        const literal = dialect.readString(tokens, at, end);
        size = literal.size;
        if (literal.text !== undefined) stack.push(literal.text);
      } else if (ptg === 0x19) {
        // PtgAttr*: a flags byte and 2 bytes; PtgAttrChoose adds (cOffset + 1) offsets.
        const flags = tokenByte(tokens, at + 1, end);
        size = flags & 0x04 ? 4 + 2 * (tokenU16(tokens, at + 2, end) + 1) : 4;
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
      } else {
        size = dialect.otherToken?.(tokens, at, end);
        if (size !== undefined) stack.push(null);
      }
    } else if (base === 0x01) {
      // PtgFunc: a fixed-arity function.
      const refused = REFUSED_FUNCTIONS.get(tokenU16(tokens, at + 1, end));
      if (refused) return refused;
      size = 3;
      stack.followed = false;
    } else if (base === 0x02) {
      // PtgFuncVar: cparams, then the function; the high bit is a command equivalent (XLM).
      const count = tokenByte(tokens, at + 1, end);
      const tab = tokenU16(tokens, at + 2, end);
      if (tab & 0x8000) return 'xlm-macro';
      const refused = REFUSED_FUNCTIONS.get(tab);
      if (refused) return refused;
      if (tab === HYPERLINK && refusedHyperlink(stack, count)) return 'external-relationship';
      size = 4;
      stack.reduce(count);
    } else if (base === 0x19) {
      // PtgNameX: a name in another workbook or an add-in (DDE and external names).
      return 'external-relationship';
    } else if (dialect.isExternal?.(base, tokens, at, end) === true) {
      return 'external-relationship';
    } else {
      size = dialect.classedSizes.get(base);
      // PtgMem*: the subexpression that follows makes the operand.
      if (base < 0x06 || base > 0x09) stack.push(null);
    }
    if (size === undefined) return 'hidden-data';
    at += size;
  }
  return at === end ? undefined : 'hidden-data';
}
