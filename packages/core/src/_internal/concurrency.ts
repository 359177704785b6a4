import { availableParallelism } from 'node:os';

/** How many members (images) of one document are rebuilt at once: one per CPU. */
export const MEMBER_CONCURRENCY = Math.max(1, availableParallelism());

/**
 * Runs `task` on every item with at most `limit` running at once. The first failure fails the
 * whole run at once and no further task is started (those running finish on their own).
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const item = items[next] as T;
      next += 1;
      try {
        await task(item);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, lane));
}

/**
 * Image decodes of one file in flight at once, weighed by the memory each is estimated to need
 * (see `maxDecodeBytes`): a document's images are rebuilt side by side, but together they never
 * need more than one image may, so a worker's documented peak holds. Waiters are served in
 * order, so a large image is not starved by small ones.
 */
export class DecodeGate {
  readonly #capacity: number;
  #inUse = 0;
  readonly #waiting: { readonly weight: number; readonly grant: () => void }[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** Waits until `bytes` fit beside the decodes in flight; call the result when done. */
  async acquire(bytes: number): Promise<() => void> {
    const weight = Math.min(Math.max(0, bytes), this.#capacity);
    if (this.#waiting.length > 0 || this.#inUse + weight > this.#capacity) {
      await new Promise<void>((grant) => {
        this.#waiting.push({ weight, grant });
      });
    } else {
      this.#inUse += weight;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inUse -= weight;
      this.#grantWaiting();
    };
  }

  #grantWaiting(): void {
    for (let next = this.#waiting[0]; next; next = this.#waiting[0]) {
      if (this.#inUse + next.weight > this.#capacity) return;
      this.#waiting.shift();
      this.#inUse += next.weight;
      next.grant();
    }
  }
}
