import { randomUUID } from 'node:crypto';
import { constants, rmSync } from 'node:fs';
import { copyFile, link, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { builtinScanner, createClamdScanner, disarmToFile, isDisarmError } from '@disarm/core';
import type {
  CleanedFileOutcome,
  CleanedOutcome,
  DisarmOptions,
  DisarmSource,
  FileOutcome,
  Outcome,
  Renderer,
  Scanner,
} from '@disarm/core';

import {
  createRenderers,
  parseRendererSelection,
  RendererUnavailableError,
} from '../render/renderers.ts';
import {
  isParentMessage,
  MEMORY_REPORT_ENV,
  OUTPUT_TEMP_ENV,
  RENDERERS_ENV,
  WORKER_TEMP_ENV,
} from './_protocol.ts';
import type { JobMessage, WorkerMessage } from './_protocol.ts';
import type { ClamdConfig, JobResult } from './types.ts';

/**
 * How long a worker that is exiting lets its renderers close (their browser or office processes
 * stop) before it exits anyway.
 */
const RENDERER_CLOSE_TIMEOUT_MS = 5_000;

/** What a worker's engine call is given besides the file (see {@link DisarmFunction}). */
export interface WorkerDisarmOptions extends DisarmOptions {
  /**
   * Where the worker wants the cleaned copy: a new file in the job's output folder. Pass it to
   * `disarmToFile` from `@disarm/core`, so that a large file and its copy never sit whole in the
   * worker's memory; a function that returns the bytes instead (`disarm`) works too.
   */
  readonly outputPath: string;
}

/**
 * The engine entry point a worker calls: `disarmToFile` from `@disarm/core` unless replaced. It
 * may answer with the copy written to `options.outputPath` or with its bytes.
 */
export type DisarmFunction = (
  source: DisarmSource,
  options: WorkerDisarmOptions,
) => Promise<Outcome | FileOutcome>;

/** Options of {@link startWorker}. */
export interface StartWorkerOptions {
  /**
   * The engine call, e.g. core's `disarmToFile` with extra scanners bound in. Scanners and other
   * functions cannot cross the IPC channel, so a worker module is where they are configured.
   * With the pool's `clamd` option, `options.scanners` holds the built-in and clamd scanners;
   * keep them when adding yours. `options.renderers` holds the pool's renderers, which live as
   * long as the worker.
   * @default `(source, options) => disarmToFile(source, options.outputPath, options)`
   */
  readonly disarm?: DisarmFunction;
}

/**
 * Serves jobs from the parent pool in this process: the body of a worker module. The process
 * must have been forked by {@link createWorkerPool}; it exits when the pool disconnects.
 *
 * @example A worker module that adds a scanner, used with `createWorkerPool({ workerModule })`:
 * ```ts
 * import { builtinScanner, disarmToFile } from '@disarm/core';
 * import { startWorker } from '@disarm/node';
 * import { myScanner } from './my-scanner.ts';
 *
 * startWorker({
 *   disarm: (source, options) =>
 *     disarmToFile(source, options.outputPath, {
 *       ...options,
 *       scanners: [...(options.scanners ?? [builtinScanner]), myScanner],
 *     }),
 * });
 * ```
 * @throws {Error} when the process has no IPC channel (not started by a pool).
 */
export function startWorker(options: StartWorkerOptions = {}): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('a disarm worker must be started by createWorkerPool()');
  const run: DisarmFunction =
    options.disarm ?? ((source, engine) => disarmToFile(source, engine.outputPath, engine));
  const running = new Map<number, AbortController>();
  const scanners = new ScannerCache();
  const renderers = startRenderers();
  const reply = (message: WorkerMessage): void => {
    // The parent may be gone (killed, closing); there is no one left to tell.
    send(message, undefined, undefined, () => undefined);
  };

  process.on('message', (message: unknown) => {
    if (!isParentMessage(message)) return;
    if (message.type === 'abort') {
      running.get(message.id)?.abort(new Error('the job was aborted'));
      return;
    }
    const controller = new AbortController();
    running.set(message.id, controller);
    const engine = { scanners: scanners.for(message.clamd), renderers };
    void runJob(run, message, engine, controller.signal).then((result) => {
      running.delete(message.id);
      reply({ type: 'result', id: message.id, result });
    });
  });
  // The pool closed or the parent died: nothing more will come. The renderers' processes stop
  // with the worker.
  process.on('disconnect', () => {
    const timer = setTimeout(() => process.exit(0), RENDERER_CLOSE_TIMEOUT_MS);
    void closeRenderers(renderers).finally(() => {
      clearTimeout(timer);
      process.exit(0);
    });
  });
  // A signal to the whole process group (Ctrl-C in a terminal, a hang-up, a service manager
  // stopping the group) reaches the workers too: the parent decides what stops, lets the jobs
  // in flight finish and then disconnects, which is when a worker closes.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => undefined);
  // The worker's own temporary folder (its TMPDIR) goes with it, whatever is left inside.
  const ownFolder = process.env[WORKER_TEMP_ENV];
  if (ownFolder !== undefined && ownFolder !== '') {
    process.on('exit', () => {
      rmSync(ownFolder, { recursive: true, force: true });
    });
  }
  reportMemory(reply);
  // Ready once the renderers are set up (their programs found and asked for their versions, not
  // yet started), so the first job does not wait for them; a failed set-up is each job's fault.
  void renderers
    .catch(() => undefined)
    .then(() => {
      reply({ type: 'ready' });
    });
}

function reportMemory(reply: (message: WorkerMessage) => void): void {
  const intervalMs = Number(process.env[MEMORY_REPORT_ENV]);
  if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) return;
  setInterval(() => {
    reply({ type: 'memory', rssBytes: process.memoryUsage.rss() });
  }, intervalMs).unref();
}

/**
 * The scanners of a job: the built-in one, and clamd when the pool has it. One clamd scanner per
 * configuration lives as long as the worker, so its connection bound holds across jobs.
 */
class ScannerCache {
  #key: string | undefined;
  #scanners: readonly Scanner[] | undefined;

  for(clamd: ClamdConfig | null): readonly Scanner[] | undefined {
    if (clamd === null) return undefined;
    const key = JSON.stringify(clamd);
    if (key !== this.#key || !this.#scanners) {
      this.#scanners = [builtinScanner, createClamdScanner(clamd)];
      this.#key = key;
    }
    return this.#scanners;
  }
}

/**
 * The renderers the pool chose ({@link RENDERERS_ENV}), created once for the worker's life. A
 * selection that cannot be met settles as the error every job then fails with.
 */
function startRenderers(): Promise<Renderer[]> {
  const created = (async () =>
    createRenderers({ selection: parseRendererSelection(process.env[RENDERERS_ENV] ?? 'auto') }))();
  // Reported by each job that needs the renderers, not as an unhandled rejection.
  created.catch(() => undefined);
  return created;
}

async function closeRenderers(renderers: Promise<Renderer[]>): Promise<void> {
  const created = await renderers.catch(() => []);
  await Promise.allSettled(created.map((renderer) => renderer.close()));
}

/** What the engine of a job is given besides the file: the worker's scanners and renderers. */
interface JobEngine {
  readonly scanners: readonly Scanner[] | undefined;
  readonly renderers: Promise<Renderer[]>;
}

async function runJob(
  run: DisarmFunction,
  job: JobMessage,
  engine: JobEngine,
  signal: AbortSignal,
): Promise<JobResult> {
  let output: OutputFile;
  try {
    output = await outputFile(job.outputDir, job.outputName);
  } catch (error) {
    return { status: 'failed', reason: 'internal_error', detail: describeFault(error) };
  }
  let outcome: Outcome | FileOutcome;
  try {
    const { scanners } = engine;
    outcome = await run(
      { path: job.inputPath, fileName: job.fileName },
      {
        limits: job.limits,
        policy: job.policy,
        signal,
        renderers: await engine.renderers,
        outputPath: output.partPath,
        ...(scanners === undefined ? {} : { scanners }),
      },
    );
  } catch (error) {
    await output.discard();
    return isDisarmError(error, 'ERR_TIMEOUT')
      ? { status: 'failed', reason: 'timeout', detail: error.message }
      : { status: 'failed', reason: 'internal_error', detail: describeFault(error) };
  }
  if (outcome.status === 'rejected') {
    await output.discard();
    const { reason, detail, threatNames } = outcome;
    return threatNames === undefined
      ? { status: 'rejected', reason, detail }
      : { status: 'rejected', reason, detail, threatNames };
  }
  try {
    const outputPath = await output.place(outcome);
    return {
      status: 'cleaned',
      outputPath,
      fileName: outcome.fileName,
      format: outcome.format,
      mediaType: outcome.mediaType,
      modifications: outcome.modifications,
      findings: outcome.findings,
      bytes: 'bytes' in outcome ? outcome.bytes.length : outcome.sizeBytes,
    };
  } catch (error) {
    await output.discard();
    return { status: 'failed', reason: 'internal_error', detail: describeFault(error) };
  }
}

class OutputExistsError extends Error {}

/** Where a job's copy is written: a temporary name in the output folder, then the final one. */
interface OutputFile {
  /** The temporary file the engine writes. */
  readonly partPath: string;
  /** Links the written copy (or writes returned bytes) into place; its final path. */
  place(outcome: CleanedOutcome | CleanedFileOutcome): Promise<string>;
  /** Removes the temporary file, if any, and the folder when it was made for this job. */
  discard(): Promise<void>;
}

/**
 * The copy is written under a temporary name, then linked into place: a crash never leaves a
 * truncated file under the final name, and an existing file (an input, an earlier copy) is never
 * replaced.
 */
async function outputFile(
  outputDir: string | null,
  outputName: string | null,
): Promise<OutputFile> {
  // Not under this worker's own TMPDIR, which goes when the worker exits: the caller reads it.
  const folder =
    outputDir ?? (await mkdtemp(join(process.env[OUTPUT_TEMP_ENV] ?? tmpdir(), 'disarm-')));
  await mkdir(folder, { recursive: true });
  const partPath = join(folder, `.${randomUUID()}.part`);
  return {
    partPath,
    // A folder made for this job holds nothing else: without a copy, it goes too.
    discard: () => rm(outputDir === null ? folder : partPath, { recursive: true, force: true }),
    async place(outcome) {
      // A derived name keeps only its last segment, so it cannot climb out of the folder.
      const outputPath = join(folder, outputName ?? basename(outcome.fileName));
      // A custom engine call may answer with the bytes instead of writing the file.
      if ('bytes' in outcome) await writeFile(partPath, outcome.bytes, { flag: 'wx' });
      try {
        await link(partPath, outputPath);
      } catch (error) {
        if (errorCode(error) === 'EEXIST') {
          throw new OutputExistsError(
            `${basename(outputPath)} already exists in the output folder`,
          );
        }
        // Some file systems have no hard links; an exclusive copy keeps the no-replace promise.
        try {
          await copyFile(partPath, outputPath, constants.COPYFILE_EXCL);
        } catch (copyError) {
          if (errorCode(copyError) === 'EEXIST') {
            throw new OutputExistsError(
              `${basename(outputPath)} already exists in the output folder`,
            );
          }
          throw copyError;
        }
      }
      await rm(partPath, { force: true });
      return outputPath;
    },
  };
}

function errorCode(error: unknown): unknown {
  return typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
}

/**
 * A detail for a fault: the engine's own messages are safe to show, and a system error adds only
 * its errno code (`ENOENT`), never a stack or a message that could carry more.
 */
function describeFault(error: unknown): string {
  if (error instanceof OutputExistsError || error instanceof RendererUnavailableError) {
    return error.message;
  }
  if (isDisarmError(error)) {
    const code = errorCode(error.cause);
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  // The engine reports an unreadable input as a TypeError carrying the system error.
  const code = errorCode(error) ?? (error instanceof Error ? errorCode(error.cause) : undefined);
  return typeof code === 'string'
    ? `the worker could not read or write a file (${code})`
    : 'the worker failed while processing the file';
}
