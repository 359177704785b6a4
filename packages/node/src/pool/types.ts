import type {
  ClamdScannerOptions,
  Finding,
  Limits,
  Modification,
  Policy,
  RejectionReason,
} from '@disarm/core';

import type { RendererSelection } from '../render/renderers.ts';

/**
 * Where the workers find ClamAV's clamd and how far to trust it: {@link ClamdScannerOptions}
 * without `onSkipped` (a function cannot reach a worker process; a worker reports a file it
 * let through unscanned as a process warning on its stderr, code `DISARM_CLAMD_SKIPPED`).
 */
export type ClamdConfig = Omit<ClamdScannerOptions, 'onSkipped'>;

/** Engine options of one job: the subset of `DisarmOptions` that can cross a process boundary. */
export interface JobOptions {
  /**
   * Bounds on size, nesting, pixels and time (core's `DEFAULT_LIMITS` fill the gaps).
   * `timeoutMs` is also the parent's budget: a worker silent for `timeoutMs` plus
   * {@link WorkerPoolOptions.timeoutGraceMs} is killed.
   */
  readonly limits?: Partial<Limits>;
  /** Per finding kind, `strip` (default) or `reject`. */
  readonly policy?: Policy;
}

/** One file to disarm in a worker process. Big files travel by path, never through IPC. */
export interface WorkerJob {
  /** The file to read. Relative paths are resolved against the parent's working directory. */
  readonly inputPath: string;
  /** Declared name of the file, e.g. `report.docx`; its extension decides the format. */
  readonly fileName: string;
  /**
   * Folder for the cleaned copy, created when missing. The copy is written as
   * `outputDir/<cleaned fileName>` and never replaces an existing file: a taken name makes the
   * job `failed`. Default: a fresh folder under `os.tmpdir()` per job, which the caller removes.
   */
  readonly outputDir?: string;
  /**
   * Name of the written copy inside the output folder, instead of the cleaned file name.
   *
   * **Security**: a service must set it (to an id): a caller's file name is data, and one of 255
   * characters can be over a file system's 255-byte name limit. The result's `fileName` is the
   * cleaned name either way.
   */
  readonly outputName?: string;
  /** Engine options. */
  readonly options?: JobOptions;
  /**
   * Cancels the job. A queued job ends at once; a running one is asked to stop and its worker is
   * killed when it does not within {@link WorkerPoolOptions.abortGraceMs}. Either way the job
   * resolves `failed` with reason `timeout`, unless it finished first.
   */
  readonly signal?: AbortSignal;
}

/** The file was rebuilt and its safe copy written to `outputPath`. */
export interface CleanedJobResult {
  readonly status: 'cleaned';
  /** Absolute path of the written copy. */
  readonly outputPath: string;
  /** Name of the copy: the declared name, with the new extension when converted. */
  readonly fileName: string;
  /** Extension of the returned format, e.g. `zip` for a `gz`. */
  readonly format: string;
  /** IANA media type of the returned format. */
  readonly mediaType: string;
  readonly modifications: readonly Modification[];
  /** What the rebuild removed, by kind, with where it was found (see `Finding`). */
  readonly findings: readonly Finding[];
  /** Size of the written copy in bytes. */
  readonly bytes: number;
}

/** The engine refused the file; a final answer about the file, not a fault. */
export interface RejectedJobResult {
  readonly status: 'rejected';
  readonly reason: RejectionReason;
  /** Human explanation, safe to show to the submitter. */
  readonly detail: string;
  /** Names of the threats found; only with `threat_detected`. */
  readonly threatNames?: readonly string[];
}

/** Why a job failed: the envelope's `reason` codes for a `failed` document (`getDocument`). */
export type FailureReason = 'timeout' | 'internal_error';

/** The service could not process the file (time ran out, the worker crashed, a fault). */
export interface FailedJobResult {
  readonly status: 'failed';
  readonly reason: FailureReason;
  /** What went wrong, e.g. `the worker process crashed (signal SIGSEGV)`. */
  readonly detail: string;
  /**
   * `true` when the worker was killed from outside the pool by `SIGKILL` — the kernel's OOM
   * killer under memory pressure, or an operator — rather than by the pool (time budget, memory
   * limit, abort) or by a crash of its own: nothing says the file is at fault, so a service may
   * run it again, within an attempt budget (a file that blows memory every time must not loop).
   * Absent otherwise.
   */
  readonly interrupted?: true;
}

/** What {@link WorkerPool.run} resolves to; plain data, safe to serialise. */
export type JobResult = CleanedJobResult | RejectedJobResult | FailedJobResult;

/** Options of {@link createWorkerPool}. */
export interface WorkerPoolOptions {
  /**
   * Number of worker processes. Each runs libvips with one thread (`VIPS_CONCURRENCY=1`, unless
   * the environment sets it), since the pool itself is the parallelism, and glibc's allocator
   * tuned to give large buffers back (`MALLOC_MMAP_THRESHOLD_=1048576`, `MALLOC_ARENA_MAX=2`,
   * likewise unless set).
   * @default `os.availableParallelism()` (at least 1)
   */
  readonly size?: number;
  /**
   * Resident memory one worker may use, in bytes. Enforced twice: the V8 heap is capped with
   * `--max-old-space-size` (three quarters of this), and the parent samples each worker's
   * resident set (`/proc/<pid>/status` on Linux, reports from the worker elsewhere) every
   * 100 ms and kills a worker above it, because native codec memory escapes the V8 limit.
   * The job then fails with `internal_error`. At least 64 MiB.
   * @default 2 GiB
   */
  readonly memoryLimitBytes?: number;
  /**
   * Extra time the parent gives a worker past the job's `limits.timeoutMs` before it kills it;
   * the engine normally stops itself at `timeoutMs`, this catches a worker stuck in native code.
   * @default 5_000
   */
  readonly timeoutGraceMs?: number;
  /** How long a running job may take to stop after its `signal` aborts before its worker is killed. @default 1_000 */
  readonly abortGraceMs?: number;
  /**
   * Module the workers run, as a path or `file:` URL. It must call {@link startWorker}. A `.ts`
   * module is run through `tsx` with the `@disarm/source` condition (development and tests).
   * Default: this package's own worker (`worker.mjs` beside the bundle, `src/worker.ts` from source).
   */
  readonly workerModule?: string | URL;
  /**
   * Scan every file and every member and embedded object with ClamAV's clamd as well as the
   * built-in scanner. Each worker keeps its own connections (`maxConnections` per worker).
   * Fail-closed unless `failOpen`: a file clamd cannot scan fails with `internal_error`.
   * @default no clamd: the built-in EICAR scanner only
   */
  readonly clamd?: ClamdConfig;
  /**
   * Renderers for the formats returned as PDF (svg, html, htm, ods, odp), which each worker
   * creates when it starts and keeps warm across documents, closing them when it exits: `auto`,
   * every installed one, or names in the order to ask them (see `RENDERER_NAMES`). The engine's
   * built-in renderer always follows them. A named renderer that is not ready fails the jobs
   * (`internal_error`) rather than quietly drawing with less fidelity; `createRenderers` run
   * before starting a pool tells that up front.
   * @default 'auto'
   */
  readonly renderers?: RendererSelection;
  /**
   * Where workers' stdout and stderr go: the parent's stderr (default), or nowhere. Workers never
   * write to the parent's stdout, so a CLI can keep stdout for results.
   * @default 'stderr'
   */
  readonly workerOutput?: 'stderr' | 'ignore';
}

/** Options of {@link WorkerPool.close}. */
export interface ClosePoolOptions {
  /**
   * `false` (default): finish every queued and running job, then stop the workers.
   * `true`: kill the workers now; unfinished jobs resolve `failed` (`internal_error`).
   */
  readonly force?: boolean;
}

/** A snapshot of a pool, for health checks and tests. */
export interface WorkerPoolStats {
  /** Configured number of workers. */
  readonly size: number;
  /** Worker processes alive now (starting, idle or busy). */
  readonly workers: number;
  /** Workers running a job. */
  readonly busy: number;
  /** Jobs waiting for a worker. */
  readonly queued: number;
  /** Process ids of the live workers. */
  readonly pids: readonly number[];
  /**
   * Workers replaced since the pool opened: each crashed, or was killed at a job's time budget or
   * the memory limit, and a new one took its place.
   */
  readonly restarts: number;
}

/** A pool of isolated worker processes running the engine; see {@link createWorkerPool}. */
export interface WorkerPool {
  /**
   * Runs one job on the next free worker; jobs wait in FIFO order while all are busy.
   *
   * Never rejects for something a file or a worker did: a crash, a timeout or a fault resolves
   * as a `failed` result and the pool keeps serving.
   * @throws {TypeError} (as a rejected promise) for an invalid job or options.
   * @throws {Error} (as a rejected promise) once {@link close} has been called.
   */
  run(job: WorkerJob): Promise<JobResult>;
  /**
   * Stops the pool: no new jobs, then drains or kills (see {@link ClosePoolOptions}), and resolves
   * once every worker process has exited. Calling it again returns the same promise.
   */
  close(options?: ClosePoolOptions): Promise<void>;
  /** Current state of the pool. */
  stats(): WorkerPoolStats;
}
