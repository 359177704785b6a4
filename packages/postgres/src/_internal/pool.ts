import { StorageUnavailableError } from '@disarm/protocol';
import pg from 'pg';
import type { Pool, PoolClient, PoolConfig } from 'pg';

/** PostgreSQL's type oid of `bigint` (int8). */
const INT8_OID = 20;

/** SQLSTATEs after which the whole transaction may simply run again (nothing was committed). */
const RETRYABLE_SQLSTATES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '57P01', // admin_shutdown: the server is restarting (a failover)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: still starting up
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
]);

/** Node error codes of a connection that broke or could not be made. */
const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);

/**
 * SQLSTATE classes and codes that say the database cannot do the work right now, whatever the
 * work: its connection cannot be made or broke (class 08), the server is shutting down or
 * starting (57P01-57P03), or it ran out of a resource (class 53: disk full, out of memory, too
 * many connections). Thrown as `StorageUnavailableError` once the retries are spent.
 */
const UNAVAILABLE_SQLSTATE = /^(?:08[0-9A-Z]{3}|57P0[1-3]|53[0-9A-Z]{3})$/;

/** How often a transaction runs before its last error is thrown. */
const TRANSACTION_ATTEMPTS = 5;

/** First pause before a retry; doubled each time (25, 50, 100, 200 ms). */
const RETRY_BASE_DELAY_MS = 25;

/** Options of {@link createPool}: the store's, as the driver takes them. */
export interface PoolOptions {
  readonly connectionString: string;
  readonly schema: string;
  readonly max: number;
  readonly connectionTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly statementTimeoutMs: number;
  readonly applicationName: string;
}

/**
 * A pool whose connections search `schema`, read `bigint` as a JavaScript number (every bigint
 * this package stores is a count, size or amount far below 2^53; a larger one throws rather than
 * rounding), and give up on a statement after `statementTimeoutMs`.
 */
export function createPool(options: PoolOptions): Pool {
  const builtIn = pg.types.getTypeParser as (oid: number, format: string) => unknown;
  const types = {
    getTypeParser: ((oid: number, format = 'text'): unknown =>
      oid === INT8_OID && format === 'text' ? parseInt8 : builtIn(oid, format)) as NonNullable<
      PoolConfig['types']
    >['getTypeParser'],
  };
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: options.connectionTimeoutMs,
    idleTimeoutMillis: options.idleTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    // A transaction left open by a stalled process would hold its row locks for ever.
    idle_in_transaction_session_timeout: options.statementTimeoutMs,
    application_name: options.applicationName,
    // `schema` is a plain identifier (checked by the store), so it needs no quoting here.
    options: `-c search_path=${options.schema}`,
    keepAlive: true,
    types,
  });
  // An idle connection that breaks (server restart, network) is dropped from the pool and
  // replaced on next use; without a listener the error would crash the process.
  pool.on('error', () => undefined);
  return pool;
}

function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`bigint ${text} is not a safe integer`);
  return value;
}

/** True when `error` says the transaction never committed and may run again from the start. */
export function isRetryable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (RETRYABLE_SQLSTATES.has(code) || CONNECTION_ERROR_CODES.has(code))
  ) {
    return true;
  }
  const message = (error as { message?: unknown }).message;
  // node-postgres reports a socket closed under a query without a code.
  return (
    typeof message === 'string' &&
    (message.includes('Connection terminated') || message.includes('connection timeout'))
  );
}

/**
 * True when `error` says the database is out of reach or out of a resource, rather than that the
 * statement or its data is wrong.
 */
export function isUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (
    typeof code === 'string' &&
    (UNAVAILABLE_SQLSTATE.test(code) || CONNECTION_ERROR_CODES.has(code))
  ) {
    return true;
  }
  const message = (error as { message?: unknown }).message;
  // node-postgres: a socket closed under a query, a connect that timed out (pg's own or the
  // pool's "timeout exceeded when trying to connect") carry no code.
  return (
    typeof message === 'string' &&
    (message.includes('Connection terminated') ||
      message.includes('connection timeout') ||
      message.includes('timeout exceeded when trying to connect'))
  );
}

/**
 * `error` as the store port throws it: `StorageUnavailableError` when the database was out of
 * reach (after the retries), the error itself otherwise.
 */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StorageUnavailableError || !isUnavailable(error)) return error;
  const code = (error as { code?: unknown }).code;
  return new StorageUnavailableError(
    'state-store',
    typeof code === 'string' ? code : error instanceof Error ? error.message : String(error),
    { cause: error },
  );
}

/** Thrown when a connection broke while COMMIT was on its way: the outcome is unknown. */
class CommitOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super('the connection broke while committing', { cause });
    this.name = 'CommitOutcomeUnknown';
  }
}

/** Options of {@link inTransaction}. */
export interface TransactionOptions {
  /**
   * Runs instead of `work` when COMMIT's answer was lost with its connection: it must tell from
   * the database whether the work committed, and return its result if it did (`undefined`: it
   * did not, so `work` runs again). Without it the error is thrown: a write that cannot tell is
   * never applied twice.
   */
  readonly recover?: (client: PoolClient) => Promise<unknown>;
}

/**
 * Runs `work` in one READ COMMITTED transaction on a pooled connection; `work` takes the row
 * locks it needs (`FOR UPDATE`). A serialization failure, deadlock or lost connection before
 * COMMIT rolls everything back on the server, so the whole transaction runs again after a short
 * back-off, up to {@link TRANSACTION_ATTEMPTS} times.
 */
export async function inTransaction<R>(
  pool: Pool,
  work: (client: PoolClient) => Promise<R>,
  options: TransactionOptions = {},
): Promise<R> {
  let lastError: unknown;
  // COMMIT's answer was lost: until `recover` tells, the work must not run again.
  let outcomeUnknown = false;
  for (let attempt = 0; attempt < TRANSACTION_ATTEMPTS; attempt += 1) {
    if (attempt > 0) await delay(RETRY_BASE_DELAY_MS * 2 ** (attempt - 1));
    try {
      if (outcomeUnknown) {
        // Without a way to tell, a write that may have landed is never applied twice.
        if (options.recover === undefined) break;
        const recovered = await withClient(pool, options.recover);
        if (recovered !== undefined) return recovered as R;
        outcomeUnknown = false;
      }
      return await once(pool, work);
    } catch (error) {
      if (error instanceof CommitOutcomeUnknown) {
        outcomeUnknown = true;
        lastError = error.cause;
        continue;
      }
      lastError = error;
      // A recovery that could not connect stays a recovery: the next attempt asks again.
      if (!isRetryable(error) && !(error instanceof StorageUnavailableError)) {
        throw toStoreError(error);
      }
    }
  }
  throw toStoreError(lastError);
}

async function once<R>(pool: Pool, work: (client: PoolClient) => Promise<R>): Promise<R> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('BEGIN');
    let result: R;
    try {
      result = await work(client);
    } catch (error) {
      broken = isRetryable(error);
      if (!broken) await client.query('ROLLBACK');
      throw error;
    }
    try {
      await client.query('COMMIT');
    } catch (error) {
      broken = isRetryable(error);
      if (broken) throw new CommitOutcomeUnknown(error);
      throw error;
    }
    return result;
  } finally {
    // A broken connection is destroyed, never handed to the next caller.
    client.release(broken);
  }
}

/** Runs `work` on a pooled connection outside any explicit transaction. */
export async function withClient<R>(
  pool: Pool,
  work: (client: PoolClient) => Promise<R>,
): Promise<R> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw toStoreError(error);
  }
  let broken = false;
  try {
    return await work(client);
  } catch (error) {
    broken = isRetryable(error);
    throw toStoreError(error);
  } finally {
    client.release(broken);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs one statement outside an explicit transaction. A failure to connect is retried (nothing
 * was sent); a connection lost under the statement is retried only when `repeatable` (reads,
 * and writes that give the same result twice), since the server may have applied it.
 */
export async function query<T extends pg.QueryResultRow>(
  pool: Pool,
  text: string,
  values: readonly unknown[],
  repeatable: boolean,
): Promise<pg.QueryResult<T>> {
  let lastError: unknown;
  for (let attempt = 0; attempt < TRANSACTION_ATTEMPTS; attempt += 1) {
    if (attempt > 0) await delay(RETRY_BASE_DELAY_MS * 2 ** (attempt - 1));
    let client: PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      lastError = error;
      if (isRetryable(error)) continue;
      throw toStoreError(error);
    }
    let broken = false;
    try {
      return await client.query<T>(text, values as unknown[]);
    } catch (error) {
      lastError = error;
      broken = isRetryable(error);
      if (!broken || !repeatable) throw toStoreError(error);
    } finally {
      client.release(broken);
    }
  }
  throw toStoreError(lastError);
}
