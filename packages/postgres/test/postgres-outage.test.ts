/**
 * PostgreSQL out of reach: the server stopped at once (`pg_ctl stop -m immediate`, a crash or a
 * failover) under an open store and its document events, then started again on the same port.
 * The store rejects with `StorageUnavailableError` (the API's 503), applies nothing, and works
 * again by itself; the events report the lost listener the same way and listen again.
 * The run over real `disarm serve` processes is `packages/node/test/faults-database-outage.test.ts`.
 */
import { StorageUnavailableError } from '@disarm/protocol';
import type { DocumentEvents } from '@disarm/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createPostgresDocumentEvents, createPostgresStore } from '../src/index.ts';
import type { PostgresStore } from '../src/index.ts';
import { startTemporaryCluster } from '../src/testing/index.ts';
import type { TemporaryCluster } from '../src/testing/index.ts';

const T0 = new Date('2025-01-15T10:00:00.000Z');
/** How long the events may take to listen again once the server is back. */
const RELISTEN_MS = 30_000;

let cluster: TemporaryCluster | undefined;
let url = '';

beforeAll(async () => {
  cluster = await startTemporaryCluster();
  url = await cluster.createDatabase('outage');
});

afterAll(async () => {
  await cluster?.stop();
});

/** In-process events that record what reaches them. */
function recordingEvents(): DocumentEvents & { queuedIds: string[] } {
  const queuedIds: string[] = [];
  return {
    queuedIds,
    queued: (id) => queuedIds.push(id),
    finished: () => undefined,
    waitForFinish: () => Promise.resolve(),
    waitForQueued: () => Promise.resolve(),
  };
}

describe('a PostgreSQL store while the server is down', () => {
  it('rejects reads and writes with StorageUnavailableError, applies nothing, and recovers by itself', async () => {
    if (cluster === undefined) throw new Error('no cluster');
    const store: PostgresStore = await createPostgresStore({ connectionString: url });
    const errors: Error[] = [];
    const local = recordingEvents();
    const events = await createPostgresDocumentEvents({
      connectionString: url,
      local,
      onError: (error) => errors.push(error),
    });
    // Another node, announcing documents.
    const sender = await createPostgresDocumentEvents({
      connectionString: url,
      local: recordingEvents(),
      onError: () => undefined,
    });
    try {
      await store.createOrganisation({ id: 'org_1', name: 'Acme', plan: 'starter' }, T0);

      await cluster.interrupt();
      // Pooled connections break (57P01 / a closed socket), new ones are refused: both count.
      for (const operation of [
        () => store.getOrganisation('org_1', T0),
        () => store.createOrganisation({ id: 'org_2', name: 'Beta', plan: 'starter' }, T0),
        () => store.leaseDocument('proc_1', T0, 60_000),
        () => store.hitRateLimit('org_1:submission', T0, T0),
      ]) {
        const refused = operation();
        await expect(refused).rejects.toBeInstanceOf(StorageUnavailableError);
        await expect(refused).rejects.toMatchObject({ storage: 'state-store' });
      }
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.every((error) => error instanceof StorageUnavailableError)).toBe(true);

      await cluster.resume();
      expect((await store.getOrganisation('org_1', T0))?.name).toBe('Acme');
      // The write refused while the server was down was never applied.
      expect(await store.getOrganisation('org_2', T0)).toBeUndefined();
      await store.createOrganisation({ id: 'org_2', name: 'Beta', plan: 'starter' }, T0);
      expect((await store.getOrganisation('org_2', T0))?.name).toBe('Beta');

      // The listener is back: another node's NOTIFY reaches this one again.
      const deadline = Date.now() + RELISTEN_MS;
      while (!local.queuedIds.includes('doc_after')) {
        if (Date.now() > deadline) throw new Error('the events never listened again');
        sender.queued('doc_after');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await sender.close();
      await events.close();
      await store.close();
    }
  });
});
