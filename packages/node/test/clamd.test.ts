/**
 * ClamAV through the whole service: a real `disarm serve --clamd` on loopback and a real
 * `disarm clean --clamd`, against a real clamd with the test signature database.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildImage,
  buildPdfWithAttachment,
  CLAMD_EICAR_SIGNATURE,
  CLAMD_MARKER,
  CLAMD_MARKER_SIGNATURE,
  EICAR_TEST_FILE,
  startClamd,
} from '@disarm/fixtures';
import type { RunningClamd } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createWorkerPool } from '../src/pool/index.ts';
import { multipart } from './conformance/_harness.ts';
import type { Envelope } from './conformance/_harness.ts';
import { runDisarm, startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

let clamd: RunningClamd;
let png: Buffer;

beforeAll(async () => {
  clamd = await startClamd();
  png = await buildImage('png', { width: 8, height: 8 });
});

afterAll(async () => {
  await clamd.stop();
});

async function submit(server: TestServer, apiKey: string, name: string, bytes: Uint8Array) {
  const response = await fetch(`${server.apiUrl}/v1/documents?wait=true`, {
    method: 'POST',
    headers: { 'X-Api-Key': apiKey },
    body: multipart({ name, bytes }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Envelope;
}

describe('disarm serve --clamd', () => {
  let server: TestServer;
  let apiKey: string;

  beforeAll(async () => {
    server = await startTestServer({ args: ['--clamd', clamd.socket] });
    ({ apiKey } = await server.createOrganisation('internal'));
  });

  afterAll(async () => {
    await server.stop();
  });

  it('is ready while clamd answers, and cleans a clean file', async () => {
    expect((await fetch(`${server.apiUrl}/readyz`)).status).toBe(200);
    expect(await submit(server, apiKey, 'photo.png', png)).toMatchObject({ status: 'completed' });
  });

  it("rejects an infected file and an infected PDF attachment with clamd's names", async () => {
    expect(await submit(server, apiKey, 'eicar.pdf', EICAR_TEST_FILE)).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File', CLAMD_EICAR_SIGNATURE],
    });
    const pdf = buildPdfWithAttachment(
      'setup.exe',
      Buffer.concat([Buffer.from('MZ'), CLAMD_MARKER]),
    );
    expect(await submit(server, apiKey, 'invoice.pdf', pdf)).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: [CLAMD_MARKER_SIGNATURE],
      reasonDetail: `The file contains ${CLAMD_MARKER_SIGNATURE} in attachment "setup.exe".`,
    });
  });

  it('fails closed once clamd is down: not ready, and a file fails (credited)', async () => {
    const own = await startClamd();
    const failing = await startTestServer({ args: ['--clamd', own.socket] });
    try {
      const { apiKey: key } = await failing.createOrganisation('internal');
      await own.stop();
      expect((await fetch(`${failing.apiUrl}/readyz`)).status).toBe(503);
      expect(await submit(failing, key, 'photo.png', png)).toMatchObject({
        status: 'failed',
        reason: 'internal_error',
        reasonDetail: expect.stringContaining('credited back') as unknown,
      });
      // The operator's log says why.
      expect(failing.logs()).toContainEqual(
        expect.objectContaining({
          msg: 'document processing failed',
          detail: expect.stringMatching(
            /^the antivirus scanner could not scan the file: could not connect to clamd \((ENOENT|ECONNREFUSED)\)$/,
          ) as unknown,
        }),
      );
    } finally {
      await failing.stop();
      await own.stop();
    }
  });

  it('with --clamd-fail-open, stays ready and lets a file through, with a warning', async () => {
    const own = await startClamd();
    await own.stop();
    const open = await startTestServer({ args: ['--clamd', own.socket, '--clamd-fail-open'] });
    try {
      const { apiKey: key } = await open.createOrganisation('internal');
      expect((await fetch(`${open.apiUrl}/readyz`)).status).toBe(200);
      expect(await submit(open, key, 'photo.png', png)).toMatchObject({ status: 'completed' });
      expect(open.stderr()).toContain('[DISARM_CLAMD_SKIPPED]');
    } finally {
      await open.stop();
    }
  });
});

describe('createWorkerPool({ clamd })', () => {
  it('refuses clamd options that name no clamd when the pool is made, not in a worker', () => {
    expect(() => createWorkerPool({ clamd: {} })).toThrow(TypeError);
    expect(() => createWorkerPool({ clamd: { socket: clamd.socket, host: '127.0.0.1' } })).toThrow(
      TypeError,
    );
  });
});

describe('disarm clean --clamd', () => {
  it('scans with clamd given by DISARM_CLAMD as host:port', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'disarm-clean-clamd-'));
    try {
      await writeFile(join(folder, 'eicar.com'), EICAR_TEST_FILE);
      const run = await runDisarm(
        ['clean', join(folder, 'eicar.com'), '--out', join(folder, 'out'), '--json'],
        { ...process.env, DISARM_CLAMD: `127.0.0.1:${clamd.port}` },
      );
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({
        status: 'rejected',
        reason: 'threat_detected',
        threatNames: ['EICAR-Test-File', CLAMD_EICAR_SIGNATURE],
      });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('refuses fail-open without --clamd, and a DISARM_CLAMD_FAIL_OPEN that says neither', async () => {
    const alone = await runDisarm(['clean', 'in', '--out', 'out', '--clamd-fail-open']);
    expect(alone.code).toBe(64);
    expect(alone.stderr).toContain('--clamd-fail-open needs --clamd');
    // "off" is not "0": a misspelt switch must not let files through unscanned.
    const misspelt = await runDisarm(['clean', 'in', '--out', 'out', '--clamd', clamd.socket], {
      ...process.env,
      DISARM_CLAMD_FAIL_OPEN: 'off',
    });
    expect(misspelt.code).toBe(64);
    expect(misspelt.stderr).toContain('DISARM_CLAMD_FAIL_OPEN must be 1, true, 0 or false');
  });
});
