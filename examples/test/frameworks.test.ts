/**
 * One suite, run against the disarm API mounted in each example app (Express, Fastify, Hono) over
 * real loopback HTTP: the app's own route, the contract, provisioning through the admin routes, a
 * synchronous clean, the signed download, a large upload streamed through the framework, and a
 * problem response passed through intact.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildImage } from '@disarm/fixtures';
import { createEmbeddedDisarm, hashAdminToken, listen } from '@disarm/node';
import type { EmbeddedDisarm, RunningServer } from '@disarm/node';
import { OPENAPI_PATH, PROBLEMS } from '@disarm/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { closeServer, FRAMEWORKS, listenOn, mountApp } from '../src/mount.ts';
import type { MountedApp } from '../src/mount.ts';

/** Size of the raw-lane upload that must stream through the framework. */
const RAW_UPLOAD_BYTES = 20 * 1024 * 1024;
/** Size of each write of that upload (one buffer, written again and again). */
const UPLOAD_CHUNK_BYTES = 64 * 1024;
/** How often, in bytes sent, the upload test measures what memory is alive. */
const MEMORY_SAMPLE_BYTES = 1024 * 1024;
/** How long closing the app server lets requests in flight finish. */
const CLOSE_GRACE_MS = 5_000;
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

interface Envelope {
  readonly id: string;
  readonly status: string;
}

/** Full collection, so `arrayBuffers` counts what is alive, not what awaits a collection. */
function collectGarbage(): void {
  if (typeof globalThis.gc !== 'function') {
    throw new Error('run with --expose-gc (examples/vitest.config.ts sets it)');
  }
  globalThis.gc();
}

describe.each(FRAMEWORKS)('the disarm API mounted in %s', (framework) => {
  const adminToken = randomBytes(32).toString('hex');
  let dataDir: string | undefined;
  let disarm: EmbeddedDisarm | undefined;
  let storage: RunningServer | undefined;
  let server: Server | undefined;
  let app: MountedApp | undefined;
  let apiUrl = '';
  /** Called with every request the framework hands to the API. */
  let onHandOver: ((request: Request) => void) | undefined;
  let organisation: Promise<{ id: string; apiKey: string }> | undefined;
  let cleaned: Promise<Envelope> | undefined;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), `disarm-${framework}-`));
    // Both listeners first: the service puts their URLs in statuses and signed links.
    storage = await listen((request) =>
      disarm ? disarm.storage(request) : new Response(null, { status: 503 }),
    );
    const bound = await listenOn(0, '127.0.0.1');
    server = bound.server;
    apiUrl = `http://127.0.0.1:${bound.port}`;
    const embedded = await createEmbeddedDisarm({
      dataDir,
      publicBaseUrl: apiUrl,
      storageBaseUrl: storage.url,
      adminTokenHashes: [hashAdminToken(adminToken)],
      testMode: true,
      workers: 1,
      demo: false,
    });
    disarm = embedded;
    app = await mountApp(framework, {
      api: (request) => {
        onHandOver?.(request);
        return embedded.api(request);
      },
    });
    server.on('request', app.listener);
    await embedded.start();
  });

  afterAll(async () => {
    if (server) await closeServer(server, CLOSE_GRACE_MS);
    await app?.close();
    await storage?.close({ graceMs: CLOSE_GRACE_MS });
    await disarm?.close();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  /** An organisation and its API key, made through the admin routes (once per framework). */
  function provisioned(): Promise<{ id: string; apiKey: string }> {
    organisation ??= (async () => {
      const admin = { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' };
      const created = await fetch(`${apiUrl}/v1/admin/organisations`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ name: `${framework} example`, plan: 'internal' }),
      });
      expect(created.status).toBe(201);
      const { id } = (await created.json()) as { id: string };
      const key = await fetch(`${apiUrl}/v1/admin/organisations/${id}/keys`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ name: 'examples' }),
      });
      expect(key.status).toBe(201);
      const { key: apiKey } = (await key.json()) as { key: string };
      return { id, apiKey };
    })();
    return organisation;
  }

  /** A PNG cleaned through `POST /v1/documents?wait=true` (once per framework). */
  function cleanedPng(): Promise<Envelope> {
    cleaned ??= (async () => {
      const { apiKey } = await provisioned();
      const png = await buildImage('png', { width: 48, height: 32 });
      const form = new FormData();
      form.set('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'photo.png');
      const response = await fetch(`${apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers: { 'X-Api-Key': apiKey },
        body: form,
      });
      expect(response.status).toBe(200);
      return (await response.json()) as Envelope;
    })();
    return cleaned;
  }

  it("leaves the app's own route to the app", async () => {
    const response = await fetch(`${apiUrl}/hello`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ hello: `from ${framework}` });
  });

  it('serves the API contract', async () => {
    const response = await fetch(`${apiUrl}${OPENAPI_PATH}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/json/);
    const contract = (await response.json()) as { openapi?: unknown };
    expect(contract.openapi).toMatch(/^3\./);
  });

  it('provisions an organisation and an API key through the admin routes', async () => {
    const { id, apiKey } = await provisioned();
    expect(id).toMatch(/^org_/);
    expect(apiKey).toMatch(/^dsm_live_/);
    const account = await fetch(`${apiUrl}/v1/account`, { headers: { 'X-Api-Key': apiKey } });
    expect(account.status).toBe(200);
    await account.body?.cancel();
  });

  it('cleans a multipart PNG synchronously', async () => {
    const envelope = await cleanedPng();
    expect(envelope.id).toMatch(/^doc_/);
    expect(envelope.status).toBe('completed');
  });

  it('redirects the download to a signed link the storage origin serves', async () => {
    const [{ apiKey }, { id }] = await Promise.all([provisioned(), cleanedPng()]);
    const download = await fetch(`${apiUrl}/v1/documents/${id}/download`, {
      headers: { 'X-Api-Key': apiKey },
      redirect: 'manual',
    });
    expect(download.status).toBe(302);
    const location = download.headers.get('location') ?? '';
    expect(location.startsWith(`${storage?.url ?? '?'}/`)).toBe(true);
    await download.body?.cancel();

    const file = await fetch(location);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    const bytes = new Uint8Array(await file.arrayBuffer());
    expect([...bytes.subarray(0, PNG_SIGNATURE.length)]).toEqual(PNG_SIGNATURE);
  });

  it('streams a 20 MB raw upload through to the API without buffering it', async () => {
    const { apiKey } = await provisioned();
    let sent = 0;
    let sentAtHandOver: number | undefined;
    onHandOver = (request) => {
      if (request.method === 'POST') sentAtHandOver ??= sent;
    };
    const chunk = Buffer.alloc(UPLOAD_CHUNK_BYTES, 0x41);
    collectGarbage();
    const baseline = process.memoryUsage().arrayBuffers;
    let peakGrowth = 0;

    try {
      const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          // Filler bytes under a supported name: the worker refuses them later, but what is
          // under test is the way in.
          `${apiUrl}/v1/documents?filename=large.png`,
          {
            method: 'POST',
            headers: {
              'X-Api-Key': apiKey,
              'Content-Type': 'application/octet-stream',
              'Content-Length': String(RAW_UPLOAD_BYTES),
            },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (text: string) => (body += text));
            res.on('end', () => {
              resolve({ status: res.statusCode ?? 0, body });
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        void (async () => {
          let nextSample = 0;
          while (sent < RAW_UPLOAD_BYTES) {
            if (sent >= nextSample) {
              collectGarbage();
              peakGrowth = Math.max(peakGrowth, process.memoryUsage().arrayBuffers - baseline);
              nextSample += MEMORY_SAMPLE_BYTES;
            }
            sent += chunk.length;
            if (!req.write(chunk)) await once(req, 'drain');
          }
          req.end();
          // The client could only send it all because the server read it all: had the API not
          // got the request by now, the framework is holding the body (and would hold it forever).
          if (sentAtHandOver === undefined) {
            req.destroy();
            reject(new Error('the framework read the whole body before handing the request over'));
          }
        })().catch(reject);
      });

      expect(response.status, response.body).toBe(202);
      expect((JSON.parse(response.body) as Envelope).id).toMatch(/^doc_/);
      // The API had the request before the body was all sent: nothing waited for it whole. (What
      // was sent by then sits in the loopback socket buffers, a few MB.)
      expect(sentAtHandOver).toBeLessThan(RAW_UPLOAD_BYTES);
      // Loosely: what stayed alive while uploading is far below the body's size.
      expect(peakGrowth).toBeLessThan(RAW_UPLOAD_BYTES / 4);
    } finally {
      onHandOver = undefined;
    }
  });

  it('passes a problem response through intact', async () => {
    const response = await fetch(`${apiUrl}/v1/account`);
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="disarm"');
    expect(await response.json()).toMatchObject({
      type: `${apiUrl}/problems/Unauthorized`,
      title: PROBLEMS.Unauthorized.title,
      status: 401,
      code: 'Unauthorized',
    });
  });
});
