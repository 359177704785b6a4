import type { StateStore } from '@disarm/protocol';
import Database from 'better-sqlite3';

import { createAccountOps, createOrganisationRows } from './_internal/accounts.ts';
import { openCounters } from './_internal/counters.ts';
import { createReadScope } from './_internal/read-scope.ts';
import type { Counters } from './_internal/counters.ts';
import { createDocumentOps } from './_internal/documents.ts';
import { createClaimRows, createRequestOps } from './_internal/requests.ts';
import { toStoreError } from './_internal/unavailable.ts';
import { migrate } from './_internal/schema.ts';

/** How long a write waits for another connection's lock before failing: 5 seconds. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Database file; created (with its schema) when absent. Every process that shares the state
   * (`disarm serve`, `disarm admin`) opens the same file. `:memory:` gives a private, throwaway
   * database (tests only: nothing is shared or kept).
   *
   * The file holds API key hashes, OAuth client secret hashes and signing keys: keep it (and its
   * `-wal` and `-shm` companions) readable by the service account only.
   */
  readonly path: string;
  /**
   * File of the rate-limit counters, which every process sharing `path` must share too. It runs
   * `synchronous = NORMAL` (a power cut may forget the last moments of counts; counters are not
   * money), while `path` stays `synchronous = FULL`. Default: `path` with `-counters` appended
   * (`:memory:` stays in memory).
   */
  readonly countersPath?: string;
  /**
   * How long a write waits for another process's transaction before failing with `SQLITE_BUSY`.
   * Default {@link DEFAULT_BUSY_TIMEOUT_MS}.
   */
  readonly busyTimeoutMs?: number;
  /**
   * Hears what an applied schema migration changed that an operator must know (for example an
   * organisation's OAuth client losing `cdr.admin`). Default: nothing is told.
   */
  readonly onMigrationNotice?: (notice: string) => void;
}

/** A {@link StateStore} in one SQLite file, with its schema tools. */
export interface SqliteStore extends StateStore {
  /** The database file this store opened. */
  readonly path: string;
  /** The rate-limit counters' file ({@link SqliteStoreOptions.countersPath}). */
  readonly countersPath: string;
  /**
   * Applies the schema migrations this file has not seen (the store does this when it opens).
   * @returns the versions applied by this call; empty when the schema was current.
   */
  migrate(): number[];
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Runs synchronous work as the port's promise: its value, or a rejection with its error (a full
 * or failing disk as `StorageUnavailableError`).
 */
function settle<A extends unknown[], R>(work: (...args: A) => R): (...args: A) => Promise<R> {
  return (...args) => {
    try {
      return Promise.resolve(work(...args));
    } catch (error) {
      return Promise.reject(toStoreError(error));
    }
  };
}

function assertOptions(options: SqliteStoreOptions): number {
  if (typeof options.path !== 'string' || options.path === '') {
    throw new TypeError('createSqliteStore: `path` must be a non-empty string');
  }
  if (
    options.countersPath !== undefined &&
    (typeof options.countersPath !== 'string' ||
      options.countersPath === '' ||
      (options.countersPath === options.path && options.path !== ':memory:'))
  ) {
    throw new TypeError(
      'createSqliteStore: `countersPath` must be a non-empty string other than `path`',
    );
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new TypeError('createSqliteStore: `busyTimeoutMs` must be a non-negative integer');
  }
  return busyTimeoutMs;
}

function open(
  path: string,
  busyTimeoutMs: number,
  onNotice: ((notice: string) => void) | undefined,
): Database.Database {
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { timeout: busyTimeoutMs });
    // Wait for other processes' locks before anything below touches the file.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    // WAL: readers never block the writer, and the server and `disarm admin` can share the file.
    // This is also the first read of the file, so a file that is not a database fails here.
    db.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before it returns, so a 202 means the row survives a power cut.
    // (The rate-limit counters live in a file of their own at NORMAL: see `openCounters`.)
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    migrate(db, onNotice === undefined ? {} : { onNotice });
    return db;
  } catch (error) {
    if (db?.open === true) db.close();
    throw cannotOpen(path, error);
  }
}

function cannotOpen(path: string, error: unknown): Error {
  return new Error(
    `@disarm/sqlite: cannot open the state database ${path}: ${toError(error).message}`,
    { cause: error },
  );
}

function openCountersAt(path: string, busyTimeoutMs: number): Counters {
  try {
    return openCounters(path, busyTimeoutMs);
  } catch (error) {
    throw cannotOpen(path, error);
  }
}

/**
 * Opens (creating and migrating when needed) the state store in the SQLite file at `path`.
 * Writes that read before they write run in `BEGIN IMMEDIATE` transactions, so several processes
 * on one file charge, lease and claim exactly once.
 *
 * @example
 * ```ts
 * const store = createSqliteStore({ path: '/var/lib/disarm/state.db' });
 * const organisation = await store.getOrganisation('org_1', new Date());
 * await store.close();
 * ```
 * @throws {TypeError} on bad options.
 * @throws {Error} when the file cannot be opened, is not a database, or was migrated by a newer
 *   version of this package (the message names the path; the driver's error is the `cause`).
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const busyTimeoutMs = assertOptions(options);
  const db = open(options.path, busyTimeoutMs, options.onMigrationNotice);
  const countersPath =
    options.countersPath ?? (options.path === ':memory:' ? ':memory:' : `${options.path}-counters`);
  // Opened on the first hit: processes that never count (`disarm admin`) never touch the file.
  let counters: Counters | undefined;
  const countersOf = (): Counters => {
    // A closed store stays closed: no hit reopens the counters.
    if (!db.open) throw new TypeError('The database connection is not open');
    return (counters ??= openCountersAt(countersPath, busyTimeoutMs));
  };
  const organisations = createOrganisationRows(db);
  const accounts = createAccountOps(db, organisations);
  const claims = createClaimRows(db);
  const documents = createDocumentOps(db, organisations, claims);
  const requests = createRequestOps(db, claims);
  const scope = createReadScope(db);

  return {
    path: options.path,
    countersPath,
    migrate: scope.writing(() => migrate(db)),

    createOrganisation: settle(scope.writing(accounts.createOrganisation)),
    getOrganisation: settle(scope.reading(accounts.getOrganisation)),
    listOrganisations: settle(scope.reading(accounts.listOrganisations)),
    updateOrganisation: settle(scope.writing(accounts.updateOrganisation)),

    createApiKey: settle(scope.writing(accounts.createApiKey)),
    findApiKeyByHash: settle(scope.reading(accounts.findApiKeyByHash)),
    listApiKeys: settle(scope.reading(accounts.listApiKeys)),
    revokeApiKey: settle(scope.writing(accounts.revokeApiKey)),

    acceptDocument: settle(scope.writing(documents.acceptDocument)),
    checkCanSubmit: settle(scope.writing(documents.checkCanSubmit)),
    getDocument: settle(scope.reading(documents.getDocument)),
    recordDownload: settle(scope.writing(documents.recordDownload)),
    deleteDocumentFile: settle(scope.writing(documents.deleteDocumentFile)),
    leaseDocument: settle(scope.writing(documents.leaseDocument)),
    renewLease: settle(scope.writing(documents.renewLease)),
    finishDocument: settle(scope.writing(documents.finishDocument)),
    recoverLapsedLeases: settle(scope.writing(documents.recoverLapsedLeases)),
    clearIntake: settle(scope.writing(documents.clearIntake)),
    queueStats: settle(scope.reading(documents.queueStats)),

    createUpload: settle(scope.writing(documents.createUpload)),
    getUpload: settle(scope.reading(documents.getUpload)),
    getUploadById: settle(scope.reading(documents.getUploadById)),
    markUploaded: settle(scope.writing(documents.markUploaded)),

    listSweepable: settle(scope.writing(documents.listSweepable)),
    markSwept: settle(scope.writing(documents.markSwept)),
    ownedBlobKeys: settle(scope.reading(documents.ownedBlobKeys)),

    hitRateLimit: (bucket, windowStart, at) => {
      try {
        return countersOf()
          .hitRateLimit(bucket, windowStart, at)
          .catch((error: unknown) => Promise.reject(toStoreError(error)));
      } catch (error) {
        return Promise.reject(toStoreError(error));
      }
    },

    claimIdempotencyKey: settle(scope.writing(requests.claimIdempotencyKey)),
    renewIdempotencyKey: settle(scope.writing(requests.renewIdempotencyKey)),
    completeIdempotencyKey: settle(scope.writing(requests.completeIdempotencyKey)),
    releaseIdempotencyKey: settle(scope.writing(requests.releaseIdempotencyKey)),
    purgeIdempotencyKeys: settle(scope.writing(requests.purgeIdempotencyKeys)),

    createOAuthClient: settle(scope.writing(accounts.createOAuthClient)),
    getOAuthClient: settle(scope.reading(accounts.getOAuthClient)),
    listOAuthClients: settle(scope.reading(accounts.listOAuthClients)),
    updateOAuthClient: settle(scope.writing(accounts.updateOAuthClient)),
    listSigningKeys: settle(scope.reading(accounts.listSigningKeys)),
    saveSigningKey: settle(scope.writing(accounts.saveSigningKey)),

    close: settle(() => {
      scope.end();
      // Closing twice is harmless; closing checkpoints the WAL into the main file.
      if (db.open) db.close();
      counters?.close();
    }),
  };
}
