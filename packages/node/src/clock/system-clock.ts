import type { Clock } from '@disarm/protocol';

/** The wall clock as a {@link Clock}: what `disarm serve` uses outside test mode. */
export const systemClock: Clock = {
  now: () => new Date(),
};
