export {
  createPostgresStore,
  DEFAULT_CONNECTION_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_SCHEMA,
  DEFAULT_STATEMENT_TIMEOUT_MS,
} from './postgres-store.ts';
export type { PostgresStore, PostgresStoreOptions } from './postgres-store.ts';
export { createPostgresDocumentEvents } from './postgres-events.ts';
export type { PostgresDocumentEvents, PostgresDocumentEventsOptions } from './postgres-events.ts';
