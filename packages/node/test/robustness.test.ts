/**
 * What a real `disarm serve` does when things go wrong around it: crashes, restarts, shutdown,
 * clients that vanish mid-upload, oversized headers. Over loopback, against the real process.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';

import { buildImage } from '@disarm/fixtures';
import { retryBackoffMs } from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';
import { afterEach, describe, expect, it } from 'vitest';

import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

interface Envelope {
  id: string;
  status: string;
  reason?: string;
}

const servers: TestServer[] = [];
const dataDirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  await Promise.all(dataDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A data folder that outlives one server (restarts reuse it). */
async function sharedDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'disarm-robust-'));
  dataDirs.push(dir);
  return dir;
}

async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer(options);
  servers.push(server);
  return server;
}

async function submitPng(server: TestServer, apiKey: string, query = ''): Promise<Response> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await buildImage('png'))]), 'photo.png');
  return fetch(`${server.apiUrl}/v1/documents${query}`, {
    method: 'POST',
    headers: { 'X-Api-Key': apiKey },
    body: form,
  });
}

async function waitForTerminal(server: TestServer, apiKey: string, id: string): Promise<Envelope> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    const envelope = (await (
      await fetch(`${server.apiUrl}/v1/documents/${id}`, { headers: { 'X-Api-Key': apiKey } })
    ).json()) as Envelope;
    if (envelope.status !== 'pending' && envelope.status !== 'processing') return envelope;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`document ${id} never finished`);
}

async function files(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

/** Sends raw bytes and lets the caller cut the connection. */
function rawRequest(
  url: string,
  headers: Record<string, string>,
  body: Uint8Array,
  options: { abortAfterBytes?: number } = {},
): Promise<{ status: number } | 'aborted'> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0 });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (options.abortAfterBytes !== undefined) resolve('aborted');
      else reject(error);
    });
    if (options.abortAfterBytes !== undefined) {
      req.write(body.subarray(0, options.abortAfterBytes), () => {
        setTimeout(() => req.destroy(), 100);
      });
    } else {
      req.end(body);
    }
  });
}

describe('disarm serve under failure', () => {
  it('keeps accepted documents across a crash: a 202 is durable, the next start processes it', async () => {
    const dataDir = await sharedDataDir();
    const first = await start({ dataDir, args: ['--no-processing'] });
    const { apiKey } = await first.createOrganisation('internal');
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const response = await submitPng(first, apiKey);
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as Envelope).id);
    }
    process.kill(first.pid, 'SIGKILL');
    await first.stop();

    const second = await start({ dataDir: dataDir });
    for (const id of ids) {
      expect((await waitForTerminal(second, apiKey, id)).status).toBe('completed');
    }
    expect(await files(join(dataDir, 'blobs', 'intake'))).toEqual([]);
  });

  it('never leaves a document stuck in processing: a lapsed lease is processed again, or failed and refunded after three attempts', async () => {
    const dataDir = await sharedDataDir();
    const first = await start({ dataDir, args: ['--no-processing'] });
    const { apiKey, organisationId } = await first.createOrganisation('payg', {
      creditPence: 100,
      pricePence: 10,
    });
    const ids = [
      ((await (await submitPng(first, apiKey)).json()) as Envelope).id,
      ((await (await submitPng(first, apiKey)).json()) as Envelope).id,
    ];
    await first.stop();

    // A worker host that crashed mid-processing: its leases are held by an owner that is gone.
    const store = createSqliteStore({ path: join(dataDir, 'disarm.sqlite') });
    let at = new Date(Date.now() - 10 * 60 * 1000);
    // The queue hands out the same (oldest) document each time it is back to pending and its
    // back-off is over.
    let exhausted = '';
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      const leased = await store.leaseDocument('proc_crashed', at, 1000);
      expect(leased?.attempts).toBe(attempt);
      exhausted = leased?.id ?? '';
      if (attempt < 3) {
        at = new Date(at.getTime() + 2000);
        await store.recoverLapsedLeases(at, 10);
        at = new Date(at.getTime() + retryBackoffMs(attempt));
      }
    }
    const retried = ids.find((id) => id !== exhausted) ?? '';
    expect((await store.leaseDocument('proc_crashed', at, 1000))?.id).toBe(retried);
    await store.close();

    const second = await start({ dataDir });
    // The recovery at start fails one and requeues the other in one transaction.
    expect(await waitForTerminal(second, apiKey, exhausted)).toMatchObject({
      status: 'failed',
      reason: 'internal_error',
      // The fixed sentence, never the internal "interrupted 3 times (lease lapsed)".
      reasonDetail: expect.stringMatching(
        /^The service failed while processing this file;/,
      ) as unknown,
    });
    // The requeued one waits out its back-off on the server's manual clock.
    await second.advanceClock(retryBackoffMs(1));
    expect(await waitForTerminal(second, apiKey, retried)).toMatchObject({ status: 'completed' });
    const account = (await (
      await fetch(`${second.apiUrl}/v1/account`, { headers: { 'X-Api-Key': apiKey } })
    ).json()) as { creditBalancePence: number; organisationId: string };
    expect(account.organisationId).toBe(organisationId);
    // Two charged, the failed one credited back automatically.
    expect(account.creditBalancePence).toBe(90);
  });

  it('shuts down gracefully: a request in flight gets its answer, the process exits 0', async () => {
    const server = await start({ syncWaitSeconds: 30 });
    const { apiKey } = await server.createOrganisation('internal');
    const pending = submitPng(server, apiKey, '?wait=true');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const exit = server.stop();
    const response = await pending;
    expect([200, 202]).toContain(response.status);
    expect(await exit).toBe(0);
  });

  it('stores and bills nothing when a client disconnects mid-upload, and keeps serving', async () => {
    const server = await start();
    const { apiKey } = await server.createOrganisation('internal');
    const body = new Uint8Array(4 * 1024 * 1024).fill(1);
    const raw = await rawRequest(
      `${server.apiUrl}/v1/documents?filename=big.png`,
      {
        'X-Api-Key': apiKey,
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(body.length),
      },
      body,
      { abortAfterBytes: 1024 * 1024 },
    );
    expect(raw).toBe('aborted');
    const boundary = 'x-boundary';
    const multipartHead = new TextEncoder().encode(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    const truncated = await rawRequest(
      `${server.apiUrl}/v1/documents`,
      {
        'X-Api-Key': apiKey,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        'Content-Length': String(multipartHead.length + body.length),
      },
      new Uint8Array([...multipartHead, ...body.subarray(0, 512 * 1024)]),
      { abortAfterBytes: multipartHead.length + 256 * 1024 },
    );
    expect(truncated).toBe('aborted');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const account = (await (
      await fetch(`${server.apiUrl}/v1/account`, { headers: { 'X-Api-Key': apiKey } })
    ).json()) as { periodUsedSubmissions: number };
    expect(account.periodUsedSubmissions).toBe(0);
    expect(
      (await files(join(server.dataDir, 'blobs', 'intake'))).filter(
        (name) => !name.startsWith('.'),
      ),
    ).toEqual([]);
    expect((await fetch(`${server.apiUrl}/healthz`)).status).toBe(200);
    expect((await submitPng(server, apiKey, '?wait=true')).status).toBe(200);
  });

  it('streams a 100 MB multipart upload to disk without buffering it', async () => {
    const server = await start({ args: ['--no-processing'] });
    const { apiKey } = await server.createOrganisation('internal');
    const peakRssKiB = async (): Promise<number> => {
      const status = await readFile(`/proc/${server.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
    };
    // Warm up (first request compiles and loads modules), then measure the peak around the upload.
    expect((await submitPng(server, apiKey)).status).toBe(202);
    const before = await peakRssKiB();
    const boundary = 'disarm-stream-boundary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
    );
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 0x5a);
    const chunks = 99;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.apiUrl}/v1/documents`, {
        method: 'POST',
        headers: {
          'X-Api-Key': apiKey,
          'Content-Type': `multipart/form-data; boundary=${boundary}`,
          'Content-Length': String(head.length + chunks * chunk.length + tail.length),
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      void (async () => {
        req.write(head);
        for (let i = 0; i < chunks; i += 1) {
          if (!req.write(chunk)) await new Promise((drained) => req.once('drain', drained));
        }
        req.end(tail);
      })();
    });
    expect(status).toBe(202);
    const grownMiB = ((await peakRssKiB()) - before) / 1024;
    expect(grownMiB).toBeLessThan(48);
  });

  it('answers oversized headers with 431 and keeps serving', async () => {
    const server = await start();
    const response = await fetch(`${server.apiUrl}/v1/account`, {
      headers: { 'X-Api-Key': 'x', 'X-Padding': 'a'.repeat(64 * 1024) },
    }).catch((error: unknown) => error);
    if (response instanceof Response) expect(response.status).toBe(431);
    expect((await fetch(`${server.apiUrl}/healthz`)).status).toBe(200);
  });
});
