import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildCameraJpeg,
  buildImage,
  buildRawZip,
  buildTextPdf,
  buildZip,
  deflateBomb,
  EICAR_TEST_FILE,
  encryptPdf,
  writePhotoArchive,
  writeScannedPdf,
} from '@disarm/fixtures';
import { beforeAll, describe, expect, it } from 'vitest';

import { memorySink } from './_internal/byte-sink.ts';
import { FileSource } from './_internal/byte-source.ts';
import { disarm, disarmToFile } from './disarm.ts';
import { isDisarmError } from './errors.ts';
import { formatForFileName } from './formats.ts';
import { archiveHandler } from './handlers/archive/handler.ts';
import type { EngineContext } from './handlers/types.ts';
import type { FileOutcome, Outcome } from './outcome.ts';
import { builtinScanner } from './scan/eicar.ts';
import type { ScanFile, Scanner } from './scan/scanner.ts';
import { CountingSource, engineContext } from './test-support.ts';

let dir: string;
/** Files on disk, by name, made once for every test. */
const files = new Map<string, string>();

async function place(name: string, bytes: Uint8Array | Promise<Uint8Array>): Promise<void> {
  const path = join(dir, name);
  writeFileSync(path, await bytes);
  files.set(name, path);
}

function pathOf(name: string): string {
  const path = files.get(name);
  if (path === undefined) throw new Error(`no fixture ${name}`);
  return path;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'disarm-file-'));
  const photos = join(dir, 'photos.zip');
  await writePhotoArchive(photos, { targetBytes: 1_500_000, photo: { width: 800, height: 600 } });
  files.set('photos.zip', photos);
  const scan = join(dir, 'scan.pdf');
  await writeScannedPdf(scan, {
    targetBytes: 1_500_000,
    page: { width: 600, height: 850 },
    distinctPages: 2,
  });
  files.set('scan.pdf', scan);
  await place('eicar.zip', buildZip([{ name: 'a.txt.com', data: EICAR_TEST_FILE }]));
  await place(
    'mixed.zip',
    buildZip([
      { name: 'docs/', directory: true },
      {
        name: 'docs/a.pdf',
        data: buildTextPdf({ catalog: '/OpenAction << /S /JavaScript /JS (x) >>' }),
      },
      {
        name: 'camera.jpg',
        data: await buildCameraJpeg({ width: 64, height: 48 }),
        compress: false,
      },
      {
        name: 'inner.zip',
        data: await buildZip([{ name: 'p.png', data: await buildImage('png') }]),
      },
    ]),
  );
  await place('slip.zip', buildRawZip([{ name: '../evil.png', data: await buildImage('png') }]));
  await place(
    'bomb.zip',
    buildRawZip([
      {
        name: 'a.png',
        method: 8,
        rawCompressed: deflateBomb(1 << 30),
        declaredUncompressedSize: 1 << 30,
      },
    ]),
  );
  await place('locked.pdf', encryptPdf(buildTextPdf(), { user: 'secret', owner: 'o', bits: 256 }));
  await place('photo.png', buildImage('png', { exif: { Artist: 'me' } }));
});

const LIMITS = { limits: { timeoutMs: 120_000 } };

/** An outcome with its bytes as a hash-free buffer, for comparing the two ways of getting it. */
function comparable(outcome: Outcome | FileOutcome): Record<string, unknown> {
  if (outcome.status !== 'cleaned') return { ...outcome };
  if ('bytes' in outcome) return { ...outcome, bytes: Buffer.from(outcome.bytes) };
  const { path, sizeBytes, ...rest } = outcome;
  const bytes = readFileSync(path);
  expect(bytes.length).toBe(sizeBytes);
  return { ...rest, bytes };
}

describe('a file given by path', () => {
  it.each([
    'photos.zip',
    'scan.pdf',
    'mixed.zip',
    'eicar.zip',
    'slip.zip',
    'bomb.zip',
    'locked.pdf',
    'photo.png',
  ])('%s: the outcome of its bytes, from disk or into a file', async (name) => {
    const path = pathOf(name);
    const expected = comparable(
      await disarm({ bytes: readFileSync(path), fileName: name }, LIMITS),
    );
    expect(comparable(await disarm({ path, fileName: name }, LIMITS))).toEqual(expected);
    const out = join(mkdtempSync(join(dir, 'out-')), name);
    expect(comparable(await disarmToFile({ path, fileName: name }, out, LIMITS))).toEqual(expected);
    // A rejected file leaves nothing where its copy would have gone.
    if (expected.status !== 'cleaned') expect(() => readFileSync(out)).toThrow(/ENOENT/);
  });

  it('refuses an output path that exists, leaving the file there untouched', async () => {
    const out = join(mkdtempSync(join(dir, 'out-')), 'taken.zip');
    writeFileSync(out, 'keep me');
    const failure = await disarmToFile(
      { path: pathOf('photos.zip'), fileName: 'p.zip' },
      out,
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as TypeError).message).toMatch(/already exists/);
    expect(readFileSync(out, 'utf8')).toBe('keep me');
    await expect(
      disarmToFile({ path: pathOf('photos.zip'), fileName: 'p.zip' }, ''),
    ).rejects.toThrow(TypeError);
  });

  it('leaves nothing behind when the run is stopped half-way through writing', async () => {
    const folder = mkdtempSync(join(dir, 'out-'));
    const out = join(folder, 'photos.zip');
    const controller = new AbortController();
    let members = 0;
    const stopper: Scanner = {
      name: 'stopper',
      // Members are scanned as they come: by the third, two are in the output file.
      scan: () => {
        members += 1;
        if (members === 3) {
          expect(readFileSync(out).length).toBeGreaterThan(0);
          controller.abort();
          return new Promise(() => undefined);
        }
        return Promise.resolve([]);
      },
      scanFile: () => Promise.resolve([]),
    };
    const failure = await disarmToFile({ path: pathOf('photos.zip'), fileName: 'p.zip' }, out, {
      scanners: [stopper],
      signal: controller.signal,
    }).catch((error: unknown) => error);
    expect(isDisarmError(failure, 'ERR_TIMEOUT')).toBe(true);
    expect(members).toBe(3);
    expect(await readdir(folder)).toEqual([]);
  });
});

describe('scanners and a file on disk', () => {
  it('scan the submitted file in chunks when they can, and get its bytes when they cannot', async () => {
    const seen: { size: number; read: number }[] = [];
    const byChunks: Scanner = {
      name: 'chunks',
      scan: () => Promise.resolve([]),
      async scanFile(file: ScanFile) {
        let read = 0;
        for await (const chunk of file.chunks()) read += chunk.length;
        seen.push({ size: file.size, read });
        return [];
      },
    };
    const whole: number[] = [];
    const byBytes: Scanner = {
      name: 'bytes',
      scan: (bytes) => {
        whole.push(bytes.length);
        return Promise.resolve([]);
      },
    };
    const path = pathOf('mixed.zip');
    const size = readFileSync(path).length;
    const outcome = await disarm(
      { path, fileName: 'mixed.zip' },
      { scanners: [byChunks, byBytes] },
    );
    expect(outcome.status).toBe('cleaned');
    // The archive once, by chunks; its members go to `scan` as bytes (they are in memory).
    expect(seen).toEqual([{ size, read: size }]);
    expect(whole[0]).toBe(size);
    expect(whole.length).toBeGreaterThan(1);
  });

  it('find the EICAR test file given by path', async () => {
    await place('eicar.com.png', EICAR_TEST_FILE);
    const outcome = await disarm(
      { path: pathOf('eicar.com.png'), fileName: 'eicar.png' },
      { scanners: [builtinScanner] },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
  });
});

describe('a zip on disk', () => {
  it('is read a member at a time, never whole', async () => {
    const path = pathOf('photos.zip');
    const size = readFileSync(path).length;
    const source = new CountingSource(FileSource.open(path, size));
    const format = formatForFileName('photos.zip');
    if (format === undefined) throw new Error('zip is not on the allowlist');
    const members: number[] = [];
    const context: EngineContext = {
      ...engineContext(),
      // Each member is handed back as it is: what is measured here is how the archive is read.
      processMember: (input) => {
        members.push(input.bytes.length);
        return Promise.resolve({
          bytes: input.bytes,
          fileName: input.fileName,
          format: formatForFileName(input.fileName) ?? format,
          converted: false,
          findings: [],
        });
      },
    };
    const sourced = archiveHandler.sourced;
    if (sourced === undefined) throw new Error('the archive family rebuilds in memory only');
    const output = await sourced.rebuild(
      { source, fileName: 'photos.zip', format },
      context,
      memorySink(),
    );
    expect(members.length).toBeGreaterThan(3);
    expect(output.manifest?.entryNames.length).toBe(members.length);
    // The largest read is one member (with its header), or one page of the directory walk.
    expect(source.largestRead).toBeLessThanOrEqual(Math.max(...members) + 1024);
    expect(source.largestRead * 3).toBeLessThan(size);
  });
});
