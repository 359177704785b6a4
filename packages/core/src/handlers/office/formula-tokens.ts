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
