export { createLocalBlobStore } from './blobs/index.ts';
export type { LocalBlobStore, LocalBlobStoreOptions } from './blobs/index.ts';
export { LIFECYCLE_EXPIRE_DAYS, openBlobStore, S3_PUBLIC_ENDPOINT_ENV } from './blobs/index.ts';
export { createManualClock, systemClock } from './clock/index.ts';
export { createMetrics, METRICS_PATH } from './metrics/index.ts';
export type { DisarmMetrics, MetricsSources } from './metrics/index.ts';
export type { ManualClock } from './clock/index.ts';
export { createDocumentEvents } from './events/index.ts';
export {
  createFailpoints,
  FAILPOINT_ENV,
  FAILPOINT_STEPS,
  parseFailpoint,
} from './failpoints/index.ts';
export type { Failpoint, Failpoints, FailpointStep, WorkerFailpoint } from './failpoints/index.ts';
export {
  createListener,
  DEFAULT_CLOSE_GRACE_MS,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_REQUEST_TIMEOUT_MS,
  listen,
  sendResponse,
  toRequest,
} from './http/index.ts';
export type {
  ErrorReporter,
  FetchHandler,
  ListenerOptions,
  ListenOptions,
  NodeListener,
  RunningServer,
} from './http/index.ts';
export { createWorkerPool, startWorker } from './pool/index.ts';
export type {
  ClamdConfig,
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
export {
  createDispatcher,
  LEASE_MS,
  MAX_ATTEMPTS,
  outputKeyOf,
  POLL_INTERVAL_MS,
  STOP_TIMEOUT_MS,
} from './processing/index.ts';
export type { Dispatcher, DispatcherOptions, FinishDetails } from './processing/index.ts';
export {
  createRenderers,
  parseRendererSelection,
  RENDERER_NAMES,
  RendererUnavailableError,
  renderersByFormat,
} from './render/index.ts';
export type { CreateRenderersOptions, RendererSelection } from './render/index.ts';
export {
  createSweeper,
  ORPHAN_PAGE_SIZE,
  SWEEP_BATCH_SIZE,
  SWEEP_INTERVAL_MS,
} from './retention/index.ts';
export type { SweepReport, Sweeper, SweeperOptions } from './retention/index.ts';
export {
  createEmbeddedDisarm,
  createSwaggerUiAssets,
  DEFAULT_API_PORT,
  DEFAULT_GRACE_SECONDS,
  DEFAULT_HOST,
  DEFAULT_STORAGE_PORT,
  DEFAULT_SYNC_WAIT_SECONDS,
  hashAdminToken,
  SHUTDOWN_GRACE_MS,
  startServer,
  startWorkerNode,
} from './serve/index.ts';
export type {
  DemoAccount,
  EmbeddedDisarm,
  EmbeddedDisarmOptions,
  RunningDisarm,
  RunningWorkerNode,
  ServerOptions,
  WorkerNodeOptions,
} from './serve/index.ts';
