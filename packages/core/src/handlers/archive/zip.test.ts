import type { RawZipEntry } from '@disarm/fixtures';
import {
  buildImage,
  buildRawZip,
  unicodePathExtra,
  buildZip,
  deflateBomb,
  EICAR_TEST_FILE,
  TEXT_FIXTURES,
  withZip64End,
} from '@disarm/fixtures';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import sharp from 'sharp';
import yauzl from 'yauzl';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { encodeBmp } from '../image/bmp/encode.ts';
import type { DisarmOptions } from '../../disarm.ts';
import type { Outcome } from '../../outcome.ts';
import type { Renderer } from '../../render/renderer.ts';
import { builtinScanner } from '../../scan/eicar.ts';
import { cleaned } from '../../test-support.ts';

const MiB = 1024 * 1024;

interface ListedEntry {
  name: string;
  comment: number;
  extra: number;
  size: number;
  data: Buffer;
}

/** Reads a zip back with an independent reader (yauzl, strict names). */
async function listZip(bytes: Uint8Array): Promise<{ entries: ListedEntry[]; comment: number }> {
  const zip = await yauzl.fromBufferPromise(Buffer.from(bytes), {
    lazyEntries: true,
    strictFileNames: true,
  });
  const entries: ListedEntry[] = [];
  for await (const entry of zip.eachEntry()) {
    const stream = await zip.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
    entries.push({
      name: entry.fileName,
      comment: entry.fileCommentLength,
      extra: entry.extraFieldLength,
      size: entry.uncompressedSize,
      data: Buffer.concat(chunks),
    });
  }
  return { entries, comment: zip.comment.length };
}

async function run(bytes: Uint8Array, options?: DisarmOptions): Promise<Outcome> {
  return disarm({ bytes, fileName: 'archive.zip' }, options);
}

describe('zip rebuild', () => {
  it('rebuilds every member into a fresh archive with nothing around it', async () => {
    const png = await buildImage('png', { exif: { Artist: 'secret' } });
    const jpeg = await buildImage('jpeg');
    const input = await buildZip(
      [
        { name: 'photos/', directory: true },
        { name: 'photos/a.png', data: png, comment: 'member comment' },
        { name: 'photos/b.JPG', data: jpeg },
      ],
      { comment: 'archive comment' },
    );
    const outcome = cleaned(await run(Buffer.concat([input])));
    expect(outcome.fileName).toBe('archive.zip');
    expect(outcome.modifications).toEqual(['rebuilt']);
    const output = Buffer.from(outcome.bytes);
    expect(output.subarray(0, 4)).toEqual(Buffer.from('PK\x03\x04', 'latin1'));
    // APPNOTE 4.3.16: the end record is the last thing in the file and has no comment.
    expect(output.readUInt32LE(output.length - 22)).toBe(0x06054b50);
    const listed = await listZip(output);
    expect(listed.comment).toBe(0);
    expect(listed.entries.map((entry) => entry.name)).toEqual([
      'photos/',
      'photos/a.png',
      'photos/b.JPG',
    ]);
    for (const entry of listed.entries) {
      expect(entry.comment).toBe(0);
      expect(entry.extra).toBe(0);
    }
    const rebuiltPng = listed.entries[1]?.data ?? Buffer.alloc(0);
    expect((await sharp(rebuiltPng).metadata()).exif).toBeUndefined();
    expect(rebuiltPng.includes(Buffer.from('secret'))).toBe(false);
    // The archive's own comment has no member; the member's comment and EXIF name theirs.
    expect(outcome.findings).toEqual(
      expect.arrayContaining([
        {
          kind: 'archive-comment',
          count: 2,
          locations: [{ member: ['photos/a.png'], count: 1 }],
        },
        {
          kind: 'image-metadata',
          count: 1,
          locations: [{ member: ['photos/a.png'], count: 1 }],
        },
      ]),
    );
  });

  it('writes archives that Info-ZIP unzip tests clean, deflated and stored members alike', async () => {
    const bmp = encodeBmp({
      width: 64,
      height: 64,
      channels: 3,
      data: new Uint8Array(64 * 64 * 3).fill(200),
    });
    const input = await buildZip([
      { name: 'a.bmp', data: bmp },
      { name: 'b.png', data: await buildImage('png') },
      { name: 'sub/c.bmp', data: bmp },
    ]);
    const outcome = cleaned(await run(input));
    const path = join(mkdtempSync(join(tmpdir(), 'disarm-zip-')), 'out.zip');
    writeFileSync(path, outcome.bytes);
    const report = execFileSync('unzip', ['-t', path], { encoding: 'utf8' });
    expect(report).toMatch(/No errors detected/);
    expect(report.match(/^\s+testing: .*\bOK$/gm)).toHaveLength(3);
  });

  it('rebuilds archives whose end is written in ZIP64 format into a plain zip unzip tests clean', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'disarm-zip64-'));
    const pictures = {
      'a.png': await buildImage('png'),
      'b.png': await buildImage('png', { width: 9 }),
    };
    for (const [name, data] of Object.entries(pictures)) writeFileSync(join(folder, name), data);
    // Info-ZIP's `zip -fz`, and every end record field at its maximum (APPNOTE 4.4.1.4).
    execFileSync('zip', ['-q', '-fz', 'info-zip.zip', 'a.png', 'b.png'], { cwd: folder });
    const inputs = [
      readFileSync(join(folder, 'info-zip.zip')),
      withZip64End(
        await buildZip(Object.entries(pictures).map(([name, data]) => ({ name, data }))),
      ),
    ];
    for (const input of inputs) {
      const outcome = cleaned(await run(input));
      expect((await listZip(outcome.bytes)).entries.map((entry) => entry.name)).toEqual([
        'a.png',
        'b.png',
      ]);
      const path = join(folder, 'out.zip');
      writeFileSync(path, outcome.bytes);
      expect(execFileSync('unzip', ['-t', path], { encoding: 'utf8' })).toMatch(
        /No errors detected/,
      );
      // No ZIP64 end record or locator: a plain end record ends the output.
      expect(Buffer.from(outcome.bytes.subarray(-42, -22)).readUInt32LE(0)).not.toBe(0x07064b50);
      expect(Buffer.from(outcome.bytes.subarray(-22)).readUInt32LE(16)).toBeLessThan(0xffffffff);
    }
  });

  it('refuses an archive split over disks, saying which disk says so', async () => {
    const input = withZip64End(await buildZip([{ name: 'a.png', data: await buildImage('png') }]), {
      locator: { disks: 3 },
    });
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /spans several disks \(its ZIP64 locator counts 3 disks/,
    );
  });

  it('rejects a submitted archive without files as invalid_file, and keeps an empty one inside', async () => {
    expect(await run(buildRawZip([]))).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
    });
    const onlyFolders = buildRawZip([{ name: 'empty/', data: '' }]);
    expect(await run(onlyFolders)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    const outer = await buildZip([
      { name: 'a.png', data: await buildImage('png') },
      { name: 'inner.zip', data: buildRawZip([]) },
    ]);
    const names = (await listZip(cleaned(await run(outer)).bytes)).entries.map(
      (entry) => entry.name,
    );
    expect(names).toEqual(['a.png', 'inner.zip']);
  });

  it('rejects the whole archive when one member is an unsupported type', async () => {
    const input = await buildZip([
      { name: 'a.png', data: await buildImage('png') },
      { name: 'notes.txt', data: 'hello' },
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'unsupported_file_type' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/notes\.txt/);
  });

  it('rejects the whole archive when one member is not what its name says', async () => {
    const input = await buildZip([{ name: 'fake.png', data: await buildImage('jpeg') }]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it('reports a threat even in a member of an unsupported type, and after another rejection', async () => {
    const direct = await buildZip([{ name: 'eicar.com', data: EICAR_TEST_FILE }]);
    expect(await run(direct)).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
    });
    const later = await buildZip([
      { name: 'readme.txt', data: 'unsupported, seen first' },
      { name: 'inner.zip', data: await buildZip([{ name: 'x.png', data: EICAR_TEST_FILE }]) },
    ]);
    expect(await run(later)).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
  });

  it('finds threats in nested archives', async () => {
    const inner = await buildZip([{ name: 'eicar.com', data: EICAR_TEST_FILE }]);
    const outer = await buildZip([{ name: 'level1/inner.zip', data: inner }]);
    expect(await run(outer)).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
  });

  it('rebuilds nested archives recursively', async () => {
    const inner = await buildZip([{ name: 'pic.gif', data: await buildImage('gif') }]);
    const outcome = cleaned(await run(await buildZip([{ name: 'inner.zip', data: inner }])));
    const outer = await listZip(outcome.bytes);
    const nested = await listZip(outer.entries[0]?.data ?? Buffer.alloc(0));
    expect(nested.entries.map((entry) => entry.name)).toEqual(['pic.gif']);
  });

  it.each([
    ['ZipCrypto (flag bit 0)', { flags: 1 }],
    ['WinZip AES (method 99)', { method: 99 }],
  ])('reports an encrypted member (%s) as password_protected', async (_label, fields) => {
    const input = buildRawZip([
      { name: 'ok.png', data: await buildImage('png') },
      // A ZipCrypto member starts with its 12-byte encryption header (APPNOTE 6.1.3).
      {
        name: 'secret.png',
        data: 'encrypted-header+data.',
        declaredUncompressedSize: 10,
        ...fields,
      },
    ]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'password_protected' });
  });

  it('reports strong encryption as password_protected', async () => {
    const input = buildRawZip([{ name: 'x.png', data: 'x', flags: 0x41 }]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'password_protected' });
  });

  it.each([
    ['a ../ traversal', '../../etc/cron.d/x.png'],
    ['a ..\\ traversal', '..\\..\\windows\\x.png'],
    ['a traversal in the middle', 'a/b/../../../x.png'],
    ['an absolute path', '/tmp/x.png'],
    ['a backslash absolute path', '\\tmp\\x.png'],
    ['a drive letter', 'C:/Windows/x.png'],
    ['a control character', 'a\u0001b.png'],
  ])('refuses %s as policy_violation', async (_label, name) => {
    const input = buildRawZip([{ name, data: await buildImage('png') }]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('refuses a traversal hidden in the Info-ZIP Unicode Path extra field', async () => {
    const extra = unicodePathExtra('good.png', '../evil.png');
    const input = buildRawZip([{ name: Buffer.from('good.png'), data: 'x', extra }]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it.each([
    ['a symbolic link', 0o120777],
    ['a FIFO', 0o010644],
    ['a device', 0o020644],
  ])('refuses %s as policy_violation', async (_label, unixMode) => {
    const input = buildRawZip([{ name: 'link.png', data: '/etc/passwd', unixMode }]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('refuses an NTFS reparse point', async () => {
    const input = buildRawZip([{ name: 'j.png', data: 'x', dosAttributes: 0x400 }]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it.each([
    ['identical names', ['a.png', 'a.png']],
    ['names differing in case', ['Photo.png', 'photo.PNG']],
    ['NFC and NFD forms of one name', ['caf\u00e9.png', 'cafe\u0301.png']],
    ['a file used as a directory', ['a.png', 'a.png/b.png']],
    ['names equal after normalising separators', ['dir/a.png', 'dir\\a.png']],
  ])('refuses %s as policy_violation', async (_label, names) => {
    const png = await buildImage('png');
    const input = buildRawZip(names.map((name) => ({ name, data: png })));
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('refuses archives nested deeper than the limit', async () => {
    let bytes: Buffer = await buildZip([{ name: 'x.png', data: await buildImage('png') }]);
    for (let level = 0; level < 3; level += 1)
      bytes = await buildZip([{ name: `l${level}.zip`, data: bytes }]);
    expect(cleaned(await run(bytes, { limits: { maxDepth: 4 } })).format).toBe('zip');
    expect(await run(bytes, { limits: { maxDepth: 3 } })).toMatchObject({
      status: 'rejected',
      reason: 'policy_violation',
    });
  });

  it('refuses more entries than the limit before reading any', async () => {
    const input = buildRawZip(
      Array.from({ length: 50 }, (_, i) => ({ name: `f${i}.png`, data: '' })),
    );
    const outcome = await run(input, { limits: { maxEntries: 49 } });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/50 entries/);
  });

  it('rebuilds an archive of thousands of small images', async () => {
    const gif = await buildImage('gif', { width: 2, height: 2 });
    const input = await buildZip(
      Array.from({ length: 2000 }, (_, i) => ({ name: `d${i % 10}/i${i}.gif`, data: gif })),
    );
    const outcome = cleaned(await run(input));
    expect((await listZip(outcome.bytes)).entries).toHaveLength(2000 + 0);
  });

  it('refuses a 1 GiB bomb whose sizes are declared, before inflating', async () => {
    const bomb = deflateBomb(1024 * MiB);
    const input = buildRawZip([
      { name: 'zeros.png', method: 8, rawCompressed: bomb, declaredUncompressedSize: 1024 * MiB },
    ]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it('refuses members whose total expansion passes the ceiling', async () => {
    const chunk = deflateBomb(8 * MiB);
    const input = buildRawZip(
      Array.from({ length: 4 }, (_, i) => ({
        name: `z${i}.png`,
        method: 8,
        rawCompressed: chunk,
        declaredUncompressedSize: 8 * MiB,
      })),
    );
    // Each member is under the expansion-ratio floor; together they pass the content ceiling.
    const outcome = await run(input, { limits: { maxBytes: 30 * MiB } });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (outcome.status === 'rejected') expect(outcome.detail).toMatch(/past the 30 MiB ceiling/);
  });

  it('refuses a member past the expansion ratio once it expands past 64 MiB', async () => {
    const input = buildRawZip([
      {
        name: 'z.png',
        method: 8,
        rawCompressed: deflateBomb(80 * MiB),
        declaredUncompressedSize: 80 * MiB,
      },
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (outcome.status === 'rejected') {
      expect(outcome.detail).toMatch(/member "z\.png" expands \d+ times to 80 MiB/);
    }
  });

  it('keeps a blank image that compresses a thousandfold: a ratio alone is not a bomb', async () => {
    // A white 24-bit scan as a scanner or Paint writes it: 2000 x 1500 pixels, 8.6 MiB, which
    // deflate stores about 1030 times smaller.
    const width = 2000;
    const height = 1500;
    const bmp = encodeBmp({
      width,
      height,
      channels: 3,
      data: new Uint8Array(width * height * 3).fill(0xff),
    });
    const input = await buildZip([{ name: 'scan.bmp', data: bmp }]);
    expect(bmp.length / input.length).toBeGreaterThan(1000);
    const outcome = cleaned(await run(input));
    const { entries } = await listZip(outcome.bytes);
    expect(entries.map((entry) => [entry.name, entry.size])).toEqual([['scan.bmp', bmp.length]]);
  });

  it('refuses a member that inflates past the size it declares', async () => {
    const input = buildRawZip([
      {
        name: 'z.png',
        method: 8,
        rawCompressed: deflateBomb(64 * MiB),
        declaredUncompressedSize: 1000,
      },
    ]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it('refuses overlapping members (a non-recursive zip bomb) as invalid_file, naming them', async () => {
    // Three entries sharing one small member expand to nothing like the ceiling: the archive is
    // not too large, it is malformed (APPNOTE 4.3.6: members follow one another).
    const png = await buildImage('png');
    const input = buildRawZip([
      { name: 'a.png', data: png },
      { name: 'b.png', shareDataWith: 0 },
      { name: 'c.png', shareDataWith: 0 },
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /"a\.png" and "b\.png" share one local entry/,
    );
  });

  it('refuses bytes after the end of the archive as invalid_file, naming them', async () => {
    // A plain archive is held to its structure (an Office package is read without the tail).
    const input = Buffer.concat([
      buildRawZip([{ name: 'a.png', data: await buildImage('png') }]),
      Buffer.from('\n'),
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /data after the end of the central directory/,
    );
  });

  it('refuses unsupported compression methods', async () => {
    const input = buildRawZip([{ name: 'a.png', data: 'BZh91AY&SY', method: 12 }]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'unsupported_file_type' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/bzip2/);
  });

  it.each([
    [
      'a truncated archive',
      async () =>
        (await buildZip([{ name: 'a.png', data: await buildImage('png') }])).subarray(0, 60),
    ],
    [
      'random bytes after a zip signature',
      () => Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(500, 7)]),
    ],
    [
      'a corrupt central directory',
      () => {
        const zip = buildRawZip([{ name: 'a.png', data: 'x' }]);
        zip.writeUInt32LE(0xdeadbeef, zip.length - 22 - 46 - 5);
        return zip;
      },
    ],
  ])('rejects %s as invalid_file', async (_label, make) => {
    expect(await run(await make())).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it.each([
    [
      'data before the first member (an HTML/zip polyglot)',
      { prefix: Buffer.from(TEXT_FIXTURES.html) },
    ],
    ['data after the end record', { suffix: Buffer.from(TEXT_FIXTURES.html) }],
  ])('rejects %s as invalid_file', async (_label, options) => {
    const input = buildRawZip([{ name: 'a.png', data: await buildImage('png') }], options);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it.each([
    // The 12-byte ZipCrypto header of an empty file (APPNOTE 6.1.3).
    ['a ZipCrypto member', { flags: 1, declaredUncompressedSize: 0 }],
    ['a deflate64 member', { method: 9 }],
  ])('still finds a threat beside %s', async (_label, fields) => {
    const input = buildRawZip([
      { name: 'secret.png', data: 'opaque bytes', ...fields },
      { name: 'eicar.png', data: EICAR_TEST_FILE },
    ]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
  });
});

/** An SVG file that passes detection; drawn by {@link CRASHING}, it ends in a fault. */
const SVG = TEXT_FIXTURES.svg;

/** A renderer whose program dies on every document, as a crashed browser would. */
const CRASHING: Renderer = {
  name: 'crashing',
  kinds: ['html', 'svg', 'spreadsheet', 'presentation'],
  render: () => Promise.reject(new Error('the browser crashed')),
  status: () => Promise.resolve({ name: 'crashing', kinds: [], ready: true }),
  close: () => Promise.resolve(),
};
const FAULTY: DisarmOptions = { renderers: [CRASHING] };

describe('archive verdicts consider every member, in any order', () => {
  async function both(
    first: { name: string; data: Uint8Array | string },
    second: { name: string; data: Uint8Array | string },
  ): Promise<Outcome[]> {
    return [
      await run(buildRawZip([first, second]), FAULTY),
      await run(buildRawZip([second, first]), FAULTY),
    ];
  }

  it('a member that ends in a fault never hides a threat', async () => {
    for (const outcome of await both(
      { name: 'a.svg', data: SVG },
      { name: 'eicar.png', data: EICAR_TEST_FILE },
    )) {
      expect(outcome).toMatchObject({
        status: 'rejected',
        reason: 'threat_detected',
        threatNames: ['EICAR-Test-File'],
      });
    }
  });

  it('a fault never hides a refused name', async () => {
    for (const outcome of await both(
      { name: 'a.svg', data: SVG },
      { name: '../evil.png', data: await buildImage('png') },
    )) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    }
  });

  it("a fault never hides another member's rejection", async () => {
    for (const outcome of await both(
      { name: 'a.svg', data: SVG },
      { name: 'fake.png', data: await buildImage('jpeg') },
    )) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
      expect(outcome.status === 'rejected' && outcome.detail).toMatch(/fake\.png/);
    }
  });

  it('the most decisive rejection wins whatever the order', async () => {
    for (const outcome of await both(
      { name: 'notes.txt', data: 'hello' },
      { name: 'fake.png', data: await buildImage('jpeg') },
    )) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'unsupported_file_type' });
    }
    for (const outcome of await both(
      { name: 'notes.txt', data: 'hello' },
      { name: 'CON.png', data: await buildImage('png') },
    )) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    }
  });

  it('collects every threat name, after a fault and a rejection alike', async () => {
    const scanners = [
      builtinScanner,
      {
        name: 'marker',
        scan: (bytes: Uint8Array) =>
          Promise.resolve(Buffer.from(bytes).toString() === 'MARKER' ? ['Test.Marker'] : []),
      },
    ];
    const input = buildRawZip([
      { name: 'a.svg', data: SVG },
      { name: 'eicar.png', data: EICAR_TEST_FILE },
      { name: 'notes.txt', data: 'hello' },
      { name: 'm.png', data: 'MARKER' },
    ]);
    const outcome = await run(input, { ...FAULTY, scanners });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
    expect(outcome.status === 'rejected' && [...(outcome.threatNames ?? [])].sort()).toEqual([
      'EICAR-Test-File',
      'Test.Marker',
    ]);
  });

  it('finds a threat in an archive hidden under an image name', async () => {
    const hidden = await buildZip([{ name: 'x.png', data: EICAR_TEST_FILE }]);
    for (const outcome of await both(
      { name: 'photo.png', data: hidden },
      { name: 'ok.png', data: await buildImage('png') },
    )) {
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'threat_detected' });
    }
  });

  it('ends in the fault only when no member is rejected', async () => {
    const input = buildRawZip([
      { name: 'a.svg', data: SVG },
      { name: 'ok.png', data: await buildImage('png') },
    ]);
    await expect(run(input, FAULTY)).rejects.toMatchObject({ code: 'ERR_INTERNAL' });
  });
});

describe('Windows-unsafe member names', () => {
  it.each([
    ['an NTFS alternate data stream', 'evil.exe:x.png'],
    ['a device name', 'CON.png'],
    ['a device name in a directory, lower case', 'sub/aux.png'],
    ['a device name without extension', 'photos/nul'],
    ['a device name with two extensions', 'lpt1.tar.png'],
    ['a device name with a superscript digit', 'COM\u00b9.png'],
    ['a device name before a space', 'prn .png'],
    ['a trailing dot', 'photo.png.'],
    ['a trailing space', 'photo.png '],
    ['a directory with a trailing dot', 'dir./photo.png'],
    ['a right-to-left override', 'photo\u202Egnp.exe'],
    ['a first-strong isolate', 'photo\u2068.png'],
    ['a right-to-left mark', 'photo\u200F.png'],
    ['an Arabic letter mark', 'photo\u061C.png'],
    ['a zero width space', 'photo\u200B.png'],
    ['a C1 control character', 'photo\u009B.png'],
    ['DEL', 'photo\u007F.png'],
    ['a character Windows refuses', 'what?.png'],
  ])('refuses %s as policy_violation', async (_label, name) => {
    const outcome = await run(buildRawZip([{ name, data: await buildImage('png') }]));
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('accepts names that only look like device names, and joiners that scripts need', async () => {
    const png = await buildImage('png');
    const names = [
      'console.png',
      'CONFIG/aux_1.png',
      'com10.png',
      'nul-report.png',
      'فایل\u200Cها.png',
    ];
    const outcome = cleaned(await run(buildRawZip(names.map((name) => ({ name, data: png })))));
    expect((await listZip(outcome.bytes)).entries.map((entry) => entry.name)).toEqual(names);
  });
});

describe('zip structure', () => {
  it.each([
    ['a local header naming another file', { local: { name: 'other.png' } }, /disagree/],
    ['a local header with other sizes', { local: { uncompressedSize: 5 } }, /sizes/],
    ['a local header with another CRC-32', { local: { crc: 1234 } }, /CRC-32/],
    ['a local header with another method', { local: { method: 8 } }, /compression/],
    ['a local header with other flags', { local: { flags: 0x0801 } }, /flags/],
  ])('refuses %s as invalid_file', async (_label, fields, detail) => {
    const input = buildRawZip([
      { name: 'ok.png', data: await buildImage('png') },
      { name: 'b.png', data: await buildImage('png'), ...fields },
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(detail);
  });

  it.each([
    ['first', 0],
    ['in the middle', 1],
    ['last', 2],
  ])('refuses a local entry the directory does not list (%s)', async (_label, at) => {
    const png = await buildImage('png');
    const entries: RawZipEntry[] = [
      { name: 'a.png', data: png },
      { name: 'b.png', data: png },
    ];
    entries.splice(at, 0, {
      name: 'hidden.png',
      data: EICAR_TEST_FILE.subarray(0, 20),
      unlisted: true,
    });
    const outcome = await run(buildRawZip(entries));
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/does not list/);
  });

  it('refuses a directory entry that carries data', async () => {
    const input = buildRawZip([
      { name: 'dir/', data: 'smuggled' },
      { name: 'dir/a.png', data: await buildImage('png') },
    ]);
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/directory entry "dir\/"/);
  });

  it('accepts data descriptors, as streaming writers make them', async () => {
    const png = await buildImage('png');
    const input = buildRawZip([
      { name: 'a.png', data: png, dataDescriptor: true },
      { name: 'b.png', data: png, method: 8, dataDescriptor: true },
    ]);
    const outcome = cleaned(await run(input));
    expect((await listZip(outcome.bytes)).entries.map((entry) => entry.name)).toEqual([
      'a.png',
      'b.png',
    ]);
  });

  it('accepts a macOS Archive Utility zip: data descriptors, the size also in the local header', async () => {
    const png = await buildImage('png');
    const input = buildRawZip([
      {
        name: 'a.png',
        data: png,
        method: 8,
        dataDescriptor: true,
        local: { uncompressedSize: png.length },
      },
    ]);
    expect(cleaned(await run(input)).format).toBe('zip');
  });

  it('refuses a data descriptor that disagrees with the directory', async () => {
    const input = buildRawZip([
      { name: 'a.png', data: await buildImage('png'), dataDescriptor: true, local: { crc: 7 } },
    ]);
    expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });
});
