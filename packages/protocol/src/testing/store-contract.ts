import { afterEach, beforeEach, describe } from 'vitest';

import type { StateStore } from '../ports.ts';
import { describeCredentials } from './_contract/credentials.ts';
import type { ContractContext } from './_contract/fixtures.ts';
import { describeOrganisations } from './_contract/organisations.ts';
import { describeQueue } from './_contract/queue.ts';
import { describeRequests } from './_contract/requests.ts';
import { describeRetention } from './_contract/retention.ts';
import { describeSubmissions } from './_contract/submissions.ts';

/** A store opened for one test of {@link describeStateStoreContract}. */
export interface StoreContractHandle {
  /** The store under test. It must start empty: no organisations, documents or records. */
  readonly store: StateStore;
  /** Closes the store and removes whatever it created (files, schemas). */
  close(): Promise<void>;
  /**
   * Opens a second store over the same data, standing in for another process (a second file
   * handle, another connection pool). When given, the contention tests spread their parallel
   * calls over both stores. The suite closes the peer itself, before `close`.
   */
  openPeer?(): Promise<StateStore>;
}

/**
 * Declares the vitest suite every {@link StateStore} must pass: organisations and billing
 * periods, credentials, metered acceptance (with its refusals and their order), the queue and
 * its refunds, retention sweeps, rate counters and idempotency records, including races that
 * must charge, lease, consume and claim exactly once.
 *
 * `makeStore` runs before each test and must return a fresh, empty store. The suite uses a fixed
 * set of dates (January 2025 onwards) and never the real clock.
 *
 * @example
 * ```ts
 * // packages/postgres/test/postgres-store.test.ts
 * import { describeStateStoreContract } from '@disarm/protocol/testing';
 *
 * describeStateStoreContract('postgres', async () => {
 *   const schema = await createTemporarySchema();
 *   const store = createPostgresStore({ connectionString, schema });
 *   return {
 *     store,
 *     openPeer: async () => createPostgresStore({ connectionString, schema }),
 *     close: async () => {
 *       await store.close();
 *       await dropSchema(schema);
 *     },
 *   };
 * });
 * ```
 */
export function describeStateStoreContract(
  name: string,
  makeStore: () => Promise<StoreContractHandle>,
): void {
  describe(`StateStore contract: ${name}`, () => {
    let handle: StoreContractHandle | undefined;
    let peers: StateStore[] = [];

    beforeEach(async () => {
      handle = await makeStore();
    });

    afterEach(async () => {
      const closing = peers;
      peers = [];
      for (const peer of closing) await peer.close();
      await handle?.close();
      handle = undefined;
    });

    const context: ContractContext = {
      store() {
        if (handle === undefined) throw new Error('the store is only open inside a test');
        return handle.store;
      },
      async contenders() {
        const current = context.store();
        if (handle?.openPeer === undefined) return [current];
        const peer = await handle.openPeer();
        peers.push(peer);
        return [current, peer];
      },
    };

    describeOrganisations(context);
    describeCredentials(context);
    describeSubmissions(context);
    describeQueue(context);
    describeRetention(context);
    describeRequests(context);
  });
}
