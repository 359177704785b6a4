/**
 * Zip (APPNOTE 6.3.10) and gzip (RFC 1952) layouts, and the member-level view the container
 * mutators use: read the members, change one, write a well-formed container again.
 */
import { crc32, deflateRawSync, gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';

import type { Describe } from './types.ts';
import { LayoutBuilder, u16le, u32le } from './types.ts';

const LOCAL_SIGNATURE = 0x04034b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const END_SIGNATURE = 0x06054b50;
const END_RECORD_BYTES = 22;
/** The end record's comment is at most 64 KiB, so it starts within this many bytes of the end. */
const MAX_END_SEARCH_BYTES = END_RECORD_BYTES + 0xffff;
/** Members the mutators read out of one zip. */
export const MAX_ZIP_MEMBERS = 512;
/** Largest member the mutators inflate (the fuzzer's inputs are small; bombs stay bombs). */
export const MAX_MEMBER_BYTES = 8 * 1024 * 1024;

/** Where the end of central directory record starts, or -1. */
export function findEndRecord(bytes: Uint8Array): number {
  const stop = Math.max(0, bytes.length - MAX_END_SEARCH_BYTES);
  for (let offset = bytes.length - END_RECORD_BYTES; offset >= stop; offset -= 1) {
    if (u32le(bytes, offset) === END_SIGNATURE) return offset;
  }
  return -1;
}

/** Zip: local records, central records, the end record; every size, offset and count. */
export const describeZip: Describe = (bytes) => {
  if (u32le(bytes, 0) !== LOCAL_SIGNATURE && findEndRecord(bytes) < 0) return undefined;
  const layout = new LayoutBuilder();
  const end = findEndRecord(bytes);
  // Local records, walked from the front as a streaming reader would.
  for (let offset = 0; u32le(bytes, offset) === LOCAL_SIGNATURE && !layout.isFull();) {
    const compressed = u32le(bytes, offset + 18) ?? 0;
    const nameLength = u16le(bytes, offset + 26) ?? 0;
    const extraLength = u16le(bytes, offset + 28) ?? 0;
    const next = offset + 30 + nameLength + extraLength + compressed;
    layout.field(offset + 6, 2, 'le', 'value');
    layout.field(offset + 8, 2, 'le', 'value');
    layout.field(offset + 14, 4, 'le', 'value');
    layout.field(offset + 18, 4, 'le', 'length');
    layout.field(offset + 22, 4, 'le', 'length');
    layout.field(offset + 26, 2, 'le', 'length');
    layout.field(offset + 28, 2, 'le', 'length');
    layout.part(offset, Math.min(next, bytes.length), 'local');
    if (next <= offset || next > bytes.length) break;
    offset = next;
  }
  if (end >= 0) {
    layout.part(end, bytes.length, 'end');
    layout.field(end + 8, 2, 'le', 'count');
    layout.field(end + 10, 2, 'le', 'count');
    layout.field(end + 12, 4, 'le', 'length');
    layout.field(end + 16, 4, 'le', 'offset');
    layout.field(end + 20, 2, 'le', 'length');
    const count = u16le(bytes, end + 10) ?? 0;
    let offset = u32le(bytes, end + 16) ?? 0;
    for (
      let entry = 0;
      entry < count && u32le(bytes, offset) === CENTRAL_SIGNATURE && !layout.isFull();
      entry += 1
    ) {
      const next =
        offset +
        46 +
        (u16le(bytes, offset + 28) ?? 0) +
        (u16le(bytes, offset + 30) ?? 0) +
        (u16le(bytes, offset + 32) ?? 0);
      layout.field(offset + 8, 2, 'le', 'value');
      layout.field(offset + 10, 2, 'le', 'value');
      layout.field(offset + 16, 4, 'le', 'value');
      layout.field(offset + 20, 4, 'le', 'length');
      layout.field(offset + 24, 4, 'le', 'length');
      layout.field(offset + 28, 2, 'le', 'length');
      layout.field(offset + 30, 2, 'le', 'length');
      layout.field(offset + 32, 2, 'le', 'length');
      layout.field(offset + 34, 2, 'le', 'count');
      layout.field(offset + 38, 4, 'le', 'value');
      layout.field(offset + 42, 4, 'le', 'offset');
      layout.part(offset, Math.min(next, bytes.length), 'central');
      offset = next;
    }
  }
  return layout.build({ dictionary: ZIP_DICTIONARY });
};

const ZIP_DICTIONARY = [
  Buffer.from('504b0304', 'hex'),
  Buffer.from('504b0102', 'hex'),
  Buffer.from('504b0506', 'hex'),
  Buffer.from('504b0606', 'hex'),
  Buffer.from('504b0708', 'hex'),
];

/** One member of a zip as the container mutators see it. */
export interface ZipMember {
  name: string;
  data: Uint8Array;
  /** Written deflated (8) or stored (0). */
  method: 0 | 8;
}

/**
 * The members of a zip, read through its central directory; `undefined` when it does not list
 * cleanly (a container mutator then leaves the bytes to the byte and layout mutators).
 */
export function readZipMembers(bytes: Uint8Array): ZipMember[] | undefined {
  const end = findEndRecord(bytes);
  if (end < 0) return undefined;
  const count = Math.min(u16le(bytes, end + 10) ?? 0, MAX_ZIP_MEMBERS);
  let offset = u32le(bytes, end + 16) ?? 0;
  const members: ZipMember[] = [];
  try {
    for (let entry = 0; entry < count; entry += 1) {
      if (u32le(bytes, offset) !== CENTRAL_SIGNATURE) return undefined;
      const method = u16le(bytes, offset + 10) ?? 0;
      const compressed = u32le(bytes, offset + 20) ?? 0;
      const nameLength = u16le(bytes, offset + 28) ?? 0;
      const local = u32le(bytes, offset + 42) ?? 0;
      const name = Buffer.from(bytes.subarray(offset + 46, offset + 46 + nameLength)).toString(
        'utf8',
      );
      offset +=
        46 + nameLength + (u16le(bytes, offset + 30) ?? 0) + (u16le(bytes, offset + 32) ?? 0);
      if (u32le(bytes, local) !== LOCAL_SIGNATURE || compressed > MAX_MEMBER_BYTES)
        return undefined;
      const dataStart =
        local + 30 + (u16le(bytes, local + 26) ?? 0) + (u16le(bytes, local + 28) ?? 0);
      const raw = bytes.subarray(dataStart, dataStart + compressed);
      if (method !== 0 && method !== 8) return undefined;
      const data = method === 0 ? raw : inflateRawSync(raw, { maxOutputLength: MAX_MEMBER_BYTES });
      members.push({ name, data: new Uint8Array(data), method });
    }
  } catch {
    return undefined;
  }
  return members;
}

/** A well-formed zip of `members`, in order, with fixed timestamps. */
export function writeZip(members: readonly ZipMember[]): Uint8Array {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const member of members) {
    const name = Buffer.from(member.name, 'utf8');
    const data = member.method === 8 ? deflateRawSync(member.data) : Buffer.from(member.data);
    const crc = crc32(member.data) >>> 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(LOCAL_SIGNATURE, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt16LE(member.method, 8);
    local.writeUInt16LE(0x21, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(member.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(CENTRAL_SIGNATURE, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(member.method, 10);
    central.writeUInt16LE(0x21, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(member.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += local.length + name.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(END_RECORD_BYTES);
  end.writeUInt32LE(END_SIGNATURE, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** Gzip: header flags and FEXTRA length, the deflate body, the trailer's CRC and size. */
export const describeGzip: Describe = (bytes) => {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b || bytes.length < 18) return undefined;
  const layout = new LayoutBuilder();
  layout.field(2, 1, 'le', 'value');
  layout.field(3, 1, 'le', 'value');
  layout.field(4, 4, 'le', 'value');
  let body = 10;
  const flags = bytes[3] ?? 0;
  if ((flags & 4) !== 0) {
    layout.field(10, 2, 'le', 'length');
    body += 2 + (u16le(bytes, 10) ?? 0);
  }
  layout.part(0, Math.min(body, bytes.length), 'gzip');
  layout.part(Math.min(body, bytes.length - 8), bytes.length - 8, 'gzip');
  layout.part(bytes.length - 8, bytes.length, 'gzip');
  layout.field(bytes.length - 8, 4, 'le', 'value');
  layout.field(bytes.length - 4, 4, 'le', 'length');
  return layout.build({ dictionary: [Buffer.from('1f8b0800000000000003', 'hex')] });
};

/** What a gzip holds, or `undefined` when it does not inflate. */
export function readGzip(bytes: Uint8Array): Uint8Array | undefined {
  try {
    return new Uint8Array(gunzipSync(bytes, { maxOutputLength: MAX_MEMBER_BYTES }));
  } catch {
    return undefined;
  }
}

/** A gzip of `data`, its header naming `fileName` when given (FNAME, RFC 1952 2.3.1). */
export function writeGzip(data: Uint8Array, fileName?: string): Uint8Array {
  const body = gzipSync(data);
  if (fileName === undefined) return body;
  const header = Buffer.from(body.subarray(0, 10));
  header[3] = (header[3] ?? 0) | 0x08;
  return Buffer.concat([header, Buffer.from(`${fileName}\0`, 'latin1'), body.subarray(10)]);
}
