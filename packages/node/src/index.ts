export { createWorkerPool, startWorker } from './pool/index.ts';
export type {
  CleanedJobResult,
  ClosePoolOptions,
  DisarmFunction,
  FailedJobResult,
  FailureReason,
  JobOptions,
  JobResult,
  RejectedJobResult,
  StartWorkerOptions,
  WorkerJob,
  WorkerPool,
  WorkerPoolOptions,
  WorkerPoolStats,
} from './pool/index.ts';
