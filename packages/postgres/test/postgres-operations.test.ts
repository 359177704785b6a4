import type { DocumentEvents, NewDocument } from '@disarm/protocol';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { createPostgresDocumentEvents, createPostgresStore } from '../src/index.ts';
import type { PostgresDocumentEvents, PostgresStore } from '../src/index.ts';
import { startTemporaryCluster } from '../src/testing/index.ts';
import type { TemporaryCluster } from '../src/testing/index.ts';

const T0 = new Date('2025-01-15T10:00:00.000Z');
const LEASE_MS = 60_000;
/** A sync waiter gives up after this in these tests (a missed wake-up fails, never hangs). */
const WAIT_MS = 10_000;

let cluster: TemporaryCluster | undefined;
let url = '';
let admin: pg.Client | undefined;
let schemas = 0;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  cluster = await startTemporaryCluster();
  url = await cluster.createDatabase('operations');
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});

afterEach(async () => {
  for (const handle of opened.splice(0)) await handle.close();
});

afterAll(async () => {
  await admin?.end();
  await cluster?.stop();
});

function sql(): pg.Client {
  if (admin === undefined) throw new Error('no admin connection');
  return admin;
}

function nextSchema(): string {
  schemas += 1;
  return `ops_${schemas}`;
}

async function openStore(
  schema: string,
  extra: { migrate?: boolean; applicationName?: string } = {},
): Promise<PostgresStore> {
  const store = await createPostgresStore({ connectionString: url, schema, ...extra });
  opened.push(store);
  return store;
}

function document(id: string): NewDocument {
  return {
    id,
    organisationId: 'org_a',
    lane: 'multipart',
    fileName: 'report.pdf',
    sizeBytes: 1_234,
    intakeKey: `intake/${id}`,
    deleteAfterDownload: false,
    statusStyle202: false,
  };
}

/** This node's in-process events (what `@disarm/node` passes as `local`), reduced to the wake-ups. */
function localEvents(): DocumentEvents {
  const finish = new Map<string, (() => void)[]>();
  let queued: (() => void)[] = [];
  const until = (signal: AbortSignal, add: (wake: () => void) => void): Promise<void> =>
    new Promise((resolve) => {
      add(resolve);
      signal.addEventListener('abort', () => {
        resolve();
      });
    });
  return {
    queued() {
      for (const wake of queued.splice(0)) wake();
    },
    finished(documentId) {
      for (const wake of finish.get(documentId) ?? []) wake();
      finish.delete(documentId);
    },
    waitForFinish: (documentId, signal) =>
      until(signal, (wake) => finish.set(documentId, [...(finish.get(documentId) ?? []), wake])),
    waitForQueued: (signal) =>
      until(signal, (wake) => {
        queued = [...queued, wake];
      }),
  };
}

describe('migrations', () => {
  it('applies each version once when two nodes migrate at the same moment', async () => {
    const schema = nextSchema();
    const nodes = await Promise.all([
      openStore(schema, { migrate: false }),
      openStore(schema, { migrate: false }),
      openStore(schema, { migrate: false }),
    ]);
    const applied = await Promise.all(nodes.map((node) => node.migrate()));
    // One node applied the schema; the others waited on the advisory lock and found it done.
    expect(applied.filter((versions) => versions.length > 0)).toEqual([[1, 2, 3, 4]]);
    const { rows } = await sql().query<{ version: number }>(
      `SELECT version FROM ${schema}.schema_migrations ORDER BY version`,
    );
    expect(rows.map((row) => row.version)).toEqual([1, 2, 3, 4]);
    expect(await nodes[0].migrate()).toEqual([]);
  });

  it('refuses a database migrated by a newer version', async () => {
    const schema = nextSchema();
    await openStore(schema);
    await sql().query(
      `INSERT INTO ${schema}.schema_migrations (version, name) VALUES (999, 'from the future')`,
    );
    await expect(createPostgresStore({ connectionString: url, schema })).rejects.toThrow(
      /schema version 999, newer than this @disarm\/postgres knows/,
    );
  });
});

describe('indexes', () => {
  /** The plan of `query` with sequential scans priced out: a missing index shows as a Seq Scan. */
  async function planOf(schema: string, query: string, values: unknown[]): Promise<string> {
    const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (COSTS OFF) ${query}`,
        values,
      );
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    } finally {
      await client.end();
    }
  }

  it('serves every hot query from an index', async () => {
    const schema = nextSchema();
    await openStore(schema);
    const hot: [string, string, unknown[], string][] = [
      [
        'status read',
        'SELECT * FROM documents WHERE id = $1 AND organisation_id = $2',
        ['d', 'o'],
        'documents_pkey',
      ],
      [
        'lease',
        `SELECT id FROM documents WHERE status = 'pending' AND (retry_not_before IS NULL OR retry_not_before <= $1) ORDER BY submitted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [T0],
        'documents_queue',
      ],
      [
        'lapsed leases',
        `SELECT * FROM documents WHERE status = 'processing' AND lease_expires_at <= $1 ORDER BY submitted_at, id LIMIT 500`,
        [T0],
        'documents_leases',
      ],
      ['API key', 'SELECT * FROM api_keys WHERE hash = $1', ['h'], 'api_keys_hash'],
      ['organisation', 'SELECT * FROM organisations WHERE id = $1', ['o'], 'organisations_pkey'],
      [
        'rate limit',
        'SELECT count FROM rate_limits WHERE bucket = $1 AND window_start = $2',
        ['b', T0],
        'rate_limits_pkey',
      ],
      ['rate purge', 'DELETE FROM rate_limits WHERE window_start < $1', [T0], 'rate_limits_window'],
      [
        'idempotency claim',
        'SELECT * FROM idempotency_keys WHERE organisation_id = $1 AND key = $2',
        ['o', 'k'],
        'idempotency_keys_pkey',
      ],
      [
        'idempotency purge',
        'DELETE FROM idempotency_keys WHERE expires_at <= $1',
        [T0],
        'idempotency_keys_expiry',
      ],
      [
        'intake sweep',
        `SELECT id FROM documents WHERE intake_key IS NOT NULL AND status IN ('completed', 'rejected', 'failed') ORDER BY completed_at, id LIMIT 10`,
        [],
        'documents_intake_sweep',
      ],
      [
        'downloaded sweep',
        `SELECT id FROM documents WHERE status = 'completed' AND output_removed_at IS NULL AND delete_after_download AND first_download_at IS NOT NULL AND first_download_at <= $1 ORDER BY first_download_at, id LIMIT 10`,
        [T0],
        'documents_downloaded_sweep',
      ],
      [
        'expiry sweep',
        `SELECT id FROM documents WHERE status = 'completed' AND output_removed_at IS NULL AND download_expires_at <= $1 ORDER BY download_expires_at, id LIMIT 10`,
        [T0],
        'documents_output_sweep',
      ],
      [
        'upload sweep',
        `SELECT id FROM uploads WHERE submitted_at IS NULL AND blob_removed_at IS NULL AND expires_at <= $1 ORDER BY expires_at, id LIMIT 10`,
        [T0],
        'uploads_expiry_sweep',
      ],
      [
        'blob ownership: documents',
        'SELECT * FROM documents WHERE id = ANY($1) OR intake_key = ANY($2) OR output_blob_key = ANY($2)',
        [['d'], ['intake/d']],
        'documents_intake_key',
      ],
      [
        'blob ownership: documents by output',
        'SELECT * FROM documents WHERE id = ANY($1) OR intake_key = ANY($2) OR output_blob_key = ANY($2)',
        [['d'], ['output/d']],
        'documents_output_key',
      ],
      [
        'blob ownership: uploads',
        'SELECT blob_key, submitted_at, blob_removed_at FROM uploads WHERE blob_key = ANY($1)',
        [['uploads/u']],
        'uploads_blob_key',
      ],
      [
        'API keys of an organisation',
        'SELECT * FROM api_keys WHERE organisation_id = $1 ORDER BY created_at DESC, id DESC',
        ['o'],
        'api_keys_organisation',
      ],
    ];
    for (const [name, query, values, index] of hot) {
      const plan = await planOf(schema, query, values);
      expect(plan, `${name}:\n${plan}`).toContain(index);
      expect(plan, `${name}:\n${plan}`).not.toContain('Seq Scan');
    }
  });
});

describe('a lost connection', () => {
  it('runs a submission again when its connection dies mid-transaction: charged once', async () => {
    const schema = nextSchema();
    const applicationName = `disarm ${schema}`;
    const store = await openStore(schema, { applicationName });
    await store.createOrganisation(
      { id: 'org_a', name: 'A', plan: 'payg', creditBalancePence: 100 },
      T0,
    );

    // Another session holds the organisation's row, so the submission waits inside its
    // transaction; its connection is then killed, as a failover or a network cut would.
    const blocker = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await blocker.connect();
    opened.push({ close: () => blocker.end() });
    await blocker.query('BEGIN');
    await blocker.query(`SELECT * FROM organisations WHERE id = 'org_a' FOR UPDATE`);
    const accepting = store.acceptDocument(document('doc_1'), T0);
    let killed = 0;
    while (killed === 0) {
      const { rows } = await sql().query<{ killed: boolean }>(
        `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
         WHERE application_name = $1 AND wait_event_type = 'Lock'`,
        [applicationName],
      );
      killed = rows.filter((row) => row.killed).length;
    }
    await blocker.query('COMMIT');

    const result = await accepting;
    expect(result.kind).toBe('accepted');
    const organisation = await store.getOrganisation('org_a', T0);
    expect(organisation?.creditBalancePence).toBe(90);
    expect(organisation?.periodUsedSubmissions).toBe(1);
    const { rows } = await sql().query(`SELECT id FROM ${schema}.documents`);
    expect(rows).toHaveLength(1);
  });

  it('serves reads again after the server dropped every connection', async () => {
    const schema = nextSchema();
    const applicationName = `disarm ${schema}`;
    const store = await openStore(schema, { applicationName });
    await store.createOrganisation({ id: 'org_a', name: 'A', plan: 'starter' }, T0);
    await sql().query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    expect((await store.getOrganisation('org_a', T0))?.plan).toBe('starter');
  });
});

describe('pool limits and timeouts', () => {
  it('gives up on a statement stuck behind a lock after the statement timeout', async () => {
    const schema = nextSchema();
    await openStore(schema);
    const store = await createPostgresStore({
      connectionString: url,
      schema,
      statementTimeoutMs: 300,
    });
    opened.push(store);
    await store.createOrganisation({ id: 'org_a', name: 'A', plan: 'starter' }, T0);
    const blocker = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await blocker.connect();
    opened.push({ close: () => blocker.end() });
    await blocker.query('BEGIN');
    await blocker.query(`SELECT * FROM organisations WHERE id = 'org_a' FOR UPDATE`);
    // A stalled session never holds a request for ever: the server cancels the statement.
    await expect(store.acceptDocument(document('doc_1'), T0)).rejects.toThrow(/statement timeout/);
    await blocker.query('ROLLBACK');
    expect((await store.acceptDocument(document('doc_1'), T0)).kind).toBe('accepted');
  });

  it('waits for a free connection no longer than the connection timeout', async () => {
    const schema = nextSchema();
    await openStore(schema);
    const store = await createPostgresStore({
      connectionString: url,
      schema,
      maxConnections: 1,
      connectionTimeoutMs: 200,
    });
    opened.push(store);
    await store.createOrganisation({ id: 'org_a', name: 'A', plan: 'starter' }, T0);
    const blocker = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await blocker.connect();
    opened.push({ close: () => blocker.end() });
    await blocker.query('BEGIN');
    await blocker.query(`SELECT * FROM organisations WHERE id = 'org_a' FOR UPDATE`);
    // The pool's one connection waits on the lock; the next caller is refused, not queued.
    const holding = store.acceptDocument(document('doc_1'), T0);
    await expect(store.getOrganisation('org_a', T0)).rejects.toThrow(/timeout/);
    await blocker.query('COMMIT');
    expect((await holding).kind).toBe('accepted');
  });
});

describe('document events across nodes', () => {
  async function openEvents(schema: string): Promise<PostgresDocumentEvents> {
    const events = await createPostgresDocumentEvents({
      connectionString: url,
      schema,
      local: localEvents(),
    });
    opened.push(events);
    return events;
  }

  it('wakes a sync waiter on one node when a worker on another finishes', async () => {
    const schema = nextSchema();
    const apiNode = await openEvents(schema);
    const workerNode = await openEvents(schema);
    const signal = AbortSignal.timeout(WAIT_MS);
    const waiting = apiNode.waitForFinish('doc_1', signal);
    workerNode.finished('doc_1');
    await waiting;
    expect(signal.aborted).toBe(false);
  });

  it('wakes an idle worker on one node when another node queues a document', async () => {
    const schema = nextSchema();
    const apiNode = await openEvents(schema);
    const workerNode = await openEvents(schema);
    const signal = AbortSignal.timeout(WAIT_MS);
    const waiting = workerNode.waitForQueued(signal);
    apiNode.queued('doc_1');
    await waiting;
    expect(signal.aborted).toBe(false);
  });

  it('keeps deployments in other schemas apart', async () => {
    const apiNode = await openEvents(nextSchema());
    const otherDeployment = await openEvents(nextSchema());
    const controller = new AbortController();
    const waiting = apiNode.waitForFinish('doc_1', controller.signal);
    let woken = false;
    void waiting.then(() => {
      woken = true;
    });
    otherDeployment.finished('doc_1');
    // A round trip through the server after the notification: had it crossed, it came first.
    await sql().query('SELECT pg_sleep(0.2)');
    expect(woken).toBe(false);
    controller.abort();
    await waiting;
  });

  it('listens again after its connection is killed', async () => {
    const schema = nextSchema();
    const apiNode = await openEvents(schema);
    const workerNode = await openEvents(schema);
    await sql().query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE application_name = 'disarm events listener' AND query LIKE 'LISTEN ${schema}_%'`,
    );
    const signal = AbortSignal.timeout(WAIT_MS);
    // Announce until the reconnected listener hears it (announcements made while it was away
    // are lost by design: waiters poll the store as well).
    const waiting = apiNode.waitForFinish('doc_1', signal);
    const heard = { done: false };
    void waiting.then(() => {
      heard.done = true;
    });
    while (!heard.done && !signal.aborted) {
      workerNode.finished('doc_1');
      await sql().query('SELECT pg_sleep(0.05)');
    }
    expect(signal.aborted).toBe(false);
  });
});

describe('the queue across nodes', () => {
  it('hands each pending document to exactly one of many workers', async () => {
    const schema = nextSchema();
    const api = await openStore(schema);
    const workers = await Promise.all([openStore(schema), openStore(schema), openStore(schema)]);
    await api.createOrganisation({ id: 'org_a', name: 'A', plan: 'internal' }, T0);
    const ids = Array.from({ length: 30 }, (_, index) => `doc_${String(index).padStart(2, '0')}`);
    for (const id of ids) await api.acceptDocument(document(id), T0);
    const leased = await Promise.all(
      Array.from({ length: 45 }, (_, index) => {
        const worker = workers[index % workers.length];
        if (worker === undefined) throw new Error('no worker');
        return worker.leaseDocument(`worker-${index}`, T0, LEASE_MS);
      }),
    );
    const taken = leased.flatMap((record) => (record === undefined ? [] : [record.id]));
    expect(taken.sort()).toEqual(ids);
  });
});
