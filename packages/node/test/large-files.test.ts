/**
 * Large files in bounded memory (README "Limits"): a worker rebuilds a photo archive and a PDF
 * of scanned pages far larger than it may hold, and the API process takes a 100 MB multipart
 * submission and a 450 MB upload without holding either. Sizes are kept to what the test machine
 * builds in seconds; `npm run bench:large` measures the plan ceilings.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';

import { writePhotoArchive, writeScannedPdf } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createWorkerPool } from '../src/index.ts';
import { tempDir } from './_fixtures.ts';
import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

const MIB_BYTES = 1024 * 1024;
const MB_BYTES = 1_000_000;
/** What a worker may hold (the goal): the pool kills one past it. */
const WORKER_LIMIT_BYTES = 300 * MIB_BYTES;
/** Building and rebuilding some 60-100 MB takes a while on a shared machine. */
const LONG_TEST_MS = 600_000;

/** Peak resident set of a process so far (`VmHWM`, proc(5)). */
function peakRssBytes(pid: number): number {
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) * 1024;
}

/** Resident set of a process now (`VmRSS`). */
function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? Number.NaN) * 1024;
}

const ENV_WORKER = new URL('./fixtures/env-worker.ts', import.meta.url);

describe("a worker's allocator", () => {
  /** The environment a new worker of a new pool starts with. */
  async function workerEnvironment(): Promise<Record<string, string>> {
    const pool = createWorkerPool({ size: 1, workerModule: ENV_WORKER, workerOutput: 'ignore' });
    try {
      const result = await pool.run({ inputPath: ENV_WORKER.pathname, fileName: 'env.png' });
      if (result.status !== 'rejected') throw new Error(`unexpected ${result.status}`);
      return JSON.parse(result.detail) as Record<string, string>;
    } finally {
      await pool.close();
    }
  }

  it('gives large buffers back to the system, unless the environment says otherwise', async () => {
    const saved = process.env.MALLOC_ARENA_MAX;
    delete process.env.MALLOC_ARENA_MAX;
    try {
      expect(await workerEnvironment()).toEqual({
        MALLOC_ARENA_MAX: '2',
        MALLOC_MMAP_THRESHOLD_: String(MIB_BYTES),
        VIPS_CONCURRENCY: '1',
      });
      process.env.MALLOC_ARENA_MAX = '4';
      expect(await workerEnvironment()).toMatchObject({ MALLOC_ARENA_MAX: '4' });
    } finally {
      if (saved === undefined) delete process.env.MALLOC_ARENA_MAX;
      else process.env.MALLOC_ARENA_MAX = saved;
    }
  });
});

describe.runIf(process.platform === 'linux')('large files, by worker and by API process', () => {
  let dir: string;
  let photos: string;
  let scan: string;

  beforeAll(async () => {
    dir = await tempDir();
    photos = join(dir, 'photos.zip');
    scan = join(dir, 'scan.pdf');
    // Photos of a 6 MP camera; each is a few megabytes, the archive twenty times that.
    await writePhotoArchive(photos, {
      targetBytes: 60 * MB_BYTES,
      photo: { width: 3000, height: 2000 },
    });
    await writeScannedPdf(scan, { targetBytes: 100 * MB_BYTES, distinctPages: 2 });
  }, LONG_TEST_MS);

  it(
    'a worker rebuilds a 60 MB photo archive and a 100 MB scanned PDF under a 300 MiB limit',
    async () => {
      const pool = createWorkerPool({
        size: 1,
        memoryLimitBytes: WORKER_LIMIT_BYTES,
        workerOutput: 'ignore',
        renderers: ['builtin'],
      });
      try {
        const out = await tempDir();
        const options = { limits: { maxBytes: 450 * MIB_BYTES, timeoutMs: LONG_TEST_MS } };
        const zip = await pool.run({
          inputPath: photos,
          fileName: 'photos.zip',
          outputDir: out,
          options,
        });
        expect(zip).toMatchObject({ status: 'cleaned', format: 'zip' });
        const pdf = await pool.run({
          inputPath: scan,
          fileName: 'scan.pdf',
          outputDir: out,
          options,
        });
        expect(pdf).toMatchObject({ status: 'cleaned', format: 'pdf' });
        const [pid] = pool.stats().pids;
        expect(pid).toBeDefined();
        // The watchdog would have killed it past the limit; the peak says by how much it stayed under.
        expect(peakRssBytes(pid ?? 0)).toBeLessThan(WORKER_LIMIT_BYTES);
        // Independent readers of what was written.
        execFileSync('unzip', ['-tqq', join(out, 'photos.zip')]);
        execFileSync('qpdf', ['--check', join(out, 'scan.pdf')], { stdio: 'ignore' });
      } finally {
        await pool.close();
      }
    },
    LONG_TEST_MS,
  );

  describe('the API process', () => {
    let server: TestServer;
    beforeAll(async () => {
      // The API alone: documents wait in the queue, so what is measured is the intake.
      server = await startTestServer({ args: ['--role=api'] });
    }, LONG_TEST_MS);
    afterAll(async () => {
      await server.stop();
    });

    it(
      'takes a 100 MB multipart submission and a 450 MB upload without holding them',
      async () => {
        const { apiKey } = await server.createOrganisation('growth');
        const rest = rssBytes(server.pid);
        let peak = rest;
        const sampler = setInterval(() => {
          peak = Math.max(peak, rssBytes(server.pid));
        }, 20);
        try {
          const boundary = 'large-files-test';
          const head = Buffer.from(
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="photos.zip"\r\nContent-Type: application/zip\r\n\r\n`,
          );
          const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
          const submitted = await send(`${server.apiUrl}/v1/documents`, {
            method: 'POST',
            headers: {
              'X-Api-Key': apiKey,
              'Idempotency-Key': 'large-1',
              'Content-Type': `multipart/form-data; boundary=${boundary}`,
            },
            head,
            bodyBytes: 100 * MB_BYTES,
            tail,
          });
          expect(submitted.status).toBe(202);

          const upload = await fetch(`${server.apiUrl}/v1/uploads`, {
            method: 'POST',
            headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
            body: JSON.stringify({ fileName: 'scan.pdf' }),
          });
          expect(upload.status).toBe(201);
          const created = (await upload.json()) as {
            uploadId: string;
            uploadUrl: string;
            requiredHeaders: Record<string, string>;
          };
          const put = await send(created.uploadUrl, {
            method: 'PUT',
            headers: created.requiredHeaders,
            bodyBytes: 450 * MB_BYTES,
          });
          expect(put.status).toBe(201);
          const accepted = await fetch(`${server.apiUrl}/v1/documents`, {
            method: 'POST',
            headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
            body: JSON.stringify({ uploadId: created.uploadId }),
          });
          expect(accepted.status).toBe(202);
        } finally {
          clearInterval(sampler);
        }
        // Buffering either body would add at least its size (95 MiB, 429 MiB); streaming them
        // adds buffers in flight and garbage not yet collected (about 40-50 MiB, from source).
        expect((peak - rest) / MIB_BYTES).toBeLessThan(90);
      },
      LONG_TEST_MS,
    );
  });
});

/** Sends `head`, `bodyBytes` of generated content and `tail` with a Content-Length, as it goes. */
async function send(
  url: string,
  options: {
    readonly method: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly head?: Buffer;
    readonly bodyBytes: number;
    readonly tail?: Buffer;
  },
): Promise<{ status: number; body: string }> {
  const head = options.head ?? Buffer.alloc(0);
  const tail = options.tail ?? Buffer.alloc(0);
  const outgoing = request(url, {
    method: options.method,
    headers: {
      ...options.headers,
      'Content-Length': head.length + options.bodyBytes + tail.length,
    },
  });
  const answered = once(outgoing, 'response') as Promise<[IncomingMessage]>;
  const chunk = Buffer.alloc(MIB_BYTES);
  for (let i = 0; i < chunk.length; i += 1) chunk[i] = (i * 31 + (i >> 9)) & 0xff;
  if (!outgoing.write(head)) await once(outgoing, 'drain');
  for (let sent = 0; sent < options.bodyBytes; sent += chunk.length) {
    if (!outgoing.write(chunk.subarray(0, Math.min(chunk.length, options.bodyBytes - sent)))) {
      await once(outgoing, 'drain');
    }
  }
  outgoing.end(tail);
  const [response] = await answered;
  let body = '';
  response.setEncoding('utf8');
  for await (const part of response) body += String(part);
  return { status: response.statusCode ?? 0, body };
}
