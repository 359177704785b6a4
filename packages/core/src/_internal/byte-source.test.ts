import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { fileSink, memorySink } from './byte-sink.ts';
import {
  FileSource,
  memorySource,
  PagedReader,
  prefixOf,
  READ_CHUNK_BYTES,
  sameContent,
  sourceIncludes,
} from './byte-source.ts';
import type { ByteSource } from './byte-source.ts';

/** Bytes that differ at every position of a page, so a misplaced read shows. */
function pattern(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i += 1) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
  return bytes;
}

function onDisk(bytes: Uint8Array): FileSource {
  const path = join(mkdtempSync(join(tmpdir(), 'byte-source-')), 'file.bin');
  writeFileSync(path, bytes);
  return FileSource.open(path, bytes.length);
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

const CONTENT = pattern(2 * READ_CHUNK_BYTES + 12_345);

describe.each([
  ['memory', (bytes: Buffer): ByteSource => memorySource(bytes)],
  ['a file', (bytes: Buffer): ByteSource => onDisk(bytes)],
])('a source in %s', (_, make) => {
  const open = (): ByteSource => make(CONTENT);

  it('reads ranges, clipped at the end, and refuses a bad offset', () => {
    const source = open();
    expect(source.length).toBe(CONTENT.length);
    expect(Buffer.from(source.read(5, 10))).toEqual(CONTENT.subarray(5, 15));
    expect(Buffer.from(source.read(CONTENT.length - 3, 10))).toEqual(CONTENT.subarray(-3));
    expect(source.read(CONTENT.length + 5, 10).length).toBe(0);
    expect(() => source.read(-1, 2)).toThrow(RangeError);
    expect(() => source.read(0.5, 2)).toThrow(RangeError);
  });

  it('gives its content in chunks of at most 1 MiB, and whole', async () => {
    const source = open();
    const sizes: number[] = [];
    for await (const chunk of source.chunks(10)) sizes.push(chunk.length);
    expect(Math.max(...sizes)).toBe(READ_CHUNK_BYTES);
    expect(await collect(source.chunks(10, 100))).toEqual(CONTENT.subarray(10, 100));
    expect((await collect(source.chunks())).equals(CONTENT)).toBe(true);
    expect(Buffer.from(await source.readAll()).equals(CONTENT)).toBe(true);
  });

  it('is cut to a prefix without reading past it', async () => {
    const prefix = prefixOf(open(), 1000);
    expect(prefix.length).toBe(1000);
    expect(Buffer.from(prefix.read(990, 50))).toEqual(CONTENT.subarray(990, 1000));
    expect(await collect(prefix.chunks())).toEqual(CONTENT.subarray(0, 1000));
  });

  it('finds text across the border of two chunks, and compares content chunk by chunk', async () => {
    const bytes = Buffer.from(CONTENT);
    bytes.write('/Encrypt', READ_CHUNK_BYTES - 4, 'latin1');
    expect(await sourceIncludes(make(bytes), '/Encrypt')).toBe(true);
    expect(await sourceIncludes(open(), '/Encrypt')).toBe(false);
    expect(sameContent(open(), onDisk(CONTENT))).toBe(true);
    expect(sameContent(open(), make(bytes))).toBe(false);
    expect(sameContent(open(), memorySource(CONTENT.subarray(1)))).toBe(false);
  });

  it('is read by absolute offsets through a few cached pages', () => {
    const reader = new PagedReader(open());
    for (const at of [0, 65_535, 65_536, 1_000_000, CONTENT.length - 4, 3, 200_000]) {
      expect(reader.u32(at)).toBe(CONTENT.readUInt32LE(at));
      expect(reader.u16(at)).toBe(CONTENT.readUInt16LE(at));
    }
    expect(Buffer.from(reader.slice(65_530, 65_600))).toEqual(CONTENT.subarray(65_530, 65_600));
    expect(reader.byte(CONTENT.length)).toBe(0);
  });
});

describe('a file source', () => {
  it('cannot be read once closed', () => {
    const source = onDisk(CONTENT);
    source.close();
    source.close();
    expect(() => source.read(0, 1)).toThrow(TypeError);
  });
});

describe('sinks', () => {
  it('keep what is written in memory, or write a new file read back by range', async () => {
    const memory = memorySink();
    await memory.write(Buffer.from('one '));
    await memory.write(Buffer.from('two'));
    expect(memory.length).toBe(7);
    expect(Buffer.from((await memory.finish()).bytes ?? []).toString()).toBe('one two');

    const path = join(mkdtempSync(join(tmpdir(), 'byte-sink-')), 'out.bin');
    const file = fileSink(path);
    await file.write(CONTENT.subarray(0, READ_CHUNK_BYTES));
    await file.write(CONTENT.subarray(READ_CHUNK_BYTES));
    const written = await file.finish();
    expect(written.bytes).toBeUndefined();
    expect(written.length).toBe(CONTENT.length);
    expect(readFileSync(path).equals(CONTENT)).toBe(true);
  });

  it('never replace a file, and leave nothing behind when discarded', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'byte-sink-'));
    const taken = join(folder, 'taken.bin');
    writeFileSync(taken, 'keep me');
    expect(() => fileSink(taken)).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(readFileSync(taken, 'utf8')).toBe('keep me');

    const path = join(folder, 'dropped.bin');
    const dropped = fileSink(path);
    await dropped.write(Buffer.from('half a file'));
    await dropped.discard();
    expect(() => readFileSync(path)).toThrow(/ENOENT/);
  });
});
