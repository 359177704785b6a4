import type { ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';

import { createClamdScanner, FINDING_KINDS, resolveLimits } from '@disarm/core';
import type { FindingKind, Policy, PolicyAction } from '@disarm/core';

import { parseRendererSelection } from '../render/renderers.ts';
import type { RendererSelection } from '../render/renderers.ts';
import { CAN_READ_PROC_STATUS, readRssBytes } from './_memory.ts';
import { isWorkerMessage } from './_protocol.ts';
import type { JobMessage } from './_protocol.ts';
import {
  DEFAULT_WORKER_MODULE,
  forkWorker,
  MEMORY_SAMPLE_INTERVAL_MS,
  toModulePath,
} from './_spawn.ts';
import type {
  ClamdConfig,
  ClosePoolOptions,
  FailedJobResult,
  JobResult,
  WorkerJob,
  WorkerPool,
  WorkerPoolOptions,
  WorkerPoolStats,
} from './types.ts';

const MIB_BYTES = 1024 * 1024;
/** Default of {@link WorkerPoolOptions.memoryLimitBytes}. */
export const DEFAULT_MEMORY_LIMIT_BYTES = 2048 * MIB_BYTES;
const MIN_MEMORY_LIMIT_BYTES = 64 * MIB_BYTES;
/** The V8 heap gets this share of the memory limit; the rest is for native memory and code. */
const HEAP_SHARE_OF_MEMORY_LIMIT = 0.75;
const DEFAULT_TIMEOUT_GRACE_MS = 5_000;
const DEFAULT_ABORT_GRACE_MS = 1_000;
/** A worker that has not exited this long after `close()` disconnected it is killed. */
const EXIT_GRACE_MS = 5_000;
/** Workers dying before they are ready this many times in a row fail the queue instead of looping. */
const MAX_START_FAILURES = 3;
/** A worker not ready this long after it was forked is killed as a failed start. */
const START_TIMEOUT_MS = 30_000;

/** Why the pool killed a worker; decides what its job resolves to. */
type KillReason = 'timeout' | 'abort' | 'memory' | 'close' | 'ipc' | 'start';

interface QueuedJob {
  readonly message: JobMessage;
  /** The engine's budget plus the grace: past it, the worker is killed. */
  readonly deadlineMs: number;
  readonly resolve: (result: JobResult) => void;
  settled: boolean;
  detach: () => void;
}

interface WorkerSlot {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  ready: boolean;
  job: QueuedJob | undefined;
  killReason: KillReason | undefined;
  deadlineTimer: NodeJS.Timeout | undefined;
  abortTimer: NodeJS.Timeout | undefined;
}

interface PoolSettings {
  readonly size: number;
  readonly memoryLimitBytes: number;
  readonly timeoutGraceMs: number;
  readonly abortGraceMs: number;
  readonly modulePath: string;
  readonly output: 'stderr' | 'ignore';
  readonly clamd: ClamdConfig | null;
  /** {@link WorkerPoolOptions.renderers}, as the workers' environment carries it. */
  readonly renderers: string;
}

/**
 * Creates a pool of isolated child processes that run the engine, one file per process at a
 * time. A native crash, a memory blow-up or a hang in a codec kills one worker, never the caller:
 * the job resolves `failed`, the worker is replaced and the queue keeps moving.
 *
 * Workers start on demand and stay warm. An idle pool does not keep the Node process alive (its
 * workers and IPC channels are unref'd while idle, and they exit when the parent does), so a
 * script may end without `close()`; a pool with work in flight keeps the process alive until
 * the work is done. Call {@link WorkerPool.close} to stop the workers deterministically.
 *
 * @example
 * ```ts
 * import { createWorkerPool } from '@disarm/node';
 *
 * const pool = createWorkerPool({ size: 4, memoryLimitBytes: 1024 ** 3 });
 * const result = await pool.run({ inputPath: 'upload.png', fileName: 'upload.png', outputDir: 'clean' });
 * if (result.status === 'cleaned') console.log(result.outputPath, result.findings);
 * else console.log(result.status, result.reason, result.detail);
 * await pool.close();
 * ```
 * @throws {TypeError} for invalid options.
 */
export function createWorkerPool(options: WorkerPoolOptions = {}): WorkerPool {
  return new ProcessPool(toSettings(options));
}

function toSettings(options: WorkerPoolOptions): PoolSettings {
  const size = options.size ?? Math.max(1, availableParallelism());
  assertInteger('size', size, 1);
  const memoryLimitBytes = options.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  assertInteger('memoryLimitBytes', memoryLimitBytes, MIN_MEMORY_LIMIT_BYTES);
  const timeoutGraceMs = options.timeoutGraceMs ?? DEFAULT_TIMEOUT_GRACE_MS;
  assertInteger('timeoutGraceMs', timeoutGraceMs, 0);
  const abortGraceMs = options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS;
  assertInteger('abortGraceMs', abortGraceMs, 0);
  const workerModule = options.workerModule ?? DEFAULT_WORKER_MODULE;
  if (!(workerModule instanceof URL) && (typeof workerModule !== 'string' || workerModule === '')) {
    throw new TypeError('workerModule must be a path or a file: URL');
  }
  const output: unknown = options.workerOutput ?? 'stderr';
  if (output !== 'stderr' && output !== 'ignore') {
    throw new TypeError('workerOutput must be "stderr" or "ignore"');
  }
  return {
    size,
    memoryLimitBytes,
    timeoutGraceMs,
    abortGraceMs,
    modulePath: resolve(toModulePath(workerModule)),
    output,
    clamd: checkClamd(options.clamd),
    renderers: checkRenderers(options.renderers ?? 'auto'),
  };
}

/** A selection written as the workers read it; an unknown name is the caller's `TypeError`. */
function checkRenderers(selection: RendererSelection): string {
  const written = selection === 'auto' ? 'auto' : selection.join(',');
  parseRendererSelection(written);
  return written;
}

/**
 * Checked here, so that bad clamd options are the caller's `TypeError`; only the plain fields
 * travel to the workers.
 */
function checkClamd(clamd: ClamdConfig | undefined): ClamdConfig | null {
  if (clamd === undefined) return null;
  createClamdScanner(clamd);
  const { socket, host, port, connectTimeoutMs, readTimeoutMs, maxConnections } = clamd;
  const { streamMaxLengthBytes, failOpen } = clamd;
  return Object.fromEntries(
    Object.entries({
      socket,
      host,
      port,
      connectTimeoutMs,
      readTimeoutMs,
      maxConnections,
      streamMaxLengthBytes,
      failOpen,
    }).filter(([, value]) => value !== undefined),
  );
}

function assertInteger(name: string, value: unknown, min: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`${name} must be an integer of at least ${min}, got ${String(value)}`);
  }
}

class ProcessPool implements WorkerPool {
  readonly #settings: PoolSettings;
  readonly #workers = new Set<WorkerSlot>();
  readonly #queue: QueuedJob[] = [];
  #nextJobId = 1;
  #state: 'open' | 'draining' | 'closed' = 'open';
  #closing: Promise<void> | undefined;
  #drainWaiters: (() => void)[] = [];
  #startFailures = 0;
  /** Workers replaced while the pool was open ({@link WorkerPoolStats.restarts}). */
  #restarts = 0;
  #sampler: NodeJS.Timeout | undefined;
  #sampling = false;
  readonly #killAllOnExit = (): void => {
    for (const worker of this.#workers) worker.child.kill('SIGKILL');
  };

  constructor(settings: PoolSettings) {
    this.#settings = settings;
  }

  async run(job: WorkerJob): Promise<JobResult> {
    if (this.#state !== 'open') throw new Error('the worker pool is closed');
    const { message, signal } = this.#toMessage(job);
    if (signal?.aborted === true) return abortedResult('before it started');
    const result = await new Promise<JobResult>((resolveJob) => {
      const queued: QueuedJob = {
        message,
        deadlineMs: message.limits.timeoutMs + this.#settings.timeoutGraceMs,
        resolve: resolveJob,
        settled: false,
        detach: () => undefined,
      };
      if (signal) {
        const onAbort = (): void => {
          this.#abort(queued);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        queued.detach = () => {
          signal.removeEventListener('abort', onAbort);
        };
      }
      this.#queue.push(queued);
      this.#dispatch();
    });
    return result;
  }

  close(options: ClosePoolOptions = {}): Promise<void> {
    if (options.force === true && this.#state !== 'closed') this.#forceStop();
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  stats(): WorkerPoolStats {
    const workers = [...this.#workers];
    return {
      size: this.#settings.size,
      workers: workers.length,
      busy: workers.filter((worker) => worker.job !== undefined).length,
      queued: this.#queue.length,
      pids: workers.flatMap((worker) => (worker.child.pid === undefined ? [] : [worker.child.pid])),
      restarts: this.#restarts,
    };
  }

  #toMessage(job: WorkerJob): { message: JobMessage; signal: AbortSignal | undefined } {
    const value: unknown = job;
    if (typeof value !== 'object' || value === null) throw new TypeError('job must be an object');
    if (typeof job.inputPath !== 'string' || job.inputPath === '') {
      throw new TypeError('job.inputPath must be a non-empty string');
    }
    if (typeof job.fileName !== 'string' || job.fileName === '') {
      throw new TypeError('job.fileName must be a non-empty string');
    }
    if (
      job.outputDir !== undefined &&
      (typeof job.outputDir !== 'string' || job.outputDir === '')
    ) {
      throw new TypeError('job.outputDir must be a non-empty string');
    }
    if (
      job.outputName !== undefined &&
      (typeof job.outputName !== 'string' ||
        !/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(job.outputName))
    ) {
      throw new TypeError(
        'job.outputName must be 1 to 128 letters, digits, ".", "_" or "-", not starting with "."',
      );
    }
    if (job.signal !== undefined && !(job.signal instanceof AbortSignal)) {
      throw new TypeError('job.signal must be an AbortSignal');
    }
    const message: JobMessage = {
      type: 'job',
      id: this.#nextJobId++,
      // Workers inherit the working directory today, but a job must not depend on it.
      inputPath: resolve(job.inputPath),
      fileName: job.fileName,
      outputDir: job.outputDir === undefined ? null : resolve(job.outputDir),
      outputName: job.outputName ?? null,
      limits: resolveLimits(job.options?.limits),
      policy: checkPolicy(job.options?.policy),
      clamd: this.#settings.clamd,
    };
    return { message, signal: job.signal };
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      const idle = [...this.#workers].find(
        (worker) => worker.ready && worker.job === undefined && worker.killReason === undefined,
      );
      if (!idle) break;
      const job = this.#queue.shift();
      if (job) this.#assign(idle, job);
    }
    const starting = [...this.#workers].filter((worker) => !worker.ready).length;
    let needed = this.#queue.length - starting;
    while (needed > 0 && this.#workers.size < this.#settings.size && this.#state !== 'closed') {
      this.#spawn();
      needed -= 1;
    }
    this.#checkDrained();
  }

  #assign(worker: WorkerSlot, job: QueuedJob): void {
    worker.job = job;
    keepAlive(worker.child, true);
    worker.deadlineTimer = setTimeout(() => {
      this.#kill(worker, 'timeout');
    }, job.deadlineMs).unref();
    worker.child.send(job.message, (error) => {
      if (error) this.#kill(worker, 'ipc');
    });
  }

  #abort(job: QueuedJob): void {
    const index = this.#queue.indexOf(job);
    if (index >= 0) {
      this.#queue.splice(index, 1);
      this.#settle(job, abortedResult('before it started'));
      this.#checkDrained();
      return;
    }
    const worker = [...this.#workers].find((candidate) => candidate.job === job);
    if (!worker || worker.abortTimer) return;
    worker.child.send({ type: 'abort', id: job.message.id }, () => undefined);
    worker.abortTimer = setTimeout(() => {
      this.#kill(worker, 'abort');
    }, this.#settings.abortGraceMs).unref();
  }

  #spawn(): void {
    const child = forkWorker({
      modulePath: this.#settings.modulePath,
      heapLimitMiB: Math.max(
        16,
        Math.floor((this.#settings.memoryLimitBytes * HEAP_SHARE_OF_MEMORY_LIMIT) / MIB_BYTES),
      ),
      output: this.#settings.output,
      renderers: this.#settings.renderers,
    });
    let markExited = (): void => undefined;
    const worker: WorkerSlot = {
      child,
      exited: new Promise((resolveExit) => {
        markExited = resolveExit;
      }),
      ready: false,
      job: undefined,
      killReason: undefined,
      deadlineTimer: undefined,
      abortTimer: undefined,
    };
    if (this.#workers.size === 0) {
      // Workers exit on their own when the IPC channel closes, but one stuck in native code
      // would not notice: kill them when the parent exits without close().
      process.on('exit', this.#killAllOnExit);
      this.#startSampler();
    }
    this.#workers.add(worker);
    const startTimer = setTimeout(() => {
      if (!worker.ready) this.#kill(worker, 'start');
    }, START_TIMEOUT_MS).unref();
    let gone = false;
    const onGone = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (gone) return;
      gone = true;
      clearTimeout(startTimer);
      markExited();
      this.#onExit(worker, code, signal);
    };
    child.on('exit', onGone);
    child.on('error', () => {
      // Spawning failed (no process to wait for) or the channel broke: either way, the worker is done.
      if (child.pid === undefined) onGone(null, null);
      else this.#kill(worker, 'ipc');
    });
    child.on('message', (message: unknown) => {
      this.#onMessage(worker, message);
    });
  }

  #onMessage(worker: WorkerSlot, message: unknown): void {
    if (!isWorkerMessage(message)) return;
    switch (message.type) {
      case 'ready': {
        worker.ready = true;
        this.#startFailures = 0;
        if (this.#state === 'closed') worker.child.disconnect();
        else if (this.#queue.length === 0) keepAlive(worker.child, false);
        this.#dispatch();
        return;
      }
      case 'result': {
        const job = worker.job;
        if (job?.message.id !== message.id) return;
        this.#release(worker);
        this.#settle(job, message.result);
        if (this.#queue.length === 0 && this.#state === 'open') keepAlive(worker.child, false);
        this.#dispatch();
        return;
      }
      case 'memory': {
        if (message.rssBytes > this.#settings.memoryLimitBytes) this.#kill(worker, 'memory');
        return;
      }
    }
  }

  #onExit(worker: WorkerSlot, code: number | null, signal: NodeJS.Signals | null): void {
    this.#workers.delete(worker);
    const job = worker.job;
    this.#release(worker);
    if (job) this.#settle(job, this.#failureOf(worker, job, code, signal));
    if (!worker.ready && worker.killReason !== 'close') this.#startFailures += 1;
    if (this.#workers.size === 0) {
      this.#stopSampler();
      process.off('exit', this.#killAllOnExit);
    }
    if (this.#state === 'closed') {
      this.#checkDrained();
      return;
    }
    if (this.#startFailures >= MAX_START_FAILURES) {
      this.#startFailures = 0;
      for (const queued of this.#queue.splice(0)) {
        this.#settle(queued, {
          status: 'failed',
          reason: 'internal_error',
          detail: `the worker process could not start (${describeExit(code, signal)})`,
        });
      }
    } else if (worker.ready && this.#state === 'open') {
      // Keep the pool at strength: a replacement starts now rather than on the next job.
      this.#restarts += 1;
      this.#spawn();
    }
    this.#dispatch();
  }

  #failureOf(
    worker: WorkerSlot,
    job: QueuedJob,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): FailedJobResult {
    const timeoutMs = job.message.limits.timeoutMs;
    switch (worker.killReason) {
      case 'timeout':
        return {
          status: 'failed',
          reason: 'timeout',
          detail: `processing did not finish within the ${timeoutMs} ms time budget; the worker was stopped`,
        };
      case 'abort':
        return abortedResult('and its worker did not stop in time, so it was killed');
      case 'memory':
        return {
          status: 'failed',
          reason: 'internal_error',
          detail: `the worker exceeded its memory limit of ${Math.round(this.#settings.memoryLimitBytes / MIB_BYTES)} MiB and was stopped`,
        };
      case 'close':
        return {
          status: 'failed',
          reason: 'internal_error',
          detail: 'the worker pool was closed before the job finished',
        };
      case 'start':
      case 'ipc':
        return {
          status: 'failed',
          reason: 'internal_error',
          detail: 'the job could not be exchanged with its worker process',
        };
      case undefined:
        // SIGKILL the pool did not send: the OOM killer (or an operator), not the file's own
        // crash; a native crash of a codec dies of SIGSEGV, SIGBUS or SIGABRT instead.
        if (signal === 'SIGKILL') {
          return {
            status: 'failed',
            reason: 'internal_error',
            detail: 'the worker process was killed from outside (signal SIGKILL: out of memory?)',
            interrupted: true,
          };
        }
        return {
          status: 'failed',
          reason: 'internal_error',
          detail: `the worker process crashed (${describeExit(code, signal)})`,
        };
    }
  }

  #kill(worker: WorkerSlot, reason: KillReason): void {
    worker.killReason ??= reason;
    worker.child.kill('SIGKILL');
  }

  #release(worker: WorkerSlot): void {
    clearTimeout(worker.deadlineTimer);
    clearTimeout(worker.abortTimer);
    worker.deadlineTimer = undefined;
    worker.abortTimer = undefined;
    worker.job = undefined;
  }

  #settle(job: QueuedJob, result: JobResult): void {
    if (job.settled) return;
    job.settled = true;
    job.detach();
    job.resolve(result);
  }

  #forceStop(): void {
    this.#state = 'closed';
    for (const queued of this.#queue.splice(0)) {
      this.#settle(queued, {
        status: 'failed',
        reason: 'internal_error',
        detail: 'the worker pool was closed before the job started',
      });
    }
    for (const worker of this.#workers) this.#kill(worker, 'close');
    this.#checkDrained();
  }

  async #shutDown(): Promise<void> {
    if (this.#state === 'open') this.#state = 'draining';
    await new Promise<void>((resolveDrain) => {
      this.#drainWaiters.push(resolveDrain);
      this.#checkDrained();
    });
    this.#state = 'closed';
    const exits = [...this.#workers].map(async (worker) => {
      // Keep the event loop alive until the worker is really gone, so `await close()` returns.
      keepAlive(worker.child, true);
      if (worker.child.connected) worker.child.disconnect();
      const killTimer = setTimeout(() => {
        this.#kill(worker, 'close');
      }, EXIT_GRACE_MS).unref();
      await worker.exited;
      clearTimeout(killTimer);
    });
    await Promise.all(exits);
  }

  #checkDrained(): void {
    if (this.#drainWaiters.length === 0 || this.#queue.length > 0) return;
    if ([...this.#workers].some((worker) => worker.job !== undefined)) return;
    for (const waiter of this.#drainWaiters.splice(0)) waiter();
  }

  #startSampler(): void {
    if (this.#sampler || !CAN_READ_PROC_STATUS) return;
    this.#sampler = setInterval(() => {
      void this.#sampleMemory();
    }, MEMORY_SAMPLE_INTERVAL_MS).unref();
  }

  #stopSampler(): void {
    clearInterval(this.#sampler);
    this.#sampler = undefined;
  }

  /** V8's heap cap does not see native (libvips) memory; the resident set does. */
  async #sampleMemory(): Promise<void> {
    if (this.#sampling) return;
    this.#sampling = true;
    try {
      await Promise.all(
        [...this.#workers].map(async (worker) => {
          if (worker.child.pid === undefined || worker.killReason !== undefined) return;
          const rssBytes = await readRssBytes(worker.child.pid);
          if (rssBytes !== undefined && rssBytes > this.#settings.memoryLimitBytes) {
            this.#kill(worker, 'memory');
          }
        }),
      );
    } finally {
      this.#sampling = false;
    }
  }
}

function keepAlive(child: ChildProcess, on: boolean): void {
  if (on) {
    child.ref();
    child.channel?.ref();
  } else {
    child.unref();
    child.channel?.unref();
  }
}

function abortedResult(when: string): FailedJobResult {
  return { status: 'failed', reason: 'timeout', detail: `the job was aborted ${when}` };
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `signal ${signal}`;
  return code === null ? 'it could not be started' : `exit code ${code}`;
}

/** Checked here, not in the worker, so that a bad policy is the caller's `TypeError`. */
function checkPolicy(policy: unknown): Policy {
  if (policy === undefined) return {};
  if (typeof policy !== 'object' || policy === null)
    throw new TypeError('policy must be an object');
  const checked: Partial<Record<FindingKind, PolicyAction>> = {};
  for (const [kind, action] of Object.entries(policy as Record<string, unknown>)) {
    if (!isFindingKind(kind)) throw new TypeError(`policy: unknown finding kind "${kind}"`);
    if (action !== 'strip' && action !== 'reject') {
      throw new TypeError(`policy.${kind} must be "strip" or "reject"`);
    }
    checked[kind] = action;
  }
  return checked;
}

function isFindingKind(kind: string): kind is FindingKind {
  return Object.hasOwn(FINDING_KINDS, kind);
}
