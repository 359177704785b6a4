/**
 * An Idempotency-Key whose first request was cut off by a crash (issue 30, defect 1): a real
 * `disarm serve` killed with SIGKILL mid-request and started again on the same data folder. The
 * retry must never meet a lasting `409 IdempotencyKeyInFlight`, must create the document when
 * the first request did not, and must answer for the first request's document (never a second,
 * never billed twice) when it did.
 *
 * The first server's clock is moved an hour ahead before the crash: its claims' leases then run
 * far past the restarted server's clock (which starts at the real time), so only the check that
 * the claim's process is gone can free them — a lapsed lease cannot be what lets the retry in.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import {
  creditOf,
  multipartBody,
  stalledBody,
  submitMultipart,
  submitRaw,
  until,
} from './_crash.ts';
import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

const HOUR_MS = 60 * 60 * 1000;
const CREDIT_PENCE = 100;
const PRICE_PENCE = 10;
/** Processes to start and a document to clean on a small, shared machine. */
const TEST_TIMEOUT_MS = 180_000;

const running: TestServer[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const server of running.splice(0)) await server.stop();
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

/** `disarm serve --test-mode` on `dataDir` (kept), with `args`. */
async function serve(dataDir: string, args: readonly string[]): Promise<TestServer> {
  const server = await startTestServer({ dataDir, args: ['--renderers=builtin', ...args] });
  running.push(server);
  return server;
}

/** A fresh data folder, removed after the test. */
async function dataFolder(): Promise<string> {
  const folder = await tempDir();
  folders.push(folder);
  return folder;
}

describe('an Idempotency-Key whose first request died with its process', () => {
  it(
    'is free at once after a restart when the body was cut off: the retry creates the document, billed once',
    async () => {
      const dataDir = await dataFolder();
      const first = await serve(dataDir, ['--role=api']);
      const { apiKey } = await first.createOrganisation('payg', {
        creditPence: CREDIT_PENCE,
        pricePence: PRICE_PENCE,
      });
      await first.advanceClock(HOUR_MS);
      const body = multipartBody('photo.png', await pngWithMetadata());
      const stalled = stalledBody(body.bytes, Math.floor(body.bytes.byteLength / 2));
      const cutOff = fetch(`${first.apiUrl}/v1/documents`, {
        method: 'POST',
        headers: { 'X-Api-Key': apiKey, 'Content-Type': body.contentType, 'Idempotency-Key': 'k1' },
        body: stalled.stream,
        duplex: 'half',
      } as RequestInit).catch(() => undefined);
      // The claim is made before the body is read: once the intake is being written, it holds.
      const intake = join(dataDir, 'blobs', 'intake');
      await until('the intake is being written', async () =>
        (await readdir(intake).catch(() => [])).some((name) => name.startsWith('.')),
      );
      // A live request holds its key: a concurrent duplicate is told to retry shortly.
      const duplicate = await submitMultipart(first.apiUrl, apiKey, body, 'k1');
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.code).toBe('IdempotencyKeyInFlight');

      await first.kill();
      stalled.cut();
      await cutOff;

      const second = await serve(dataDir, ['--role=api']);
      const retry = await submitMultipart(second.apiUrl, apiKey, body, 'k1');
      expect(retry.status, JSON.stringify(retry.body)).toBe(202);
      const replay = await submitMultipart(second.apiUrl, apiKey, body, 'k1');
      expect(replay.status).toBe(202);
      expect(replay.headers.get('Idempotency-Replayed')).toBe('true');
      expect(replay.body.id).toBe(retry.body.id);
      expect(await creditOf(second.apiUrl, apiKey)).toBe(CREDIT_PENCE - PRICE_PENCE);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'answers for the document its first request accepted, never a second one: billed once',
    async () => {
      const dataDir = await dataFolder();
      // No processing and a long sync wait: the first request is held after its acceptance.
      const first = await serve(dataDir, ['--role=api', '--sync-wait-seconds=600']);
      const { apiKey } = await first.createOrganisation('payg', {
        creditPence: CREDIT_PENCE,
        pricePence: PRICE_PENCE,
      });
      await first.advanceClock(HOUR_MS);
      const file = new Uint8Array(await pngWithMetadata());
      const held = submitRaw(first.apiUrl, apiKey, {
        fileName: 'photo.png',
        file,
        key: 'k2',
        query: '&wait=true',
      }).catch(() => undefined);
      await until(
        'the document is accepted and charged',
        async () => (await creditOf(first.apiUrl, apiKey)) === CREDIT_PENCE - PRICE_PENCE,
      );
      await first.kill();
      await held;

      // Processing now: the retry's sync wait sees the first request's document end.
      const second = await serve(dataDir, []);
      const retry = await submitRaw(second.apiUrl, apiKey, {
        fileName: 'photo.png',
        file,
        key: 'k2',
        query: '&wait=true',
      });
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
      expect(retry.body.status).toBe('completed');
      expect(await creditOf(second.apiUrl, apiKey)).toBe(CREDIT_PENCE - PRICE_PENCE);
      const replay = await submitRaw(second.apiUrl, apiKey, {
        fileName: 'photo.png',
        file,
        key: 'k2',
        query: '&wait=true',
      });
      expect(replay.headers.get('Idempotency-Replayed')).toBe('true');
      expect(replay.body.id).toBe(retry.body.id);
      // The same key with another request is still refused.
      const other = await submitRaw(second.apiUrl, apiKey, {
        fileName: 'other.png',
        file,
        key: 'k2',
        query: '&wait=true',
      });
      expect(other.status).toBe(422);
      expect(other.body.code).toBe('IdempotencyKeyReused');
    },
    TEST_TIMEOUT_MS,
  );
});
