import type { ApiKeyRecord } from '../domain/types.ts';

/**
 * How long this process trusts a key it has looked up before it looks it up again. The v1 API
 * allows a revocation one minute to reach every node; half of that leaves room for clock and
 * scheduling slack. A revocation made through this process's own API clears the cache at once.
 */
export const API_KEY_CACHE_TTL_MS = 30_000;
/** Keys remembered at once (least recently used first out). */
export const API_KEY_CACHE_ENTRIES = 1024;

/** Valid API keys recently found in the state store, by hash. */
export interface ApiKeyCache {
  /** The key's record when it was found valid less than the time-to-live ago. */
  get(hash: string): ApiKeyRecord | undefined;
  /** Remembers a key just found valid in the store. */
  set(hash: string, record: ApiKeyRecord): void;
  /** Forgets every key (after a revocation). */
  clear(): void;
}

/**
 * Creates an {@link ApiKeyCache}. Only keys found valid are kept, so a flood of made-up keys
 * costs a lookup each and evicts nothing useful for long; entries are keyed by the key's SHA-256,
 * never by the key.
 *
 * Why: looking the key up is the one state-store read every authenticated request makes; a client
 * polling a document's status would otherwise read the same row thousands of times a minute.
 *
 * @param now monotonic milliseconds (a test's clock).
 */
export function createApiKeyCache(
  ttlMs: number = API_KEY_CACHE_TTL_MS,
  capacity: number = API_KEY_CACHE_ENTRIES,
  now: () => number = () => performance.now(),
): ApiKeyCache {
  if (!Number.isSafeInteger(capacity) || capacity < 1) {
    throw new TypeError('createApiKeyCache: `capacity` must be a positive integer');
  }
  const entries = new Map<string, { readonly record: ApiKeyRecord; readonly until: number }>();
  return {
    get(hash) {
      const entry = entries.get(hash);
      if (entry === undefined) return undefined;
      if (now() >= entry.until) {
        entries.delete(hash);
        return undefined;
      }
      return entry.record;
    },
    set(hash, record) {
      entries.delete(hash);
      entries.set(hash, { record, until: now() + ttlMs });
      if (entries.size > capacity) {
        const oldest = entries.keys().next();
        if (oldest.done !== true) entries.delete(oldest.value);
      }
    },
    clear() {
      entries.clear();
    },
  };
}
