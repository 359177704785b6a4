import type { StateStore } from '@disarm/protocol';

/** A method of the port, run synchronously (better-sqlite3 blocks; the store wraps the result). */
type Synchronous<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : never;
};

/** The {@link StateStore} port with synchronous methods; `close` stays with the store. */
export type SyncStateStore = Omit<Synchronous<StateStore>, 'close'>;
