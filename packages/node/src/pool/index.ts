export { createWorkerPool } from './create-worker-pool.ts';
export { startWorker } from './start-worker.ts';
export type { DisarmFunction, StartWorkerOptions } from './start-worker.ts';
export type {
  ClamdConfig,
  CleanedJobResult,
  ClosePoolOptions,
  FailedJobResult,
  FailureReason,
  JobOptions,
  JobResult,
  RejectedJobResult,
  WorkerJob,
  WorkerPool,
  WorkerPoolOptions,
  WorkerPoolStats,
} from './types.ts';
