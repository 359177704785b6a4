/**
 * A strict reader of the PDFs the rebuild writes, independent of the parser the rebuild uses:
 * verify before release re-reads every output with it. It accepts only the layout `write.ts`
 * produces (header at 0, objects 1..n back to back, one classic cross-reference table, trailer,
 * `%%EOF` as the last line) and fails on anything else, so nothing can hide between objects, in
 * an object stream or after the end. It reads a file by range, an object at a time, and never
 * reads stream data (it only holds where the data lies), so a large output is checked in bounded
 * memory.
 */

import { memorySource } from '../../_internal/byte-source.ts';
import type { ByteSource } from '../../_internal/byte-source.ts';

/** A parsed PDF value. Names are decoded (`#xx` escapes resolved), without the slash. */
export type PdfValue =
  | { readonly type: 'dict'; readonly entries: ReadonlyMap<string, PdfValue> }
  | { readonly type: 'array'; readonly items: readonly PdfValue[] }
  | { readonly type: 'name'; readonly value: string }
  | { readonly type: 'string'; readonly bytes: Buffer }
  | { readonly type: 'number'; readonly value: number }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'null' }
  | { readonly type: 'ref'; readonly num: number; readonly gen: number };

/** One indirect object; `stream` says where its (still encoded) stream data lies. */
export interface PdfIndirect {
  readonly num: number;
  readonly value: PdfValue;
  readonly stream?: { readonly start: number; readonly length: number };
}

/** The whole file as read. */
export interface ParsedPdf {
  /** `PDF`, or `FDF` for form data. */
  readonly header: 'PDF' | 'FDF';
  readonly objects: ReadonlyMap<number, PdfIndirect>;
  readonly trailer: ReadonlyMap<string, PdfValue>;
}

/** The reader met bytes it does not accept. */
export class PdfReadError extends Error {
  override readonly name = 'PdfReadError';
}

/** Deepest nesting the reader follows (the rebuild never writes deeper). */
const MAX_DEPTH = 128;

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);

/** A first read of an object of the file: enough for its dictionary, not its stream data. */
const OBJECT_HEAD_BYTES = 64 * 1024;

class Cursor {
  readonly bytes: Buffer;
  pos: number;
  /** Where `bytes` starts in the file, for the positions in messages. */
  readonly base: number;

  constructor(bytes: Buffer, pos: number, base = 0) {
    this.bytes = bytes;
    this.pos = pos;
    this.base = base;
  }

  fail(what: string): never {
    throw new PdfReadError(`${what} at byte ${this.base + this.pos}`);
  }

  skipSpace(): void {
    while (this.pos < this.bytes.length && WHITESPACE.has(this.bytes[this.pos] ?? -1))
      this.pos += 1;
  }

  expect(text: string): void {
    if (this.bytes.toString('latin1', this.pos, this.pos + text.length) !== text) {
      this.fail(`expected ${JSON.stringify(text)}`);
    }
    this.pos += text.length;
  }

  peek(text: string): boolean {
    return this.bytes.toString('latin1', this.pos, this.pos + text.length) === text;
  }

  regular(): string {
    const start = this.pos;
    while (this.pos < this.bytes.length) {
      const byte = this.bytes[this.pos] ?? 0;
      if (WHITESPACE.has(byte) || DELIMITERS.has(byte)) break;
      this.pos += 1;
    }
    return this.bytes.toString('latin1', start, this.pos);
  }
}

function parseValue(cursor: Cursor, depth: number): PdfValue {
  if (depth > MAX_DEPTH) cursor.fail('nesting too deep');
  cursor.skipSpace();
  const byte = cursor.bytes[cursor.pos];
  if (byte === undefined) cursor.fail('unexpected end');
  if (cursor.peek('<<')) {
    cursor.pos += 2;
    const entries = new Map<string, PdfValue>();
    for (;;) {
      cursor.skipSpace();
      if (cursor.peek('>>')) {
        cursor.pos += 2;
        return { type: 'dict', entries };
      }
      const keyValue = parseValue(cursor, depth + 1);
      if (keyValue.type !== 'name') cursor.fail('dictionary key is not a name');
      if (entries.has(keyValue.value)) cursor.fail(`duplicate key /${keyValue.value}`);
      entries.set(keyValue.value, parseValue(cursor, depth + 1));
    }
  }
  if (byte === 0x5b) {
    cursor.pos += 1;
    const items: PdfValue[] = [];
    for (;;) {
      cursor.skipSpace();
      if (cursor.peek(']')) {
        cursor.pos += 1;
        return { type: 'array', items };
      }
      items.push(parseValue(cursor, depth + 1));
    }
  }
  if (byte === 0x2f) {
    cursor.pos += 1;
    const raw = cursor.regular();
    // ISO 32000-1 7.3.5: #xx is the byte xx.
    const decoded = raw.replace(/#([0-9a-fA-F]{2})/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
    if (/#(?![0-9a-fA-F]{2})/.test(raw)) cursor.fail('malformed name escape');
    return { type: 'name', value: decoded };
  }
  if (byte === 0x28) return parseLiteral(cursor);
  if (byte === 0x3c) return parseHex(cursor);
  const word = cursor.regular();
  if (word === 'true' || word === 'false') return { type: 'bool', value: word === 'true' };
  if (word === 'null') return { type: 'null' };
  if (!/^[+-]?(\d+\.?\d*|\.\d+)$/.test(word))
    cursor.fail(`unexpected token ${JSON.stringify(word)}`);
  if (/^\d+$/.test(word)) {
    const save = cursor.pos;
    cursor.skipSpace();
    const gen = cursor.regular();
    cursor.skipSpace();
    if (/^\d+$/.test(gen) && cursor.peek('R')) {
      cursor.pos += 1;
      return { type: 'ref', num: Number(word), gen: Number(gen) };
    }
    cursor.pos = save;
  }
  return { type: 'number', value: Number(word) };
}

function parseLiteral(cursor: Cursor): PdfValue {
  cursor.pos += 1;
  const out: number[] = [];
  let depth = 1;
  for (;;) {
    const byte = cursor.bytes[cursor.pos];
    if (byte === undefined) cursor.fail('unterminated string');
    cursor.pos += 1;
    if (byte === 0x5c) {
      const next = cursor.bytes[cursor.pos];
      if (next === undefined) cursor.fail('unterminated string');
      cursor.pos += 1;
      const simple: Record<number, number> = { 0x6e: 10, 0x72: 13, 0x74: 9, 0x62: 8, 0x66: 12 };
      if (simple[next] !== undefined) out.push(simple[next]);
      else if (next >= 0x30 && next <= 0x37) {
        let octal = next - 0x30;
        for (let i = 0; i < 2; i += 1) {
          const digit = cursor.bytes[cursor.pos] ?? 0;
          if (digit < 0x30 || digit > 0x37) break;
          octal = octal * 8 + digit - 0x30;
          cursor.pos += 1;
        }
        out.push(octal & 0xff);
      } else if (next === 0x0d || next === 0x0a) {
        if (next === 0x0d && cursor.bytes[cursor.pos] === 0x0a) cursor.pos += 1;
      } else out.push(next);
      continue;
    }
    if (byte === 0x28) depth += 1;
    if (byte === 0x29) {
      depth -= 1;
      if (depth === 0) return { type: 'string', bytes: Buffer.from(out) };
    }
    out.push(byte);
  }
}

function parseHex(cursor: Cursor): PdfValue {
  cursor.pos += 1;
  const end = cursor.bytes.indexOf(0x3e, cursor.pos);
  if (end < 0) cursor.fail('unterminated hex string');
  const hex = cursor.bytes.toString('latin1', cursor.pos, end).replace(/[\0\t\n\f\r ]/g, '');
  if (!/^[0-9a-fA-F]*$/.test(hex)) cursor.fail('bad hex string');
  cursor.pos = end + 1;
  return { type: 'string', bytes: Buffer.from(hex.length % 2 === 1 ? `${hex}0` : hex, 'hex') };
}

/**
 * Reads a rebuilt PDF completely (held in memory, or a file read by range).
 * @throws {PdfReadError} for anything outside the layout the rebuild writes.
 */
export function parseRebuiltPdf(content: Uint8Array | ByteSource): ParsedPdf {
  const source = content instanceof Uint8Array ? memorySource(content) : content;
  const read = (start: number, length: number): Buffer => {
    const bytes = source.read(start, length);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
  const head = read(0, 16);
  const header = /^%(PDF|FDF)-[12]\.\d\n%[\x80-\xff]{4}\n/.exec(head.toString('latin1'));
  if (!header) throw new PdfReadError('the header is not at byte 0');
  const tailStart = Math.max(0, source.length - 64);
  const tail = /startxref\n(\d+)\n%%EOF\n$/.exec(
    read(tailStart, source.length - tailStart).toString('latin1'),
  );
  if (!tail) throw new PdfReadError('the file does not end with startxref and %%EOF');
  const xrefOffset = Number(tail[1]);
  if (!Number.isSafeInteger(xrefOffset) || xrefOffset >= source.length) {
    throw new PdfReadError(`the cross-reference offset ${tail[1]} is outside the file`);
  }

  // The table, trailer and end: from the xref offset to the end of the file.
  const cursor: Cursor = new Cursor(read(xrefOffset, source.length - xrefOffset), 0, xrefOffset);
  cursor.expect('xref\n0 ');
  const count = Number(cursor.regular());
  cursor.expect('\n');
  if (!Number.isSafeInteger(count) || count < 2) cursor.fail('bad cross-reference count');
  cursor.expect('0000000000 65535 f \n');
  const offsets: number[] = [];
  for (let num = 1; num < count; num += 1) {
    const row = /^(\d{10}) 00000 n \n$/.exec(
      cursor.bytes.toString('latin1', cursor.pos, cursor.pos + 20),
    );
    if (!row) cursor.fail('bad cross-reference row');
    offsets.push(Number(row[1]));
    cursor.pos += 20;
  }
  cursor.expect('trailer\n');
  const trailer = parseValue(cursor, 0);
  if (trailer.type !== 'dict') cursor.fail('the trailer is not a dictionary');
  cursor.expect(`\nstartxref\n${xrefOffset}\n%%EOF\n`);
  if (cursor.pos !== cursor.bytes.length) cursor.fail('bytes after %%EOF');

  const objects = new Map<number, PdfIndirect>();
  let expected = header[0].length;
  for (const [index, offset] of offsets.entries()) {
    const num = index + 1;
    if (offset !== expected)
      throw new PdfReadError(`object ${num} is not where the previous one ends`);
    // Objects lie back to back: each ends where the next begins (the last, at the table).
    const end = offsets[index + 1] ?? xrefOffset;
    if (end <= offset || end > xrefOffset) {
      throw new PdfReadError(`object ${num} does not end before the cross-reference table`);
    }
    const object = readObject(read, num, offset, end);
    expected = object.end;
    objects.set(num, object.indirect);
  }
  if (expected !== xrefOffset) throw new PdfReadError('bytes between the last object and the xref');
  return { header: header[1] === 'FDF' ? 'FDF' : 'PDF', objects, trailer: trailer.entries };
}

/**
 * One object, `N 0 obj` to `endobj`, at `[offset, end)`: its dictionary read from the first
 * bytes (more when it is longer), its stream data only located, and its end checked.
 */
function readObject(
  read: (start: number, length: number) => Buffer,
  num: number,
  offset: number,
  end: number,
): { indirect: PdfIndirect; end: number } {
  for (
    let window = Math.min(end - offset, OBJECT_HEAD_BYTES);
    ;
    window = Math.min(end - offset, window * 4)
  ) {
    try {
      return readObjectFrom(read, new Cursor(read(offset, window), 0, offset), num);
    } catch (error) {
      // A dictionary longer than the first read: read more of the object and parse it again.
      if (!(error instanceof PdfReadError) || window >= end - offset) throw error;
    }
  }
}

function readObjectFrom(
  read: (start: number, length: number) => Buffer,
  at: Cursor,
  num: number,
): { indirect: PdfIndirect; end: number } {
  at.expect(`${num} 0 obj\n`);
  const value = parseValue(at, 0);
  if (at.peek('\nstream\n') || at.peek('stream\n')) {
    if (value.type !== 'dict') at.fail('a stream without a dictionary');
    const length = value.entries.get('Length');
    if (length?.type !== 'number' || !Number.isSafeInteger(length.value) || length.value < 0) {
      at.fail('a stream /Length that is not a direct integer');
    }
    at.pos += at.peek('\n') ? 1 : 0;
    at.expect('stream\n');
    const start = at.base + at.pos;
    // The data is not read, only what must follow it.
    const close = '\nendstream\nendobj\n';
    const after = new Cursor(read(start + length.value, close.length), 0, start + length.value);
    after.expect(close);
    return {
      indirect: { num, value, stream: { start, length: length.value } },
      end: start + length.value + close.length,
    };
  }
  at.expect('\nendobj\n');
  return { indirect: { num, value }, end: at.base + at.pos };
}
