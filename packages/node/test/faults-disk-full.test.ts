/**
 * Resource fault: the data folder's disk is full. A real `disarm serve` on a small tmpfs that
 * the test fills to the last byte (`mount -t tmpfs`, as root; skipped, saying why, where mounting
 * is not permitted), then frees.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { createLinkSigner, StorageUnavailableError } from '@disarm/protocol';
import { afterEach, describe, expect, it } from 'vitest';

import { createLocalBlobStore } from '../src/index.ts';
import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { startTestServer, startTestWorker } from './_server.ts';
import type { TestServer } from './_server.ts';
import { mountTmpfs } from './_tmpfs.ts';
import type { Tmpfs } from './_tmpfs.ts';

const MIB_BYTES = 1024 * 1024;
/** Room for the SQLite files, the secrets and a few small blobs. */
const DATA_DISK_BYTES = 48 * MIB_BYTES;
/** Room for a few small blobs. */
const BLOB_DISK_BYTES = 4 * MIB_BYTES;
/** The service's `Retry-After` on a 503 for unavailable storage (`UNAVAILABLE_RETRY_AFTER_SECONDS`). */
const RETRY_AFTER_SECONDS = '15';
/** Writes that may still find room in SQLite's write-ahead log before one needs the full disk. */
const MAX_WRITES_BEFORE_FULL = 5_000;
/** How long a document may take to end once its storage is back (the worker's retry pauses). */
const RECOVERY_DEADLINE_MS = 120_000;
/** The whole test: a few steps of that deadline each, on a machine that may be loaded. */
const TEST_TIMEOUT_MS = 10 * 60_000;
/** pino's level numbers. */
const LEVEL = { info: 30, warn: 40, error: 50 } as const;

const probe = await mountTmpfs(MIB_BYTES);
const cannotMount = 'unavailable' in probe ? probe.unavailable : undefined;
if (!('unavailable' in probe)) await probe.unmount();
if (cannotMount !== undefined) {
  console.warn(`faults-disk-full: skipped, ${cannotMount}`);
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function mounted(sizeBytes: number, at?: string): Promise<Tmpfs> {
  const disk = await mountTmpfs(sizeBytes, at);
  if ('unavailable' in disk) throw new Error(disk.unavailable);
  cleanups.push(() => disk.unmount());
  return disk;
}

/** Every file under `folder`, hidden ones (a put's temporary file) included. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(folder.length + 1))
    .sort();
}

function pngForm(png: Uint8Array<ArrayBuffer>, name = 'photo.png'): FormData {
  const form = new FormData();
  form.append('file', new Blob([png]), name);
  return form;
}

async function expectUnavailable(response: Response): Promise<void> {
  const body = (await response.json()) as { code?: string; status?: number };
  expect(response.status, JSON.stringify(body)).toBe(503);
  expect(response.headers.get('Content-Type')).toBe('application/problem+json');
  expect(response.headers.get('Retry-After')).toBe(RETRY_AFTER_SECONDS);
  expect(body).toMatchObject({ code: 'ServiceUnavailable', status: 503 });
}

/** The requests the server counted with a 5xx status, by status. */
async function serverErrors(server: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.apiUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(
    /^disarm_http_requests_total\{[^}]*status="(5\d\d)"\} (\d+)/gm,
  )) {
    const status = match[1] ?? '';
    counts[status] = (counts[status] ?? 0) + Number(match[2]);
  }
  return counts;
}

function logged(server: TestServer, msg: string): Record<string, unknown>[] {
  return server.logs().filter((line) => line.msg === msg);
}

/** Polls the document until it is terminal (or the deadline passes); resolves its envelope. */
async function untilTerminal(
  server: TestServer,
  headers: Record<string, string>,
  id: string,
): Promise<{ status: string }> {
  const deadline = Date.now() + RECOVERY_DEADLINE_MS;
  for (;;) {
    const response = await fetch(`${server.apiUrl}/v1/documents/${id}`, { headers });
    const envelope = (await response.json()) as { status: string };
    if (!['pending', 'processing'].includes(envelope.status) || Date.now() > deadline) {
      return envelope;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.skipIf(cannotMount !== undefined)('the data folder’s disk full', () => {
  it('makes the folder store refuse a put with StorageUnavailableError (ENOSPC), keeping no temporary file', async () => {
    const disk = await mounted(BLOB_DISK_BYTES);
    const blobs = createLocalBlobStore({
      directory: disk.path,
      signer: createLinkSigner(new Uint8Array(32).fill(7), 'http://localhost:8081'),
    });
    const bytes = (): ReadableStream<Uint8Array> =>
      new Blob([new Uint8Array(64 * 1024).fill(1)]).stream();
    await blobs.put('output/doc_kept', bytes(), { maxBytes: MIB_BYTES });
    await disk.fill();

    const refused = blobs.put('intake/doc_new', bytes(), { maxBytes: MIB_BYTES });
    await expect(refused).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(refused).rejects.toMatchObject({ storage: 'blob-store', reason: 'ENOSPC' });
    expect(await filesUnder(disk.path)).toEqual(['.filler', 'output/doc_kept']);
    // Reading and deleting need no room.
    expect(await blobs.stat('output/doc_kept')).toEqual({ sizeBytes: 64 * 1024 });
    await blobs.delete('output/doc_kept');

    await disk.free();
    await blobs.put('intake/doc_new', bytes(), { maxBytes: MIB_BYTES });
    expect(await filesUnder(disk.path)).toEqual(['intake/doc_new']);
  });

  it(
    'refuses intake, staged uploads and database writes with 503 and Retry-After, keeps nothing, charges nothing, and serves again once space is freed',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const disk = await mounted(DATA_DISK_BYTES);
      const server = await startTestServer({ dataDir: disk.path, args: ['--renderers=builtin'] });
      cleanups.push(() => server.stop());
      const { apiKey } = await server.createOrganisation('payg', {
        creditPence: 1_000,
        pricePence: 10,
        rateLimit: 100_000,
      });
      const headers = { 'X-Api-Key': apiKey };
      const png = new Uint8Array(await pngWithMetadata());

      // An upload made while there was room; its bytes arrive once the disk is full.
      const upload = (await (
        await fetch(`${server.apiUrl}/v1/uploads`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/json' },
          body: JSON.stringify({ fileName: 'staged.png' }),
        })
      ).json()) as { uploadId: string; uploadUrl: string; requiredHeaders: Record<string, string> };

      expect(await disk.fill()).toBeGreaterThan(0);
      expect(await disk.availableBytes()).toBe(0);

      // Intake: refused, nothing half-written (no temporary or partial blob).
      await expectUnavailable(
        await fetch(`${server.apiUrl}/v1/documents`, {
          method: 'POST',
          headers,
          body: pngForm(png),
        }),
      );
      expect(await filesUnder(join(disk.path, 'blobs'))).toEqual([]);

      // The staged upload's PUT on the storage origin: the same.
      const put = (): Promise<Response> =>
        fetch(upload.uploadUrl, { method: 'PUT', headers: upload.requiredHeaders, body: png });
      await expectUnavailable(await put());
      expect(await filesUnder(join(disk.path, 'blobs'))).toEqual([]);

      // SQLite on the same disk: a write that finds no room in its log answers 503, never 500.
      let databaseFull: Response | undefined;
      for (
        let write = 0;
        write < MAX_WRITES_BEFORE_FULL && databaseFull === undefined;
        write += 1
      ) {
        const response = await fetch(`${server.apiUrl}/v1/uploads`, {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/json' },
          body: JSON.stringify({ fileName: `more-${write}.png` }),
        });
        if (response.status === 201) await response.body?.cancel();
        else databaseFull = response;
      }
      if (databaseFull === undefined) throw new Error('SQLite never ran out of room');
      await expectUnavailable(databaseFull);

      // What an operator sees: the process stays ready (status reads work) and says what is wrong.
      const ready = await fetch(`${server.apiUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ready',
        checks: { database: 'ok', blobs: 'unavailable' },
      });
      expect(logged(server, 'blob storage unavailable')).toEqual([
        expect.objectContaining({ level: LEVEL.error, reason: 'ENOSPC', storage: 'blob-store' }),
      ]);
      expect(logged(server, 'database unreachable')).toEqual([
        expect.objectContaining({
          level: LEVEL.error,
          reason: expect.stringMatching(/^SQLITE_(FULL|IOERR)/) as unknown,
        }),
      ]);
      expect(server.logs().filter((line) => line.msg === 'request failed')).toEqual([]);

      await disk.free();

      // Back by itself: the upload's bytes land, a submission is cleaned, each is charged once.
      const retried = await put();
      expect(retried.status, await retried.text()).toBe(201);
      const byReference = await fetch(`${server.apiUrl}/v1/documents`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ uploadId: upload.uploadId }),
      });
      expect(byReference.status).toBe(202);
      const staged = (await byReference.json()) as { id: string };
      const sync = await fetch(`${server.apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers,
        body: pngForm(png),
      });
      expect(sync.status).toBe(200);
      expect(((await sync.json()) as { status: string }).status).toBe('completed');
      expect((await untilTerminal(server, headers, staged.id)).status).toBe('completed');

      const account = (await (await fetch(`${server.apiUrl}/v1/account`, { headers })).json()) as {
        creditBalancePence: number;
      };
      expect(account.creditBalancePence).toBe(1_000 - 2 * 10);
      expect(logged(server, 'blob storage back')).toEqual([
        expect.objectContaining({ level: LEVEL.info }),
      ]);
      expect(logged(server, 'database back')).toEqual([
        expect.objectContaining({ level: LEVEL.info }),
      ]);
      expect(await (await fetch(`${server.apiUrl}/readyz`)).json()).toMatchObject({
        checks: { database: 'ok', blobs: 'ok' },
      });
      // Two documents accepted and charged, no more: no refused submission left a row behind.
      const metrics = await (await fetch(`${server.apiUrl}/metrics`)).text();
      expect(metrics).toMatch(/^disarm_charges_total\{plan_type="payg"\} 2$/m);
      // Every refusal was a 503: no request counted as our own fault.
      const errors = await serverErrors(server);
      expect(Object.keys(errors)).toEqual(['503']);
      expect(errors['503']).toBeGreaterThanOrEqual(3);
    },
  );

  it(
    'keeps a cleaned document whose output cannot be written, and stores it once space is back',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // The blob folder alone on the small disk: SQLite keeps room, so the worker leases, cleans
      // and then meets the full disk only when it writes the cleaned file.
      const dataDir = await tempDir();
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const api = await startTestServer({ dataDir, args: ['--role=api'] });
      cleanups.push(() => api.stop());
      const disk = await mounted(BLOB_DISK_BYTES, join(dataDir, 'blobs'));
      const { apiKey } = await api.createOrganisation('payg', { creditPence: 100, pricePence: 10 });
      const headers = { 'X-Api-Key': apiKey };

      const png = new Uint8Array(await pngWithMetadata());
      const submitted = await fetch(`${api.apiUrl}/v1/documents`, {
        method: 'POST',
        headers,
        body: pngForm(png),
      });
      expect(submitted.status).toBe(202);
      const { id } = (await submitted.json()) as { id: string };
      await disk.fill();

      // The intake itself meets the full disk: refused, no partial file, nothing charged.
      await expectUnavailable(
        await fetch(`${api.apiUrl}/v1/documents`, { method: 'POST', headers, body: pngForm(png) }),
      );
      expect(await filesUnder(disk.path)).toEqual(['.filler', `intake/${id}`]);

      const worker = await startTestWorker({ dataDir, args: ['--renderers=builtin'] });
      cleanups.push(() => worker.stop());
      // The worker tells when it meets the full disk; the document is still in its hands.
      await until(() =>
        worker
          .logs()
          .some(
            (line) => line.msg === 'storing the cleaned file: waiting for the storage to come back',
          ),
      );
      const held = (await (
        await fetch(`${api.apiUrl}/v1/documents/${id}`, { headers })
      ).json()) as {
        status: string;
      };
      expect(held.status).toBe('processing');
      const charged = (await (await fetch(`${api.apiUrl}/v1/account`, { headers })).json()) as {
        creditBalancePence: number;
      };
      expect(charged.creditBalancePence).toBe(90);

      await disk.free();
      expect((await untilTerminal(api, headers, id)).status).toBe('completed');
      const download = await fetch(`${api.apiUrl}/v1/documents/${id}/download`, { headers });
      expect(download.status).toBe(200);
      expect((await download.arrayBuffer()).byteLength).toBeGreaterThan(0);
      const after = (await (await fetch(`${api.apiUrl}/v1/account`, { headers })).json()) as {
        creditBalancePence: number;
      };
      expect(after.creditBalancePence).toBe(90);
    },
  );
});

/** Resolves once `condition` holds, checking as the worker writes its lines. */
async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + RECOVERY_DEADLINE_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
