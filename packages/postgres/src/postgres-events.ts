import type { DocumentEvents } from '@disarm/protocol';
import pg from 'pg';

import { toStoreError } from './_internal/pool.ts';
import { DEFAULT_SCHEMA } from './postgres-store.ts';

/** First pause before the listener reconnects; doubled up to {@link MAX_RECONNECT_DELAY_MS}. */
const RECONNECT_DELAY_MS = 100;

/** Longest pause between reconnection attempts of the listener: 5 seconds. */
const MAX_RECONNECT_DELAY_MS = 5_000;

/** A schema name (it names the channels): a plain lower-case identifier. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,50}$/;

/** Options of {@link createPostgresDocumentEvents}. */
export interface PostgresDocumentEventsOptions {
  /** The database the state store uses. */
  readonly connectionString: string;
  /**
   * The store's schema; it names the channels (`<schema>_queued`, `<schema>_finished`), so
   * deployments sharing a database do not wake each other. Default `disarm`.
   */
  readonly schema?: string;
  /**
   * The in-process events this node's waiters listen on (`createDocumentEvents()` of
   * `@disarm/node`); notifications from every node are delivered into it.
   */
  readonly local: DocumentEvents;
  /**
   * Hears a lost listener connection (it is reconnected) or a notification that failed; while the
   * database is out of reach, as `StorageUnavailableError` (`@disarm/protocol`).
   */
  readonly onError?: (error: Error) => void;
}

/** {@link DocumentEvents} across nodes; {@link PostgresDocumentEvents.close} ends its connections. */
export interface PostgresDocumentEvents extends DocumentEvents {
  /** Stops listening and closes both connections. */
  close(): Promise<void>;
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Document events for several nodes on one PostgreSQL database: `queued` and `finished` wake
 * this node's waiters at once and every other node's through `NOTIFY`; one dedicated connection
 * `LISTEN`s and forwards what other nodes announce. So a sync-mode request waiting on an API node
 * wakes when a worker on any host finishes the document, and idle workers wake when any API node
 * queues one. A lost listener connection is reopened with back-off; waiters also poll the store,
 * so a notification lost meanwhile costs latency, never a result.
 *
 * @example
 * ```ts
 * const events = await createPostgresDocumentEvents({
 *   connectionString: process.env.DISARM_DATABASE_URL,
 *   local: createDocumentEvents(),
 * });
 * ```
 */
export async function createPostgresDocumentEvents(
  options: PostgresDocumentEventsOptions,
): Promise<PostgresDocumentEvents> {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new TypeError(
      'createPostgresDocumentEvents: `schema` must be a lower-case identifier (letters, digits, _)',
    );
  }
  const queuedChannel = `${schema}_queued`;
  const finishedChannel = `${schema}_finished`;
  const { local } = options;
  const report = (error: unknown): void => {
    options.onError?.(toError(toStoreError(error)));
  };
  const notifier = new pg.Pool({
    connectionString: options.connectionString,
    max: 1,
    application_name: 'disarm events',
  });
  notifier.on('error', report);

  let closed = false;
  let listener: pg.Client | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let delayMs = RECONNECT_DELAY_MS;

  const listen = async (): Promise<void> => {
    const client = new pg.Client({
      connectionString: options.connectionString,
      application_name: 'disarm events listener',
      keepAlive: true,
    });
    client.on('notification', (message) => {
      const id = message.payload ?? '';
      if (message.channel === finishedChannel) local.finished(id);
      else if (message.channel === queuedChannel) local.queued(id);
    });
    client.on('error', (error) => {
      report(error);
      reconnect(client);
    });
    client.on('end', () => {
      reconnect(client);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${queuedChannel}`);
      await client.query(`LISTEN ${finishedChannel}`);
    } catch (error) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      throw error;
    }
    listener = client;
    delayMs = RECONNECT_DELAY_MS;
    // Whatever ended while no one listened: waiters and workers look at the store again.
    local.queued('');
  };

  const reconnect = (broken: pg.Client): void => {
    if (closed || listener !== broken) return;
    listener = undefined;
    broken.removeAllListeners('end');
    void broken.end().catch(() => undefined);
    scheduleListen();
  };

  function scheduleListen(): void {
    if (closed || reconnectTimer !== undefined) return;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      listen().catch((error: unknown) => {
        report(error);
        delayMs = Math.min(delayMs * 2, MAX_RECONNECT_DELAY_MS);
        scheduleListen();
      });
    }, delayMs);
  }

  try {
    await listen();
  } catch (error) {
    await notifier.end().catch(() => undefined);
    throw new Error(
      `@disarm/postgres: cannot listen for document events: ${toError(error).message}`,
      {
        cause: error,
      },
    );
  }

  const notify = (channel: string, documentId: string): void => {
    notifier.query('SELECT pg_notify($1, $2)', [channel, documentId]).catch(report);
  };

  return {
    queued(documentId) {
      local.queued(documentId);
      notify(queuedChannel, documentId);
    },
    finished(documentId) {
      local.finished(documentId);
      notify(finishedChannel, documentId);
    },
    waitForFinish: (documentId, signal) => local.waitForFinish(documentId, signal),
    waitForQueued: (signal) => local.waitForQueued(signal),
    async close() {
      closed = true;
      clearTimeout(reconnectTimer);
      const open = listener;
      listener = undefined;
      open?.removeAllListeners('end');
      await Promise.all([
        open?.end().catch(() => undefined),
        notifier.end().catch(() => undefined),
      ]);
    },
  };
}
