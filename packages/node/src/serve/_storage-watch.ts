import { StorageUnavailableError } from '@disarm/protocol';
import type { Logger, UnavailableStorage } from '@disarm/protocol';

/**
 * A storage counts as back once it has answered with no `StorageUnavailableError` for this long:
 * 10 seconds. A disk that is full still serves reads, and a database that flaps answers some
 * calls; without the wait each of them would log an outage and a recovery.
 */
export const STORAGE_SETTLE_MS = 10_000;

/** How one storage stands, as this process last saw it. */
export interface StorageState {
  /** False from the first `StorageUnavailableError` until it has settled again. */
  readonly available: boolean;
  /** When it became unavailable, while it is. */
  readonly since: Date | null;
  /** What the last failure said (`ECONNREFUSED`, `SQLITE_FULL`, `ENOSPC`), while unavailable. */
  readonly reason: string | null;
}

/** Options of {@link createStorageWatch}. */
export interface StorageWatchOptions {
  readonly logger: Logger;
  /** Milliseconds since the epoch, for the settle wait (the real clock, never test mode's). */
  readonly now?: () => number;
  /** @default {@link STORAGE_SETTLE_MS} */
  readonly settleMs?: number;
}

/** Sees every call of the state and blob stores and tells when one becomes unavailable or returns. */
export interface StorageWatch {
  /** `store`, its calls reported to this watch (functions that return promises only). */
  watch<T extends object>(storage: UnavailableStorage, store: T): T;
  /** Reports a failure seen outside the stores' own calls (the document events' connection). */
  report(error: StorageUnavailableError): void;
  /** How the state store and the blob store stand. */
  state(storage: UnavailableStorage): StorageState;
}

const LOG_NAMES: Readonly<Record<UnavailableStorage, { down: string; back: string }>> = {
  'state-store': { down: 'database unreachable', back: 'database back' },
  'blob-store': { down: 'blob storage unavailable', back: 'blob storage back' },
};

/**
 * Watches the stores of one process: the first `StorageUnavailableError` of a storage logs one
 * `error` line ("database unreachable", "blob storage unavailable", with the reason), and its
 * first success after {@link STORAGE_SETTLE_MS} without another one logs one `info` line
 * ("database back", "blob storage back", with the seconds it was out). Requests, leases and
 * sweeps that fail meanwhile log nothing more at warning or above, so an outage is two lines,
 * however long and busy. `/readyz` and the metrics read {@link StorageWatch.state}.
 */
export function createStorageWatch(options: StorageWatchOptions): StorageWatch {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const settleMs = options.settleMs ?? STORAGE_SETTLE_MS;
  const states = new Map<
    UnavailableStorage,
    { available: boolean; since: number; lastFailure: number; reason: string | null }
  >([
    ['state-store', { available: true, since: 0, lastFailure: 0, reason: null }],
    ['blob-store', { available: true, since: 0, lastFailure: 0, reason: null }],
  ]);
  const stateOf = (storage: UnavailableStorage): NonNullable<ReturnType<typeof states.get>> => {
    const state = states.get(storage);
    if (state === undefined) throw new TypeError(`unknown storage ${storage}`);
    return state;
  };

  const failed = (error: StorageUnavailableError): void => {
    const state = stateOf(error.storage);
    const at = now();
    state.lastFailure = at;
    state.reason = error.reason;
    if (!state.available) return;
    state.available = false;
    state.since = at;
    logger.error(
      { storage: error.storage, reason: state.reason, err: error },
      LOG_NAMES[error.storage].down,
    );
  };
  const answered = (storage: UnavailableStorage): void => {
    const state = stateOf(storage);
    if (state.available) return;
    const at = now();
    if (at - state.lastFailure < settleMs) return;
    state.available = true;
    logger.info(
      { storage, downSeconds: Math.round((at - state.since) / 100) / 10 },
      LOG_NAMES[storage].back,
    );
    state.reason = null;
  };

  return {
    watch(storage, store) {
      return new Proxy(store, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]): unknown => {
            const result: unknown = Reflect.apply(value, target, args);
            if (!(result instanceof Promise)) return result;
            return result.then(
              (answer: unknown) => {
                answered(storage);
                return answer;
              },
              (error: unknown) => {
                if (error instanceof StorageUnavailableError) failed(error);
                throw error;
              },
            );
          };
        },
      });
    },
    report: failed,
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
