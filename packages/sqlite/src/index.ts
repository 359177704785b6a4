export { createSqliteStore, DEFAULT_BUSY_TIMEOUT_MS } from './sqlite-store.ts';
export type { SqliteStore, SqliteStoreOptions } from './sqlite-store.ts';
