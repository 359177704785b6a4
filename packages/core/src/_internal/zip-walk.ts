import { memorySource, PagedReader } from './byte-source.ts';
import type { ByteSource } from './byte-source.ts';

/**
 * A strict, dependency-free zip reader (PKWARE APPNOTE 6.3.10). It reads the end record, every
 * central-directory record and every local header, and holds them against each other; it never
 * inflates. The rebuild uses it to refuse inconsistent archives, and verify before release uses it
 * as a reader independent of the writer (yazl) and of the listing reader (yauzl).
 */

/** One member as both its central-directory record and its local header describe it. */
export interface WalkedEntry {
  /** Name bytes as stored. */
  readonly nameBytes: Uint8Array;
  /** The name decoded: UTF-8 when flag bit 11 is set or the bytes are ASCII; else `undefined`. */
  readonly name: string | undefined;
  readonly flags: number;
  readonly method: number;
  readonly crc32: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  readonly localHeaderOffset: number;
  /** First byte of the member's data. */
  readonly dataStart: number;
  /** First byte after the data and its data descriptor. */
  readonly end: number;
  readonly centralExtraBytes: number;
  readonly localExtraBytes: number;
  readonly commentBytes: number;
  /** External attributes (APPNOTE 4.4.15). */
  readonly externalAttributes: number;
}

/** A zip whose records all agree. */
export interface WalkedZip {
  readonly entries: readonly WalkedEntry[];
  /** Length of the archive comment. */
  readonly commentBytes: number;
}

/** The walk's answer: the archive, or the first inconsistency found, in words. */
export type ZipWalk =
  { readonly ok: true; readonly zip: WalkedZip } | { readonly ok: false; readonly problem: string };

const LOCAL_HEADER = 0x04034b50;
const CENTRAL_HEADER = 0x02014b50;
const END_RECORD = 0x06054b50;
const ZIP64_END_RECORD = 0x06064b50;
const ZIP64_LOCATOR = 0x07064b50;
const DATA_DESCRIPTOR = 0x08074b50;
const END_RECORD_BYTES = 22;
const ZIP64_LOCATOR_BYTES = 20;
/** APPNOTE 4.3.14: the ZIP64 end record up to its extensible data sector. */
const ZIP64_END_RECORD_BYTES = 56;
const CENTRAL_HEADER_BYTES = 46;
const LOCAL_HEADER_BYTES = 30;
const MAX_COMMENT_BYTES = 0xffff;
const ZIP64_EXTRA = 0x0001;
/** APPNOTE 4.4.4 flag bits that must be the same in both records. */
const FLAG_ENCRYPTED = 0x0001;
const FLAG_DATA_DESCRIPTOR = 0x0008;
const FLAGS_COMPARED = FLAG_ENCRYPTED | FLAG_DATA_DESCRIPTOR | 0x0040 | 0x0800 | 0x2000;

class Problem extends Error {}

function fail(problem: string): never {
  throw new Problem(problem);
}

/**
 * Walks `content` (in memory, or a file read by range: only headers are read) as a zip: the end record must end the file, the central directory must end where
 * the end record begins, every record must point at a local header that repeats its name, flags,
 * method, CRC and sizes (or defers them to a data descriptor that does), members must follow one
 * another with no gap and no overlap from offset 0 to the central directory, and directory entries
 * must hold no data. Every offset and length is checked against the buffer before use.
 */
export function walkZip(content: Uint8Array | ByteSource): ZipWalk {
  try {
    return { ok: true, zip: walk(readerOf(content)) };
  } catch (error) {
    if (error instanceof Problem) return { ok: false, problem: error.message };
    throw error;
  }
}

function walk(bytes: PagedReader): WalkedZip {
  const { count, centralStart, centralSize, centralEnd, commentBytes } = readEnd(bytes);
  if (centralStart + centralSize !== centralEnd) {
    fail('the central directory does not end where the end record begins');
  }
  const entries: WalkedEntry[] = [];
  const owners = new Map<number, string>();
  let offset = centralStart;
  for (let index = 0; index < count; index += 1) {
    const entry = readCentralRecord(bytes, offset, centralEnd, owners);
    entries.push(entry.walked);
    offset = entry.next;
  }
  if (offset !== centralEnd) {
    fail('the central directory holds more records than the end record counts');
  }
  checkLayout(entries, centralStart, bytes);
  return { entries, commentBytes };
}

/**
 * APPNOTE 4.3.16: the end of central directory records that start within `window` bytes before
 * the last place one fits, last first, each with where its comment ends (maybe past the file).
 */
export function* endRecords(
  content: Uint8Array | ByteSource | PagedReader,
  window: number,
): Generator<{ readonly offset: number; readonly end: number }, void, undefined> {
  const bytes = readerOf(content);
  const last = bytes.length - END_RECORD_BYTES;
  for (let offset = last; offset >= Math.max(0, last - window); offset -= 1) {
    if (bytes.u32(offset) !== END_RECORD) continue;
    yield { offset, end: offset + END_RECORD_BYTES + bytes.u16(offset + 20) };
  }
}

/** APPNOTE 4.3.16: the end record, whose comment must reach exactly to the end of the file. */
function findEndRecord(bytes: PagedReader): number {
  if (bytes.length < END_RECORD_BYTES) fail('the archive is shorter than an end record');
  let seen = false;
  for (const record of endRecords(bytes, MAX_COMMENT_BYTES)) {
    seen = true;
    if (record.end === bytes.length) return record.offset;
  }
  return fail(
    seen ? 'there is data after the end of the central directory' : 'there is no end record',
  );
}

/** Where the central directory is, as the end records (APPNOTE 4.3.14-4.3.16) say. */
export interface ZipEnd {
  /** Central-directory records. */
  readonly count: number;
  /** First byte of the central directory. */
  readonly centralStart: number;
  /** Bytes of the central directory, as the end records state it. */
  readonly centralSize: number;
  /** Where the central directory ends: the ZIP64 end record, or else the end record. */
  readonly centralEnd: number;
  /** Length of the archive comment. */
  readonly commentBytes: number;
}

/**
 * Reads the end of central directory record that ends `bytes` and, when a ZIP64 locator precedes
 * it, the ZIP64 end record, and holds them to one archive on one disk. APPNOTE 4.4.1.4: a field of
 * the end record that holds its maximum (0xFFFF, 0xFFFFFFFF) defers to the ZIP64 end record, any
 * other must say what the ZIP64 record says; disk numbers, the locator's count of disks and the
 * records on this disk must all describe a single disk (the engine reads no split archive).
 */
export function readZipEnd(
  content: Uint8Array | ByteSource,
): { readonly ok: true; readonly end: ZipEnd } | { readonly ok: false; readonly problem: string } {
  try {
    return { ok: true, end: readEnd(readerOf(content)) };
  } catch (error) {
    if (error instanceof Problem) return { ok: false, problem: error.message };
    throw error;
  }
}

/** The end record's fields (APPNOTE 4.3.16) or the ZIP64 end record's (4.3.14), widened. */
interface EndFields {
  readonly disk: number;
  readonly centralDisk: number;
  readonly countOnDisk: number;
  readonly count: number;
  readonly centralSize: number;
  readonly centralStart: number;
}

const FIELD_WORDS: Readonly<Record<keyof EndFields, string>> = {
  disk: 'the number of this disk',
  centralDisk: 'the disk the central directory starts on',
  countOnDisk: 'the records on this disk',
  count: 'the number of records',
  centralSize: 'the size of the central directory',
  centralStart: 'where the central directory starts',
};

function readEnd(bytes: PagedReader): ZipEnd {
  const end = findEndRecord(bytes);
  const fields: EndFields = {
    disk: bytes.u16(end + 4),
    centralDisk: bytes.u16(end + 6),
    countOnDisk: bytes.u16(end + 8),
    count: bytes.u16(end + 10),
    centralSize: bytes.u32(end + 12),
    centralStart: bytes.u32(end + 16),
  };
  const commentBytes = bytes.u16(end + 20);
  const locator = end - ZIP64_LOCATOR_BYTES;
  let read = fields;
  let centralEnd = end;
  if (locator >= 0 && bytes.u32(locator) === ZIP64_LOCATOR) {
    const zip64 = readZip64End(bytes, locator);
    for (const key of Object.keys(FIELD_WORDS) as (keyof EndFields)[]) {
      // APPNOTE 4.4.1.4: the maximum defers to the ZIP64 record; a value that fits must agree.
      const max = key === 'centralSize' || key === 'centralStart' ? 0xffffffff : 0xffff;
      if (fields[key] !== max && fields[key] !== zip64.fields[key]) {
        fail(`the end record and the ZIP64 end record disagree on ${FIELD_WORDS[key]}`);
      }
    }
    read = zip64.fields;
    centralEnd = zip64.recordStart;
  } else if (
    fields.disk === 0xffff ||
    fields.centralDisk === 0xffff ||
    fields.countOnDisk === 0xffff ||
    fields.count === 0xffff ||
    fields.centralSize === 0xffffffff ||
    fields.centralStart === 0xffffffff
  ) {
    fail('the end record needs a ZIP64 end record, and there is none');
  }
  if (read.disk !== 0 || read.centralDisk !== 0) {
    fail(
      `the archive spans several disks (this is disk ${read.disk}, the central directory starts on disk ${read.centralDisk})`,
    );
  }
  if (read.countOnDisk !== read.count) {
    fail(
      `the archive spans several disks (${read.countOnDisk} of its ${read.count} central-directory records are on this disk)`,
    );
  }
  return {
    count: read.count,
    centralStart: read.centralStart,
    centralSize: read.centralSize,
    centralEnd,
    commentBytes,
  };
}

/** APPNOTE 4.3.14-4.3.15: the ZIP64 end record the locator at `locator` points at. */
function readZip64End(
  bytes: PagedReader,
  locator: number,
): { readonly fields: EndFields; readonly recordStart: number } {
  const recordDisk = bytes.u32(locator + 4);
  // A single-disk archive is one disk of one; minizip wrote 0 here before 2018 (minizip-ng #234).
  const disks = bytes.u32(locator + 16);
  if (recordDisk !== 0 || disks > 1) {
    fail(
      `the archive spans several disks (its ZIP64 locator counts ${disks} disks and puts the ZIP64 end record on disk ${recordDisk})`,
    );
  }
  const recordStart = u64le(bytes, locator + 8);
  if (
    recordStart + ZIP64_END_RECORD_BYTES > locator ||
    bytes.u32(recordStart) !== ZIP64_END_RECORD
  ) {
    fail('the ZIP64 locator does not point at a ZIP64 end record');
  }
  if (recordStart + 12 + u64le(bytes, recordStart + 4) !== locator) {
    fail('the ZIP64 end record does not end at its locator');
  }
  return {
    fields: {
      disk: bytes.u32(recordStart + 16),
      centralDisk: bytes.u32(recordStart + 20),
      countOnDisk: u64le(bytes, recordStart + 24),
      count: u64le(bytes, recordStart + 32),
      centralSize: u64le(bytes, recordStart + 40),
      centralStart: u64le(bytes, recordStart + 48),
    },
    recordStart,
  };
}

interface Sizes {
  uncompressed: number;
  compressed: number;
  offset: number;
}

function readCentralRecord(
  bytes: PagedReader,
  offset: number,
  limit: number,
  owners: Map<number, string>,
): { walked: WalkedEntry; next: number } {
  if (offset + CENTRAL_HEADER_BYTES > limit || bytes.u32(offset) !== CENTRAL_HEADER) {
    fail('the central directory holds fewer records than the end record counts');
  }
  const nameLength = bytes.u16(offset + 28);
  const extraLength = bytes.u16(offset + 30);
  const commentLength = bytes.u16(offset + 32);
  const next = offset + CENTRAL_HEADER_BYTES + nameLength + extraLength + commentLength;
  if (next > limit) fail('a central-directory record runs past the directory');
  const nameBytes = bytes.slice(offset + 46, offset + 46 + nameLength);
  const extra: Range = {
    start: offset + 46 + nameLength,
    end: offset + 46 + nameLength + extraLength,
  };
  const flags = bytes.u16(offset + 8);
  const sizes = withZip64(
    {
      uncompressed: bytes.u32(offset + 24),
      compressed: bytes.u32(offset + 20),
      offset: bytes.u32(offset + 42),
    },
    bytes,
    extra,
    true,
  );
  if (bytes.u16(offset + 34) !== 0 && bytes.u16(offset + 34) !== 0xffff) {
    fail('a member lives on another disk');
  }
  const central = {
    nameBytes,
    name: decodeName(nameBytes, flags),
    flags,
    method: bytes.u16(offset + 10),
    crc32: bytes.u32(offset + 16),
    compressedSize: sizes.compressed,
    uncompressedSize: sizes.uncompressed,
    localHeaderOffset: sizes.offset,
    centralExtraBytes: extraLength,
    commentBytes: commentLength,
    externalAttributes: bytes.u32(offset + 38),
  };
  const label = central.name ?? '(undecodable name)';
  const owner = owners.get(central.localHeaderOffset);
  if (owner !== undefined) {
    fail(`members "${owner}" and "${label}" share one local entry (overlapping entries)`);
  }
  owners.set(central.localHeaderOffset, label);
  const local = readLocalHeader(bytes, central);
  return { walked: { ...central, ...local }, next };
}

/** APPNOTE 4.5.3: ZIP64 values replace, in order, only the fields that hold 0xFFFFFFFF. */
/** A span of the archive, `[start, end)`. */
interface Range {
  readonly start: number;
  readonly end: number;
}

function withZip64(sizes: Sizes, bytes: PagedReader, extra: Range, central: boolean): Sizes {
  const needs = {
    uncompressed: sizes.uncompressed === 0xffffffff,
    compressed: sizes.compressed === 0xffffffff,
    offset: central && sizes.offset === 0xffffffff,
  };
  if (!needs.uncompressed && !needs.compressed && !needs.offset) return sizes;
  const field = findExtraField(bytes, extra, ZIP64_EXTRA);
  if (!field) fail('a member needs a ZIP64 extra field, and has none');
  let at = field.start;
  const take = (): number => {
    if (at + 8 > field.end) fail('a ZIP64 extra field is too short');
    const value = u64le(bytes, at);
    at += 8;
    return value;
  };
  const uncompressed = needs.uncompressed ? take() : sizes.uncompressed;
  const compressed = needs.compressed ? take() : sizes.compressed;
  const offset = needs.offset ? take() : sizes.offset;
  return { uncompressed, compressed, offset };
}

function findExtraField(bytes: PagedReader, extra: Range, id: number): Range | undefined {
  let at = extra.start;
  while (at + 4 <= extra.end) {
    const fieldId = bytes.u16(at);
    const size = bytes.u16(at + 2);
    if (at + 4 + size > extra.end) fail('an extra field runs past its header');
    if (fieldId === id) return { start: at + 4, end: at + 4 + size };
    at += 4 + size;
  }
  return undefined;
}

type CentralView = Omit<WalkedEntry, 'dataStart' | 'end' | 'localExtraBytes'>;

/** APPNOTE 4.3.7 and 4.3.9: the local header, and the data descriptor when bit 3 defers to it. */
function readLocalHeader(
  bytes: PagedReader,
  central: CentralView,
): Pick<WalkedEntry, 'dataStart' | 'end' | 'localExtraBytes'> {
  const at = central.localHeaderOffset;
  const label = `member "${central.name ?? '(undecodable name)'}"`;
  if (at + LOCAL_HEADER_BYTES > bytes.length || bytes.u32(at) !== LOCAL_HEADER) {
    fail(`the central directory points ${label} at something that is not a local header`);
  }
  const nameLength = bytes.u16(at + 26);
  const extraLength = bytes.u16(at + 28);
  const dataStart = at + LOCAL_HEADER_BYTES + nameLength + extraLength;
  if (dataStart > bytes.length) fail(`the local header of ${label} is truncated`);
  if (!sameBytes(bytes, at + 30, nameLength, central.nameBytes)) {
    fail(
      `the local header of ${label} names it "${Buffer.from(bytes.slice(at + 30, at + 30 + nameLength)).toString('latin1')}" (central directory and local header disagree)`,
    );
  }
  const flags = bytes.u16(at + 6);
  if ((flags & FLAGS_COMPARED) !== (central.flags & FLAGS_COMPARED)) {
    fail(`the central directory and the local header of ${label} disagree on its flags`);
  }
  if (bytes.u16(at + 8) !== central.method) {
    fail(`the central directory and the local header of ${label} disagree on its compression`);
  }
  const localExtra: Range = { start: at + 30 + nameLength, end: dataStart };
  const crc = bytes.u32(at + 14);
  const declared = withZip64(
    { uncompressed: bytes.u32(at + 22), compressed: bytes.u32(at + 18), offset: 0 },
    bytes,
    localExtra,
    false,
  );
  const dataEnd = dataStart + central.compressedSize;
  if (dataEnd > bytes.length) fail(`${label} reaches past the end of the archive`);
  let end = dataEnd;
  if ((flags & FLAG_DATA_DESCRIPTOR) === 0) {
    assertSameValues(label, central, { crc, ...declared });
  } else {
    // APPNOTE 4.4.4 bit 3: the local values are zero and the real ones follow the data. Some
    // writers (macOS Archive Utility) fill in some of them; each must then be the true one.
    assertSameValues(label, central, {
      crc: crc === 0 ? central.crc32 : crc,
      compressed: declared.compressed === 0 ? central.compressedSize : declared.compressed,
      uncompressed: declared.uncompressed === 0 ? central.uncompressedSize : declared.uncompressed,
    });
    end = readDataDescriptor(
      bytes,
      dataEnd,
      central,
      label,
      findExtraField(bytes, localExtra, ZIP64_EXTRA) !== undefined,
    );
  }
  if (central.name?.endsWith('/') === true && central.uncompressedSize > 0) {
    fail(`the directory entry "${central.name}" carries ${central.uncompressedSize} bytes of data`);
  }
  return { dataStart, end, localExtraBytes: extraLength };
}

function assertSameValues(
  label: string,
  central: CentralView,
  local: { crc: number; compressed: number; uncompressed: number },
): void {
  if (local.crc !== central.crc32) {
    fail(`the central directory and the local header of ${label} disagree on its CRC-32`);
  }
  if (
    local.compressed !== central.compressedSize ||
    local.uncompressed !== central.uncompressedSize
  ) {
    fail(`the central directory and the local header of ${label} disagree on its sizes`);
  }
}

function readDataDescriptor(
  bytes: PagedReader,
  at: number,
  central: CentralView,
  label: string,
  zip64: boolean,
): number {
  const signed = at + 4 <= bytes.length && bytes.u32(at) === DATA_DESCRIPTOR;
  const start = signed ? at + 4 : at;
  const wide = zip64 || central.compressedSize >= 0xffffffff;
  const length = wide ? 20 : 12;
  if (start + length > bytes.length) fail(`the data descriptor of ${label} is truncated`);
  const values = {
    crc: bytes.u32(start),
    compressed: wide ? u64le(bytes, start + 4) : bytes.u32(start + 4),
    uncompressed: wide ? u64le(bytes, start + 12) : bytes.u32(start + 8),
  };
  assertSameValues(label, central, values);
  return start + length;
}

/**
 * APPNOTE 4.3.6: members follow one another. Sorted by offset, each must start where the previous
 * one ends, the first at 0, the last ending where the central directory starts; anything else is
 * shared data (overlapping entries), a member the directory does not list, or hidden bytes.
 */
function checkLayout(
  entries: readonly WalkedEntry[],
  centralStart: number,
  bytes: PagedReader,
): void {
  const sorted = [...entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  let expected = 0;
  let previous: WalkedEntry | undefined;
  for (const entry of sorted) {
    if (entry.localHeaderOffset < expected && previous) {
      fail(
        `members "${previous.name ?? '?'}" and "${entry.name ?? '?'}" overlap (entries sharing data)`,
      );
    }
    if (entry.localHeaderOffset > expected) gap(bytes, expected, entry.localHeaderOffset);
    expected = entry.end;
    previous = entry;
  }
  if (expected > centralStart) fail('a member overlaps the central directory');
  if (expected < centralStart) gap(bytes, expected, centralStart);
}

function gap(bytes: PagedReader, from: number, to: number): never {
  for (let at = from; at + 4 <= to; at += 1) {
    if (bytes.u32(at) === LOCAL_HEADER) {
      fail('the archive holds a local entry that the central directory does not list');
    }
  }
  return fail(
    from === 0
      ? 'there is data before the first member'
      : `there are ${to - from} unaccounted bytes between members`,
  );
}

/** Reads of `content` by absolute offset: in place in memory, through cached pages from a file. */
function readerOf(content: Uint8Array | ByteSource | PagedReader): PagedReader {
  if (content instanceof PagedReader) return content;
  return new PagedReader(content instanceof Uint8Array ? memorySource(content) : content);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeName(nameBytes: Uint8Array, flags: number): string | undefined {
  const ascii = nameBytes.every((byte) => byte < 0x80);
  if (ascii) return String.fromCharCode(...nameBytes);
  if ((flags & 0x0800) === 0) return undefined;
  try {
    return UTF8.decode(nameBytes);
  } catch {
    return undefined;
  }
}

/** True when `bytes` holds `expected` at `start`, `length` bytes long. */
function sameBytes(
  bytes: PagedReader,
  start: number,
  length: number,
  expected: Uint8Array,
): boolean {
  if (length !== expected.length) return false;
  for (let i = 0; i < length; i += 1) if (bytes.byte(start + i) !== expected[i]) return false;
  return true;
}

/** Little-endian 64-bit read; values past 2^53 are refused as absurd for any file. */
function u64le(bytes: PagedReader, offset: number): number {
  if (offset + 8 > bytes.length) fail('a ZIP64 field runs past the end of the archive');
  const high = bytes.u32(offset + 4);
  if (high > 0x1fffff) fail('a ZIP64 field holds an impossible value');
  return high * 0x100000000 + bytes.u32(offset);
}
