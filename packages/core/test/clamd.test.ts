import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildImage,
  buildOfficeDocument,
  buildPdfWithAttachment,
  buildZip,
  CLAMD_EICAR_SIGNATURE,
  CLAMD_MARKER,
  CLAMD_MARKER_SIGNATURE,
  EICAR_TEST_FILE,
  startClamd,
} from '@disarm/fixtures';
import type { RunningClamd } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { builtinScanner, createClamdScanner, disarm, DisarmError } from '../src/index.ts';
import type { ClamdScannerOptions, DisarmOptions, Outcome } from '../src/index.ts';

/** clamd's `StreamMaxLength` here: small, so that a file over it is cheap to make. */
const STREAM_MAX_LENGTH_BYTES = 1024 * 1024;

let clamd: RunningClamd;

beforeAll(async () => {
  clamd = await startClamd({ streamMaxLengthBytes: STREAM_MAX_LENGTH_BYTES });
});

afterAll(async () => {
  await clamd.stop();
});

function withClamd(options: Partial<ClamdScannerOptions> = {}): DisarmOptions {
  return {
    scanners: [builtinScanner, createClamdScanner({ socket: clamd.socket, ...options })],
  };
}

function run(bytes: Uint8Array, fileName: string, options = withClamd()): Promise<Outcome> {
  return disarm({ bytes, fileName }, options);
}

describe('the clamd scanner against a real clamd', () => {
  it('answers PING and VERSION', async () => {
    const scanner = createClamdScanner({ socket: clamd.socket });
    await expect(scanner.ping()).resolves.toBeUndefined();
    expect(await scanner.version()).toMatch(/^ClamAV \d+\.\d+/);
  });

  it('passes a clean file', async () => {
    expect(await run(await buildImage('png'), 'photo.png')).toMatchObject({ status: 'cleaned' });
  });

  it("rejects an infected file with clamd's signature name", async () => {
    const text = Buffer.concat([Buffer.from('Dear customer,\n'), CLAMD_MARKER]);
    expect(await run(text, 'letter.png')).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${CLAMD_MARKER_SIGNATURE}`,
      threatNames: [CLAMD_MARKER_SIGNATURE],
    });
    // Both scanners know EICAR, each by its own name.
    expect(await run(EICAR_TEST_FILE, 'eicar.com')).toMatchObject({
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File', CLAMD_EICAR_SIGNATURE],
    });
  });

  it('rejects a zip with an infected member', async () => {
    const zip = await buildZip([
      { name: 'photo.png', data: await buildImage('png') },
      { name: 'docs/notes.png', data: Buffer.concat([Buffer.from('notes '), CLAMD_MARKER]) },
    ]);
    // clamd finds the marker in the zip as a whole; the engine then names the member.
    expect(await run(zip, 'bundle.zip')).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${CLAMD_MARKER_SIGNATURE} in member "docs/notes.png"`,
      threatNames: [CLAMD_MARKER_SIGNATURE],
    });
  });

  it('rejects a Word document with an infected embedded OLE object', async () => {
    const docx = await buildOfficeDocument('docx', {
      oleObject: true,
      payload: CLAMD_MARKER.toString('latin1'),
    });
    expect(await run(docx, 'letter.docx')).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${CLAMD_MARKER_SIGNATURE} in part "word/embeddings/oleObject1.bin"`,
      threatNames: [CLAMD_MARKER_SIGNATURE],
    });
    // Without the marker the same document is cleaned: the object is dropped, not refused.
    expect(
      await run(await buildOfficeDocument('docx', { oleObject: true }), 'a.docx'),
    ).toMatchObject({ status: 'cleaned' });
  });

  it('rejects a PDF with an infected attachment', async () => {
    const payload = Buffer.concat([Buffer.from('MZ'), CLAMD_MARKER]);
    const pdf = buildPdfWithAttachment('setup.exe', payload);
    expect(await run(pdf, 'invoice.pdf')).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${CLAMD_MARKER_SIGNATURE} in attachment "setup.exe"`,
      threatNames: [CLAMD_MARKER_SIGNATURE],
    });
  });

  it('scans a file given by path as it reads it, and names the member', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'clamd-file-'));
    // Many INSTREAM chunks, within clamd's stream limit: the marker comes last.
    const filler = randomBytes(STREAM_MAX_LENGTH_BYTES - 200_000);
    const zip = await buildZip([
      { name: 'filler.png', data: filler, compress: false },
      { name: 'docs/notes.png', data: Buffer.concat([Buffer.from('notes '), CLAMD_MARKER]) },
    ]);
    const path = join(folder, 'bundle.zip');
    writeFileSync(path, zip);
    expect(await disarm({ path, fileName: 'bundle.zip' }, withClamd())).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${CLAMD_MARKER_SIGNATURE} in member "docs/notes.png"`,
      threatNames: [CLAMD_MARKER_SIGNATURE],
    });
    const clean = join(folder, 'clean.png');
    writeFileSync(clean, await buildImage('png'));
    expect(await disarm({ path: clean, fileName: 'clean.png' }, withClamd())).toMatchObject({
      status: 'cleaned',
    });
  });

  it("fails closed on a file over clamd's StreamMaxLength", async () => {
    const big = randomBytes(STREAM_MAX_LENGTH_BYTES + 1);
    // Told nothing of the limit, the scanner learns it from clamd's refusal.
    const learnt = run(big, 'big.png');
    await expect(learnt).rejects.toBeInstanceOf(DisarmError);
    await expect(learnt).rejects.toMatchObject({
      code: 'ERR_INTERNAL',
      message: expect.stringContaining('StreamMaxLength') as unknown,
    });
    // Told the limit, it does not send the file at all.
    const told = run(big, 'big.png', withClamd({ streamMaxLengthBytes: STREAM_MAX_LENGTH_BYTES }));
    await expect(told).rejects.toMatchObject({
      code: 'ERR_INTERNAL',
      message: expect.stringContaining(
        `stream limit of ${STREAM_MAX_LENGTH_BYTES} bytes`,
      ) as unknown,
    });
  });

  it('scans over TCP as over the Unix socket', async () => {
    const scanner = createClamdScanner({ host: '127.0.0.1', port: clamd.port });
    await scanner.ping();
    expect(
      await disarm({ bytes: EICAR_TEST_FILE, fileName: 'x.com' }, { scanners: [scanner] }),
    ).toMatchObject({ reason: 'threat_detected', threatNames: [CLAMD_EICAR_SIGNATURE] });
  });

  it('fails closed when clamd is down, and goes on when configured to fail open', async () => {
    const down = await startClamd();
    await down.stop();
    const png = await buildImage('png');
    const closed = disarm(
      { bytes: png, fileName: 'photo.png' },
      { scanners: [createClamdScanner({ socket: down.socket })] },
    );
    await expect(closed).rejects.toMatchObject({
      code: 'ERR_INTERNAL',
      message: 'the antivirus scanner could not scan the file: could not connect to clamd (ENOENT)',
    });
    const skipped: string[] = [];
    const open = createClamdScanner({
      socket: down.socket,
      failOpen: true,
      onSkipped: (_error, context) => skipped.push(context.fileName),
    });
    expect(await disarm({ bytes: png, fileName: 'photo.png' }, { scanners: [open] })).toMatchObject(
      { status: 'cleaned' },
    );
    expect(skipped).toEqual(['photo.png']);
  });
});
