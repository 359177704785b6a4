import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';

import {
  buildImage,
  buildOdf,
  buildOfficeDocument,
  buildZip,
  COMPOUND_FIXTURES,
  EICAR_TEST_FILE,
  TEXT_FIXTURES,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from './disarm.ts';
import { isDisarmError } from './errors.ts';
import type { Scanner } from './scan/scanner.ts';

describe('disarm()', () => {
  it('reads the file from bytes, a path, a Node stream and a web stream alike', async () => {
    const png = await buildImage('png');
    const dir = await mkdtemp(join(tmpdir(), 'disarm-'));
    const path = join(dir, 'in.png');
    await writeFile(path, png);
    const sources = [
      { bytes: png, fileName: 'a.png' },
      { path, fileName: 'a.png' },
      { stream: Readable.from([png.subarray(0, 10), png.subarray(10)]), fileName: 'a.png' },
      { stream: new Blob([new Uint8Array(png)]).stream(), fileName: 'a.png' },
    ];
    for (const source of sources) {
      expect(await disarm(source)).toMatchObject({
        status: 'cleaned',
        format: 'png',
        mediaType: 'image/png',
      });
    }
  });

  it('refuses a file over the ceiling without reading it all', async () => {
    const big = Buffer.alloc(2048, 1);
    const limits = { maxBytes: 1024 };
    const dir = await mkdtemp(join(tmpdir(), 'disarm-'));
    await writeFile(join(dir, 'big.png'), big);
    let pulled = 0;
    function* endless(): Generator<Uint8Array> {
      for (;;) {
        pulled += 1;
        yield Buffer.alloc(512);
      }
    }
    for (const source of [
      { bytes: big, fileName: 'a.png' },
      { path: join(dir, 'big.png'), fileName: 'a.png' },
      { stream: Readable.from(endless()), fileName: 'a.png' },
    ]) {
      expect(await disarm(source, { limits })).toMatchObject({
        status: 'rejected',
        reason: 'file_too_large',
      });
    }
    expect(pulled).toBeLessThanOrEqual(3);
  });

  it('scans before anything else: EICAR under any name is a threat', async () => {
    for (const fileName of ['eicar.pdf', 'eicar.com', 'eicar']) {
      expect(await disarm({ bytes: EICAR_TEST_FILE, fileName })).toEqual({
        status: 'rejected',
        reason: 'threat_detected',
        detail: 'the file contains EICAR-Test-File',
        threatNames: ['EICAR-Test-File'],
      });
    }
  });

  it('accepts EICAR padded with whitespace and nothing longer', async () => {
    const padded = Buffer.concat([EICAR_TEST_FILE, Buffer.from(' \r\n\t\x1a')]);
    expect(await disarm({ bytes: padded, fileName: 'x.png' })).toMatchObject({
      reason: 'threat_detected',
    });
    const embedded = Buffer.concat([Buffer.from('prefix'), EICAR_TEST_FILE]);
    expect(await disarm({ bytes: embedded, fileName: 'x.png' })).toMatchObject({
      reason: 'invalid_file',
    });
  });

  it('runs every configured scanner and collects their names', async () => {
    const seen: string[] = [];
    const custom: Scanner = {
      name: 'test',
      scan: (bytes, context) => {
        seen.push(context.fileName);
        return Promise.resolve(
          Buffer.from(bytes).includes(Buffer.from('MALWARE')) ? ['Test.Malware'] : [],
        );
      },
    };
    const zip = await buildZip([
      { name: 'ok.png', data: await buildImage('png') },
      { name: 'bad.png', data: 'MALWARE' },
    ]);
    const outcome = await disarm({ bytes: zip, fileName: 'a.zip' }, { scanners: [custom] });
    expect(outcome).toMatchObject({ reason: 'threat_detected', threatNames: ['Test.Malware'] });
    expect(seen).toEqual(['a.zip', 'ok.png', 'bad.png']);
  });

  it('fails (throws) when a scanner cannot answer, rather than passing the file unscanned', async () => {
    const broken: Scanner = {
      name: 'down',
      scan: () => Promise.reject(new Error('clamd: connection refused')),
    };
    await expect(
      disarm({ bytes: await buildImage('png'), fileName: 'a.png' }, { scanners: [broken] }),
    ).rejects.toSatisfy((error) => isDisarmError(error, 'ERR_INTERNAL'));
  });

  it('turns a TypeError raised while processing into ERR_INTERNAL, keeping TypeError for bad options', async () => {
    // The fuzzing property "never an unexpected exception type": a TypeError is how the engine
    // says a caller misused it, so a fault inside (here a scanner's) must not look like one.
    const buggy: Scanner = {
      name: 'buggy',
      scan: () =>
        Promise.reject(new TypeError("Cannot read properties of undefined (reading 'x')")),
    };
    await expect(
      disarm({ bytes: await buildImage('png'), fileName: 'a.png' }, { scanners: [buggy] }),
    ).rejects.toSatisfy((error) => isDisarmError(error, 'ERR_INTERNAL'));
    await expect(disarm({ fileName: 'a.png' } as never)).rejects.toThrow(TypeError);
  });

  it('throws ERR_TIMEOUT when the time budget runs out', async () => {
    const slow: Scanner = {
      name: 'slow',
      scan: () =>
        new Promise((resolve) =>
          setTimeout(() => {
            resolve([]);
          }, 2_000),
        ),
    };
    await expect(
      disarm(
        { bytes: await buildImage('png'), fileName: 'a.png' },
        { scanners: [slow], limits: { timeoutMs: 50 } },
      ),
    ).rejects.toSatisfy((error) => isDisarmError(error, 'ERR_TIMEOUT'));
  });

  it('throws ERR_TIMEOUT when the caller aborts', async () => {
    const controller = new AbortController();
    const slow: Scanner = {
      name: 'slow',
      scan: () =>
        new Promise((resolve) =>
          setTimeout(() => {
            resolve([]);
          }, 2_000),
        ),
    };
    const pending = disarm(
      { bytes: await buildImage('png'), fileName: 'a.png' },
      { scanners: [slow], signal: controller.signal },
    );
    controller.abort();
    await expect(pending).rejects.toSatisfy((error) => isDisarmError(error, 'ERR_TIMEOUT'));
  });

  it('rejects unsupported and extension-less names', async () => {
    const png = await buildImage('png');
    expect(await disarm({ bytes: png, fileName: 'a.txt' })).toMatchObject({
      reason: 'unsupported_file_type',
      detail: '.txt files are not a supported type',
    });
    expect(await disarm({ bytes: png, fileName: 'README' })).toMatchObject({
      reason: 'unsupported_file_type',
    });
  });

  it.each([
    ['a.svg', () => Buffer.from(TEXT_FIXTURES.svg)],
    ['a.html', () => Buffer.from(TEXT_FIXTURES.html)],
    ['a.ods', () => buildOdf('ods')],
  ])(
    'converts %s to PDF with the built-in renderer when no renderer is configured',
    async (fileName, make) => {
      const outcome = await disarm({ bytes: await make(), fileName });
      expect(outcome).toMatchObject({
        status: 'cleaned',
        fileName: fileName.replace(/\.\w+$/, '.pdf'),
        format: 'pdf',
        modifications: ['rebuilt', 'converted'],
      });
      if (outcome.status !== 'cleaned') throw new Error('not cleaned');
      expect(Buffer.from(outcome.bytes.subarray(0, 5)).toString('latin1')).toBe('%PDF-');
    },
  );

  it('still rejects a not-yet-rebuilt family for what detection sees', async () => {
    expect(
      await disarm({ bytes: COMPOUND_FIXTURES.encryptedOoxml(), fileName: 'a.docx' }),
    ).toMatchObject({
      reason: 'password_protected',
    });
    expect(
      await disarm({ bytes: Buffer.from('%!PS-Adobe %pipe%'), fileName: 'a.pdf' }),
    ).toMatchObject({
      reason: 'invalid_file',
    });
  });

  describe('policy', () => {
    it('strips by default and rejects a kind the policy refuses, naming it', async () => {
      const jpeg = await buildImage('jpeg', { exif: { Artist: 'x' } });
      expect(await disarm({ bytes: jpeg, fileName: 'a.jpg' })).toMatchObject({ status: 'cleaned' });
      expect(
        await disarm({ bytes: jpeg, fileName: 'a.jpg' }, { policy: { 'image-metadata': 'strip' } }),
      ).toMatchObject({
        status: 'cleaned',
      });
      const outcome = await disarm(
        { bytes: jpeg, fileName: 'a.jpg' },
        { policy: { 'image-metadata': 'reject' } },
      );
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
      expect(outcome.status === 'rejected' && outcome.detail).toContain('image-metadata');
    });

    it('names the refused kind in its sentence, a name keeping its capitals', async () => {
      const policy = { 'vba-macro': 'reject', 'image-metadata': 'reject' } as const;
      const docm = await buildOfficeDocument('docm', { vba: true });
      const macro = await disarm({ bytes: docm, fileName: 'a.docm' }, { policy });
      expect(macro.status === 'rejected' && macro.detail).toBe(
        'the file contains VBA macro project (vba-macro), which the content policy rejects',
      );
      const jpeg = await buildImage('jpeg', { exif: { Artist: 'x' } });
      const photo = await disarm({ bytes: jpeg, fileName: 'a.jpg' }, { policy });
      expect(photo.status === 'rejected' && photo.detail).toMatch(
        /^the file contains image metadata \(EXIF, .*\(image-metadata\), which the content policy rejects$/,
      );
    });

    it('applies to archive members', async () => {
      const zip = await buildZip([
        { name: 'a.jpg', data: await buildImage('jpeg', { exif: { Artist: 'x' } }) },
      ]);
      const outcome = await disarm(
        { bytes: zip, fileName: 'a.zip' },
        { policy: { 'image-metadata': 'reject' } },
      );
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
      expect(outcome.status === 'rejected' && outcome.detail).toMatch(/a\.jpg/);
    });

    it('does not reject a clean file under a strict policy', async () => {
      const policy = {
        'image-metadata': 'reject',
        'vba-macro': 'reject',
        'trailing-data': 'reject',
      } as const;
      expect(
        await disarm({ bytes: await buildImage('png'), fileName: 'a.png' }, { policy }),
      ).toMatchObject({
        status: 'cleaned',
        findings: [],
      });
    });

    it('refuses a malformed policy or limits as a programming error', async () => {
      const bytes = await buildImage('png');
      await expect(
        disarm({ bytes, fileName: 'a.png' }, { policy: { macros: 'reject' } as never }),
      ).rejects.toThrow(TypeError);
      await expect(
        disarm({ bytes, fileName: 'a.png' }, { policy: { 'vba-macro': 'delete' } as never }),
      ).rejects.toThrow(TypeError);
      await expect(
        disarm({ bytes, fileName: 'a.png' }, { limits: { maxBytes: -1 } }),
      ).rejects.toThrow(TypeError);
    });
  });
});
