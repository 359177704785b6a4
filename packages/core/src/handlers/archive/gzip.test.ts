import { buildGzip, buildImage, buildZip, EICAR_TEST_FILE, gzipBomb } from '@disarm/fixtures';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import yauzl from 'yauzl';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { parseGzipHeader } from './gzip.ts';
import { cleaned } from '../../test-support.ts';

const MiB = 1024 * 1024;

/** Info-ZIP's view of a zip: the names `unzip -Z1` lists, after `unzip -t` found no error. */
function unzipList(zip: Uint8Array): string[] {
  const path = join(mkdtempSync(join(tmpdir(), 'disarm-gz-')), 'out.zip');
  writeFileSync(path, zip);
  expect(execFileSync('unzip', ['-t', path], { encoding: 'utf8' })).toMatch(/No errors detected/);
  return execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

async function names(zip: Uint8Array): Promise<string[]> {
  const file = await yauzl.fromBufferPromise(Buffer.from(zip), { lazyEntries: true });
  const found: string[] = [];
  for await (const entry of file.eachEntry()) found.push(entry.fileName);
  return found;
}

describe('gz rebuild', () => {
  it('returns the rebuilt inner file inside a zip named after FNAME', async () => {
    const png = await buildImage('png', { exif: { Artist: 'x' } });
    const input = buildGzip(png, {
      fileName: 'photo.png',
      comment: 'hi',
      modifiedAt: new Date('2020-01-01'),
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'photo.png.gz' }));
    expect(outcome.fileName).toBe('photo.png.zip');
    expect(outcome.format).toBe('zip');
    expect(outcome.mediaType).toBe('application/zip');
    expect(outcome.modifications).toEqual(['rebuilt', 'converted']);
    expect(await names(outcome.bytes)).toEqual(['photo.png']);
    // The comment is the gzip header's own; the EXIF is the inner file's.
    expect(outcome.findings).toEqual(
      expect.arrayContaining([
        { kind: 'archive-comment', count: 1 },
        {
          kind: 'image-metadata',
          count: 1,
          locations: [{ member: ['photo.png'], count: 1 }],
        },
      ]),
    );
  });

  it('names the inner file from the outer name when FNAME is absent', async () => {
    const input = buildGzip(await buildImage('jpeg'));
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'scan.jpg.GZ' }));
    expect(await names(outcome.bytes)).toEqual(['scan.jpg']);
  });

  it('infers the extension from the content when no name carries one', async () => {
    const input = buildGzip(await buildImage('png'));
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'blob.gz' }));
    expect(await names(outcome.bytes)).toEqual(['blob.png']);
  });

  it('keeps only the last segment of a FNAME that holds a path', async () => {
    const input = buildGzip(await buildImage('png'), { fileName: 'photos/2024/evil.png' });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'x.gz' }));
    expect(await names(outcome.bytes)).toEqual(['evil.png']);
  });

  it.each([
    ['a traversal', '../../etc/evil.png'],
    ['an NTFS stream', 'evil.exe:x.png'],
    ['a Windows device name', 'CON.png'],
    ['a trailing dot', 'photo.png.'],
    ['a bidi override', 'photo\u202Egnp.exe.png'],
    ['a C1 control character', 'photo\u0085.png'],
    ['a zero width space', 'photo\u200B.png'],
  ])(
    'refuses a FNAME with %s as policy_violation, like a zip member name',
    async (_label, name) => {
      const outcome = await disarm({
        bytes: buildGzip(await buildImage('png'), { fileName: name, fileNameEncoding: 'utf8' }),
        fileName: 'x.gz',
      });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
      expect(outcome.status === 'rejected' && outcome.detail).toMatch(/FNAME/);
    },
  );

  it('reports EICAR inside even when the FNAME is refused', async () => {
    const outcome = await disarm({
      bytes: buildGzip(EICAR_TEST_FILE, { fileName: 'CON.png' }),
      fileName: 'x.gz',
    });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
  });

  it('returns a zip that an independent reader (unzip) lists as the rebuild decided', async () => {
    const input = buildGzip(await buildImage('png'), { fileName: 'photo.png' });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'photo.png.gz' }));
    expect(unzipList(outcome.bytes)).toEqual(['photo.png']);
  });

  it('rebuilds a zip inside a gzip', async () => {
    const zip = await buildZip([{ name: 'a.gif', data: await buildImage('gif') }]);
    const outcome = cleaned(
      await disarm({
        bytes: buildGzip(zip, { fileName: 'bundle.zip' }),
        fileName: 'bundle.zip.gz',
      }),
    );
    expect(await names(outcome.bytes)).toEqual(['bundle.zip']);
  });

  it('refuses a tar inside as unsupported_file_type, whatever its name', async () => {
    const tar = Buffer.alloc(1024);
    tar.write('x.png', 0);
    tar.write('ustar', 257);
    for (const fileName of ['x.tar', 'x.png', undefined]) {
      const input = buildGzip(tar, fileName === undefined ? {} : { fileName });
      expect(await disarm({ bytes: input, fileName: 'x.tgz.gz' })).toMatchObject({
        status: 'rejected',
        reason: 'unsupported_file_type',
      });
    }
  });

  it('refuses an inner file of an unsupported type', async () => {
    const input = buildGzip('plain text', { fileName: 'notes.txt' });
    expect(await disarm({ bytes: input, fileName: 'notes.txt.gz' })).toMatchObject({
      status: 'rejected',
      reason: 'unsupported_file_type',
    });
  });

  it('reports EICAR inside as a threat, even without a usable name', async () => {
    for (const options of [{ fileName: 'eicar.com' }, {}]) {
      const outcome = await disarm({
        bytes: buildGzip(EICAR_TEST_FILE, options),
        fileName: 'x.gz',
      });
      expect(outcome).toMatchObject({
        status: 'rejected',
        reason: 'threat_detected',
        threatNames: ['EICAR-Test-File'],
      });
    }
  });

  it('stops a 1 GiB gzip bomb at the ceiling', async () => {
    const outcome = await disarm({ bytes: gzipBomb(1024 * MiB), fileName: 'bomb.gz' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it('honours a lower ceiling', async () => {
    const outcome = await disarm(
      { bytes: gzipBomb(8 * MiB), fileName: 'bomb.gz' },
      { limits: { maxBytes: 4 * MiB } },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it.each([
    [
      'truncated data',
      () => buildGzip(Buffer.alloc(5000, 1), { fileName: 'a.png' }).subarray(0, 40),
    ],
    [
      'a corrupt deflate stream',
      () => buildGzip('x', { fileName: 'a.png', rawDeflate: Buffer.from([0xff, 0xff, 0xff]) }),
    ],
    ['reserved flag bits', () => buildGzip('x', { fileName: 'a.png', extraFlags: 0x20 })],
    ['a header cut short', () => Buffer.from([0x1f, 0x8b, 8, 0, 0, 0])],
    [
      'an unterminated FNAME',
      () =>
        Buffer.concat([
          Buffer.from([0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3]),
          Buffer.alloc(9000, 0x41),
        ]),
    ],
  ])('rejects %s as invalid_file', async (_label, make) => {
    expect(await disarm({ bytes: make(), fileName: 'x.gz' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
    });
  });

  it('parses every optional header field', () => {
    const header = parseGzipHeader(
      buildGzip('x', {
        fileName: 'caf\u00e9.png',
        comment: 'c',
        extra: Buffer.from([1, 2, 3]),
        modifiedAt: new Date(86_400_000),
      }),
    );
    expect(header).toEqual({
      fileName: 'caf\u00e9.png',
      modifiedAt: new Date(86_400_000),
      hasComment: true,
      hasExtra: true,
    });
  });
});
