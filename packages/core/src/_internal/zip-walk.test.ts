import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { buildImage, buildRawZip, buildZip, withZip64End } from '@disarm/fixtures';
import type { Zip64EndOptions } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { Rejection } from './rejection.ts';
import { openZip } from './zip-reader.ts';
import { walkZip } from './zip-walk.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(120_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..', '..');

let dir: string;
/** Archives of the same two pictures, by writer. */
const archives = new Map<string, Buffer>();
let piped: Buffer;

beforeAll(async () => {
  execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
  dir = await mkdtemp(join(tmpdir(), 'zip-walk-'));
  await writeFile(join(dir, 'a.png'), await buildImage('png', { width: 8, height: 8 }));
  await writeFile(join(dir, 'b.png'), await buildImage('png', { width: 9, height: 9 }));
  const zip = (...args: string[]): void => {
    execFileSync('zip', ['-q', ...args], { cwd: dir });
  };
  // Info-ZIP 3.0 `-fz`: ZIP64 extra fields, a ZIP64 end record and locator, and in the end
  // record the central directory's offset as 0xFFFFFFFF while the fields that fit keep values.
  zip('-fz', 'info-zip.zip', 'a.png', 'b.png');
  // The same written to a pipe: the end record defers the directory's offset to a ZIP64 end
  // record that Info-ZIP 3.0 does not write there (unzip and Python's zipfile refuse it).
  piped = execFileSync('zip', ['-q', '-fz', '-', 'a.png', 'b.png'], { cwd: dir });
  // Python's zipfile: `force_zip64` writes ZIP64 sizes in the local headers only; it writes a
  // ZIP64 end record only when a count, size or offset does not fit (3.11, `_write_end_record`).
  execFileSync(
    'python3',
    [
      '-c',
      'import sys, zipfile\n' +
        'with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:\n' +
        '  for name in sys.argv[2:]:\n' +
        '    with open(name, "rb") as f, z.open(name, "w", force_zip64=True) as w: w.write(f.read())',
      'python.zip',
      'a.png',
      'b.png',
    ],
    { cwd: dir },
  );
  for (const name of ['info-zip.zip', 'python.zip']) {
    archives.set(name, await readFile(join(dir, name)));
  }
  const plain = await buildZip([
    { name: 'a.png', data: await readFile(join(dir, 'a.png')) },
    { name: 'b.png', data: await readFile(join(dir, 'b.png')) },
  ]);
  archives.set('every end field at its maximum', withZip64End(plain));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What the listing reader (yauzl and the end check) makes of `bytes`: names, or the rejection. */
async function listed(bytes: Uint8Array): Promise<string> {
  try {
    const listing = await openZip(bytes, 100);
    listing.file.close();
    return listing.members.map((member) => member.name).join(',');
  } catch (error) {
    if (error instanceof Rejection) return `${error.reason}: ${error.message}`;
    throw error;
  }
}

async function plainZip(): Promise<Buffer> {
  return buildZip([{ name: 'a.png', data: await buildImage('png', { width: 8, height: 8 }) }]);
}

describe('zip end records by the letter of APPNOTE 4.4.1.4', () => {
  it('reads every ZIP64 way of writing the end, in both readers', async () => {
    expect([...archives.keys()]).toHaveLength(3);
    for (const [writer, bytes] of archives) {
      const path = join(dir, 'tested.zip');
      await writeFile(path, bytes);
      execFileSync('unzip', ['-tqq', path], { stdio: 'pipe' });
      const walk = walkZip(bytes);
      expect(walk.ok ? walk.zip.entries.map((entry) => entry.name) : walk.problem, writer).toEqual([
        'a.png',
        'b.png',
      ]);
      expect(await listed(bytes), writer).toBe('a.png,b.png');
    }
  });

  it.each<[string, Zip64EndOptions, RegExp]>([
    [
      'a ZIP64 end record on another disk',
      { zip64: { disk: 1 } },
      /spans several disks \(this is disk 1, the central directory starts on disk 0\)/,
    ],
    [
      'a central directory starting on another disk',
      { zip64: { centralDisk: 2 } },
      /spans several disks \(this is disk 0, the central directory starts on disk 2\)/,
    ],
    [
      'records on other disks',
      { zip64: { countOnDisk: 0 } },
      /spans several disks \(0 of its 1 central-directory records are on this disk\)/,
    ],
    [
      'a locator counting two disks',
      { locator: { disks: 2 } },
      /spans several disks \(its ZIP64 locator counts 2 disks/,
    ],
    [
      'a locator putting the ZIP64 end record on another disk',
      { locator: { recordDisk: 1 } },
      /and puts the ZIP64 end record on disk 1\)/,
    ],
    [
      'an end record naming a disk the ZIP64 record does not',
      { endRecord: { disk: 3 } },
      /the end record and the ZIP64 end record disagree on the number of this disk/,
    ],
    [
      'an end record counting other records than the ZIP64 record',
      { endRecord: { count: 7 } },
      /disagree on the number of records/,
    ],
    [
      'an end record placing the directory elsewhere',
      { endRecord: { centralStart: 0 } },
      /disagree on where the central directory starts/,
    ],
  ])('refuses %s in both readers, saying so', async (_, options, detail) => {
    const bytes = withZip64End(await plainZip(), options);
    const walk = walkZip(bytes);
    expect(walk.ok ? 'accepted' : walk.problem).toMatch(detail);
    expect(await listed(bytes)).toMatch(/^invalid_file: /);
    expect(await listed(bytes)).toMatch(detail);
  });

  it('refuses a split archive without ZIP64 records, and an end record deferring to none (as unzip does)', async () => {
    const split = Buffer.from(await plainZip());
    split.writeUInt16LE(1, split.length - 22 + 4);
    const walk = walkZip(split);
    expect(walk.ok ? 'accepted' : walk.problem).toMatch(/spans several disks \(this is disk 1/);
    expect(await listed(split)).toMatch(/^invalid_file: .*spans several disks \(this is disk 1/);
    const deferring = buildRawZip([{ name: 'a.txt', data: 'a' }]);
    deferring.writeUInt16LE(0xffff, deferring.length - 22 + 4);
    const path = join(dir, 'piped.zip');
    await writeFile(path, piped);
    expect(() => execFileSync('unzip', ['-tqq', path], { stdio: 'pipe' })).toThrow();
    for (const read of [
      walkZip(deferring),
      await listed(deferring),
      walkZip(piped),
      await listed(piped),
    ]) {
      expect(typeof read === 'string' ? read : read.ok ? 'accepted' : read.problem).toMatch(
        /needs a ZIP64 end record, and there is none/,
      );
    }
  });
});
