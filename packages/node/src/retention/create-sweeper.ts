import type { BlobStore, Clock, Logger, StateStore } from '@disarm/protocol';

import { logFault } from '../_internal/log-fault.ts';
import { silentLogger } from '../_internal/logger.ts';

/** Default of {@link SweeperOptions.intervalMs}. */
export const SWEEP_INTERVAL_MS = 30_000;
/** Blobs asked for per `listSweepable` call. */
export const SWEEP_BATCH_SIZE = 500;
/**
 * Batches per sweep at most: a backlog is worked off over several sweeps, and blobs whose
 * deletion keeps failing (and so stay listed) cannot spin a sweep forever.
 */
const MAX_BATCHES_PER_SWEEP = 20;

/** Options of {@link createSweeper}. */
export interface SweeperOptions {
  readonly store: StateStore;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  /** How long a delete-after-download file stays after its first download call. */
  readonly graceMs: number;
  /** Time between sweeps. @default {@link SWEEP_INTERVAL_MS} */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

/** What one sweep did. */
export interface SweepReport {
  /** Blobs deleted and recorded. */
  readonly swept: number;
  /** Blobs whose deletion or recording failed (retried next sweep). */
  readonly failed: number;
  /** Idempotency records purged. */
  readonly purgedIdempotencyKeys: number;
}

/** The retention sweeper; see {@link createSweeper}. */
export interface Sweeper {
  /** Sweeps now, then every `intervalMs`. */
  start(): void;
  /**
   * Runs one sweep now — or, when one is running, right after it — and resolves with its report.
   * Never rejects: errors are logged and counted.
   */
  sweep(): Promise<SweepReport>;
  /** Stops the timer and waits for a running sweep. */
  stop(): Promise<void>;
}

/**
 * Removes what must not be kept (README "Downloading and retention"): intake bytes of finished
 * documents, cleaned files 24 h after completion or `graceMs` after the first download of a
 * delete-after-download document, and staged uploads past their window (`store.listSweepable`);
 * each blob is deleted first and recorded after (`store.markSwept`), so a crash in between only
 * repeats a delete. Also purges expired idempotency records. Errors are logged, never fatal.
 *
 * @example
 * ```ts
 * const sweeper = createSweeper({ store, blobs, clock: systemClock, graceMs: 300_000, logger });
 * sweeper.start();
 * // ... on shutdown:
 * await sweeper.stop();
 * ```
 */
export function createSweeper(options: SweeperOptions): Sweeper {
  const { store, blobs, clock, graceMs } = options;
  const logger = options.logger ?? silentLogger;
  const intervalMs = options.intervalMs ?? SWEEP_INTERVAL_MS;
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) {
    throw new TypeError(`graceMs must be a non-negative integer, got ${graceMs}`);
  }
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 1) {
    throw new TypeError(`intervalMs must be a positive integer, got ${intervalMs}`);
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<SweepReport> | undefined;
  let next: Promise<SweepReport> | undefined;

  async function sweepOnce(): Promise<SweepReport> {
    let swept = 0;
    let failed = 0;
    for (let batch = 0; batch < MAX_BATCHES_PER_SWEEP; batch += 1) {
      let items;
      try {
        items = await store.listSweepable(clock.now(), graceMs, SWEEP_BATCH_SIZE);
      } catch (error) {
        logFault(logger, error, {}, 'listing blobs to sweep failed');
        break;
      }
      let failedInBatch = 0;
      for (const item of items) {
        try {
          await blobs.delete(item.blobKey);
          await store.markSwept(item, clock.now());
          swept += 1;
        } catch (error) {
          failedInBatch += 1;
          logFault(logger, error, { kind: item.kind, id: item.id }, 'sweeping a blob failed');
        }
      }
      failed += failedInBatch;
      // A short batch was the last; a batch that made no progress would only repeat itself.
      if (items.length < SWEEP_BATCH_SIZE || failedInBatch === items.length) break;
    }
    let purgedIdempotencyKeys = 0;
    try {
      purgedIdempotencyKeys = await store.purgeIdempotencyKeys(clock.now());
    } catch (error) {
      logFault(logger, error, {}, 'purging idempotency records failed');
    }
    if (swept > 0 || failed > 0 || purgedIdempotencyKeys > 0) {
      logger.info({ swept, failed, purgedIdempotencyKeys }, 'retention sweep');
    }
    return { swept, failed, purgedIdempotencyKeys };
  }

  function sweep(): Promise<SweepReport> {
    if (running) {
      // A sweep that started before the call may have read an older clock: sweep once more after.
      next ??= running.then(() => {
        next = undefined;
        return sweep();
      });
      return next;
    }
    running = sweepOnce().finally(() => {
      running = undefined;
    });
    return running;
  }

  return {
    start() {
      if (timer) return;
      void sweep();
      timer = setInterval(() => {
        void sweep();
      }, intervalMs);
    },
    sweep,
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await next;
      await running;
    },
  };
}
