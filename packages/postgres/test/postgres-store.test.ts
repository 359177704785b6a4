import { describeStateStoreContract } from '@disarm/protocol/testing';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

import { createPostgresStore } from '../src/index.ts';
import { startTemporaryCluster } from '../src/testing/index.ts';
import type { TemporaryCluster } from '../src/testing/index.ts';

let cluster: TemporaryCluster | undefined;
let url = '';
let schemas = 0;

beforeAll(async () => {
  cluster = await startTemporaryCluster();
  url = await cluster.createDatabase('contract');
});

afterAll(async () => {
  await cluster?.stop();
});

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

describeStateStoreContract('postgres', async () => {
  schemas += 1;
  const schema = `contract_${schemas}`;
  const store = await createPostgresStore({ connectionString: url, schema });
  return {
    store,
    openPeer: () => createPostgresStore({ connectionString: url, schema }),
    close: async () => {
      await store.close();
      await dropSchema(schema);
    },
  };
});
