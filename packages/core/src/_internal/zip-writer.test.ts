import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { describe, expect, it } from 'vitest';

import { fileSink, memorySink } from './byte-sink.ts';
import { Rejection } from './rejection.ts';
import { writeZip, ZipStreamWriter } from './zip-writer.ts';
import type { ZipStreamEntry, ZipWriteEntry } from './zip-writer.ts';

const TIME = new Date(Date.UTC(1980, 0, 1));
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Member names and contents as Info-ZIP's `unzip` (an independent reader) sees them. */
function unzipped(bytes: Uint8Array): Record<string, string> {
  const path = join(mkdtempSync(join(tmpdir(), 'zip-writer-')), 'out.zip');
  writeFileSync(path, bytes);
  execFileSync('unzip', ['-tqq', path]);
  const names = execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).trim().split('\n');
  return Object.fromEntries(
    names.map((name) => [name, execFileSync('unzip', ['-p', path, name], { encoding: 'utf8' })]),
  );
}

describe('writeZip', () => {
  it('makes lazy entries in order and writes every entry whole', async () => {
    const made: string[] = [];
    const lazy = (name: string): ZipWriteEntry => ({
      path: name,
      bytes: async function* () {
        made.push(name);
        await Promise.resolve();
        yield encode(`${name} `.repeat(5_000));
        yield encode(`${name} `.repeat(5_000));
      },
      modifiedAt: TIME,
      compress: true,
    });
    const output = await writeZip([
      { path: 'stored.txt', bytes: encode('stored'), modifiedAt: TIME, compress: false },
      lazy('a.xml'),
      lazy('b.xml'),
      lazy('c.xml'),
    ]);
    expect(made).toEqual(['a.xml', 'b.xml', 'c.xml']);
    const members = unzipped(output);
    expect(Object.keys(members)).toEqual(['stored.txt', 'a.xml', 'b.xml', 'c.xml']);
    expect(members['stored.txt']).toBe('stored');
    expect(members['c.xml']).toBe('c.xml '.repeat(10_000));
  });

  it('fails the write with the rejection a lazy entry throws after its first chunks', async () => {
    const failing: ZipWriteEntry[] = [
      {
        path: 'a.xml',
        bytes: async function* () {
          yield await Promise.resolve(encode('a'));
        },
        modifiedAt: TIME,
        compress: true,
      },
      {
        path: 'b.xml',
        bytes: async function* () {
          yield encode('b '.repeat(100_000));
          await Promise.resolve();
          throw new Rejection('invalid_file', 'b is broken');
        },
        modifiedAt: TIME,
        compress: true,
      },
      {
        path: 'c.xml',
        bytes: async function* () {
          yield await Promise.resolve(encode('c'));
        },
        modifiedAt: TIME,
        compress: true,
      },
    ];
    await expect(writeZip(failing)).rejects.toThrow('b is broken');
  });
});

/** A full garbage collection, to see which buffers are still held. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('ZipStreamWriter', () => {
  const entries = (): ZipStreamEntry[] => [
    { path: 'photos/', directory: true, modifiedAt: TIME },
    { path: 'photos/a.jpg', bytes: encode('a'.repeat(70_000)), modifiedAt: TIME, compress: false },
    { path: 'notes.xml', bytes: encode('<n/>'.repeat(20_000)), modifiedAt: TIME, compress: true },
    { path: 'photos/b.jpg', bytes: encode('b'.repeat(3)), modifiedAt: TIME, compress: false },
  ];

  it('writes the same bytes as writeZip, into memory or a file', async () => {
    const expected = await writeZip(entries());
    const memory = memorySink();
    const writer = new ZipStreamWriter(memory);
    for (const entry of entries()) await writer.add(entry);
    await writer.finish();
    expect(Buffer.from((await memory.finish()).bytes ?? [])).toEqual(Buffer.from(expected));

    const path = join(mkdtempSync(join(tmpdir(), 'zip-stream-')), 'out.zip');
    const file = fileSink(path);
    const toFile = new ZipStreamWriter(file);
    for (const entry of entries()) await toFile.add(entry);
    await toFile.finish();
    const written = await file.finish();
    expect(written.bytes).toBeUndefined();
    expect(Buffer.from(written.read(0, written.length))).toEqual(Buffer.from(expected));
    expect(unzipped(written.read(0, written.length))['photos/b.jpg']).toBe('bbb');
  });

  it('lets go of each member once it is written, stored or deflated', async () => {
    // A file: a sink in memory keeps what is written, by design.
    const sink = fileSink(join(mkdtempSync(join(tmpdir(), 'zip-stream-')), 'out.zip'));
    const writer = new ZipStreamWriter(sink);
    // The memory, not the view: the writer holds its own views of it.
    const held: WeakRef<ArrayBufferLike>[] = [];
    for (let index = 0; index < 4; index += 1) {
      const bytes = encode(String(index).repeat(1 << 20));
      held.push(new WeakRef(bytes.buffer));
      await writer.add({ path: `m${index}`, bytes, modifiedAt: TIME, compress: index % 2 === 1 });
    }
    collectGarbage();
    // yazl keeps every entry for the central directory: without care, with its data.
    expect(held.slice(0, 3).map((ref) => ref.deref() === undefined)).toEqual([true, true, true]);
    await writer.finish();
    await sink.finish();
  });
});
