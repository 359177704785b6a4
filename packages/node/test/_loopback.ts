/**
 * One `startServer` on loopback with a single worker, an admin token, the conformance harness's
 * client over it and an `internal` organisation: what the API tests that need no manual clock
 * start in their `beforeAll`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { hashAdminToken, startServer } from '../src/serve/index.ts';
import { createClient } from './conformance/_harness.ts';
import type { Client } from './conformance/_harness.ts';

/** A running loopback API; see {@link startLoopbackApi}. */
export interface LoopbackApi {
  readonly client: Client;
  /** API key of the `internal` organisation made for the test. */
  readonly key: string;
  /** The server's data folder, free for the test's own files too; removed by {@link close}. */
  readonly dataDir: string;
  /** Stops the server and removes its data folder. */
  close(): Promise<void>;
}

/**
 * Starts the API and one worker of `workerModule` (default: the real engine's worker) on free
 * loopback ports, with a data folder named after `name`.
 */
export async function startLoopbackApi(name: string, workerModule?: URL): Promise<LoopbackApi> {
  const dataDir = await mkdtemp(join(tmpdir(), `disarm-${name}-`));
  const adminToken = randomBytes(32).toString('hex');
  const server = await startServer({
    dataDir,
    port: 0,
    storagePort: 0,
    host: '127.0.0.1',
    workers: 1,
    demo: false,
    ...(workerModule === undefined ? {} : { workerModule }),
    adminTokenHashes: [hashAdminToken(adminToken)],
  });
  const client = await createClient({
    name: 'loopback',
    apiUrl: server.apiUrl,
    storageUrl: server.storageUrl,
    adminToken,
    loopback: true,
    send: (url, init) => fetch(url, init),
    blobExists: () => Promise.resolve(false),
    advanceClock: () => Promise.reject(new Error('no manual clock here')),
    stop: () => server.close(),
  });
  const { key } = await client.newOrganisation({ plan: 'internal' });
  return {
    client,
    key,
    dataDir,
    async close() {
      await server.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
