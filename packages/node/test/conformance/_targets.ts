import { randomBytes } from 'node:crypto';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { hashAdminToken, startServer } from '../../src/serve/index.ts';
import { startTestServer } from '../_server.ts';
import type { ConformanceTarget } from './_harness.ts';

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The embedded service started in this process; requests go straight to its fetch handlers
 * (no sockets), routed by origin to the API or the storage handler.
 */
export async function inProcessTarget(options: {
  processing: boolean;
}): Promise<ConformanceTarget> {
  const dataDir = await mkdtemp(join(tmpdir(), 'disarm-conformance-'));
  const adminToken = randomBytes(32).toString('hex');
  const server = await startServer({
    dataDir,
    port: 0,
    storagePort: 0,
    workers: 1,
    testMode: true,
    demo: false,
    processing: options.processing,
    adminTokenHashes: [hashAdminToken(adminToken)],
  });
  const apiOrigin = new URL(server.apiUrl).origin;
  const blobDirectory = server.blobDirectory;
  if (blobDirectory === undefined) throw new Error('the in-process target keeps its blobs locally');
  return {
    name: 'in-process',
    apiUrl: server.apiUrl,
    storageUrl: server.storageUrl,
    adminToken,
    loopback: false,
    async send(url, init = {}) {
      // A socket would carry Content-Length for a fixed-size body; a bare Request does not.
      const headers = new Headers(init.headers);
      const body = init.body;
      if (
        !headers.has('Content-Length') &&
        (body instanceof Uint8Array || typeof body === 'string')
      ) {
        headers.set(
          'Content-Length',
          String(typeof body === 'string' ? Buffer.byteLength(body) : body.length),
        );
      }
      const request = new Request(url, { ...init, headers });
      const response = await (new URL(url).origin === apiOrigin
        ? server.apiHandler(request)
        : server.storageHandler(request));
      // fetch() never follows redirects here: the suite asks for `redirect: 'manual'` anyway.
      return response;
    },
    blobExists: (key) => exists(join(blobDirectory, ...key.split('/'))),
    async advanceClock(milliseconds) {
      await server.advanceClock(milliseconds);
    },
    async stop() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The real `disarm serve` process over loopback. */
export async function loopbackTarget(options: { processing: boolean }): Promise<ConformanceTarget> {
  const server = await startTestServer({
    workers: 1,
    graceSeconds: 300,
    ...(options.processing ? {} : { args: ['--no-processing'] }),
  });
  return {
    name: 'loopback',
    apiUrl: server.apiUrl,
    storageUrl: server.storageUrl,
    adminToken: server.adminToken,
    loopback: true,
    send: (url, init) => fetch(url, init),
    blobExists: (key) => exists(join(server.dataDir, 'blobs', ...key.split('/'))),
    async advanceClock(milliseconds) {
      await server.advanceClock(milliseconds);
    },
    async stop() {
      await server.stop();
    },
  };
}
