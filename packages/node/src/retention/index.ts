export {
  createSweeper,
  ORPHAN_PAGE_SIZE,
  SWEEP_BATCH_SIZE,
  SWEEP_INTERVAL_MS,
} from './create-sweeper.ts';
export type { SweepReport, Sweeper, SweeperOptions } from './create-sweeper.ts';
