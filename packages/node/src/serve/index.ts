export { createSwaggerUiAssets } from './docs-assets.ts';
export {
  createEmbeddedDisarm,
  DEFAULT_GRACE_SECONDS,
  DEFAULT_SYNC_WAIT_SECONDS,
  hashAdminToken,
  SHUTDOWN_GRACE_MS,
} from './create-embedded-disarm.ts';
export type {
  EmbeddedDisarm,
  EmbeddedDisarmOptions,
  EmbeddedOAuthOptions,
} from './create-embedded-disarm.ts';
export {
  DEFAULT_API_PORT,
  DEFAULT_HOST,
  DEFAULT_STORAGE_PORT,
  startServer,
} from './start-server.ts';
export type { RunningDisarm, ServerOptions } from './start-server.ts';
export type { DemoAccount } from './_demo.ts';
export { startWorkerNode } from './start-worker-node.ts';
export type { RunningWorkerNode, WorkerNodeOptions } from './start-worker-node.ts';
