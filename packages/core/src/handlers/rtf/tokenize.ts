/**
 * The RTF tokenizer (RTF 1.9.1, "RTF Syntax"): groups, control words with their optional signed
 * parameter, control symbols, `\'hh` escapes, `\binN` raw runs and plain text, read one token at
 * a time from the bytes with no recursion, so a file's nesting costs no stack.
 */
import { reject } from '../../_internal/rejection.ts';

/**
 * Longest control word RTF 1.9.1 allows ("a control word … can be up to 32 characters"). A longer
 * run of letters is read to its end and returned cut to one letter more than this, so it matches
 * no known word and is dropped as unknown.
 */
export const MAX_CONTROL_WORD_CHARS = 32;

/**
 * Most digits of a control word's parameter. RTF 1.9.1 gives parameters a signed 16-bit range;
 * Word writes and reads signed 32-bit ones (`\bin`, `\u`, `\objw`), which ten digits hold.
 */
export const MAX_PARAMETER_DIGITS = 10;

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;

/** One token of an RTF file. */
export type RtfToken =
  | { readonly kind: 'open' }
  | { readonly kind: 'close' }
  /** `\name` or `\nameN`; `parameter` is absent when the word has none. */
  | { readonly kind: 'word'; readonly name: string; readonly parameter: number | undefined }
  /** A control symbol: `\` and one character that is not a letter (`\~`, `\*`, `\{`). */
  | { readonly kind: 'symbol'; readonly symbol: string }
  /** `\'hh`: one byte of the document's code page. */
  | { readonly kind: 'hex'; readonly byte: number }
  /** Plain text, carriage returns and line feeds left out (RTF 1.9.1 ignores them). */
  | { readonly kind: 'text'; readonly bytes: Uint8Array }
  /** The raw bytes of a `\binN` run. */
  | { readonly kind: 'bin'; readonly bytes: Uint8Array };

const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const HYPHEN = 0x2d;
const QUOTE = 0x27;

function isLetter(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
}

function isDigit(byte: number): boolean {
  return byte >= 0x30 && byte <= 0x39;
}

/** The value of a hex digit (either case), or -1. */
export function hexDigitValue(byte: number): number {
  if (isDigit(byte)) return byte - 0x30;
  const folded = byte | 0x20;
  return folded >= 0x61 && folded <= 0x66 ? folded - 0x61 + 10 : -1;
}

/**
 * Reads `bytes` as RTF tokens. Every call consumes at least one byte, so a walk over the file
 * ends after at most `bytes.length` tokens.
 *
 * @example
 * const tokens = new RtfTokenizer(bytes);
 * for (let token = tokens.next(); token; token = tokens.next()) …
 */
export class RtfTokenizer {
  readonly #bytes: Uint8Array;
  #at = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** Offset of the next unread byte. */
  get offset(): number {
    return this.#at;
  }

  /**
   * The next token, or `undefined` at the end of the bytes.
   *
   * @throws {Rejection} `invalid_file` for a parameter out of range or a `\bin` run that
   *   overruns the file.
   */
  next(): RtfToken | undefined {
    const bytes = this.#bytes;
    // Line ends between tokens carry nothing (RTF 1.9.1: "carriage returns and linefeeds are
    // ignored"); the loop ends at the end of the bytes.
    while (this.#at < bytes.length && (bytes[this.#at] === CR || bytes[this.#at] === LF)) {
      this.#at += 1;
    }
    if (this.#at >= bytes.length) return undefined;
    const byte = bytes[this.#at] ?? 0;
    if (byte === OPEN) {
      this.#at += 1;
      return { kind: 'open' };
    }
    if (byte === CLOSE) {
      this.#at += 1;
      return { kind: 'close' };
    }
    if (byte === BACKSLASH) return this.#control();
    const start = this.#at;
    while (this.#at < bytes.length) {
      const next = bytes[this.#at] ?? 0;
      if (next === BACKSLASH || next === OPEN || next === CLOSE || next === CR || next === LF) {
        break;
      }
      this.#at += 1;
    }
    return { kind: 'text', bytes: bytes.subarray(start, this.#at) };
  }

  #control(): RtfToken {
    const bytes = this.#bytes;
    this.#at += 1;
    if (this.#at >= bytes.length) return { kind: 'text', bytes: new Uint8Array(0) };
    const first = bytes[this.#at] ?? 0;
    if (!isLetter(first)) {
      this.#at += 1;
      if (first === QUOTE) return this.#hex();
      // `\` before a line end is a paragraph mark (RTF 1.9.1, "\<newline>": same as \par).
      if (first === CR || first === LF) return { kind: 'word', name: 'par', parameter: undefined };
      return { kind: 'symbol', symbol: String.fromCharCode(first) };
    }
    const start = this.#at;
    while (this.#at < bytes.length && isLetter(bytes[this.#at] ?? 0)) this.#at += 1;
    const end = Math.min(this.#at, start + MAX_CONTROL_WORD_CHARS + 1);
    const name = Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString(
      'latin1',
    );
    const parameter = this.#parameter(name);
    if (bytes[this.#at] === SPACE) this.#at += 1;
    if (name === 'bin' && parameter !== undefined && parameter > 0) {
      if (parameter > bytes.length - this.#at) {
        reject(
          'invalid_file',
          `a \\bin run of ${parameter} bytes at offset ${this.#at} runs past the end of the file`,
        );
      }
      const run = bytes.subarray(this.#at, this.#at + parameter);
      this.#at += parameter;
      return { kind: 'bin', bytes: run };
    }
    return { kind: 'word', name, parameter };
  }

  #parameter(name: string): number | undefined {
    const bytes = this.#bytes;
    const negative = bytes[this.#at] === HYPHEN && isDigit(bytes[this.#at + 1] ?? 0);
    const start = negative ? this.#at + 1 : this.#at;
    let end = start;
    while (end < bytes.length && isDigit(bytes[end] ?? 0)) {
      end += 1;
      if (end - start > MAX_PARAMETER_DIGITS) {
        reject('invalid_file', `the parameter of \\${name} at offset ${start} is too long`);
      }
    }
    if (end === start) return undefined;
    let value = 0;
    for (let i = start; i < end; i += 1) value = value * 10 + ((bytes[i] ?? 0) - 0x30);
    if (negative) value = -value;
    if (value < INT32_MIN || value > INT32_MAX) {
      reject('invalid_file', `the parameter of \\${name} at offset ${start} is out of range`);
    }
    this.#at = end;
    return value;
  }

  #hex(): RtfToken {
    const bytes = this.#bytes;
    const high = hexDigitValue(bytes[this.#at] ?? 0);
    const low = hexDigitValue(bytes[this.#at + 1] ?? 0);
    // Word and LibreOffice skip a `\'` not followed by two hex digits.
    if (high < 0 || low < 0 || this.#at + 1 >= bytes.length) {
      return { kind: 'text', bytes: new Uint8Array(0) };
    }
    this.#at += 2;
    return { kind: 'hex', byte: high * 16 + low };
  }
}
