import { randomBytes } from 'node:crypto';

import { PDFName, PDFNumber, PDFRawStream } from '@cantoo/pdf-lib';
import type { PDFContext } from '@cantoo/pdf-lib';

import { READ_CHUNK_BYTES } from '../../_internal/byte-source.ts';
import type { ByteSource } from '../../_internal/byte-source.ts';
import { asBuffer } from '../../_internal/bytes.ts';

/**
 * A stream whose data is at least this long is left in the file while the PDF is parsed (see
 * {@link buildSkeleton}): scanned pages and photos, the bulk of a large PDF. 64 KiB.
 */
export const MIN_STREAM_LEFT_IN_SOURCE_BYTES = 64 * 1024;
/** Deepest nesting of arrays and dictionaries inside one stream dictionary we read. */
const MAX_DICT_NESTING = 64;
/** Longest stream dictionary we read; a longer one stops the skeleton there. */
const MAX_DICT_BYTES = 1024 * 1024;
/**
 * Bytes read from a file per window of the scan: small, since the scan jumps over stream data and
 * reads only the few hundred bytes of syntax between two streams.
 */
const WINDOW_BYTES = 64 * 1024;
/** A window starts this far before the byte asked for, for the few bytes read backwards. */
const WINDOW_BACKTRACK_BYTES = 64;

/** Where a stream's data lies in the source: `[start, end)`. */
export interface StreamRange {
  readonly start: number;
  readonly end: number;
  /** The dictionary's direct `/Length`, rewritten in the skeleton (restored once parsed). */
  readonly length: number | undefined;
}

/**
 * The streams left in the source, each stood in for in the skeleton by a stand-in of its own: a
 * short text carrying a random nonce of this document and the stream's number, which no input
 * can forge. The rebuild resolves a stream's data through {@link contentsOf} and the writer
 * copies a kept image's data from the source through {@link chunksOf}, never holding all of them.
 */
export class StreamRanges {
  readonly #source: ByteSource;
  readonly #prefix: Buffer;
  readonly #ranges: StreamRange[] = [];

  constructor(source: ByteSource) {
    this.#source = source;
    this.#prefix = Buffer.from(`DISARM-STREAM-${randomBytes(16).toString('hex')}-`, 'latin1');
  }

  /** Streams left in the source. */
  get count(): number {
    return this.#ranges.length;
  }

  /** Length of every stand-in. */
  get standInLength(): number {
    return this.#prefix.length + 8;
  }

  /** Records a stream left in the source; its stand-in. */
  add(range: StreamRange): Buffer {
    const index = this.#ranges.length;
    this.#ranges.push(range);
    return Buffer.concat([this.#prefix, Buffer.from(index.toString(16).padStart(8, '0'))]);
  }

  /** The index of the stream `data` stands in for, if it is a stand-in. */
  indexOf(data: Uint8Array): number | undefined {
    if (data.length !== this.standInLength) return undefined;
    const view = asBuffer(data);
    if (!view.subarray(0, this.#prefix.length).equals(this.#prefix)) return undefined;
    const index = Number.parseInt(view.toString('latin1', this.#prefix.length), 16);
    return Number.isSafeInteger(index) && index < this.#ranges.length ? index : undefined;
  }

  /** Where the data `data` stands in for lies, if it is a stand-in. */
  rangeOf(data: Uint8Array): StreamRange | undefined {
    const index = this.indexOf(data);
    return index === undefined ? undefined : this.#ranges[index];
  }

  /** Bytes of the stream `data` holds or stands in for. */
  lengthOf(data: Uint8Array): number {
    const range = this.rangeOf(data);
    return range === undefined ? data.length : range.end - range.start;
  }

  /** The data itself: read from the source for a stand-in (a view of it in memory). */
  contentsOf(data: Uint8Array): Uint8Array {
    const range = this.rangeOf(data);
    return range === undefined ? data : this.#source.read(range.start, range.end - range.start);
  }

  /** The data in chunks, read from the source for a stand-in. */
  async *chunksOf(data: Uint8Array): AsyncGenerator<Uint8Array, void, undefined> {
    const range = this.rangeOf(data);
    if (range === undefined) {
      yield data;
      return;
    }
    yield* this.#source.chunks(range.start, range.end);
  }

  /**
   * Holds the parse to the skeleton: every stand-in must be the whole data of exactly one
   * indirect stream that is neither an object stream nor a cross-reference stream (pdf-lib reads
   * those while parsing). Then the streams get their own `/Length` back.
   * @returns false when the parser read the skeleton otherwise (the file is then parsed whole).
   */
  adopt(context: PDFContext): boolean {
    const seen = new Set<number>();
    const found: [PDFRawStream, StreamRange][] = [];
    for (const [, object] of context.enumerateIndirectObjects()) {
      if (!(object instanceof PDFRawStream)) continue;
      const index = this.indexOf(object.contents);
      if (index === undefined) continue;
      const type = object.dict.lookup(PDFName.of('Type'));
      if (seen.has(index) || type === PDFName.of('ObjStm') || type === PDFName.of('XRef')) {
        return false;
      }
      seen.add(index);
      const range = this.#ranges[index];
      if (range !== undefined) found.push([object, range]);
    }
    if (seen.size !== this.#ranges.length) return false;
    for (const [stream, range] of found) {
      if (range.length !== undefined) {
        stream.dict.set(PDFName.of('Length'), PDFNumber.of(range.length));
      }
    }
    return true;
  }
}

/** A PDF as the parser reads it: the skeleton, and the streams left in the source. */
export interface PdfSkeleton {
  readonly bytes: Uint8Array;
  readonly ranges: StreamRanges;
}

/**
 * The skeleton of a PDF: its bytes with the data of every stream of at least `minBytes` (but
 * object and cross-reference streams) replaced by a stand-in of a few dozen bytes, and the
 * `/Length` of those streams rewritten to fit. @cantoo/pdf-lib reads objects in file order and
 * never by offset, so it parses the skeleton as it would the file, holding a few megabytes where
 * the file has hundreds; the data stays in the source until the rebuild reads it, one stream at a
 * time.
 *
 * A stream's data is found as pdf-lib finds it (`PDFObjectParser.parseDictOrStream`): from after
 * the `stream` keyword and its end of line, `/Length` bytes when that is a direct number followed
 * by `endstream`, else up to the first `endstream` not matched by a `stream` inside the data. A
 * stream is left in the source only when its dictionary reads plainly (direct `/Length`, a `/Type`
 * that is a plain name); anything the scan does not follow stops it, and the rest of the file is
 * kept as it is. A file with `/Encrypt` outside its streams is kept whole: pdf-lib decrypts
 * stream data while parsing. {@link StreamRanges.adopt} then holds pdf-lib's reading of the
 * skeleton to ours.
 */
export function buildSkeleton(
  source: ByteSource,
  minBytes = MIN_STREAM_LEFT_IN_SOURCE_BYTES,
): PdfSkeleton {
  const ranges = new StreamRanges(source);
  const scan = new SkeletonScan(source, ranges, minBytes);
  try {
    scan.run();
  } catch (error) {
    if (!(error instanceof StopScan)) throw error;
  }
  if (ranges.count === 0) return { bytes: wholeOf(source), ranges };
  const bytes = scan.finish();
  if (asBuffer(bytes).includes('/Encrypt'))
    return { bytes: wholeOf(source), ranges: new StreamRanges(source) };
  return { bytes, ranges };
}

function wholeOf(source: ByteSource): Uint8Array {
  return source.bytes ?? source.read(0, source.length);
}

/** The scan met something it does not follow: the rest of the file is kept as it is. */
class StopScan extends Error {}

const stop = (): never => {
  throw new StopScan();
};

const WHITESPACE = new Set([0x00, 0x09, 0x0a, 0x0c, 0x0d, 0x20]);
const DELIMITERS = new Set([0x28, 0x29, 0x3c, 0x3e, 0x5b, 0x5d, 0x7b, 0x7d, 0x2f, 0x25]);
const NUMERIC = new Set([
  0x2b, 0x2d, 0x2e, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39,
]);
const isDigit = (byte: number): boolean => byte >= 0x30 && byte <= 0x39;
const CR = 0x0d;
const LF = 0x0a;
const STREAM = Buffer.from('stream', 'latin1');
const END_STREAM = Buffer.from('endstream', 'latin1');

/** A value of a stream dictionary, as far as the scan needs it. */
type Value =
  | { readonly kind: 'number'; readonly text: string; readonly start: number; readonly end: number }
  | { readonly kind: 'ref' }
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'other' };

/** Reads a source forward through a window, with a little room to look back. */
class Cursor {
  readonly length: number;
  readonly #source: ByteSource;
  #window: Uint8Array;
  #start = 0;

  constructor(source: ByteSource) {
    this.#source = source;
    this.length = source.length;
    this.#window = source.bytes ?? new Uint8Array(0);
  }

  /** The byte at `at`; -1 outside the file. */
  at(at: number): number {
    const inWindow = at - this.#start;
    if (inWindow >= 0 && inWindow < this.#window.length) return this.#window[inWindow] ?? -1;
    if (at < 0 || at >= this.length) return -1;
    this.#start = Math.max(0, at - WINDOW_BACKTRACK_BYTES);
    this.#window = this.#source.read(this.#start, WINDOW_BYTES);
    return this.#window[at - this.#start] ?? -1;
  }

  matches(at: number, text: Buffer): boolean {
    for (let i = 0; i < text.length; i += 1) if (this.at(at + i) !== text[i]) return false;
    return true;
  }

  /** First place at or after `from` where `text` starts; -1 when none. */
  indexOf(text: Buffer, from: number): number {
    if (this.#source.bytes !== undefined) return asBuffer(this.#source.bytes).indexOf(text, from);
    for (let at = from; at < this.length; at += WINDOW_BYTES - text.length) {
      const chunk = asBuffer(this.#source.read(at, WINDOW_BYTES));
      const found = chunk.indexOf(text);
      if (found >= 0) return at + found;
      if (chunk.length < WINDOW_BYTES) return -1;
    }
    return -1;
  }
}

/**
 * One pass over the file: tokens outside stream data are skipped as pdf-lib reads them (comments,
 * strings, names, words), dictionaries are read in full, and stream data is skipped by the rule
 * pdf-lib uses, or left in the source.
 */
class SkeletonScan {
  readonly #source: ByteSource;
  readonly #ranges: StreamRanges;
  readonly #minBytes: number;
  readonly #cursor: Cursor;
  /** Pieces of the skeleton, and how far the source has been copied into them. */
  readonly #pieces: Uint8Array[] = [];
  #copied = 0;
  #pos = 0;

  constructor(source: ByteSource, ranges: StreamRanges, minBytes: number) {
    this.#source = source;
    this.#ranges = ranges;
    this.#minBytes = minBytes;
    this.#cursor = new Cursor(source);
  }

  run(): void {
    const cursor = this.#cursor;
    // pdf-lib looks for the header first; what comes before it is not read as syntax.
    const header = cursor.indexOf(Buffer.from('%PDF-', 'latin1'), 0);
    this.#pos = header < 0 ? stop() : header;
    while (this.#pos < cursor.length) {
      const byte = cursor.at(this.#pos);
      if (WHITESPACE.has(byte)) this.#pos += 1;
      else if (byte === 0x25) this.#pos = this.#skipComment(this.#pos);
      else if (byte === 0x28) this.#pos = this.#skipString(this.#pos);
      else if (byte === 0x3c && cursor.at(this.#pos + 1) === 0x3c) this.#dictionary();
      else if (byte === 0x3c) this.#pos = this.#skipHex(this.#pos);
      else if (byte === 0x2f) this.#pos = this.#skipRegular(this.#pos + 1);
      else if (DELIMITERS.has(byte)) this.#pos += 1;
      else this.#pos = this.#skipRegular(this.#pos);
    }
  }

  /** The skeleton: the pieces and the rest of the source. */
  finish(): Uint8Array {
    this.#copyTo(this.#source.length);
    return Buffer.concat(this.#pieces);
  }

  #copyTo(end: number): void {
    for (let at = this.#copied; at < end; at += READ_CHUNK_BYTES) {
      this.#pieces.push(this.#source.read(at, Math.min(READ_CHUNK_BYTES, end - at)));
    }
    this.#copied = Math.max(this.#copied, end);
  }

  /** A dictionary at the top level of the scan, and the stream that may follow it. */
  #dictionary(): void {
    const reader = new DictionaryReader(this.#cursor, this.#pos);
    const entries = reader.read();
    const afterDict = skipWhitespaceAndComments(this.#cursor, reader.pos);
    if (!this.#cursor.matches(afterDict, STREAM)) {
      this.#pos = reader.pos;
      return;
    }
    const start = afterDict + streamKeywordLength(this.#cursor, afterDict);
    const length = entries.get('Length');
    let end: number | undefined;
    if (length?.kind === 'number') {
      if (!/^\d+$/.test(length.text)) stop();
      const declared = start + Number(length.text);
      if (this.#cursor.matches(skipWhitespaceAndComments(this.#cursor, declared), END_STREAM)) {
        end = declared;
      }
    }
    // A direct /Length pdf-lib did not take leaves the data to its fallback: then the stand-in
    // could not be held to the same rule; such a stream stays in the skeleton.
    const rewrite = end !== undefined && length?.kind === 'number' ? length : undefined;
    const keepable = end !== undefined || length === undefined || length.kind === 'ref';
    end ??= this.#fallbackEnd(start);
    const type = entries.get('Type');
    const plainType =
      type === undefined ||
      (type.kind === 'name' && type.name !== 'ObjStm' && type.name !== 'XRef');
    if (keepable && plainType && end - start >= this.#minBytes) {
      const standIn = this.#ranges.add({ start, end, length: rewrite ? end - start : undefined });
      if (rewrite) {
        this.#copyTo(rewrite.start);
        this.#copied = rewrite.end;
        this.#pieces.push(Buffer.from(String(standIn.length), 'latin1'));
      }
      this.#copyTo(start);
      this.#pieces.push(standIn);
      this.#copied = end;
    }
    this.#pos = end;
  }

  /**
   * pdf-lib's `findEndOfStreamFallback`: from the data's start, a `stream` keyword opens a level
   * and an `endstream` (with the end of line before it, if any) closes one; the data ends where
   * the first level closes. Every keyword holds `stream`, so the scan jumps between its places.
   */
  #fallbackEnd(start: number): number {
    const cursor = this.#cursor;
    let nesting = 1;
    let at = start;
    for (;;) {
      const found = cursor.indexOf(STREAM, at);
      if (found < 0) stop();
      let moved = false;
      for (let candidate = Math.max(at, found - 5); candidate <= found; candidate += 1) {
        const closing = endStreamAt(cursor, candidate);
        if (cursor.matches(candidate, STREAM)) {
          nesting += 1;
          at = candidate + STREAM.length;
        } else if (closing > 0) {
          nesting -= 1;
          if (nesting === 0) return candidate;
          at = candidate + closing;
        } else {
          continue;
        }
        moved = true;
        break;
      }
      if (!moved) stop();
    }
  }

  #skipComment(at: number): number {
    let pos = at;
    for (let byte = this.#cursor.at(pos); byte !== -1 && byte !== CR && byte !== LF;) {
      pos += 1;
      byte = this.#cursor.at(pos);
    }
    return pos;
  }

  #skipString(at: number): number {
    return skipString(this.#cursor, at);
  }

  #skipHex(at: number): number {
    let pos = at + 1;
    for (let byte = this.#cursor.at(pos); byte !== 0x3e; byte = this.#cursor.at(pos)) {
      if (byte === -1) stop();
      pos += 1;
    }
    return pos + 1;
  }

  #skipRegular(at: number): number {
    let pos = at;
    for (let byte = this.#cursor.at(pos); byte !== -1; byte = this.#cursor.at(pos)) {
      if (WHITESPACE.has(byte) || DELIMITERS.has(byte)) break;
      pos += 1;
    }
    return pos;
  }
}

/** pdf-lib's `skipWhitespaceAndComments`. */
function skipWhitespaceAndComments(cursor: Cursor, at: number): number {
  let pos = at;
  for (;;) {
    while (WHITESPACE.has(cursor.at(pos))) pos += 1;
    if (cursor.at(pos) !== 0x25) return pos;
    while (cursor.at(pos) !== -1 && cursor.at(pos) !== CR && cursor.at(pos) !== LF) pos += 1;
  }
}

/** pdf-lib's `stream` keyword with what ends its line (`Keywords.streamEOF1` to `EOF4`). */
function streamKeywordLength(cursor: Cursor, at: number): number {
  const after = at + STREAM.length;
  if (cursor.at(after) === 0x20 && cursor.at(after + 1) === CR && cursor.at(after + 2) === LF) {
    return STREAM.length + 3;
  }
  if (cursor.at(after) === CR && cursor.at(after + 1) === LF) return STREAM.length + 2;
  if (cursor.at(after) === CR || cursor.at(after) === LF) return STREAM.length + 1;
  return STREAM.length;
}

/** Length of the `endstream` keyword (with CR LF, CR or LF before it) at `at`; 0 when none. */
function endStreamAt(cursor: Cursor, at: number): number {
  if (cursor.at(at) === CR && cursor.at(at + 1) === LF && cursor.matches(at + 2, END_STREAM)) {
    return END_STREAM.length + 2;
  }
  if ((cursor.at(at) === CR || cursor.at(at) === LF) && cursor.matches(at + 1, END_STREAM)) {
    return END_STREAM.length + 1;
  }
  return cursor.matches(at, END_STREAM) ? END_STREAM.length : 0;
}

/** pdf-lib's `parseString`: balanced parentheses, a backslash escaping the next byte. */
function skipString(cursor: Cursor, at: number): number {
  let pos = at;
  let nesting = 0;
  let escaped = false;
  for (;;) {
    const byte = cursor.at(pos);
    if (byte === -1) return stop();
    pos += 1;
    if (!escaped) {
      if (byte === 0x28) nesting += 1;
      if (byte === 0x29) nesting -= 1;
    }
    if (byte === 0x5c) escaped = !escaped;
    else if (escaped) escaped = false;
    if (nesting === 0) return pos;
  }
}

/**
 * Reads one dictionary as pdf-lib's `parseDict` does, keeping the top-level entries the scan
 * needs: `/Length` (a number with where its digits are, or a reference) and `/Type`. Anything it
 * would not parse, or a dictionary nested with stream data, stops the scan.
 */
class DictionaryReader {
  pos: number;
  readonly #cursor: Cursor;
  readonly #limit: number;

  constructor(cursor: Cursor, at: number) {
    this.#cursor = cursor;
    this.pos = at;
    this.#limit = at + MAX_DICT_BYTES;
  }

  read(): Map<string, Value> {
    return this.#dict(0);
  }

  #byte(offset = 0): number {
    if (this.pos + offset > this.#limit) stop();
    return this.#cursor.at(this.pos + offset);
  }

  #skip(): void {
    this.pos = skipWhitespaceAndComments(this.#cursor, this.pos);
    if (this.pos > this.#limit) stop();
  }

  #dict(depth: number): Map<string, Value> {
    if (depth > MAX_DICT_NESTING) stop();
    this.pos += 2;
    this.#skip();
    const entries = new Map<string, Value>();
    while (this.#byte() !== -1 && this.#byte() !== 0x3e && this.#byte(1) !== 0x3e) {
      if (this.#byte() !== 0x2f) stop();
      const key = this.#name();
      entries.set(key, this.#value(depth));
      this.#skip();
    }
    this.#skip();
    if (this.#byte() !== 0x3e || this.#byte(1) !== 0x3e) stop();
    this.pos += 2;
    return entries;
  }

  #name(): string {
    const start = (this.pos += 1);
    for (let byte = this.#byte(); byte !== -1; byte = this.#byte()) {
      if (WHITESPACE.has(byte) || DELIMITERS.has(byte)) break;
      this.pos += 1;
    }
    let raw = '';
    for (let at = start; at < this.pos; at += 1) raw += String.fromCharCode(this.#cursor.at(at));
    // pdf-lib's decodePdfNameEscapes.
    return raw.replace(/#([0-9A-Fa-f]{2})/g, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }

  #value(depth: number): Value {
    this.#skip();
    for (const word of ['true', 'false', 'null']) {
      if (this.#cursor.matches(this.pos, Buffer.from(word, 'latin1'))) {
        this.pos += word.length;
        return { kind: 'other' };
      }
    }
    const byte = this.#byte();
    if (byte === 0x3c && this.#byte(1) === 0x3c) {
      this.#dict(depth + 1);
      // A stream as a dictionary's value: pdf-lib would read it; the scan does not follow.
      if (this.#cursor.matches(skipWhitespaceAndComments(this.#cursor, this.pos), STREAM)) stop();
      return { kind: 'other' };
    }
    if (byte === 0x3c) {
      while (this.#byte() !== 0x3e) {
        if (this.#byte() === -1) stop();
        this.pos += 1;
      }
      this.pos += 1;
      return { kind: 'other' };
    }
    if (byte === 0x28) {
      this.pos = skipString(this.#cursor, this.pos);
      if (this.pos > this.#limit) stop();
      return { kind: 'other' };
    }
    if (byte === 0x2f) return { kind: 'name', name: this.#name() };
    if (byte === 0x5b) {
      if (depth + 1 > MAX_DICT_NESTING) stop();
      this.pos += 1;
      this.#skip();
      while (this.#byte() !== 0x5d) {
        if (this.#byte() === -1) stop();
        this.#value(depth + 1);
        this.#skip();
      }
      this.pos += 1;
      return { kind: 'other' };
    }
    if (NUMERIC.has(byte)) return this.#numberOrRef();
    return stop();
  }

  /** pdf-lib's `parseNumberOrRef`: a number, or `number number R`. */
  #numberOrRef(): Value {
    const start = this.pos;
    const text = this.#rawNumber();
    const end = this.pos;
    this.#skip();
    const lookahead = this.pos;
    if (isDigit(this.#byte())) {
      this.#rawNumber();
      this.#skip();
      if (this.#byte() === 0x52) {
        this.pos += 1;
        return { kind: 'ref' };
      }
    }
    this.pos = lookahead;
    return { kind: 'number', text, start, end };
  }

  /** pdf-lib's `parseRawNumber`: sign, digits and one point, then digits. */
  #rawNumber(): string {
    let text = '';
    for (let byte = this.#byte(); NUMERIC.has(byte); byte = this.#byte()) {
      text += String.fromCharCode(byte);
      this.pos += 1;
      if (byte === 0x2e) break;
    }
    for (let byte = this.#byte(); isDigit(byte); byte = this.#byte()) {
      text += String.fromCharCode(byte);
      this.pos += 1;
    }
    if (text === '' || !Number.isFinite(Number(text))) stop();
    return text;
  }
}
