export { createManualClock } from './manual-clock.ts';
export type { ManualClock } from './manual-clock.ts';
export { systemClock } from './system-clock.ts';
