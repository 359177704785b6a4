import { BLOB_KEY_PREFIXES, ORPHAN_BLOB_GRACE_MS } from '@disarm/protocol';
import type { BlobStore, Clock, Logger, StateStore } from '@disarm/protocol';

import { logFault } from '../_internal/log-fault.ts';
import type { Failpoint } from '../failpoints/index.ts';
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
/** Blob keys looked at per page of the orphan sweep (one ownership question each). */
export const ORPHAN_PAGE_SIZE = 500;
/**
 * Pages per key prefix per sweep at most: a store of many blobs is walked over several sweeps,
 * each resuming where the last stopped, so one sweep stays short.
 */
const MAX_ORPHAN_PAGES_PER_SWEEP = 4;

/** Options of {@link createSweeper}. */
export interface SweeperOptions {
  readonly store: StateStore;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  /** How long a delete-after-download file stays after its first download call. */
  readonly graceMs: number;
  /** Time between sweeps. @default {@link SWEEP_INTERVAL_MS} */
  readonly intervalMs?: number;
  /**
   * How old a blob no document or upload owns must be before it is deleted.
   * @default `ORPHAN_BLOB_GRACE_MS` (one hour: longer than a live request can take between
   *   writing a blob and committing the row that names it)
   */
  readonly orphanGraceMs?: number;
  readonly logger?: Logger;
  /** Test mode only: reached as `sweep-deleted` between deleting a blob and recording it. */
  readonly failpoint?: Failpoint<'sweep-deleted'>;
}

/** What one sweep did. */
export interface SweepReport {
  /** Blobs deleted and recorded. */
  readonly swept: number;
  /** Blobs whose deletion or recording failed (retried next sweep). */
  readonly failed: number;
  /** Idempotency records purged. */
  readonly purgedIdempotencyKeys: number;
  /** Blobs no document or upload owned, older than the grace, deleted. */
  readonly orphans: number;
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
 * repeats a delete. Also purges expired idempotency records.
 *
 * Then it walks the blob store itself (`blobs.list` under `intake/`, `output/` and `uploads/`,
 * a few pages per prefix per sweep, resuming where it stopped) and deletes every blob older
 * than `orphanGraceMs` that no document or upload owns (`store.ownedBlobKeys`): the bytes a
 * crash left before their row committed, or after it stopped naming them. Errors are logged,
 * never fatal.
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
  const orphanGraceMs = options.orphanGraceMs ?? ORPHAN_BLOB_GRACE_MS;
  for (const [name, value] of [
    ['graceMs', graceMs],
    ['orphanGraceMs', orphanGraceMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new TypeError(`${name} must be a non-negative integer, got ${value}`);
    }
  }
  if (!Number.isSafeInteger(intervalMs) || intervalMs < 1) {
    throw new TypeError(`intervalMs must be a positive integer, got ${intervalMs}`);
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<SweepReport> | undefined;
  let next: Promise<SweepReport> | undefined;
  /** Where the orphan walk of each prefix resumes (`undefined`: from the start). */
  const cursors = new Map<string, string | undefined>();

  /** One sweep's orphan walk: a few pages of each prefix. Returns the blobs deleted. */
  async function sweepOrphans(): Promise<number> {
    let deleted = 0;
    for (const prefix of BLOB_KEY_PREFIXES) {
      for (let page = 0; page < MAX_ORPHAN_PAGES_PER_SWEEP; page += 1) {
        const modifiedBefore = new Date(clock.now().getTime() - orphanGraceMs);
        let listing;
        let owned: Set<string>;
        try {
          listing = await blobs.list(prefix, {
            modifiedBefore,
            limit: ORPHAN_PAGE_SIZE,
            startAfter: cursors.get(prefix),
          });
          const keys = listing.blobs.map((blob) => blob.key);
          owned = new Set(keys.length === 0 ? [] : await store.ownedBlobKeys(keys));
        } catch (error) {
          logFault(logger, error, { prefix }, 'looking for orphaned blobs failed');
          break;
        }
        for (const blob of listing.blobs) {
          if (owned.has(blob.key)) continue;
          try {
            await blobs.delete(blob.key);
            deleted += 1;
            logger.warn(
              {
                key: blob.key,
                modifiedAt: blob.modifiedAt.toISOString(),
                sizeBytes: blob.sizeBytes,
              },
              'deleted a blob no document or upload owns (left by a crash)',
            );
          } catch (error) {
            logFault(logger, error, { key: blob.key }, 'deleting an orphaned blob failed');
          }
        }
        cursors.set(prefix, listing.next);
        // The end of the prefix: the next sweep starts it again from the beginning.
        if (listing.next === undefined) break;
      }
    }
    return deleted;
  }

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
          options.failpoint?.('sweep-deleted');
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
    const orphans = await sweepOrphans();
    if (swept > 0 || failed > 0 || purgedIdempotencyKeys > 0 || orphans > 0) {
      logger.info({ swept, failed, purgedIdempotencyKeys, orphans }, 'retention sweep');
    }
    return { swept, failed, purgedIdempotencyKeys, orphans };
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
