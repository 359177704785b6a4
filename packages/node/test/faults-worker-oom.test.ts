/**
 * Resource fault: a worker killed by the kernel for memory. A real `disarm serve` runs in a
 * memory cgroup (v2 `memory.max` or v1 `memory.limit_in_bytes`, as root; skipped, saying why,
 * where the machine does not permit it) whose limit leaves the worker less room than decoding an
 * interlaced 100-megapixel PNG needs (Adam7 is decoded whole, about 410 MiB): the kernel's OOM
 * killer, not the test and not the pool's own watchdog (2 GiB), sends the SIGKILL, every time.
 */
import { randomBytes } from 'node:crypto';

import sharp from 'sharp';
import { afterEach, describe, expect, it } from 'vitest';

import { pngWithMetadata } from './_fixtures.ts';
import { createMemoryCgroup } from './_cgroup.ts';
import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

const MIB_BYTES = 1024 * 1024;
/**
 * Room above what the server and its warm worker use: enough for a worker to restart and to
 * clean a small file, far less than the big image's decode (about 410 MiB).
 */
const HEADROOM_BYTES = 256 * MIB_BYTES;
/** The big image: 10,000 x 10,000 RGBA, interlaced (under the engine's 100 MP and 1 GiB limits). */
const BIG_IMAGE_SIDE_PX = 10_000;
/** The dispatcher's attempts before the dead-letter end (`MAX_ATTEMPTS`). */
const MAX_ATTEMPTS = 3;
/** The back-off before attempt n + 1 (`retryBackoffMs`: 2 s, times 4 each lapse), plus a second. */
const backoffMs = (attempts: number): number => 2_000 * 4 ** (attempts - 1) + 1_000;
/** How long each step may take on a loaded machine. */
const DEADLINE_MS = 180_000;
/** The whole test: a few steps of that deadline each, on a machine that may be loaded. */
const TEST_TIMEOUT_MS = 10 * 60_000;
/** pino's level numbers. */
const LEVEL = { warn: 40 } as const;

const probe = await createMemoryCgroup(`disarm-probe-${randomBytes(4).toString('hex')}`);
const cannotLimit = 'unavailable' in probe ? probe.unavailable : undefined;
if (!('unavailable' in probe)) await probe.remove();
if (cannotLimit !== undefined) console.warn(`faults-worker-oom: skipped, ${cannotLimit}`);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: never happened`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function pngForm(png: Uint8Array<ArrayBuffer>, name: string): FormData {
  const form = new FormData();
  form.append('file', new Blob([png]), name);
  return form;
}

/** A metric's value from the server's `/metrics` (summed over its series). */
async function metric(server: TestServer, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${server.apiUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
      if (labels === '' || line.includes(labels)) total += Number(line.split(' ').pop());
    }
  }
  return total;
}

describe.skipIf(cannotLimit !== undefined)('a worker killed by the kernel for memory', () => {
  it(
    'retries the document on a fresh worker, then fails it and credits it back exactly once',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const cgroup = await createMemoryCgroup(`disarm-oom-${randomBytes(4).toString('hex')}`);
      if ('unavailable' in cgroup) throw new Error(cgroup.unavailable);
      cleanups.push(() => cgroup.remove());
      const server = await startTestServer({ workers: 1, args: ['--renderers=builtin'] });
      cleanups.push(() => server.stop());
      // The server's workers are born in the cgroup; its own memory so far stays charged outside.
      await cgroup.addProcess(server.pid);

      const { apiKey } = await server.createOrganisation('payg', {
        creditPence: 100,
        pricePence: 10,
      });
      const headers = { 'X-Api-Key': apiKey };
      const credit = async (): Promise<number> =>
        (
          (await (await fetch(`${server.apiUrl}/v1/account`, { headers })).json()) as {
            creditBalancePence: number;
          }
        ).creditBalancePence;
      const envelope = async (id: string): Promise<{ status: string; reason?: string }> =>
        (await (await fetch(`${server.apiUrl}/v1/documents/${id}`, { headers })).json()) as {
          status: string;
          reason?: string;
        };
      const small = new Uint8Array(await pngWithMetadata());

      // A warm worker, then the limit: what the cgroup holds now plus the headroom.
      const warm = await fetch(`${server.apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers,
        body: pngForm(small, 'warm.png'),
      });
      expect(((await warm.json()) as { status: string }).status).toBe('completed');
      await cgroup.setLimit((await cgroup.usageBytes()) + HEADROOM_BYTES);
      expect(await credit()).toBe(90);

      const big = new Uint8Array(
        await sharp({
          create: {
            width: BIG_IMAGE_SIDE_PX,
            height: BIG_IMAGE_SIDE_PX,
            channels: 4,
            background: { r: 200, g: 30, b: 90, alpha: 0.5 },
          },
        })
          .png({ progressive: true })
          .toBuffer(),
      );
      const submitted = await fetch(`${server.apiUrl}/v1/documents`, {
        method: 'POST',
        headers,
        body: pngForm(big, 'huge.png'),
      });
      expect(submitted.status).toBe(202);
      const { id } = (await submitted.json()) as { id: string };
      expect(await credit()).toBe(80);

      for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
        await until(`OOM kill ${attempt}`, async () => (await cgroup.oomKills()) >= attempt);
        if (attempt < MAX_ATTEMPTS) {
          // Back in the queue, charged still, until its back-off has passed.
          await until(`requeued after kill ${attempt}`, async () => {
            const current = await envelope(id);
            return current.status === 'pending';
          });
          expect(await credit()).toBe(80);
          await server.advanceClock(backoffMs(attempt));
        }
      }
      await until(
        'failed after the last attempt',
        async () => (await envelope(id)).status === 'failed',
      );
      expect(await envelope(id)).toMatchObject({ status: 'failed', reason: 'internal_error' });
      expect(await cgroup.oomKills()).toBe(MAX_ATTEMPTS);

      // Credited back once, and only once: the charge of 10 pence returns, nothing more.
      expect(await credit()).toBe(90);
      expect(await metric(server, 'disarm_refunds_total')).toBe(1);
      expect(await metric(server, 'disarm_worker_restarts_total')).toBe(MAX_ATTEMPTS);
      const kills = server
        .logs()
        .filter((line) => line.msg === 'worker killed from outside while processing');
      expect(kills).toEqual(
        [1, 2, 3].map((attempt): unknown =>
          expect.objectContaining({ level: LEVEL.warn, documentId: id, attempt }),
        ),
      );

      // The service goes on: a small file still passes through the fresh worker.
      const after = await fetch(`${server.apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers,
        body: pngForm(small, 'after.png'),
      });
      expect(((await after.json()) as { status: string }).status).toBe('completed');
      expect(await credit()).toBe(80);
    },
  );
});
