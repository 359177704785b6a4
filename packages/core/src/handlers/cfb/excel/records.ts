/**
 * The BIFF8 record stream of an Excel 97-2003 workbook ([MS-XLS] 2.1.4): records of a 2-byte
 * type, a 2-byte size and their data, grouped into substreams that open with BOF and close with
 * EOF: the workbook globals first, then one substream per sheet at the offset its BOUNDSHEET8
 * record gives.
 */
import { u16le } from '../../../_internal/bytes.ts';
import { reject } from '../../../_internal/rejection.ts';

/** [MS-XLS] 2.1.4: a record's data is at most 8,224 bytes; longer data goes on in CONTINUE. */
const MAX_RECORD_BYTES = 8224;
/**
 * Records read from one workbook stream. A 20 MB sheet of numbers holds about 1.1 million; each
 * record read costs about 100 bytes of memory, so this bounds the walk to some 400 MB.
 */
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

/** One record as read: its type, its data (a view of the stream) and where it starts. */
export interface BiffRecord {
  readonly type: number;
  readonly data: Uint8Array;
  /** Offset of the record's header in the stream it was read from. */
  readonly offset: number;
}

/** A substream: BOF to EOF, nested substreams (a sheet's charts) included. */
export interface Substream {
  readonly offset: number;
  readonly records: readonly BiffRecord[];
}

/**
 * Reads the substreams of a workbook stream that start where the stream does and follow one
 * another. Bytes after the last substream's EOF that do not open another substream (the padding
 * some writers leave) are not read.
 * @throws {Rejection} `invalid_file` for a record that runs past the stream or is too long, a
 *   substream that does not open with BOF or never closes; `policy_violation` past
 *   {@link MAX_WORKBOOK_RECORDS}.
 */
export function readSubstreams(input: Uint8Array, what: string): Substream[] {
  // Views of a plain Uint8Array: a Buffer's subarray goes through its species constructor and
  // costs several times as much, a million times over on a large sheet.
  const stream = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const substreams: Substream[] = [];
  let records: BiffRecord[] = [];
  let depth = 0;
  let offset = 0;
  let count = 0;
  while (offset + 4 <= stream.length) {
    const type = u16le(stream, offset);
    const size = u16le(stream, offset + 2);
    if (depth === 0 && type !== RT.BOF) break;
    if (size > MAX_RECORD_BYTES) {
      reject(
        'invalid_file',
        `${what} has a record of ${size} bytes at offset ${offset}; BIFF8 records hold at most ${MAX_RECORD_BYTES} ([MS-XLS] 2.1.4)`,
      );
    }
    if (offset + 4 + size > stream.length) {
      reject(
        'invalid_file',
        `${what} is truncated: the record at offset ${offset} runs past the end of the workbook stream`,
      );
    }
    count += 1;
    if (count > MAX_WORKBOOK_RECORDS) {
      reject('policy_violation', `${what} holds more than ${MAX_WORKBOOK_RECORDS} records`);
    }
    const record = { type, data: stream.subarray(offset + 4, offset + 4 + size), offset };
    if (type === RT.BOF) {
      depth += 1;
      if (depth > MAX_SUBSTREAM_DEPTH) {
        reject('invalid_file', `${what} nests a substream inside a chart at offset ${offset}`);
      }
      if (depth === 1) records = [];
    }
    records.push(record);
    offset += 4 + size;
    if (type === RT.EOF) {
      depth -= 1;
      if (depth === 0) substreams.push({ offset: records[0]?.offset ?? 0, records });
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

/** A record to write: its type and data (at most {@link MAX_RECORD_BYTES}). */
export interface RecordOut {
  readonly type: number;
  readonly data: Uint8Array;
}

/** The bytes of `records` as a BIFF8 record stream. */
export function writeRecords(records: readonly RecordOut[]): Uint8Array {
  let length = 0;
  for (const record of records) length += 4 + record.data.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const record of records) {
    out[at] = record.type & 0xff;
    out[at + 1] = record.type >> 8;
    out[at + 2] = record.data.length & 0xff;
    out[at + 3] = record.data.length >> 8;
    out.set(record.data, at + 4);
    at += 4 + record.data.length;
  }
  return out;
}

/** Characters stored one byte each (Latin-1, [MS-XLS] 2.5.294 fHighByte 0) or as UTF-16LE. */
export function latin1OrUtf16(bytes: Uint8Array, wide: boolean): string {
  return Buffer.from(bytes).toString(wide ? 'utf16le' : 'latin1');
}
