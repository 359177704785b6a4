import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { StateStore } from '@disarm/protocol';
import { describeStateStoreContract } from '@disarm/protocol/testing';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { migrate } from '../src/_internal/schema.ts';
import { createSqliteStore } from '../src/index.ts';
import { rawDocument } from './_documents.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const CONTENDER_SCRIPT = join(HERE, '_contend.ts');
const RATE_CONTENDER_SCRIPT = join(HERE, '_contend-rate.ts');
const T0 = new Date('2025-01-15T10:00:00.000Z');
const PRICE_PENCE = 10;

async function makeTempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'disarm-sqlite-'));
}

interface ContenderReport {
  readonly kinds: string[];
  readonly leased: string[];
}

interface RateContenderReport {
  readonly counts: number[];
}

/** Starts a contender script in its own Node process; it waits for `go()` before working. */
function startContender<R = ContenderReport>(
  script: string,
  args: readonly string[],
): { ready: Promise<void>; go(): void; report: Promise<R> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=@disarm/source', script, ...args],
    { cwd: HERE, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (stdout.startsWith('ready\n')) markReady();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const report = once(child, 'close').then(([code]) => {
    markReady();
    if (code !== 0) throw new Error(`contender exited with ${String(code)}: ${stderr}`);
    return JSON.parse(stdout.slice('ready\n'.length)) as R;
  });
  return {
    ready,
    go: () => child.stdin.end('go\n'),
    report,
  };
}

describeStateStoreContract('sqlite', async () => {
  const dir = await makeTempDir();
  const path = join(dir, 'state.db');
  const store = createSqliteStore({ path });
  return {
    store,
    openPeer: () => Promise.resolve(createSqliteStore({ path })),
    close: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('createSqliteStore', () => {
  let dir: string;
  const opened: StateStore[] = [];

  function open(path = join(dir, 'state.db')): ReturnType<typeof createSqliteStore> {
    const store = createSqliteStore({ path });
    opened.push(store);
    return store;
  }

  /** A raw connection to inspect the file the way an operator would. */
  function inspect<T>(path: string, read: (db: Database.Database) => T): T {
    const db = new Database(path, { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }

  beforeEach(async () => {
    dir = await makeTempDir();
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps data across a reopen and applies migrations once', async () => {
    const path = join(dir, 'state.db');
    const first = open(path);
    expect(first.path).toBe(path);
    expect(first.migrate()).toEqual([]);
    await first.createOrganisation({ id: 'org_a', name: 'A', plan: 'payg' }, T0);
    await first.updateOrganisation('org_a', { creditDeltaPence: 30 }, T0);
    await first.acceptDocument(rawDocument('doc_1'), T0);
    const migrations = inspect(path, (db) =>
      db.prepare('SELECT version, name, applied_at FROM schema_migrations').all(),
    );
    expect(migrations).toHaveLength(9);
    await first.close();

    const second = open(path);
    expect(second.migrate()).toEqual([]);
    expect(await second.getOrganisation('org_a', T0)).toMatchObject({
      creditBalancePence: 30 - PRICE_PENCE,
      periodUsedSubmissions: 1,
    });
    expect((await second.getDocument('org_a', 'doc_1'))?.status).toBe('pending');
    expect(
      inspect(path, (db) =>
        db.prepare('SELECT version, name, applied_at FROM schema_migrations').all(),
      ),
    ).toEqual(migrations);
  });

  it('upgrades a file of schema 1: signing keys made before staged rotation sign from creation', async () => {
    const path = join(dir, 'state.db');
    // A file of schema 1, with a key written by that version.
    const db = new Database(path);
    migrate(db, { upTo: 1 });
    db.exec(`INSERT INTO signing_keys (kid, algorithm, public_jwk, private_jwk, created_at)
             VALUES ('kid_old', 'ES256', '{}', 'sealed', ${T0.getTime()});`);
    db.close();

    const upgraded = open(path);
    expect(
      inspect(path, (raw) =>
        raw.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(),
      ),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await upgraded.listSigningKeys()).toEqual([
      {
        kid: 'kid_old',
        algorithm: 'ES256',
        publicJwk: '{}',
        privateJwk: 'sealed',
        createdAt: T0,
        activeFrom: null,
        activeUntil: null,
        retiredAt: null,
      },
    ]);
  });

  it('upgrades a file of schema 2: customer OAuth clients lose cdr.admin, told once; operator clients become possible', async () => {
    const path = join(dir, 'state.db');
    const db = new Database(path);
    migrate(db, { upTo: 2 });
    db.exec(`INSERT INTO organisations (id, name, status, plan, plan_type, monthly_allowance,
               rate_limit_per_minute, max_file_size_bytes, max_upload_size_bytes,
               price_per_document_pence, credit_balance_pence, period_start, period_end,
               period_used_submissions, policy, created_at)
             VALUES ('org_a', 'A', 'active', 'payg', 'payg', 0, 30, 1, 1, 10, 0, 0, 1, 0, '{}', 0);
             INSERT INTO oauth_clients (id, organisation_id, name, scopes, secret_hashes, created_at, revoked_at) VALUES
               ('cli_both', 'org_a', 'ops', '["cdr.api","cdr.admin"]', '["h1"]', 1, NULL),
               ('cli_admin', 'org_a', 'platform', '["cdr.admin"]', '["h2"]', 2, NULL),
               ('cli_api', 'org_a', 'backend', '["cdr.api"]', '["h3"]', 3, NULL);`);
    db.close();

    const notices: string[] = [];
    const upgraded = createSqliteStore({
      path,
      onMigrationNotice: (notice) => notices.push(notice),
    });
    opened.push(upgraded);
    expect(notices).toEqual([
      'schema migration 3: OAuth client cli_both (ops) of organisation org_a lost scope cdr.admin: platform administration is for operator credentials only',
      'schema migration 3: OAuth client cli_admin (platform) of organisation org_a lost scope cdr.admin: platform administration is for operator credentials only; it held no other scope and is now revoked',
    ]);
    const clients = await upgraded.listOAuthClients('org_a');
    expect(clients.map((client) => [client.id, client.scopes, client.revokedAt !== null])).toEqual([
      ['cli_api', ['cdr.api'], false],
      ['cli_admin', [], true],
      ['cli_both', ['cdr.api'], false],
    ]);
    expect((await upgraded.getOAuthClient('cli_both'))?.secretHashes).toEqual(['h1']);

    await upgraded.createOAuthClient({
      id: 'cli_operator',
      organisationId: null,
      name: 'platform',
      scopes: ['cdr.admin'],
      secretHashes: ['h4'],
      createdAt: T0,
      revokedAt: null,
    });
    expect((await upgraded.listOAuthClients(null)).map((client) => client.id)).toEqual([
      'cli_operator',
    ]);
    expect(
      await upgraded.updateOAuthClient('org_a', 'cli_operator', { kind: 'revoke', at: T0 }),
    ).toBeUndefined();
    expect(
      (await upgraded.updateOAuthClient(null, 'cli_operator', { kind: 'revoke', at: T0 }))
        ?.revokedAt,
    ).toEqual(T0);
    await upgraded.close();
    // Told once: reopening applies nothing and says nothing.
    const again = createSqliteStore({ path, onMigrationNotice: (notice) => notices.push(notice) });
    opened.push(again);
    expect(notices).toHaveLength(2);
  });

  it('upgrades a file of schema 7: a claim left in flight by that version is free at once', async () => {
    const path = join(dir, 'state.db');
    const db = new Database(path);
    migrate(db, { upTo: 7 });
    db.exec(`INSERT INTO organisations (id, name, status, plan, plan_type, monthly_allowance,
               rate_limit_per_minute, max_file_size_bytes, max_upload_size_bytes,
               price_per_document_pence, credit_balance_pence, period_start, period_end,
               period_used_submissions, policy, created_at)
             VALUES ('org_a', 'A', 'active', 'payg', 'payg', 0, 30, 1, 1, 10, 0, 0, 1, 0, '{}', 0);
             INSERT INTO idempotency_keys (organisation_id, key, endpoint, request_hash, state,
               created_at, expires_at)
             VALUES ('org_a', 'k1', 'POST /v1/documents', '', 'in_flight', ${T0.getTime()},
               ${T0.getTime() + 24 * 60 * 60 * 1000});`);
    db.close();

    const upgraded = open(path);
    // Once, the claim would have held the key for 24 hours.
    const retry = await upgraded.claimIdempotencyKey({
      organisationId: 'org_a',
      key: 'k1',
      endpoint: 'POST /v1/documents',
      owner: 'retry',
      ownerProcess: 'process-1',
      at: new Date(T0.getTime() + 1_000),
    });
    expect(retry).toMatchObject({ kind: 'claimed', record: { owner: 'retry', resourceId: null } });
  });

  it('opens the file in WAL mode with foreign keys enforced', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    expect(inspect(path, (db) => db.pragma('journal_mode', { simple: true }))).toBe('wal');
    await expect(
      store.createApiKey({
        id: 'key_1',
        organisationId: 'org_missing',
        name: 'orphan',
        displayPrefix: 'dsm_live_x',
        hash: 'h',
        createdAt: T0,
        revokedAt: null,
      }),
    ).rejects.toThrow(/FOREIGN KEY/);
  });

  it('shares one file between two instances that see each other’s writes', async () => {
    const path = join(dir, 'state.db');
    const server = open(path);
    const admin = open(path);
    await admin.createOrganisation({ id: 'org_a', name: 'A', plan: 'payg' }, T0);
    await admin.updateOrganisation('org_a', { creditDeltaPence: 5 * PRICE_PENCE }, T0);
    expect((await server.getOrganisation('org_a', T0))?.creditBalancePence).toBe(50);

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 === 0 ? server : admin).acceptDocument(
          rawDocument(`doc_${index}`, `intake/${index}`),
          T0,
        ),
      ),
    );
    expect(results.filter((result) => result.kind === 'accepted')).toHaveLength(5);
    expect((await admin.getOrganisation('org_a', T0))?.creditBalancePence).toBe(0);
    expect((await server.getOrganisation('org_a', T0))?.creditBalancePence).toBe(0);
  });

  it('charges and leases exactly once across separate processes on one file', async () => {
    const path = join(dir, 'state.db');
    const setup = open(path);
    const k = 61;
    await setup.createOrganisation(
      { id: 'org_a', name: 'A', plan: 'payg', creditBalancePence: k * PRICE_PENCE },
      T0,
    );
    await setup.close();

    const processes = 4;
    const perProcess = 40;
    const contenders = Array.from({ length: processes }, (_, index) =>
      startContender(CONTENDER_SCRIPT, [path, String(index * perProcess), String(perProcess)]),
    );
    // Start together: every process has opened the file before any submits.
    await Promise.all(contenders.map((contender) => contender.ready));
    for (const contender of contenders) contender.go();
    const reports = await Promise.all(contenders.map((contender) => contender.report));
    const kinds = reports.flatMap((report) => report.kinds);
    const leased = reports.flatMap((report) => report.leased);
    expect(kinds.filter((kind) => kind === 'accepted')).toHaveLength(k);
    expect(kinds.filter((kind) => kind === 'insufficient_credit')).toHaveLength(
      processes * perProcess - k,
    );
    expect(new Set(leased).size).toBe(leased.length);
    expect(leased).toHaveLength(k);

    const check = open(path);
    expect(await check.getOrganisation('org_a', T0)).toMatchObject({
      creditBalancePence: 0,
      periodUsedSubmissions: k,
    });
    expect(await check.leaseDocument('late-worker', T0, 60_000)).toBeUndefined();
  }, 120_000);

  it('counts rate-limit hits exactly once across separate processes on one file', async () => {
    const path = join(dir, 'state.db');
    await open(path).close();
    const processes = 4;
    const perProcess = 150;
    const contenders = Array.from({ length: processes }, () =>
      startContender<RateContenderReport>(RATE_CONTENDER_SCRIPT, [path, String(perProcess)]),
    );
    await Promise.all(contenders.map((contender) => contender.ready));
    for (const contender of contenders) contender.go();
    const reports = await Promise.all(contenders.map((contender) => contender.report));
    const counts = reports.flatMap((report) => report.counts).sort((a, b) => a - b);
    // Every count from 1 to the total handed out once: no hit lost, none counted twice.
    expect(counts).toEqual(Array.from({ length: processes * perProcess }, (_, index) => index + 1));
  }, 120_000);

  it('reads of one turn share one snapshot; a write, or the next turn, starts from the latest state', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    const other = open(path);
    await store.createOrganisation({ id: 'org_a', name: 'A', plan: 'payg' }, T0);
    const credit = (): Promise<number | undefined> =>
      store.getOrganisation('org_a', T0).then((organisation) => organisation?.creditBalancePence);
    // One turn: the first read begins the snapshot; another process's commit lands after it.
    const before = credit();
    const landed = other.updateOrganisation('org_a', { creditDeltaPence: 30 }, T0);
    const sameTurn = credit();
    expect([await before, await sameTurn]).toEqual([0, 0]);
    expect((await landed)?.creditBalancePence).toBe(30);
    // The next turn sees it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(await credit()).toBe(30);
    // A write in the middle of a turn is not refused for a stale snapshot, and is seen at once.
    const stale = credit();
    const alsoLanded = other.updateOrganisation('org_a', { creditDeltaPence: 5 }, T0);
    const written = store.updateOrganisation('org_a', { creditDeltaPence: 1 }, T0);
    const after = credit();
    expect([await stale, (await written)?.creditBalancePence, await after]).toEqual([30, 36, 36]);
    expect((await alsoLanded)?.creditBalancePence).toBe(35);
  });

  it('answers a repeated read of an unchanged document from memory, and any change by any process at once', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    const worker = open(path);
    await store.createOrganisation({ id: 'org_a', name: 'A', plan: 'internal' }, T0);
    await store.acceptDocument(rawDocument('doc_1'), T0);
    const first = await store.getDocument('org_a', 'doc_1');
    expect(await store.getDocument('org_a', 'doc_1')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    // Another process (a worker's connection) takes the document: the next read shows it.
    expect((await worker.leaseDocument('worker-1', T0, 60_000))?.id).toBe('doc_1');
    await new Promise((resolve) => setImmediate(resolve));
    expect((await store.getDocument('org_a', 'doc_1'))?.status).toBe('processing');
    // Scoped to the organisation, cached or not.
    expect(await store.getDocument('org_b', 'doc_1')).toBeUndefined();
    const revisions = inspect(path, (db) =>
      db.prepare("SELECT revision FROM documents WHERE id = 'doc_1'").pluck().get(),
    );
    expect(revisions).toBe(1);
  });

  it('counts the hits of one event-loop turn in one commit, each in its arrival order', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    await store.hitRateLimit('org_a:status', T0, T0);
    // Start from an empty write-ahead log, so the frames below are this batch's alone.
    const operator = new Database(store.countersPath);
    operator.pragma('wal_checkpoint(TRUNCATE)');
    const hits = Array.from({ length: 40 }, (_, index) =>
      store.hitRateLimit(index % 2 === 0 ? 'org_a:status' : 'org_b:status', T0, T0),
    );
    const counts = await Promise.all(hits);
    expect(counts.filter((_, index) => index % 2 === 0)).toEqual(
      Array.from({ length: 20 }, (_, index) => index + 2),
    );
    expect(counts.filter((_, index) => index % 2 === 1)).toEqual(
      Array.from({ length: 20 }, (_, index) => index + 1),
    );
    // One commit writes each changed page once: a commit per hit would write 40 frames or more.
    const [walState] = operator.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }];
    operator.close();
    expect(walState.log).toBeGreaterThan(0);
    expect(walState.log).toBeLessThanOrEqual(4);
  });

  it('commits the hits still waiting when it closes', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    const waiting = store.hitRateLimit('org_a:submission', T0, T0);
    await store.close();
    expect(await waiting).toBe(1);
    await expect(store.hitRateLimit('org_a:submission', T0, T0)).rejects.toThrow(/not open/);
    const reopened = open(path);
    expect(await reopened.hitRateLimit('org_a:submission', T0, T0)).toBe(2);
  });

  it('keeps rate-limit counters in their own WAL file, out of the FULL-durability state file', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    expect(store.countersPath).toBe(`${path}-counters`);
    await store.hitRateLimit('org_a:submission', T0, T0);
    expect(await store.hitRateLimit('org_a:submission', T0, T0)).toBe(2);
    expect(
      inspect(store.countersPath, (db) => ({
        journal: db.pragma('journal_mode', { simple: true }),
        rows: db.prepare('SELECT bucket, window_start, count FROM rate_limits').all(),
      })),
    ).toEqual({
      journal: 'wal',
      rows: [{ bucket: 'org_a:submission', window_start: T0.getTime(), count: 2 }],
    });
    expect(
      inspect(path, (db) =>
        db.prepare("SELECT name FROM sqlite_master WHERE name = 'rate_limits'").all(),
      ),
    ).toEqual([]);
  });

  it('upgrades a file of schema 3: the rate-limit table leaves the state file', async () => {
    const path = join(dir, 'state.db');
    await open(path).close();
    const db = new Database(path);
    db.exec(`CREATE TABLE rate_limits (bucket TEXT NOT NULL, window_start INTEGER NOT NULL,
               count INTEGER NOT NULL, PRIMARY KEY (bucket, window_start)) STRICT, WITHOUT ROWID;
             INSERT INTO rate_limits VALUES ('org_a:submission', ${T0.getTime()}, 7);
             DELETE FROM schema_migrations WHERE version = 4;`);
    db.close();
    const upgraded = open(path);
    expect(
      inspect(path, (raw) => ({
        versions: raw
          .prepare('SELECT version FROM schema_migrations ORDER BY version')
          .pluck()
          .all(),
        table: raw.prepare("SELECT name FROM sqlite_master WHERE name = 'rate_limits'").all(),
      })),
    ).toMatchObject({ versions: expect.arrayContaining([1, 2, 3, 4]) as unknown, table: [] });
    expect(await upgraded.hitRateLimit('org_a:submission', T0, T0)).toBe(1);
  });

  it('upgrades a file of schema 4: documents ended before reasonDetail keep none, new ones store it', async () => {
    const path = join(dir, 'state.db');
    const first = open(path);
    await first.createOrganisation({ id: 'org_a', name: 'A', plan: 'internal' }, T0);
    for (const id of ['doc_old', 'doc_new']) {
      await first.acceptDocument(rawDocument(id), T0);
    }
    await first.close();
    // Back to schema 4: no reason_detail column; doc_old was rejected by that version.
    const db = new Database(path);
    db.exec(`ALTER TABLE documents DROP COLUMN reason_detail;
             DELETE FROM schema_migrations WHERE version = 5;
             UPDATE documents SET status = 'rejected', reason = 'invalid_file',
               detail = 'the PDF header is broken', completed_at = ${T0.getTime()}
             WHERE id = 'doc_old';`);
    db.close();

    const upgraded = open(path);
    expect(await upgraded.getDocument('org_a', 'doc_old')).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
      detail: 'the PDF header is broken',
      reasonDetail: null,
    });
    const leased = await upgraded.leaseDocument('worker-1', T0, 60_000);
    expect(leased?.id).toBe('doc_new');
    const ended = await upgraded.finishDocument(
      'doc_new',
      'worker-1',
      {
        status: 'rejected',
        reason: 'invalid_file',
        threatNames: [],
        detail: 'the PDF cross-reference table\u0000 points outside the file',
      },
      T0,
    );
    expect(ended?.reasonDetail).toBe('The PDF cross-reference table points outside the file.');
    expect(
      inspect(path, (raw) =>
        raw.prepare("SELECT reason_detail FROM documents WHERE id = 'doc_new'").pluck().get(),
      ),
    ).toBe('The PDF cross-reference table points outside the file.');
  });

  it('purges rate-limit windows older than ten minutes', async () => {
    const path = join(dir, 'state.db');
    const store = open(path);
    const old = new Date('2025-01-15T09:00:00.000Z');
    await store.hitRateLimit('org_a:submit', old, old);
    await store.hitRateLimit('org_a:submit', T0, T0);
    const windows = inspect(store.countersPath, (db) =>
      db.prepare('SELECT window_start FROM rate_limits').pluck().all(),
    );
    expect(windows).toEqual([T0.getTime()]);
  });

  it('fails clearly on a file that is not a database', async () => {
    const path = join(dir, 'corrupt.db');
    await writeFile(path, 'this is not an SQLite database, just text '.repeat(200));
    expect(() => open(path)).toThrow(
      /cannot open the state database .*corrupt\.db.*not a database/,
    );
  });

  it('fails clearly when the directory does not exist', () => {
    const path = join(dir, 'missing', 'state.db');
    expect(() => open(path)).toThrow(/cannot open the state database .*missing/);
  });

  it('fails clearly on a schema newer than it knows', async () => {
    const path = join(dir, 'state.db');
    await open(path).close();
    const db = new Database(path);
    db.prepare(
      "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)",
    ).run();
    db.close();
    expect(() => open(path)).toThrow(/schema version 99, newer/);
  });

  it('throws TypeError on bad options', () => {
    expect(() => createSqliteStore({ path: '' })).toThrow(TypeError);
    expect(() => createSqliteStore({ path: join(dir, 'a.db'), busyTimeoutMs: -1 })).toThrow(
      TypeError,
    );
    expect(() => createSqliteStore({ path: join(dir, 'a.db'), busyTimeoutMs: 1.5 })).toThrow(
      TypeError,
    );
    const same = join(dir, 'a.db');
    expect(() => createSqliteStore({ path: same, countersPath: same })).toThrow(TypeError);
  });

  it('closes idempotently and rejects calls after close', async () => {
    const store = open();
    await store.close();
    await store.close();
    await expect(store.getOrganisation('org_a', T0)).rejects.toThrow();
    await expect(store.hitRateLimit('org_a:submission', T0, T0)).rejects.toThrow(/not open/);
  });
});
