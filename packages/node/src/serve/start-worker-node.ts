import type { Clock } from '@disarm/protocol';

import type { FailpointStep } from '../failpoints/index.ts';
import { createEmbeddedDisarm } from './create-embedded-disarm.ts';
import type { EmbeddedDisarmOptions } from './create-embedded-disarm.ts';

/**
 * Options of {@link startWorkerNode}: those of {@link createEmbeddedDisarm} that processing uses.
 * The base URLs only matter to links the API signs, which a worker never does.
 */
export type WorkerNodeOptions = Omit<
  EmbeddedDisarmOptions,
  'publicBaseUrl' | 'storageBaseUrl' | 'processing' | 'demo' | 'adminTokenHashes' | 'oauth'
>;

/** A running worker node; see {@link startWorkerNode}. */
export interface RunningWorkerNode {
  /** The clock every component uses. */
  readonly clock: Clock;
  /**
   * Test mode only: moves the clock forward, then recovers lapsed leases and runs a retention
   * sweep at the new time.
   * @throws {Error} (rejected) outside test mode.
   */
  advanceClock(milliseconds: number): Promise<Date>;
  /**
   * Test mode only: the process kills itself with SIGKILL the next time a document passes `step`
   * (README "Crash safety").
   * @throws {Error} outside test mode.
   */
  armFailpoint(step: FailpointStep): void;
  /**
   * Drains: stops leasing, lets documents in flight finish within `SHUTDOWN_GRACE_MS`, releases
   * the lease of any still running (another worker's recovery takes it), then closes the worker
   * pool and the store. Idempotent.
   */
  close(): Promise<void>;
}

/** Stands in for the base URLs a worker never hands out. */
const UNUSED_BASE_URL = 'http://localhost';

/**
 * Starts the worker role of a scale-out deployment (`disarm serve --role worker`): the pool of
 * worker processes leasing documents from the shared queue, and the retention sweeper. It
 * listens on no port and needs only the database and the blob store.
 *
 * @example
 * ```ts
 * const worker = await startWorkerNode({
 *   dataDir: '/var/lib/disarm',
 *   database: 'postgres://disarm@db.internal/disarm',
 * });
 * process.once('SIGTERM', () => void worker.close());
 * ```
 * @throws {Error} (rejected) when the database, the data folder or the workers cannot be used.
 */
export async function startWorkerNode(options: WorkerNodeOptions): Promise<RunningWorkerNode> {
  const embedded = await createEmbeddedDisarm({
    ...options,
    publicBaseUrl: UNUSED_BASE_URL,
    storageBaseUrl: UNUSED_BASE_URL,
    // The API nodes provision; two roles racing to create the demo would clash.
    demo: false,
  });
  try {
    await embedded.start();
  } catch (error) {
    await embedded.close();
    throw error;
  }
  let closed: Promise<void> | undefined;
  return {
    clock: embedded.clock,
    advanceClock: (milliseconds) => embedded.advanceClock(milliseconds),
    armFailpoint: (step) => {
      embedded.armFailpoint(step);
    },
    close() {
      closed ??= (async () => {
        await embedded.stop();
        await embedded.close();
      })();
      return closed;
    },
  };
}
