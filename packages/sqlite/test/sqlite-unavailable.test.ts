/**
 * What the store throws when SQLite cannot do its work right now: `StorageUnavailableError`
 * (the API answers 503 and a worker keeps its document), never the driver's error (a 500).
 * The real disk-full run is `packages/node/test/faults-disk-full.test.ts`; here, real driver
 * errors of each kind, and the store's own operations refused while another process holds the
 * write lock past the busy timeout.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { StorageUnavailableError } from '@disarm/protocol';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';

import { toStoreError } from '../src/_internal/unavailable.ts';
import { createSqliteStore } from '../src/index.ts';

const T0 = new Date('2025-01-15T10:00:00.000Z');

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempFile(name: string): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'disarm-sqlite-unavailable-'));
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  return join(folder, name);
}

/** The error `work` throws. */
function thrownBy(work: () => unknown): unknown {
  try {
    work();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

describe('toStoreError()', () => {
  it('makes a full database StorageUnavailableError, its cause kept', () => {
    const db = new Database(':memory:');
    cleanups.push(() => db.close());
    db.exec('CREATE TABLE t (x BLOB)');
    // The page ceiling stands in for the disk: SQLite answers it with SQLITE_FULL, as ENOSPC.
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const full = thrownBy(() => db.prepare('INSERT INTO t VALUES (zeroblob(65536))').run());
    const mapped = toStoreError(full);
    expect(mapped).toBeInstanceOf(StorageUnavailableError);
    expect(mapped).toMatchObject({ storage: 'state-store', reason: 'SQLITE_FULL', cause: full });
  });

  it('makes a write lock held past the busy timeout StorageUnavailableError', async () => {
    const path = await tempFile('busy.sqlite');
    const holder = new Database(path);
    const waiter = new Database(path, { timeout: 0 });
    cleanups.push(
      () => waiter.close(),
      () => holder.close(),
    );
    holder.exec('CREATE TABLE t (x INTEGER); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
    const busy = thrownBy(() => waiter.prepare('INSERT INTO t VALUES (2)').run());
    expect(toStoreError(busy)).toMatchObject({ reason: 'SQLITE_BUSY' });
  });

  it('leaves a wrong statement or a broken constraint as it is (a fault of ours)', () => {
    const db = new Database(':memory:');
    cleanups.push(() => db.close());
    db.exec('CREATE TABLE t (x INTEGER PRIMARY KEY)');
    db.exec('INSERT INTO t VALUES (1)');
    const duplicate = thrownBy(() => db.exec('INSERT INTO t VALUES (1)'));
    expect(toStoreError(duplicate)).toBe(duplicate);
    const wrong = thrownBy(() => db.exec('SELECT nothing FROM nowhere'));
    expect(toStoreError(wrong)).toBe(wrong);
  });

  it('looks through an error that wraps SQLite’s (the counters file opened on first use)', () => {
    const wrapped = new Error('cannot open', { cause: { code: 'SQLITE_CANTOPEN' } });
    expect(toStoreError(wrapped)).toMatchObject({ reason: 'SQLITE_CANTOPEN' });
  });
});

describe('createSqliteStore() while SQLite cannot write', () => {
  it('rejects with StorageUnavailableError, applies nothing, and works again once it can', async () => {
    const path = await tempFile('state.sqlite');
    const store = createSqliteStore({ path, busyTimeoutMs: 0 });
    cleanups.push(() => store.close());
    // Another process holds the write lock (a long `disarm admin` run, a stuck backup).
    const holder = new Database(path);
    cleanups.push(() => {
      if (holder.open) holder.close();
    });
    holder.exec('BEGIN IMMEDIATE');
    const refused = store.createOrganisation({ id: 'org_1', name: 'Acme', plan: 'starter' }, T0);
    await expect(refused).rejects.toBeInstanceOf(StorageUnavailableError);
    await expect(refused).rejects.toMatchObject({ storage: 'state-store', reason: 'SQLITE_BUSY' });
    holder.exec('ROLLBACK');
    expect(await store.getOrganisation('org_1', T0)).toBeUndefined();

    await store.createOrganisation({ id: 'org_1', name: 'Acme', plan: 'starter' }, T0);
    expect((await store.getOrganisation('org_1', T0))?.name).toBe('Acme');
  });

  it('rejects a rate-limit hit the same way while the counters file is locked', async () => {
    const path = await tempFile('state.sqlite');
    const store = createSqliteStore({ path, busyTimeoutMs: 0 });
    cleanups.push(() => store.close());
    expect(await store.hitRateLimit('org_1:submission', T0, T0)).toBe(1);
    const holder = new Database(`${path}-counters`);
    cleanups.push(() => {
      if (holder.open) holder.close();
    });
    holder.exec('BEGIN IMMEDIATE');
    await expect(store.hitRateLimit('org_1:submission', T0, T0)).rejects.toMatchObject({
      name: 'StorageUnavailableError',
      reason: expect.stringMatching(/^SQLITE_BUSY/) as unknown,
    });
    holder.exec('ROLLBACK');
    expect(await store.hitRateLimit('org_1:submission', T0, T0)).toBe(2);
  });
});
