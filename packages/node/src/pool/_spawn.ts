import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { CAN_READ_PROC_STATUS } from './_memory.ts';
import { MEMORY_REPORT_ENV, OUTPUT_TEMP_ENV, RENDERERS_ENV, WORKER_TEMP_ENV } from './_protocol.ts';

/** How often a worker reports its resident set where the parent cannot read `/proc`. */
export const MEMORY_SAMPLE_INTERVAL_MS = 100;

/**
 * This package's worker entry. From source (this file is `.ts`, under vitest or tsx) it is
 * `src/worker.ts`; in the bundle every module sits in `dist/`, beside `worker.mjs`.
 */
export const DEFAULT_WORKER_MODULE: URL = import.meta.url.endsWith('.ts')
  ? new URL('../worker.ts', import.meta.url)
  : new URL('./worker.mjs', import.meta.url);

/**
 * glibc's allocator as a worker needs it: buffers of 1 MiB and more (decoded images, archive
 * members, stream data) are mapped on their own and given back to the system when freed, instead
 * of staying in the heap once the dynamic threshold has grown to 32 MiB (mallopt(3)
 * `M_MMAP_THRESHOLD`), and the threads of libvips and libuv share two arenas instead of up to
 * eight per core (`M_ARENA_MAX`). Measured on a 140 MB zip of 40 photos (bench/RESULTS-large.md):
 * 524 MiB peak with glibc's defaults, 258 MiB with these. Ignored by other C libraries; values
 * set in the environment win.
 */
export const WORKER_MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: String(1024 * 1024),
};

/** How a worker process is started. */
export interface ForkSettings {
  /** Absolute path of the worker module. */
  readonly modulePath: string;
  /** `--max-old-space-size`, in MiB. */
  readonly heapLimitMiB: number;
  readonly output: 'stderr' | 'ignore';
  /** The renderers the worker keeps, as {@link RENDERERS_ENV} carries them. */
  readonly renderers: string;
  /** The worker's own temporary folder (its `TMPDIR`, {@link WORKER_TEMP_ENV}). */
  readonly tempDir: string;
}

/** Absolute path of a worker module given as a path or a `file:` URL. */
export function toModulePath(module: string | URL): string {
  return module instanceof URL || module.startsWith('file:') ? fileURLToPath(module) : module;
}

/** Starts one worker process with the IPC channel, heap cap and output routing of the pool. */
export function forkWorker(settings: ForkSettings): ChildProcess {
  const execArgv = [
    // A TypeScript worker (development, tests) runs through tsx and resolves our packages' source.
    ...(/\.[cm]?ts$/.test(settings.modulePath)
      ? ['--import', tsxLoaderUrl(), '--conditions=@disarm/source']
      : []),
    `--max-old-space-size=${settings.heapLimitMiB}`,
  ];
  // The parent's stdout may carry results (`disarm clean --json`); workers only ever use stderr.
  const stdio =
    settings.output === 'stderr'
      ? (['ignore', 2, 2, 'ipc'] as const)
      : (['ignore', 'ignore', 'ignore', 'ipc'] as const);
  return fork(settings.modulePath, [], {
    execArgv,
    serialization: 'advanced',
    stdio: [...stdio],
    env: {
      // The pool is the parallelism: one libvips thread per worker, not one per core in each.
      VIPS_CONCURRENCY: '1',
      ...WORKER_MALLOC_ENV,
      ...process.env,
      ...(CAN_READ_PROC_STATUS ? {} : { [MEMORY_REPORT_ENV]: String(MEMORY_SAMPLE_INTERVAL_MS) }),
      [RENDERERS_ENV]: settings.renderers,
      [OUTPUT_TEMP_ENV]: tmpdir(),
      [WORKER_TEMP_ENV]: settings.tempDir,
      TMPDIR: settings.tempDir,
    },
  });
}

/**
 * tsx resolved from this package, not from the child's working directory, where `--import tsx`
 * would be looked up otherwise.
 */
function tsxLoaderUrl(): string {
  try {
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  } catch (cause) {
    throw new TypeError('a TypeScript workerModule needs the tsx package installed', { cause });
  }
}
