import { Rejection } from '../../_internal/rejection.ts';

/** ISO 32000-1 7.2.2 character classes, by byte: regular, white space, delimiter. */
const REGULAR = 0;
const SPACE = 1;
const DELIMITER = 2;
const CLASS_OF_BYTE = Uint8Array.from({ length: 256 }, (_, byte) => {
  if ([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20].includes(byte)) return SPACE;
  return '()<>[]{}/%'.includes(String.fromCharCode(byte)) ? DELIMITER : REGULAR;
});

/**
 * Open text objects, graphics states and marked-content sequences remembered for closing a cut
 * stream. Real content nests `q` a few levels (ISO 32000-1 Annex C.2 suggests 28 at most); past
 * this, further openings are not closed, which readers tolerate.
 */
const MAX_OPEN_PAIRS = 256;

/** An operator of up to three bytes as one number (its bytes, first lowest). */
function codeOf(operator: string): number {
  let code = 0;
  for (let at = operator.length - 1; at >= 0; at -= 1) code = code * 256 + operator.charCodeAt(at);
  return code;
}

/** The operators that open a pair, and the operator closing each (ISO 32000-1 8.4.2, 9.4, 14.6). */
const CLOSER_OF: ReadonlyMap<number, string> = new Map([
  [codeOf('q'), 'Q'],
  [codeOf('BT'), 'ET'],
  [codeOf('BMC'), 'EMC'],
  [codeOf('BDC'), 'EMC'],
]);
/** The operators that close a pair, and the openers each closes. */
const OPENERS_OF: ReadonlyMap<number, readonly number[]> = new Map([
  [codeOf('Q'), [codeOf('q')]],
  [codeOf('ET'), [codeOf('BT')]],
  [codeOf('EMC'), [codeOf('BMC'), codeOf('BDC')]],
]);
const BEGIN_INLINE_IMAGE = codeOf('BI');
/** Longest operator (ISO 32000-1 Annex A); a longer regular token is an unknown operator. */
const MAX_OPERATOR_BYTES = 3;

const isSpace = (byte: number | undefined): boolean =>
  byte !== undefined && CLASS_OF_BYTE[byte] === SPACE;
const isBoundary = (byte: number | undefined): boolean =>
  byte === undefined || CLASS_OF_BYTE[byte] !== REGULAR;

const isHexDigit = (byte: number): boolean =>
  (byte >= 0x30 && byte <= 0x39) ||
  (byte >= 0x41 && byte <= 0x46) ||
  (byte >= 0x61 && byte <= 0x66);

/** Where a content stream breaks and why. */
interface Damage {
  readonly at: number;
  readonly what: string;
}

/**
 * Salvages a decoded page content stream (ISO 32000-1 7.8.2) damaged part-way, as readers do:
 * they draw every operator before the damage and drop the rest. The damage is the first of: an
 * unterminated literal string `(` or hex string `<`, a hex string holding a character that is not
 * a hex digit, a `)` outside any string, an array or dictionary still open at the end, an inline
 * image (`BI … ID`, 8.9.7) without its `EI`. The kept prefix ends with the last complete operator
 * and is closed so the page stays well-formed: an open text object gets `ET`, open marked content
 * `EMC`, and saved graphics states their `Q`, innermost first.
 *
 * Comments are skipped; an intact stream, even one ending with operands and no operator, is left
 * as it is.
 * @returns the salvaged stream and the damage, or undefined when the stream is intact.
 * @throws {Rejection} `invalid_file` when nothing of the stream can be salvaged: no complete
 *   operator stands before the damage.
 */
export function salvageContent(
  data: Uint8Array,
): { readonly data: Uint8Array; readonly damage: string } | undefined {
  /** Operators that opened a pair still open, as of the last complete operator. */
  const open: number[] = [];
  let kept = 0;
  let depth = 0;
  /** Where the outermost array or dictionary still open began. */
  let openedAt = 0;
  let index = 0;
  let damage: Damage | undefined;
  const completeOperator = (code: number, end: number): void => {
    kept = end;
    if (CLOSER_OF.has(code)) {
      if (open.length < MAX_OPEN_PAIRS) open.push(code);
      return;
    }
    const openers = OPENERS_OF.get(code);
    if (openers === undefined) return;
    const at = open.findLastIndex((opener) => openers.includes(opener));
    if (at >= 0) open.splice(at, 1);
  };

  while (index < data.length && damage === undefined) {
    const byte = data[index] ?? 0;
    const kind = CLASS_OF_BYTE[byte];
    if (kind === SPACE) {
      index += 1;
    } else if (kind === REGULAR) {
      const start = index;
      while (index < data.length && CLASS_OF_BYTE[data[index] ?? 0] === REGULAR) index += 1;
      if (depth > 0 || isOperand(data, start, index)) continue;
      let code = 0;
      if (index - start <= MAX_OPERATOR_BYTES) {
        for (let at = index - 1; at >= start; at -= 1) code = code * 256 + (data[at] ?? 0);
      }
      if (code === BEGIN_INLINE_IMAGE) {
        const end = inlineImageEnd(data, index);
        if (end < 0) damage = { at: start, what: 'an inline image without EI' };
        else {
          index = end;
          kept = end;
        }
      } else {
        completeOperator(code, index);
      }
    } else if (byte === 0x25) {
      while (index < data.length && data[index] !== 0x0a && data[index] !== 0x0d) index += 1;
    } else if (byte === 0x28) {
      const end = literalStringEnd(data, index);
      if (end < 0) damage = { at: index, what: 'an unterminated string' };
      else index = end;
    } else if (byte === 0x29) {
      damage = { at: index, what: 'an unbalanced ")"' };
    } else if (byte === 0x3c && data[index + 1] === 0x3c) {
      if (depth === 0) openedAt = index;
      depth += 1;
      index += 2;
    } else if (byte === 0x3c) {
      const end = hexStringEnd(data, index);
      if (typeof end !== 'number') damage = end;
      else index = end;
    } else if (byte === 0x3e && data[index + 1] === 0x3e) {
      depth = Math.max(0, depth - 1);
      index += 2;
    } else if (byte === 0x5b) {
      if (depth === 0) openedAt = index;
      depth += 1;
      index += 1;
    } else if (byte === 0x5d) {
      depth = Math.max(0, depth - 1);
      index += 1;
    } else if (byte === 0x2f) {
      // A name (7.3.5).
      index += 1;
      while (index < data.length && CLASS_OF_BYTE[data[index] ?? 0] === REGULAR) index += 1;
    } else {
      // A stray `>`, `{` or `}`, which readers skip.
      index += 1;
    }
  }
  if (damage === undefined && depth > 0) {
    damage = { at: openedAt, what: 'an array or dictionary left open at the end' };
  }
  if (damage === undefined) return undefined;
  const detail = `${damage.what} at byte ${damage.at}`;
  if (kept === 0) {
    throw new Rejection(
      'invalid_file',
      `a PDF page content stream is damaged (${detail}) before any complete operator: nothing of it can be drawn`,
    );
  }
  const closing = open
    .reverse()
    .map((code) => CLOSER_OF.get(code) ?? '')
    .join('\n');
  const tail = Buffer.from(closing === '' ? '\n' : `\n${closing}\n`, 'latin1');
  return { data: Buffer.concat([data.subarray(0, kept), tail]), damage: detail };
}

/** A number (7.3.3) or `true`, `false`, `null`: every other regular token is an operator. */
function isOperand(data: Uint8Array, start: number, end: number): boolean {
  const first = data[start] ?? 0;
  if ((first >= 0x30 && first <= 0x39) || first === 0x2b || first === 0x2d || first === 0x2e) {
    return true;
  }
  if (end - start !== 4 && end - start !== 5) return false;
  const token = Buffer.from(data.buffer, data.byteOffset + start, end - start).toString('latin1');
  return token === 'true' || token === 'false' || token === 'null';
}

/** The offset after a literal string's closing `)` (7.3.4.2: balanced, `\` escapes), or -1. */
function literalStringEnd(data: Uint8Array, start: number): number {
  let depth = 1;
  let index = start + 1;
  while (index < data.length) {
    const byte = data[index];
    if (byte === 0x5c) index += 1;
    else if (byte === 0x28) depth += 1;
    else if (byte === 0x29 && (depth -= 1) === 0) return index + 1;
    index += 1;
  }
  return -1;
}

/** The offset after a hex string's `>` (7.3.4.3: hex digits and white space), or its damage. */
function hexStringEnd(data: Uint8Array, start: number): number | Damage {
  for (let index = start + 1; index < data.length; index += 1) {
    const byte = data[index] ?? 0;
    if (byte === 0x3e) return index + 1;
    if (!isHexDigit(byte) && !isSpace(byte)) {
      return { at: start, what: 'a hex string holding a character that is not a hex digit' };
    }
  }
  return { at: start, what: 'an unterminated hex string' };
}

/**
 * The offset after an inline image's `EI`, from just after its `BI` (8.9.7): the dictionary up to
 * `ID`, one white-space byte, then data up to white space, `EI` and a boundary. -1 when the image
 * does not end.
 */
function inlineImageEnd(data: Uint8Array, from: number): number {
  let index = from;
  for (;;) {
    while (index < data.length && isSpace(data[index])) index += 1;
    if (index >= data.length) return -1;
    const before = data[index - 1] ?? 0;
    if (
      data[index] === 0x49 &&
      data[index + 1] === 0x44 &&
      isBoundary(data[index + 2]) &&
      (isSpace(before) || before === 0x29 || before === 0x3e || before === 0x5d)
    ) {
      break;
    }
    index += 1;
  }
  index += 3;
  while (index < data.length) {
    if (
      isSpace(data[index]) &&
      data[index + 1] === 0x45 &&
      data[index + 2] === 0x49 &&
      isBoundary(data[index + 3])
    ) {
      return index + 3;
    }
    index += 1;
  }
  return -1;
}
