import type { Clock } from '@disarm/protocol';

/** A {@link Clock} that moves only when told to; see {@link createManualClock}. */
export interface ManualClock extends Clock {
  /** The current time (a fresh `Date` each call). */
  now(): Date;
  /**
   * Moves the clock forward by `milliseconds` and returns the new time.
   * @throws {TypeError} for a negative or non-integer amount: time never runs backwards.
   */
  advance(milliseconds: number): Date;
}

/**
 * A clock for tests and `disarm serve --test-mode`: it starts at `start` and stands still until
 * {@link ManualClock.advance} moves it, so expiry (24 h retention, 60 min upload links, billing
 * periods) is tested without sleeping.
 *
 * @example
 * ```ts
 * const clock = createManualClock(new Date('2030-01-01T00:00:00Z'));
 * clock.advance(24 * 60 * 60 * 1000);
 * clock.now(); // 2030-01-02T00:00:00.000Z
 * ```
 * @throws {TypeError} when `start` is not a valid date.
 */
export function createManualClock(start: Date): ManualClock {
  let nowMs = start.getTime();
  if (!Number.isFinite(nowMs)) throw new TypeError('start must be a valid date');
  return {
    now: () => new Date(nowMs),
    advance(milliseconds) {
      if (!Number.isSafeInteger(milliseconds) || milliseconds < 0) {
        throw new TypeError(
          `advance() takes a non-negative integer of milliseconds, got ${milliseconds}`,
        );
      }
      nowMs += milliseconds;
      return new Date(nowMs);
    },
  };
}
