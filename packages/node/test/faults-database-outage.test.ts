/**
 * Resource fault: PostgreSQL unreachable. A real `disarm serve --role api` and `--role worker`
 * on a temporary cluster that the test stops at once (`pg_ctl stop -m immediate`, as a crash or a
 * failover does) and starts again on the same port.
 *
 * To know that a document is in a worker's hands when the database goes (not by timing luck),
 * the blob folder sits on a small tmpfs that is full when the worker starts: the worker cleans
 * the documents and waits to store them (it says so); the database is stopped, the disk freed,
 * and the worker then stores the files but cannot record the results (it says so too).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';

import { startTemporaryCluster } from '@disarm/postgres/testing';
import type { TemporaryCluster } from '@disarm/postgres/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { startTestServer, startTestWorker } from './_server.ts';
import type { TestServer, TestWorker } from './_server.ts';
import { mountTmpfs } from './_tmpfs.ts';

const MIB_BYTES = 1024 * 1024;
/**
 * How long the database stays down once a worker holds a result it cannot record: 20 seconds,
 * longer than the longest pause of every retry loop (`STORAGE_RETRY_MAX_MS`, 15 s), so each has
 * met the outage at its longest. The service holds for any length: the loops never give up.
 */
const OUTAGE_MS = 20_000;
/** Pause between the requests an operator's clients keep sending during the outage. */
const CLIENT_RETRY_MS = 500;
/** How long anything may take to settle once the database is back. */
const DEADLINE_MS = 120_000;
/** The whole test: a few steps of that deadline each, on a machine that may be loaded. */
const TEST_TIMEOUT_MS = 10 * 60_000;
/** The service's `Retry-After` for unavailable storage (`UNAVAILABLE_RETRY_AFTER_SECONDS`). */
const RETRY_AFTER_SECONDS = '15';
/** pino's level numbers. */
const LEVEL = { info: 30, error: 50 } as const;

const probe = await mountTmpfs(MIB_BYTES);
const cannotMount = 'unavailable' in probe ? probe.unavailable : undefined;
if (!('unavailable' in probe)) await probe.unmount();
if (cannotMount !== undefined) console.warn(`faults-database-outage: skipped, ${cannotMount}`);

let cluster: TemporaryCluster | undefined;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (cannotMount === undefined) cluster = await startTemporaryCluster();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await cluster?.stop();
});

function pngForm(png: Uint8Array<ArrayBuffer>, name: string): FormData {
  const form = new FormData();
  form.append('file', new Blob([png]), name);
  return form;
}

/** Resolves once `condition` holds (checked every 100 ms), or fails after the deadline. */
async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: never happened`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function logged(node: TestServer | TestWorker, msg: string): Record<string, unknown>[] {
  return node.logs().filter((line) => line.msg === msg);
}

/** The API's requests by status, from its metrics. */
async function requestsByStatus(server: TestServer): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.apiUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const match of text.matchAll(/^disarm_http_requests_total\{[^}]*status="(\d+)"\} (\d+)/gm)) {
    const status = match[1] ?? '';
    counts[status] = (counts[status] ?? 0) + Number(match[2]);
  }
  return counts;
}

describe.skipIf(cannotMount !== undefined)('PostgreSQL unreachable', () => {
  it(
    'takes the API out of rotation and answers 503, pauses the worker without failing what it holds, and resumes by itself: every accepted document ends once, billed once',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      if (cluster === undefined) throw new Error('no cluster');
      const database = await cluster.createDatabase('outage');
      const dataDir = await tempDir();
      cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
      const api = await startTestServer({
        dataDir,
        args: ['--role=api', `--database=${database}`],
      });
      cleanups.push(() => api.stop());
      const disk = await mountTmpfs(4 * MIB_BYTES, join(dataDir, 'blobs'));
      if ('unavailable' in disk) throw new Error(disk.unavailable);
      cleanups.push(() => disk.unmount());

      const created = await api.admin(
        'org',
        'create',
        '--name=Acme',
        '--plan=payg',
        '--credit-pence=1000',
        '--price-pence=10',
        '--rate-limit=10000',
        `--database=${database}`,
        '--json',
      );
      expect(created.code, created.stderr).toBe(0);
      const organisationId = (JSON.parse(created.stdout) as { id: string }).id;
      const key = await api.admin(
        'key',
        'create',
        `--org=${organisationId}`,
        '--name=t',
        `--database=${database}`,
        '--json',
      );
      expect(key.code, key.stderr).toBe(0);
      const headers = { 'X-Api-Key': (JSON.parse(key.stdout) as { key: string }).key };
      const png = new Uint8Array(await pngWithMetadata());
      const submit = (name: string, query = ''): Promise<Response> =>
        fetch(`${api.apiUrl}/v1/documents${query}`, {
          method: 'POST',
          headers,
          body: pngForm(png, name),
        });
      const status = async (id: string): Promise<string> =>
        (
          (await (await fetch(`${api.apiUrl}/v1/documents/${id}`, { headers })).json()) as {
            status: string;
          }
        ).status;

      // Two accepted documents, both to be in the worker's hands; its third slot stays idle and
      // keeps looking for work through the outage.
      const ids: string[] = [];
      for (const name of ['held.png', 'second.png']) {
        const response = await submit(name);
        expect(response.status).toBe(202);
        ids.push(((await response.json()) as { id: string }).id);
      }
      const [held = '', second = ''] = ids;
      await disk.fill();
      const worker = await startTestWorker({
        dataDir,
        args: [`--database=${database}`, '--renderers=builtin', '--workers=3'],
      });
      cleanups.push(() => worker.stop());
      await until('the worker holds the cleaned file', () =>
        worker
          .logs()
          .some(
            (line) => line.msg === 'storing the cleaned file: waiting for the storage to come back',
          ),
      );

      // The database goes; the disk gets room; the worker stores the file and cannot record it.
      await cluster.interrupt();
      const outageStarted = Date.now();
      await disk.free();
      await until('the worker waits to record the result', () =>
        worker
          .logs()
          .some((line) => line.msg === 'recording a result: waiting for the database to come back'),
      );

      // Meanwhile, what clients and the load balancer see: not ready, and 503 with Retry-After.
      let rounds = 0;
      while (Date.now() - outageStarted < OUTAGE_MS) {
        const ready = await fetch(`${api.apiUrl}/readyz`);
        expect(ready.status).toBe(503);
        expect(await ready.json()).toMatchObject({
          status: 'not ready',
          checks: { database: 'unreachable' },
        });
        const refused = await submit(`refused-${rounds}.png`);
        expect(refused.status).toBe(503);
        expect(refused.headers.get('Retry-After')).toBe(RETRY_AFTER_SECONDS);
        expect(await refused.json()).toMatchObject({ code: 'ServiceUnavailable' });
        const read = await fetch(`${api.apiUrl}/v1/documents/${held}`, { headers });
        expect(read.status).toBe(503);
        await read.body?.cancel();
        rounds += 1;
        await new Promise((resolve) => setTimeout(resolve, CLIENT_RETRY_MS));
      }
      expect(rounds).toBeGreaterThan(3);

      await cluster.resume();

      // Back by itself: the held results are recorded.
      await until('the held document ends', async () => (await status(held)) === 'completed');
      await until('the second document ends', async () => (await status(second)) === 'completed');
      const ready = await fetch(`${api.apiUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ checks: { database: 'ok' } });
      const after = await submit('after.png', '?wait=true');
      expect(after.status).toBe(200);
      expect(((await after.json()) as { status: string }).status).toBe('completed');

      // Billed once each: three documents accepted, none refunded, none charged twice.
      const account = (await (await fetch(`${api.apiUrl}/v1/account`, { headers })).json()) as {
        creditBalancePence: number;
      };
      expect(account.creditBalancePence).toBe(1_000 - 3 * 10);
      // No request counted as our own fault: every refusal was a 503.
      const statuses = await requestsByStatus(api);
      expect(Object.keys(statuses).filter((code) => code.startsWith('5'))).toEqual(['503']);
      expect(statuses['503']).toBeGreaterThanOrEqual(3 * rounds);

      // One line when the database went and one when it came back, in each process.
      // (The worker also met the full disk it was started on, and says so the same way.)
      for (const node of [api, worker]) {
        expect(logged(node, 'database unreachable')).toEqual([
          expect.objectContaining({ level: LEVEL.error, storage: 'state-store' }),
        ]);
        expect(logged(node, 'database back')).toEqual([
          expect.objectContaining({ level: LEVEL.info }),
        ]);
        const errors = node
          .logs()
          .filter((line) => Number(line.level) >= LEVEL.error)
          .map((line) => line.msg);
        expect(errors.filter((msg) => msg !== 'blob storage unavailable')).toEqual([
          'database unreachable',
        ]);
      }
    },
  );
});
