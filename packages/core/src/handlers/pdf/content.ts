import { Rejection } from '../../_internal/rejection.ts';

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);

const isBoundary = (byte: number | undefined): boolean =>
  byte === undefined || WHITESPACE.has(byte) || DELIMITERS.has(byte);

/**
 * Lexical check of a decoded page content stream (ISO 32000-1 7.8.2): every literal string is
 * closed and no `)` stands outside one. A content stream that fails this is damaged beyond what
 * a reader can repair faithfully (text after the break is lost or misread), so the file is
 * `invalid_file` rather than a copy that renders differently. Inline image data (`BI ... ID ...
 * EI`, 8.9.7) is skipped, comments are skipped.
 */
export function assertContentSyntax(data: Uint8Array): void {
  let index = 0;
  const fail = (what: string): never => {
    throw new Rejection(
      'invalid_file',
      `a PDF page content stream is damaged (${what} at byte ${index})`,
    );
  };
  while (index < data.length) {
    const byte = data[index];
    if (byte === 0x25) {
      while (index < data.length && data[index] !== 0x0a && data[index] !== 0x0d) index += 1;
      continue;
    }
    if (byte === 0x28) {
      let depth = 1;
      index += 1;
      while (depth > 0) {
        const inner = data[index];
        if (inner === undefined) fail('an unterminated string');
        if (inner === 0x5c) index += 1;
        else if (inner === 0x28) depth += 1;
        else if (inner === 0x29) depth -= 1;
        index += 1;
      }
      continue;
    }
    if (byte === 0x29) fail('an unbalanced ")"');
    if (
      byte === 0x49 &&
      data[index + 1] === 0x44 &&
      isBoundary(data[index - 1]) &&
      isBoundary(data[index + 2])
    ) {
      // Inline image data: skip to whitespace, "EI", then a boundary.
      index += 3;
      while (index < data.length) {
        if (
          WHITESPACE.has(data[index] ?? -1) &&
          data[index + 1] === 0x45 &&
          data[index + 2] === 0x49 &&
          isBoundary(data[index + 3])
        ) {
          index += 3;
          break;
        }
        index += 1;
      }
      continue;
    }
    index += 1;
  }
}
