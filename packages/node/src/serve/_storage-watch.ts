import { StorageUnavailableError } from '@disarm/protocol';
import type { Logger, UnavailableStorage } from '@disarm/protocol';

/** How one storage stands, as this process last saw it. */
export interface StorageState {
  /** False from the first `StorageUnavailableError` until a call that had failed succeeds. */
  readonly available: boolean;
  /** When it became unavailable, while it is. */
  readonly since: Date | null;
  /** What the last failure said (`ECONNREFUSED`, `SQLITE_FULL`, `ENOSPC`), while unavailable. */
  readonly reason: string | null;
}

/** Options of {@link createStorageWatch}. */
export interface StorageWatchOptions {
  readonly logger: Logger;
  /** Milliseconds since the epoch, for the length of an outage (the real clock, never test mode's). */
  readonly now?: () => number;
}

/** Sees every call of the state and blob stores and tells when one becomes unavailable or returns. */
export interface StorageWatch {
  /** `store`, its calls reported to this watch (functions that return promises only). */
  watch<T extends object>(storage: UnavailableStorage, store: T): T;
  /** How the state store and the blob store stand. */
  state(storage: UnavailableStorage): StorageState;
}

const LOG_NAMES: Readonly<Record<UnavailableStorage, { down: string; back: string }>> = {
  'state-store': { down: 'database unreachable', back: 'database back' },
  'blob-store': { down: 'blob storage unavailable', back: 'blob storage back' },
};

/**
 * Watches the stores of one process: the first `StorageUnavailableError` of a storage logs one
 * `error` line ("database unreachable", "blob storage unavailable", with the reason), and the
 * first success of an operation that had failed meanwhile logs one `info` line ("database back",
 * "blob storage back", with the seconds it was out). Only such an operation counts as proof: a
 * full disk still serves reads, and a read that succeeds says nothing of the write that cannot.
 * Requests, leases and sweeps that fail meanwhile log nothing at warning or above, so an outage
 * is two lines however long and busy. `/readyz` and the metrics read {@link StorageWatch.state}.
 */
export function createStorageWatch(options: StorageWatchOptions): StorageWatch {
  const { logger } = options;
  const now = options.now ?? Date.now;
  interface Watched {
    available: boolean;
    since: number;
    reason: string | null;
    /** The operations that failed during this outage (`put`, `leaseDocument`, …). */
    readonly failed: Set<string>;
  }
  const states = new Map<UnavailableStorage, Watched>([
    ['state-store', { available: true, since: 0, reason: null, failed: new Set() }],
    ['blob-store', { available: true, since: 0, reason: null, failed: new Set() }],
  ]);
  const stateOf = (storage: UnavailableStorage): Watched => {
    const state = states.get(storage);
    if (state === undefined) throw new TypeError(`unknown storage ${storage}`);
    return state;
  };

  const failed = (error: StorageUnavailableError, operation: string): void => {
    const state = stateOf(error.storage);
    state.reason = error.reason;
    state.failed.add(operation);
    if (!state.available) return;
    state.available = false;
    state.since = now();
    logger.error(
      { storage: error.storage, reason: error.reason, operation, err: error },
      LOG_NAMES[error.storage].down,
    );
  };
  const answered = (storage: UnavailableStorage, operation: string): void => {
    const state = stateOf(storage);
    if (state.available || !state.failed.has(operation)) return;
    state.available = true;
    state.failed.clear();
    state.reason = null;
    logger.info(
      { storage, operation, downSeconds: Math.round((now() - state.since) / 100) / 10 },
      LOG_NAMES[storage].back,
    );
  };

  return {
    watch(storage, store) {
      return new Proxy(store, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          const operation = String(property);
          return (...args: unknown[]): unknown => {
            const result: unknown = Reflect.apply(value, target, args);
            if (!(result instanceof Promise)) return result;
            return result.then(
              (answer: unknown) => {
                answered(storage, operation);
                return answer;
              },
              (error: unknown) => {
                if (error instanceof StorageUnavailableError) failed(error, operation);
                throw error;
              },
            );
          };
        },
      });
    },
    state(storage) {
      const state = stateOf(storage);
      return {
        available: state.available,
        since: state.available ? null : new Date(state.since),
        reason: state.available ? null : state.reason,
      };
    },
  };
}
