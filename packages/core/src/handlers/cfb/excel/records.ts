/**
 * The BIFF8 record stream of an Excel 97-2003 workbook ([MS-XLS] 2.1.4): records of a 2-byte
 * type, a 2-byte size and their data, grouped into substreams that open with BOF and close with
 * EOF: the workbook globals first, then one substream per sheet at the offset its BOUNDSHEET8
 * record gives. A 20 MB sheet holds about a million records, so they are read in place by a
 * {@link RecordCursor} and written by copying byte ranges ({@link RecordWriter}), never as an
 * object per record.
 */
import { u16le } from '../../../_internal/bytes.ts';
import { reject } from '../../../_internal/rejection.ts';

/** [MS-XLS] 2.1.4: a record's data is at most 8,224 bytes; longer data goes on in CONTINUE. */
const MAX_RECORD_BYTES = 8224;
/** [MS-XLS] 2.1.4: a record's type and size before its data. */
export const RECORD_HEADER_BYTES = 4;
/** Records read from one workbook stream: a 20 MB sheet of numbers holds about 1.1 million. */
const MAX_WORKBOOK_RECORDS = 4_000_000;
/** Substreams nested inside one another: a chart inside a sheet is the only nesting BIFF8 has. */
const MAX_SUBSTREAM_DEPTH = 2;

/** Record types ([MS-XLS] 2.3) the rebuild reads. */
export const RT = {
  BOF: 0x0809,
  EOF: 0x000a,
  CONTINUE: 0x003c,
  FILEPASS: 0x002f,
  BOUNDSHEET8: 0x0085,
  SST: 0x00fc,
  EXTSST: 0x00ff,
  NAME: 0x0018,
  SUPBOOK: 0x01ae,
  EXTERNNAME: 0x0023,
  FORMULA: 0x0006,
  STRING: 0x0207,
  SHRFMLA: 0x04bc,
  ARRAY: 0x0221,
  NUMBER: 0x0203,
  LABEL: 0x0204,
  BOOLERR: 0x0205,
  BLANK: 0x0201,
  OBJ: 0x005d,
  HLINK: 0x01b8,
  HLINKTOOLTIP: 0x0800,
  BRAI: 0x1051,
  OBJPROJ: 0x00d3,
  CODENAME: 0x01ba,
} as const;

/** A substream: BOF to EOF, nested substreams (a sheet's charts) included. */
export interface Substream {
  /** Offset of its BOF record's header in the workbook stream. */
  readonly offset: number;
  /** Offset just past its EOF record. */
  readonly end: number;
  /** Whether it holds shared or array formulas (SHRFMLA, ARRAY), which its cells may name. */
  readonly formulaGroups: boolean;
}

/**
 * A plain Uint8Array view of `input`: a Buffer's subarray goes through its species constructor
 * and costs several times as much, which tells on a sheet of a million records.
 */
export function plainView(input: Uint8Array): Uint8Array {
  return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
}

/**
 * Finds the substreams of a workbook stream that start where the stream does and follow one
 * another, checking every record header on the way. Bytes after the last substream's EOF that do
 * not open another substream (the padding some writers leave) are not read.
 * @throws {Rejection} `invalid_file` for a record that runs past the stream or is too long, a
 *   substream that does not open with BOF or never closes; `policy_violation` past
 *   {@link MAX_WORKBOOK_RECORDS}.
 */
export function readSubstreams(stream: Uint8Array, what: string): Substream[] {
  const substreams: Substream[] = [];
  let depth = 0;
  let start = 0;
  let offset = 0;
  let count = 0;
  let formulaGroups = false;
  while (offset + RECORD_HEADER_BYTES <= stream.length) {
    const type = u16le(stream, offset);
    const size = u16le(stream, offset + 2);
    if (depth === 0 && type !== RT.BOF) break;
    if (size > MAX_RECORD_BYTES) {
      reject(
        'invalid_file',
        `${what} has a record of ${size} bytes at offset ${offset}; BIFF8 records hold at most ${MAX_RECORD_BYTES} ([MS-XLS] 2.1.4)`,
      );
    }
    if (offset + RECORD_HEADER_BYTES + size > stream.length) {
      reject(
        'invalid_file',
        `${what} is truncated: the record at offset ${offset} runs past the end of the workbook stream`,
      );
    }
    count += 1;
    if (count > MAX_WORKBOOK_RECORDS) {
      reject('policy_violation', `${what} holds more than ${MAX_WORKBOOK_RECORDS} records`);
    }
    if (type === RT.BOF) {
      depth += 1;
      if (depth > MAX_SUBSTREAM_DEPTH) {
        reject('invalid_file', `${what} nests a substream inside a chart at offset ${offset}`);
      }
      if (depth === 1) {
        start = offset;
        formulaGroups = false;
      }
    }
    if (type === RT.SHRFMLA || type === RT.ARRAY) formulaGroups = true;
    offset += RECORD_HEADER_BYTES + size;
    if (type === RT.EOF) {
      depth -= 1;
      if (depth === 0) substreams.push({ offset: start, end: offset, formulaGroups });
    }
  }
  if (depth !== 0) {
    reject(
      'invalid_file',
      `${what} is truncated: a substream has no EOF record ([MS-XLS] 2.4.103)`,
    );
  }
  if (substreams.length === 0) {
    reject('invalid_file', `${what} has no workbook globals: its stream does not open with BOF`);
  }
  return substreams;
}

/**
 * A walk over the records of a range of a BIFF8 record stream that reads each header where it
 * lies: the current record's type, offset and size are fields, and a view of its data is made
 * only when asked for. Moving by group ({@link nextGroup}) takes a record together with the
 * CONTINUE records that carry the rest of its data.
 *
 * It checks only that a header lies within the range; a caller walking a range
 * {@link readSubstreams} has not checked compares {@link end} with the range's end.
 * @example
 * ```ts
 * const records = new RecordCursor(stream);
 * while (records.next()) if (records.type === RT.FORMULA) judge(records.data());
 * ```
 */
export class RecordCursor {
  /** The stream walked, as a plain Uint8Array (see {@link plainView}). */
  readonly stream: Uint8Array;
  readonly #to: number;
  #next: number;
  #offset = -1;
  #type = -1;
  #size = 0;

  /** A walk over the records from offset `from` to `to` of `stream`. */
  constructor(stream: Uint8Array, from = 0, to = stream.length) {
    this.stream = plainView(stream);
    this.#next = from;
    this.#to = to;
  }

  /** Moves to the next record; `false` when no record header is left in the range. */
  next(): boolean {
    const at = this.#next;
    if (at + RECORD_HEADER_BYTES > this.#to) return false;
    this.#offset = at;
    this.#type = u16le(this.stream, at);
    this.#size = u16le(this.stream, at + 2);
    this.#next = at + RECORD_HEADER_BYTES + this.#size;
    return true;
  }

  /** Offset of the current record's header. */
  get offset(): number {
    return this.#offset;
  }

  /** The current record's type, or -1 before the first. */
  get type(): number {
    return this.#type;
  }

  /** The size of the current record's data (without its CONTINUE records). */
  get size(): number {
    return this.#size;
  }

  /** Moves to the next record and past the CONTINUE records after it; `false` at the end. */
  nextGroup(): boolean {
    if (!this.next()) return false;
    while (
      this.#next + RECORD_HEADER_BYTES <= this.#to &&
      u16le(this.stream, this.#next) === RT.CONTINUE
    ) {
      this.#next += RECORD_HEADER_BYTES + u16le(this.stream, this.#next + 2);
    }
    return true;
  }

  /** Offset of the current record's data in {@link stream}. */
  get dataAt(): number {
    return this.offset + RECORD_HEADER_BYTES;
  }

  /**
   * Offset just past the current record, or past its last CONTINUE record after
   * {@link nextGroup}.
   */
  get end(): number {
    return this.#next;
  }

  /** Offset just past the current record's own data: where its CONTINUE records start. */
  get headEnd(): number {
    return this.offset + RECORD_HEADER_BYTES + this.size;
  }

  /** Whether CONTINUE records follow the current record (after {@link nextGroup}). */
  get continued(): boolean {
    return this.#next !== this.headEnd;
  }

  /** A view of the current record's data from `from` to `to`, both within the record. */
  data(from = 0, to = this.size): Uint8Array {
    const at = this.offset + RECORD_HEADER_BYTES;
    return this.stream.subarray(at + Math.min(from, this.size), at + Math.min(to, this.size));
  }

  /** The byte at `at` of the current record's data; 0 past its end. */
  byte(at: number): number {
    return at < this.size ? (this.stream[this.offset + RECORD_HEADER_BYTES + at] ?? 0) : 0;
  }

  /** The little-endian 16-bit field at `at` of the current record's data; 0s past its end. */
  u16(at: number): number {
    return this.byte(at) | (this.byte(at + 1) << 8);
  }

  /** The data of the current record and of its CONTINUE records, joined. */
  joined(): Uint8Array {
    if (!this.continued) return this.data();
    const parts: Uint8Array[] = [this.data()];
    for (
      let at = this.headEnd;
      at < this.#next;
      at += RECORD_HEADER_BYTES + u16le(this.stream, at + 2)
    ) {
      parts.push(
        this.stream.subarray(
          at + RECORD_HEADER_BYTES,
          at + RECORD_HEADER_BYTES + u16le(this.stream, at + 2),
        ),
      );
    }
    return Buffer.concat(parts);
  }
}

/**
 * A BIFF8 record stream being written into one buffer, sized up front for the stream it is
 * rebuilt from: records copied from that stream as they are ({@link copy}) are byte ranges, and
 * ranges that follow one another there are copied in one move.
 */
export class RecordWriter {
  readonly #source: Uint8Array;
  #bytes: Uint8Array;
  #length = 0;
  #runFrom = 0;
  #runTo = 0;

  /** A writer of records copied from `source` or made anew; `capacity` is its first size. */
  constructor(source: Uint8Array, capacity = source.length) {
    this.#source = plainView(source);
    this.#bytes = new Uint8Array(capacity);
  }

  /** Bytes written so far: where the next record's header goes. */
  get length(): number {
    return this.#length + this.#runTo - this.#runFrom;
  }

  /** Copies the bytes from `from` to `to` of the source stream: whole records, as they are. */
  copy(from: number, to: number): void {
    if (from !== this.#runTo || this.#runTo === this.#runFrom) {
      this.#flush();
      this.#runFrom = from;
    }
    this.#runTo = to;
  }

  /**
   * Writes a record of `type` holding `data` (at most {@link MAX_RECORD_BYTES}); returns where
   * its data starts.
   */
  write(type: number, data: Uint8Array): number {
    this.#flush();
    this.#reserve(RECORD_HEADER_BYTES + data.length);
    const bytes = this.#bytes;
    const at = this.#length;
    bytes[at] = type & 0xff;
    bytes[at + 1] = type >> 8;
    bytes[at + 2] = data.length & 0xff;
    bytes[at + 3] = data.length >> 8;
    bytes.set(data, at + RECORD_HEADER_BYTES);
    this.#length = at + RECORD_HEADER_BYTES + data.length;
    return at + RECORD_HEADER_BYTES;
  }

  /** The stream written. */
  finish(): Uint8Array {
    this.#flush();
    return this.#bytes.subarray(0, this.#length);
  }

  #flush(): void {
    const size = this.#runTo - this.#runFrom;
    if (size === 0) return;
    this.#reserve(size);
    this.#bytes.set(this.#source.subarray(this.#runFrom, this.#runTo), this.#length);
    this.#length += size;
    this.#runFrom = this.#runTo = 0;
  }

  /** Room for `size` more bytes: records made anew (a disarmed name) may outgrow the source. */
  #reserve(size: number): void {
    const needed = this.#length + size;
    if (needed <= this.#bytes.length) return;
    const grown = new Uint8Array(Math.max(needed, this.#bytes.length * 2));
    grown.set(this.#bytes.subarray(0, this.#length));
    this.#bytes = grown;
  }
}

/** Characters stored one byte each (Latin-1, [MS-XLS] 2.5.294 fHighByte 0) or as UTF-16LE. */
export function latin1OrUtf16(bytes: Uint8Array, wide: boolean): string {
  return Buffer.from(bytes).toString(wide ? 'utf16le' : 'latin1');
}
