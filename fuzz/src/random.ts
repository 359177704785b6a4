import { seededRandom } from '@disarm/fixtures';

/**
 * The choices one mutation makes, drawn from a seed so that a recipe (seed builder plus a list
 * of `{ mutator, seed }` steps) replays to the same bytes on every run.
 */
export class Choices {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = seededRandom(seed);
  }

  /** An integer in `[0, bound)`; 0 when `bound` is 0 or less. */
  below(bound: number): number {
    return bound <= 0 ? 0 : Math.floor(this.#next() * bound);
  }

  /** An integer in `[min, max]`. */
  between(min: number, max: number): number {
    return min + this.below(max - min + 1);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.#next() < p;
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    const item = items[this.below(items.length)];
    if (item === undefined) throw new RangeError('pick() needs a non-empty list');
    return item;
  }

  /** Random bytes. */
  bytes(length: number): Uint8Array {
    const out = new Uint8Array(length);
    for (let i = 0; i < length; i += 1) out[i] = this.below(256);
    return out;
  }
}
