import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { Rejection } from './rejection.ts';
import { writeZip } from './zip-writer.ts';
import type { ZipWriteEntry } from './zip-writer.ts';

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
