import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { outputKeyOf, StorageUnavailableError } from '@disarm/protocol';
import type {
  BlobStore,
  Clock,
  DocumentEvents,
  DocumentRecord,
  DocumentResult,
  Logger,
  StateStore,
} from '@disarm/protocol';

import type { Failpoint, WorkerFailpoint } from '../failpoints/index.ts';
import { fileStream, writeStreamToFile } from '../_internal/file-stream.ts';
import { logFault } from '../_internal/log-fault.ts';
import { silentLogger } from '../_internal/logger.ts';
import type { JobResult, WorkerPool } from '../pool/types.ts';

/** How long a lease holds without renewal; a crashed process's documents are requeued after it. */
export const LEASE_MS = 60_000;
/** Attempts before a document whose processing keeps being interrupted ends `failed`. */
export const MAX_ATTEMPTS = 3;
/** An idle slot looks for work this often even without a `queued` event (a lost event only costs this). */
export const POLL_INTERVAL_MS = 3_000;
/** Default of {@link Dispatcher.stop}'s `timeoutMs`. */
export const STOP_TIMEOUT_MS = 30_000;
/** Tries to record a document's end before leaving it to lease recovery. */
const FINISH_TRIES = 3;
const FINISH_RETRY_DELAY_MS = 250;
/**
 * First pause before a document held by a slot tries its storage again after
 * `StorageUnavailableError` (a database restarting, a full disk); doubled each time.
 */
const STORAGE_RETRY_BASE_MS = 1_000;
/**
 * Longest pause between two tries of unavailable storage, by a held document or an idle slot's
 * lease: 15 seconds, so work resumes within that of the storage's return (at once on
 * PostgreSQL, whose listener announces its reconnection).
 */
const STORAGE_RETRY_MAX_MS = 15_000;

// Where the node package has always exported it from; the rule lives in the protocol's domain.
export { outputKeyOf };

/** Options of {@link createDispatcher}. */
export interface DispatcherOptions {
  readonly store: StateStore;
  /**
   * Where intake and output bytes live. With `pathOf` (the local blob store) the worker reads the
   * intake file in place; otherwise it is downloaded into the work folder first.
   */
  readonly blobs: BlobStore & { pathOf?(key: string): string };
  readonly events: DocumentEvents;
  readonly pool: WorkerPool;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** Documents processed at once. @default the pool's size */
  readonly concurrency?: number;
  /** Folder for per-document scratch folders (outputs, downloaded intakes). @default `os.tmpdir()` */
  readonly workDirectory?: string;
  /** Lease owner id. @default `proc_` and 64 random bits, new per dispatcher */
  readonly owner?: string;
  /** @default {@link LEASE_MS} */
  readonly leaseMs?: number;
  /** @default {@link POLL_INTERVAL_MS} */
  readonly pollIntervalMs?: number;
  /**
   * Called once a document's end is recorded (for metrics: keep it cheap, never throw).
   * @default none
   */
  readonly onFinished?: (document: DocumentRecord, details: FinishDetails) => void;
  /**
   * Test mode only: reached as `worker-leased` (the lease held, before the engine runs),
   * `output-stored` (the cleaned file stored, before `finishDocument`) and `document-finished`
   * (after `finishDocument`, before the intake is deleted). @default none
   */
  readonly failpoint?: Failpoint<WorkerFailpoint>;
}

/** What {@link DispatcherOptions.onFinished} learns besides the document. */
export interface FinishDetails {
  /** Seconds the engine ran on it; `null` for a document failed by lease recovery. */
  readonly engineSeconds: number | null;
  /**
   * Pence given back to credit by a failure (the stored record no longer shows the charge once
   * refunded); `0` when not failed, and for lease recovery, which reports no amounts.
   */
  readonly refundedPence: number;
}

/** Runs queued documents on the worker pool; see {@link createDispatcher}. */
export interface Dispatcher {
  /** This process's lease owner id. */
  readonly owner: string;
  /** Recovers lapsed leases, then starts leasing. Resolves once the slots are running. */
  start(): Promise<void>;
  /**
   * Stops leasing, lets running documents finish for up to `timeoutMs`, then abandons the rest:
   * their jobs are aborted and their leases released, so the next start's recovery requeues them
   * (after {@link MAX_ATTEMPTS} interrupted attempts a document ends `failed`, refunded). Calling
   * it again returns the same promise.
   */
  stop(options?: { readonly timeoutMs?: number }): Promise<void>;
  /**
   * Requeues the documents whose lease lapsed by the clock's now (ends them `failed`, refunded,
   * after {@link MAX_ATTEMPTS}), as `start` and a timer every lease do; this process's own
   * documents are renewed first. Never rejects: a failure is logged.
   */
  recover(): Promise<void>;
  /** Documents being processed now. */
  running(): number;
}

interface ActiveJob {
  readonly document: DocumentRecord;
  readonly abort: AbortController;
  /** How long the worker pool took to answer, once it has. */
  engineSeconds: number | null;
  /** Set when the worker was killed from outside the pool: the document is retried, not ended. */
  interrupted: string | null;
}

/**
 * The processing loop of `disarm serve`: each of `concurrency` slots leases the oldest pending
 * document (`store.leaseDocument`), runs it on the worker pool under the organisation's limits
 * and policy, stores the cleaned file under `output/<id>`, and ends it in the store
 * (`completed`, `rejected` or `failed`, the store refunding failures). Then the intake bytes are
 * deleted and sync waiters are woken (`events.finished`).
 *
 * An idle slot sleeps until `events.queued` or {@link POLL_INTERVAL_MS}. Leases are renewed while
 * a document runs, and lapsed leases (a crashed process) are recovered at start and every
 * {@link LEASE_MS}. Anything unexpected — a missing blob, a store error — ends that one document
 * `failed` / `internal_error` and is logged; the loop never dies of it.
 *
 * @example
 * ```ts
 * const dispatcher = createDispatcher({ store, blobs, events, pool, clock: systemClock, logger });
 * await dispatcher.start();
 * // ... on shutdown:
 * await dispatcher.stop({ timeoutMs: 30_000 });
 * await pool.close();
 * ```
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { store, blobs, events, pool, clock } = options;
  const logger = options.logger ?? silentLogger;
  const owner = options.owner ?? `proc_${randomBytes(8).toString('hex')}`;
  const leaseMs = options.leaseMs ?? LEASE_MS;
  const pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;
  const concurrency = options.concurrency ?? pool.stats().size;
  const workRoot = options.workDirectory ?? tmpdir();
  for (const [name, value] of [
    ['concurrency', concurrency],
    ['leaseMs', leaseMs],
    ['pollIntervalMs', pollIntervalMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new TypeError(`${name} must be a positive integer, got ${value}`);
    }
  }

  const active = new Map<string, ActiveJob>();
  const stopping = new AbortController();
  let slots: Promise<void>[] = [];
  let recoveryTimer: NodeJS.Timeout | undefined;
  let stopped: Promise<void> | undefined;

  async function recover(): Promise<void> {
    try {
      const now = clock.now();
      // Our own running documents must not look lapsed (a manual clock may have jumped).
      await Promise.all([...active.keys()].map((id) => store.renewLease(id, owner, now, leaseMs)));
      const failed = await store.recoverLapsedLeases(now, MAX_ATTEMPTS);
      for (const document of failed) {
        logger.warn(
          { documentId: document.id, attempts: document.attempts },
          'document failed after repeated interrupted processing',
        );
        options.onFinished?.(document, { engineSeconds: null, refundedPence: 0 });
        events.finished(document.id);
      }
    } catch (error) {
      logFault(logger, error, {}, 'lease recovery failed');
    }
  }

  async function runSlot(): Promise<void> {
    // Leases in a row the store could not answer: the slot asks less and less often meanwhile.
    let leaseFailures = 0;
    while (!stopping.signal.aborted) {
      // Listen before leasing, so a document queued between the lease and the wait is not missed.
      const wake = new AbortController();
      const onStop = (): void => {
        wake.abort();
      };
      stopping.signal.addEventListener('abort', onStop, { once: true });
      const woken = events.waitForQueued(wake.signal);
      let document: DocumentRecord | undefined;
      try {
        document = await store.leaseDocument(owner, clock.now(), leaseMs);
        leaseFailures = 0;
      } catch (error) {
        leaseFailures += 1;
        logFault(logger, error, {}, 'leasing a document failed');
      }
      if (document) {
        wake.abort();
      } else {
        // A `queued` event (on PostgreSQL also the listener reconnecting) still wakes it at once.
        const poll = setTimeout(
          () => {
            wake.abort();
          },
          leaseFailures === 0 ? pollIntervalMs : storageRetryMs(leaseFailures, pollIntervalMs),
        );
        await woken;
        clearTimeout(poll);
      }
      stopping.signal.removeEventListener('abort', onStop);
      await woken;
      if (document) await processDocument(document);
    }
  }

  async function processDocument(document: DocumentRecord): Promise<void> {
    const job: ActiveJob = {
      document,
      abort: new AbortController(),
      engineSeconds: null,
      interrupted: null,
    };
    active.set(document.id, job);
    // Three renewals per lease: one lost to a slow store still leaves the lease standing.
    const renewal = setInterval(
      () => {
        void renew(job);
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
    let workDir: string | undefined;
    try {
      workDir = await mkdtemp(join(workRoot, `${document.id}-`));
      const result = await run(job, workDir);
      clearInterval(renewal);
      // Aborted: the lease was lost or we are shutting down; the result is not ours to record.
      if (job.interrupted !== null && !job.abort.signal.aborted) {
        await retryElsewhere(job, job.interrupted);
      } else if (result !== undefined && !job.abort.signal.aborted) {
        await finish(job, result);
      }
    } catch (error) {
      logger.error({ err: error, documentId: document.id }, 'processing a document failed');
    } finally {
      clearInterval(renewal);
      active.delete(document.id);
      if (workDir !== undefined) {
        await rm(workDir, { recursive: true, force: true }).catch((error: unknown) => {
          logger.warn({ err: error, documentId: document.id }, 'removing a work folder failed');
        });
      }
    }
  }

  async function renew(job: ActiveJob): Promise<void> {
    if (job.abort.signal.aborted) return;
    try {
      if (!(await store.renewLease(job.document.id, owner, clock.now(), leaseMs))) {
        logger.warn({ documentId: job.document.id }, 'lease lost while processing; abandoning');
        job.abort.abort();
      }
    } catch (error) {
      logFault(logger, error, { documentId: job.document.id }, 'renewing a lease failed');
    }
  }

  /**
   * Runs `operation` until it answers, waiting out `StorageUnavailableError` (a database
   * restarting, a full disk) with a growing pause while the slot keeps the document leased: what
   * the storage cannot take now is not the file's fault, so the document is not failed for it.
   * Any other error is thrown, and so is the unavailability (or the abort) once the job is
   * aborted (shutdown, lease lost), leaving the document to lease recovery.
   */
  async function whenAvailable<R>(
    job: ActiveJob,
    what: string,
    operation: () => Promise<R>,
  ): Promise<R> {
    for (let failures = 1; ; failures += 1) {
      try {
        return await operation();
      } catch (error) {
        if (!(error instanceof StorageUnavailableError) || job.abort.signal.aborted) throw error;
        if (failures === 1) {
          logger.info(
            { documentId: job.document.id, storage: error.storage, reason: error.reason },
            `${what}: waiting for the storage to come back`,
          );
        }
        await pause(storageRetryMs(failures, STORAGE_RETRY_BASE_MS), job.abort.signal);
        job.abort.signal.throwIfAborted();
      }
    }
  }

  /**
   * The worker was killed from outside the pool (the kernel's OOM killer, an operator): the file
   * may well pass on another attempt, so the lease is released at once and recovery decides as
   * for any lapsed lease — another attempt on a fresh worker once its back-off has passed, or,
   * after {@link MAX_ATTEMPTS}, the dead-letter end: `failed`, refunded. A document that kills
   * its worker every time therefore ends after {@link MAX_ATTEMPTS}, never loops.
   */
  async function retryElsewhere(job: ActiveJob, detail: string): Promise<void> {
    const { document } = job;
    logger.warn(
      { documentId: document.id, attempt: document.attempts, maxAttempts: MAX_ATTEMPTS, detail },
      'worker killed from outside while processing',
    );
    try {
      // A lease of 0 ms has lapsed already: recovery below takes it as a crashed process's.
      await store.renewLease(document.id, owner, clock.now(), 0);
    } catch (error) {
      // Left as it is, the lease lapses by itself and the recovery timer requeues it.
      logFault(logger, error, { documentId: document.id }, 'releasing a lease failed');
      return;
    }
    await recover();
  }

  /** Runs the engine; `undefined` when the job was aborted before an answer was ours to keep. */
  async function run(job: ActiveJob, workDir: string): Promise<DocumentResult | undefined> {
    const { document } = job;
    const signal = job.abort.signal;
    try {
      const organisation = await whenAvailable(job, 'reading the organisation', () =>
        store.getOrganisation(document.organisationId, clock.now()),
      );
      if (!organisation) return internalError(document, 'the organisation no longer exists');
      const { intakeKey } = document;
      if (intakeKey === null) return internalError(document, 'the intake key is gone');
      const inputPath = await whenAvailable(job, 'reading the submitted file', () =>
        intakeFile(intakeKey, workDir),
      );
      if (inputPath === undefined) {
        return internalError(document, 'the submitted file is missing from the blob store');
      }
      const outputDir = join(workDir, 'out');
      await mkdir(outputDir);
      options.failpoint?.('worker-leased');
      const engineStarted = performance.now();
      const result = await pool.run({
        inputPath,
        fileName: document.fileName,
        outputDir,
        // Never a path from the caller's file name (it may be over 255 bytes, or anything else).
        outputName: 'output',
        options: {
          limits: {
            maxBytes:
              document.lane === 'reference'
                ? organisation.maxUploadSizeBytes
                : organisation.maxFileSizeBytes,
          },
          policy: organisation.policy,
        },
        signal,
      });
      job.engineSeconds = (performance.now() - engineStarted) / 1000;
      if (signal.aborted) return undefined;
      if (result.status === 'failed' && result.interrupted === true) {
        job.interrupted = result.detail;
        return undefined;
      }
      return await toDocumentResult(job, result);
    } catch (error) {
      if (signal.aborted) return undefined;
      logger.error({ err: error, documentId: document.id }, 'processing a document failed');
      return internalError(document, 'an unexpected error stopped processing');
    }
  }

  /** The intake as a local file: in place when the store has paths, downloaded otherwise. */
  async function intakeFile(key: string, workDir: string): Promise<string | undefined> {
    if (blobs.pathOf) {
      return (await blobs.stat(key)) === undefined ? undefined : blobs.pathOf(key);
    }
    const body = await blobs.get(key);
    if (!body) return undefined;
    const path = join(workDir, 'intake');
    await writeStreamToFile(body, path);
    return path;
  }

  async function toDocumentResult(job: ActiveJob, result: JobResult): Promise<DocumentResult> {
    const { document } = job;
    switch (result.status) {
      case 'cleaned': {
        const blobKey = outputKeyOf(document.id);
        // A full disk keeps the cleaned file in the work folder until the store takes it.
        const { sizeBytes } = await whenAvailable(job, 'storing the cleaned file', async () => {
          const handle = await open(result.outputPath, 'r');
          // The worker told us the size; a file that grew since then is refused, not stored.
          return blobs.put(blobKey, fileStream(handle), { maxBytes: result.bytes });
        });
        options.failpoint?.('output-stored');
        return {
          status: 'completed',
          blobKey,
          fileName: result.fileName,
          format: result.format,
          mediaType: result.mediaType,
          converted: result.modifications.includes('converted'),
          sizeBytes,
          findings: result.findings,
        };
      }
      case 'rejected':
        return {
          status: 'rejected',
          reason: result.reason,
          threatNames: result.threatNames ?? [],
          detail: result.detail,
        };
      case 'failed':
        logger.warn(
          { documentId: document.id, reason: result.reason, detail: result.detail },
          'document processing failed',
        );
        return { status: 'failed', reason: result.reason, detail: result.detail };
    }
  }

  function internalError(document: DocumentRecord, detail: string): DocumentResult {
    logger.error({ documentId: document.id, detail }, 'document failed: internal error');
    return { status: 'failed', reason: 'internal_error', detail };
  }

  async function finish(job: ActiveJob, result: DocumentResult): Promise<void> {
    const { document } = job;
    let outcome = result;
    let finished: DocumentRecord | undefined;
    let faults = 0;
    let unavailable = 0;
    for (;;) {
      try {
        finished = await store.finishDocument(document.id, owner, outcome, clock.now());
        break;
      } catch (error) {
        if (error instanceof StorageUnavailableError) {
          // The database is out of reach or full: the result stands and waits for it (if the
          // lease lapses meanwhile, the store refuses it and recovery requeues the document).
          // Cut short by a shutdown, the document is left to lease recovery, and its output to
          // the next attempt, which writes the same key.
          if (job.abort.signal.aborted) {
            logger.warn({ documentId: document.id }, 'result not recorded; left to lease recovery');
            return;
          }
          unavailable += 1;
          if (unavailable === 1) {
            logger.info(
              { documentId: document.id, reason: error.reason },
              'recording a result: waiting for the database to come back',
            );
          }
          await pause(storageRetryMs(unavailable, STORAGE_RETRY_BASE_MS), job.abort.signal);
          continue;
        }
        faults += 1;
        logger.error(
          { err: error, documentId: document.id, attempt: faults },
          'recording a result failed',
        );
        if (faults >= FINISH_TRIES) {
          // Left `processing`: its lease lapses and recovery requeues it.
          if (outcome.status === 'completed') await removeBlob(outcome.blobKey, document.id);
          return;
        }
        // A result the store cannot take may be the problem: record a failure (refunded) instead.
        if (outcome.status === 'completed') await removeBlob(outcome.blobKey, document.id);
        outcome = {
          status: 'failed',
          reason: 'internal_error',
          detail: 'the result could not be recorded',
        };
        await new Promise((resolve) => setTimeout(resolve, FINISH_RETRY_DELAY_MS));
      }
    }
    if (!finished) {
      // Someone else holds the document now; its output key is theirs to overwrite (and once
      // it has ended, an output no row names is the orphan sweep's).
      logger.warn({ documentId: document.id }, 'lease lost before the result was recorded');
      return;
    }
    options.failpoint?.('document-finished');
    logger.info(
      {
        documentId: document.id,
        status: finished.status,
        ...(finished.reason === null ? {} : { reason: finished.reason }),
      },
      'document processed',
    );
    options.onFinished?.(finished, {
      engineSeconds: job.engineSeconds,
      // The lease's view of the charge: the refund gave back exactly this.
      refundedPence: finished.status === 'failed' ? document.chargedPence : 0,
    });
    if (document.intakeKey !== null) {
      try {
        await blobs.delete(document.intakeKey);
        await store.clearIntake(document.id);
      } catch (error) {
        // The sweeper lists intake bytes of finished documents and retries.
        logger.warn({ err: error, documentId: document.id }, 'deleting the intake failed');
      }
    }
    events.finished(document.id);
  }

  async function removeBlob(key: string, documentId: string): Promise<void> {
    await blobs.delete(key).catch((error: unknown) => {
      logger.warn({ err: error, documentId }, 'removing an unrecorded output failed');
    });
  }

  return {
    owner,
    recover,
    async start() {
      if (slots.length > 0 || stopping.signal.aborted)
        throw new Error('the dispatcher was already started');
      await mkdir(workRoot, { recursive: true });
      await recover();
      recoveryTimer = setInterval(() => {
        void recover();
      }, leaseMs);
      slots = Array.from({ length: concurrency }, () => runSlot());
    },
    stop({ timeoutMs = STOP_TIMEOUT_MS } = {}) {
      stopped ??= (async () => {
        stopping.abort();
        clearInterval(recoveryTimer);
        const drained = Promise.all(slots).then(() => true);
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<false>((resolve) => {
          timer = setTimeout(() => {
            resolve(false);
          }, timeoutMs);
        });
        const finished = await Promise.race([drained, timedOut]);
        clearTimeout(timer);
        if (!finished) {
          const abandoned = [...active.values()];
          for (const job of abandoned) job.abort.abort();
          // Release now (a lease of 0 ms is already lapsed) instead of making the next start wait.
          const now = clock.now();
          await Promise.all(
            abandoned.map((job) =>
              store.renewLease(job.document.id, owner, now, 0).catch(() => false),
            ),
          );
          logger.warn(
            { documentIds: abandoned.map((job) => job.document.id) },
            'shutdown left documents to be requeued',
          );
          await drained;
        }
      })();
      return stopped;
    },
    running: () => active.size,
  };
}

/** The pause before the `failures`-th retry of unavailable storage: doubling from `baseMs`. */
function storageRetryMs(failures: number, baseMs: number): number {
  return Math.min(STORAGE_RETRY_MAX_MS, baseMs * 2 ** Math.min(failures - 1, 16));
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
