import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { outputKeyOf } from '@disarm/protocol';
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
      logger.error({ err: error }, 'lease recovery failed');
    }
  }

  async function runSlot(): Promise<void> {
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
      } catch (error) {
        logger.error({ err: error }, 'leasing a document failed');
      }
      if (document) {
        wake.abort();
      } else {
        const poll = setTimeout(() => {
          wake.abort();
        }, pollIntervalMs);
        await woken;
        clearTimeout(poll);
      }
      stopping.signal.removeEventListener('abort', onStop);
      await woken;
      if (document) await processDocument(document);
    }
  }

  async function processDocument(document: DocumentRecord): Promise<void> {
    const job: ActiveJob = { document, abort: new AbortController(), engineSeconds: null };
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
      if (result !== undefined && !job.abort.signal.aborted) await finish(job, result);
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
      logger.error({ err: error, documentId: job.document.id }, 'renewing a lease failed');
    }
  }

  /** Runs the engine; `undefined` when the job was aborted before an answer was ours to keep. */
  async function run(job: ActiveJob, workDir: string): Promise<DocumentResult | undefined> {
    const { document } = job;
    const signal = job.abort.signal;
    try {
      const organisation = await store.getOrganisation(document.organisationId, clock.now());
      if (!organisation) return internalError(document, 'the organisation no longer exists');
      if (document.intakeKey === null) return internalError(document, 'the intake key is gone');
      const inputPath = await intakeFile(document.intakeKey, workDir);
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
      return await toDocumentResult(document, result);
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

  async function toDocumentResult(
    document: DocumentRecord,
    result: JobResult,
  ): Promise<DocumentResult> {
    switch (result.status) {
      case 'cleaned': {
        const blobKey = outputKeyOf(document.id);
        const handle = await open(result.outputPath, 'r');
        // The worker told us the size; a file that grew since then is refused, not stored.
        const { sizeBytes } = await blobs.put(blobKey, fileStream(handle), {
          maxBytes: result.bytes,
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
    for (let attempt = 1; ; attempt += 1) {
      try {
        finished = await store.finishDocument(document.id, owner, outcome, clock.now());
        break;
      } catch (error) {
        logger.error({ err: error, documentId: document.id, attempt }, 'recording a result failed');
        if (attempt >= FINISH_TRIES) {
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
