import { join, resolve } from 'node:path';

import type { DocumentEvents, StateStore } from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';

import { createDocumentEvents } from '../events/create-document-events.ts';

/** Environment variable holding the database URL of `serve`, `migrate` and `admin`. */
export const DATABASE_URL_ENV = 'DISARM_DATABASE_URL';

/** File name of the SQLite database inside the data folder when no database is named. */
export const DEFAULT_SQLITE_FILE = 'disarm.sqlite';

/** Where the state lives, parsed from a database URL. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string };

/**
 * Reads a database URL: `sqlite:<path>` (relative to the working directory) or
 * `postgres://…` / `postgresql://…` (libpq URL form). Without one, the SQLite file
 * `disarm.sqlite` in `dataDir`, as a single machine has always used.
 * @throws {TypeError} on any other form, naming the forms accepted.
 */
export function parseDatabaseUrl(value: string | undefined, dataDir: string): DatabaseLocation {
  if (value === undefined || value === '') {
    return { kind: 'sqlite', path: join(resolve(dataDir), DEFAULT_SQLITE_FILE) };
  }
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '') throw new TypeError('a sqlite: database URL needs a file path');
    return { kind: 'sqlite', path: resolve(path) };
  }
  if (value.startsWith('postgres://') || value.startsWith('postgresql://')) {
    return { kind: 'postgres', url: value };
  }
  throw new TypeError('the database must be sqlite:<path> or postgres://user@host:port/database');
}

/** `location` for logs and messages: a PostgreSQL URL without its password. */
export function describeDatabase(location: DatabaseLocation): string {
  if (location.kind === 'sqlite') return `sqlite:${location.path}`;
  try {
    const url = new URL(location.url);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/** Options of {@link openStateStore}. */
export interface OpenStateOptions {
  /** Hears what an applied schema migration changed that an operator must know. */
  readonly onMigrationNotice?: (notice: string) => void;
  /**
   * Apply pending migrations on open (default `true`). `disarm migrate` opens without and
   * migrates itself, to report what it applied.
   */
  readonly migrate?: boolean;
}

/** An open state store and its schema tool, whichever database it is on. */
export interface OpenStateStore {
  readonly store: StateStore;
  /** Applies pending migrations; the versions applied by this call. */
  migrate(): Promise<number[]>;
}

/**
 * Opens the state store `location` names. PostgreSQL's adapter (`@disarm/postgres`, with the
 * `pg` driver) is loaded only when a PostgreSQL URL is given, so a single machine never loads it.
 */
export async function openStateStore(
  location: DatabaseLocation,
  options: OpenStateOptions = {},
): Promise<OpenStateStore> {
  if (location.kind === 'sqlite') {
    const store = createSqliteStore({
      path: location.path,
      ...(options.onMigrationNotice === undefined
        ? {}
        : { onMigrationNotice: options.onMigrationNotice }),
    });
    return { store, migrate: () => Promise.resolve(store.migrate()) };
  }
  const { createPostgresStore } = await import('@disarm/postgres');
  const store = await createPostgresStore({
    connectionString: location.url,
    migrate: options.migrate !== false,
  });
  return { store, migrate: () => store.migrate() };
}

/** Document events that reach every process sharing the state; see {@link openDocumentEvents}. */
export interface OpenDocumentEvents {
  readonly events: DocumentEvents;
  close(): Promise<void>;
}

/**
 * The document events for `location`: in process for SQLite (one machine, one serving process),
 * LISTEN/NOTIFY for PostgreSQL, so a sync wait on any API node wakes when a worker on any host
 * finishes the document.
 */
export async function openDocumentEvents(
  location: DatabaseLocation,
  onError: (error: Error) => void,
): Promise<OpenDocumentEvents> {
  const local = createDocumentEvents();
  if (location.kind === 'sqlite') return { events: local, close: () => Promise.resolve() };
  const { createPostgresDocumentEvents } = await import('@disarm/postgres');
  const events = await createPostgresDocumentEvents({
    connectionString: location.url,
    local,
    onError,
  });
  return { events, close: () => events.close() };
}
