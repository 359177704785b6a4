/**
 * Memoises an async function of one string whose result depends on that string alone (a hash,
 * an HMAC under a fixed key). At most `capacity` results are kept; the least recently used goes
 * first. A rejected call is not remembered.
 *
 * Why: WebCrypto answers even a 60-byte digest through a thread-pool job, which costs more than
 * the rest of a status read; the same API key and the same download link come back on every poll.
 */
export function boundedMemo<R>(
  capacity: number,
  compute: (input: string) => Promise<R>,
): (input: string) => Promise<R> {
  if (!Number.isSafeInteger(capacity) || capacity < 1) {
    throw new TypeError('boundedMemo: `capacity` must be a positive integer');
  }
  const cache = new Map<string, R>();
  return async (input) => {
    const hit = cache.get(input);
    if (hit !== undefined) {
      // Map iteration order is insertion order: re-inserting marks it most recently used.
      cache.delete(input);
      cache.set(input, hit);
      return hit;
    }
    const value = await compute(input);
    cache.set(input, value);
    if (cache.size > capacity) {
      const oldest = cache.keys().next();
      if (oldest.done !== true) cache.delete(oldest.value);
    }
    return value;
  };
}
