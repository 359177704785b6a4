import type { StateStore } from '@disarm/protocol';

import { createDocumentOps } from './_internal/documents.ts';
import { createAccountOps, createOrganisationRows } from './_internal/organisations.ts';
import { createPool, withClient } from './_internal/pool.ts';
import { createRequestOps } from './_internal/requests.ts';
import { migrate } from './_internal/schema.ts';

/** Schema the tables live in unless told otherwise. */
export const DEFAULT_SCHEMA = 'disarm';

/** Connections one store opens at most: 10 (PostgreSQL's default limit is 100 in all). */
export const DEFAULT_MAX_CONNECTIONS = 10;

/** How long a caller waits for a free pooled connection or a new one: 5 seconds. */
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5_000;

/** How long a statement (or a transaction left idle) may run before the server ends it: 30 s. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;

/** An idle pooled connection is closed after this: 30 seconds. */
const IDLE_TIMEOUT_MS = 30_000;

/** A schema name the store accepts: a plain lower-case identifier, so it never needs quoting. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Options of {@link createPostgresStore}. */
export interface PostgresStoreOptions {
  /**
   * `postgres://user:password@host:port/database` (libpq URL form; `?sslmode=require` and the
   * other parameters node-postgres reads are honoured).
   *
   * The database holds API key hashes, OAuth client secret hashes and signing keys: give the
   * service's role its own database or schema, readable by no one else.
   */
  readonly connectionString: string;
  /** Schema of the tables, created when absent. Default {@link DEFAULT_SCHEMA}. */
  readonly schema?: string;
  /** Pool ceiling per process. Default {@link DEFAULT_MAX_CONNECTIONS}. */
  readonly maxConnections?: number;
  /** Wait for a connection before failing. Default {@link DEFAULT_CONNECTION_TIMEOUT_MS}. */
  readonly connectionTimeoutMs?: number;
  /** Server-side statement timeout. Default {@link DEFAULT_STATEMENT_TIMEOUT_MS}. */
  readonly statementTimeoutMs?: number;
  /**
   * Apply pending schema migrations when the store opens (default `true`). Several nodes opening
   * at once migrate once: the migration holds an advisory lock.
   */
  readonly migrate?: boolean;
  /** `application_name` of the connections, shown in `pg_stat_activity`. Default `disarm`. */
  readonly applicationName?: string;
}

/** A {@link StateStore} on PostgreSQL, with its schema tools. */
export interface PostgresStore extends StateStore {
  /** The schema this store reads and writes. */
  readonly schema: string;
  /**
   * Applies the schema migrations the database has not seen, under the advisory lock.
   * @returns the versions applied by this call; empty when the schema was current.
   */
  migrate(): Promise<number[]>;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const chosen = value ?? fallback;
  if (!Number.isSafeInteger(chosen) || chosen <= 0) {
    throw new TypeError(`createPostgresStore: \`${name}\` must be a positive integer`);
  }
  return chosen;
}

/**
 * Opens the state store and job queue on the PostgreSQL database at `connectionString`,
 * migrating its schema first (unless `migrate: false`). Every charge and refund commits in the
 * transaction of the state change that causes it; the queue is the `documents` table, leased
 * with `FOR UPDATE SKIP LOCKED`; a transaction whose connection breaks before COMMIT runs again.
 *
 * @example
 * ```ts
 * const store = await createPostgresStore({
 *   connectionString: 'postgres://disarm@db.internal:5432/disarm',
 * });
 * const organisation = await store.getOrganisation('org_1', new Date());
 * await store.close();
 * ```
 * @throws {TypeError} on bad options.
 * @throws {Error} when the database cannot be reached or was migrated by a newer version of this
 *   package (the driver's error is the `cause`).
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  if (typeof options.connectionString !== 'string' || options.connectionString === '') {
    throw new TypeError('createPostgresStore: `connectionString` must be a non-empty string');
  }
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new TypeError(
      'createPostgresStore: `schema` must be a lower-case identifier (letters, digits, _)',
    );
  }
  const statementTimeoutMs = positiveInteger(
    'statementTimeoutMs',
    options.statementTimeoutMs,
    DEFAULT_STATEMENT_TIMEOUT_MS,
  );
  const pool = createPool({
    connectionString: options.connectionString,
    schema,
    max: positiveInteger('maxConnections', options.maxConnections, DEFAULT_MAX_CONNECTIONS),
    connectionTimeoutMs: positiveInteger(
      'connectionTimeoutMs',
      options.connectionTimeoutMs,
      DEFAULT_CONNECTION_TIMEOUT_MS,
    ),
    idleTimeoutMs: IDLE_TIMEOUT_MS,
    statementTimeoutMs,
    applicationName: options.applicationName ?? 'disarm',
  });
  const runMigrations = (): Promise<number[]> =>
    withClient(pool, (client) => migrate(client, schema));
  if (options.migrate !== false) {
    try {
      await runMigrations();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw new Error(
        `@disarm/postgres: cannot open the state database: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }

  const organisations = createOrganisationRows(pool);
  let closed: Promise<void> | undefined;
  return {
    schema,
    migrate: runMigrations,
    ...createAccountOps(pool, organisations),
    ...createDocumentOps(pool, organisations),
    ...createRequestOps(pool),
    close() {
      // Closing twice is harmless: both wait for the same end.
      closed ??= pool.end();
      return closed;
    },
  };
}
