/**
 * What an operator runs the service by, over real sockets against a real server: request ids on
 * every answer, its logs and its problems; Prometheus metrics behind their own token, with route
 * templates for labels, documents by outcome, engine time, the queue, worker restarts, charges
 * and refunds.
 */
import { randomBytes } from 'node:crypto';

import { buildImage } from '@disarm/fixtures';
import type { Logger } from '@disarm/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hashAdminToken, startServer } from '../src/index.ts';
import type { RunningDisarm } from '../src/index.ts';
import { tempDir } from './_fixtures.ts';

/** Runs the real engine, but crashes on a file named `exit*` (a codec dying mid-file). */
const MISBEHAVING_WORKER = new URL('./fixtures/misbehaving-worker.ts', import.meta.url);
const ADMIN_TOKEN = randomBytes(32).toString('hex');
const METRICS_TOKEN = randomBytes(32).toString('hex');
const GENERATED_ID = /^req_[0-9a-hjkmnp-tv-z]{20}$/;
const PRICE_PENCE = 10;

const lines: Record<string, unknown>[] = [];
const logger: Logger = {
  info: (object, msg) => lines.push({ level: 'info', ...object, msg }),
  warn: (object, msg) => lines.push({ level: 'warn', ...object, msg }),
  error: (object, msg) => lines.push({ level: 'error', ...object, msg }),
};

let server: RunningDisarm;
let key: string;

beforeAll(async () => {
  server = await startServer({
    dataDir: await tempDir(),
    port: 0,
    storagePort: 0,
    workers: 1,
    demo: false,
    adminTokenHashes: [hashAdminToken(ADMIN_TOKEN)],
    metricsToken: METRICS_TOKEN,
    workerModule: MISBEHAVING_WORKER,
    logger,
  });
  const admin = (path: string, body: unknown) =>
    fetch(`${server.apiUrl}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const created = await admin('/v1/admin/organisations', {
    name: 'Operations',
    plan: 'payg',
    creditPence: 1000,
    terms: { pricePerDocumentPence: PRICE_PENCE },
  });
  const { id } = (await created.json()) as { id: string };
  key = (
    (await (await admin(`/v1/admin/organisations/${id}/keys`, { name: 'ops' })).json()) as {
      key: string;
    }
  ).key;
});

afterAll(async () => {
  await server.close();
});

async function scrape(): Promise<string> {
  const response = await fetch(`${server.apiUrl}/metrics`, {
    headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('Content-Type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

/** The value of one series, e.g. `disarm_documents_total{status="completed",…}`, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function submit(fileName: string): Promise<{ id: string; status: string }> {
  const response = await fetch(
    `${server.apiUrl}/v1/documents?wait=true&filename=${encodeURIComponent(fileName)}`,
    {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
      body: new Uint8Array(await buildImage('png')),
    },
  );
  expect(response.status).toBe(200);
  return (await response.json()) as { id: string; status: string };
}

describe('request ids', () => {
  it('carries a well-formed X-Request-Id through to the response, the log line and the problem', async () => {
    const id = 'b7e4c1d2-6a0f-4c55-9e1a-3f2d8c7b9a10';
    const response = await fetch(`${server.apiUrl}/v1/documents/doc_00000000000000000000`, {
      headers: { 'X-Api-Key': key, 'X-Request-Id': id },
    });
    expect(response.status).toBe(404);
    expect(response.headers.get('X-Request-Id')).toBe(id);
    expect(await response.json()).toMatchObject({
      code: 'DocumentNotFound',
      instance: `/v1/documents/doc_00000000000000000000#${id}`,
    });
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'request', requestId: id, status: 404, server: 'api' }),
    );
  });

  it.each([
    ['absent', undefined],
    ['too long', 'a'.repeat(129)],
    ['with a space', 'two words'],
    ['with a line break injected', 'abc\tdef'],
    ['not ASCII', 'réf-1'],
  ])('replaces one that is %s with a fresh id', async (_, given) => {
    const response = await fetch(`${server.apiUrl}/v1/account`, {
      headers: given === undefined ? {} : { 'X-Request-Id': given },
    });
    expect(response.status).toBe(401);
    const id = response.headers.get('X-Request-Id') ?? '';
    expect(id).toMatch(GENERATED_ID);
    expect(((await response.json()) as { instance: string }).instance).toBe(`/v1/account#${id}`);
  });

  it('gives two requests two ids, and answers on the storage origin and public routes too', async () => {
    const first = await fetch(`${server.apiUrl}/healthz`);
    const second = await fetch(`${server.apiUrl}/healthz`);
    expect(first.headers.get('X-Request-Id')).toMatch(GENERATED_ID);
    expect(first.headers.get('X-Request-Id')).not.toBe(second.headers.get('X-Request-Id'));

    const storage = await fetch(`${server.storageUrl}/blobs/output/doc_x?sig=forged`, {
      headers: { 'X-Request-Id': 'edge-42' },
    });
    expect(storage.status).toBeGreaterThanOrEqual(400);
    expect(storage.headers.get('X-Request-Id')).toBe('edge-42');
    expect(((await storage.json()) as { instance: string }).instance).toBe(
      '/blobs/output/doc_x#edge-42',
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: 'request', requestId: 'edge-42', server: 'storage' }),
    );
  });

  it('puts the id on the lines handlers log while serving the request', async () => {
    const { id } = await submit('traced.png');
    const accepted = lines.find(
      (line) => line.msg === 'document accepted' && line.documentId === id,
    );
    expect(accepted?.requestId).toMatch(GENERATED_ID);
  });
});

describe('GET /metrics', () => {
  it('requires its own bearer token, compared whole', async () => {
    const url = `${server.apiUrl}/metrics`;
    expect((await fetch(url)).status).toBe(401);
    for (const token of [METRICS_TOKEN.slice(0, -1), `${METRICS_TOKEN}x`, ADMIN_TOKEN, key]) {
      expect((await fetch(url, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(
        401,
      );
    }
    expect((await fetch(url, { headers: { 'X-Api-Key': key } })).status).toBe(401);
    await scrape();
  });

  it('counts requests by route template, never by raw path, and bounds methods', async () => {
    const { id } = await submit('photo.png');
    await fetch(`${server.apiUrl}/v1/documents/${id}`, { headers: { 'X-Api-Key': key } });
    await fetch(`${server.apiUrl}/no/such/${randomBytes(8).toString('hex')}`);
    // A method the HTTP parser knows but the service does not use.
    await fetch(`${server.apiUrl}/v1/account`, { method: 'PROPFIND' });
    const text = await scrape();
    expect(
      sample(
        text,
        'disarm_http_requests_total{server="api",method="GET",route="/v1/documents/:id",status="200"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(
        text,
        'disarm_http_requests_total{server="api",method="POST",route="/v1/documents",status="200"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(
        text,
        'disarm_http_requests_total{server="api",method="GET",route="unmatched",status="404"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(text).toContain('method="other",route="/v1/account"');
    expect(
      sample(
        text,
        'disarm_http_request_duration_seconds_count{server="api",method="POST",route="/v1/documents"}',
      ),
    ).toBeGreaterThanOrEqual(1);
    // No id, key or random path ever becomes a label.
    expect(text).not.toContain(id);
    expect(text).not.toMatch(/doc_[0-9a-z]{20}|\/no\/such/);
  });

  it('counts documents by outcome and format, engine time, charges, the queue', async () => {
    const before = sample(await scrape(), 'disarm_charged_pence_total') ?? 0;
    await submit('another.png');
    const text = await scrape();
    expect(
      sample(text, 'disarm_documents_total{status="completed",reason="none",format="png"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'disarm_engine_duration_seconds_count{format="png"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'disarm_charges_total{plan_type="payg"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'disarm_charged_pence_total')).toBe(before + PRICE_PENCE);
    expect(sample(text, 'disarm_queue_depth{state="pending"}')).toBe(0);
    expect(sample(text, 'disarm_queue_depth{state="processing"}')).toBe(0);
    expect(sample(text, 'disarm_queue_oldest_pending_age_seconds')).toBe(0);
    // The process's own metrics come along.
    expect(text).toContain('process_resident_memory_bytes');
  });

  it('counts a crashed worker as a restart, and its document as failed and refunded', async () => {
    const before = await scrape();
    const refundedBefore = sample(before, 'disarm_refunded_pence_total') ?? 0;
    const restartsBefore = sample(before, 'disarm_worker_restarts_total') ?? 0;
    const document = await submit('exit-now.png');
    expect(document.status).toBe('failed');
    const text = await scrape();
    expect(
      sample(text, 'disarm_documents_total{status="failed",reason="internal_error",format="png"}'),
    ).toBe(1);
    expect(sample(text, 'disarm_refunds_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'disarm_refunded_pence_total')).toBe(refundedBefore + PRICE_PENCE);
    expect(sample(text, 'disarm_worker_restarts_total')).toBe(restartsBefore + 1);
  });
});
