export {
  createDispatcher,
  LEASE_MS,
  MAX_ATTEMPTS,
  outputKeyOf,
  POLL_INTERVAL_MS,
  STOP_TIMEOUT_MS,
} from './create-dispatcher.ts';
export type { Dispatcher, DispatcherOptions, FinishDetails } from './create-dispatcher.ts';
