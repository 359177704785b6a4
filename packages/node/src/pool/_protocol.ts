/**
 * The IPC messages between the pool (parent) and a worker (child). Both ends are this package,
 * so the shapes are trusted; the guards only keep a stray message from being misread.
 */
import type { Limits, Policy } from '@disarm/core';

import type { ClamdConfig, JobResult } from './types.ts';

/** Environment variable that asks a worker to report its resident set every N ms (non-Linux). */
export const MEMORY_REPORT_ENV = 'DISARM_WORKER_MEMORY_REPORT_MS';
/**
 * Environment variable that tells a worker which renderers to keep (`auto` or names separated by
 * commas, as `parseRendererSelection` reads them); always set by the pool.
 */
export const RENDERERS_ENV = 'DISARM_WORKER_RENDERERS';
/**
 * Environment variable naming the worker's own temporary folder, which is also its `TMPDIR`; the
 * worker removes it when it exits, the pool once the worker is gone.
 */
export const WORKER_TEMP_ENV = 'DISARM_WORKER_TEMP_DIR';
/**
 * Environment variable naming the pool's temporary folder, where a job without an output folder
 * gets a fresh one: the caller reads it after the job, so it must outlive the worker.
 */
export const OUTPUT_TEMP_ENV = 'DISARM_WORKER_OUTPUT_TEMP_DIR';

/** Parent -> worker: process one file. */
export interface JobMessage {
  readonly type: 'job';
  readonly id: number;
  /** Absolute path. */
  readonly inputPath: string;
  readonly fileName: string;
  /** Absolute path, or `null` for a fresh temporary folder. */
  readonly outputDir: string | null;
  /** File name of the copy in the folder, or `null` for the cleaned file name. */
  readonly outputName: string | null;
  readonly limits: Limits;
  readonly policy: Policy;
  /** The pool's clamd, or `null` for the built-in scanner only. */
  readonly clamd: ClamdConfig | null;
}

/** Parent -> worker: stop job `id` (its signal aborted). */
export interface AbortMessage {
  readonly type: 'abort';
  readonly id: number;
}

export type ParentMessage = JobMessage | AbortMessage;

/** Worker -> parent: loaded and listening. */
export interface ReadyMessage {
  readonly type: 'ready';
}

/** Worker -> parent: the result of job `id`. */
export interface ResultMessage {
  readonly type: 'result';
  readonly id: number;
  readonly result: JobResult;
}

/** Worker -> parent: its resident set in bytes (only where `/proc` cannot be read). */
export interface MemoryMessage {
  readonly type: 'memory';
  readonly rssBytes: number;
}

export type WorkerMessage = ReadyMessage | ResultMessage | MemoryMessage;

function hasType(value: unknown): value is { type: unknown } {
  return typeof value === 'object' && value !== null && 'type' in value;
}

export function isParentMessage(value: unknown): value is ParentMessage {
  return hasType(value) && (value.type === 'job' || value.type === 'abort');
}

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  return (
    hasType(value) && (value.type === 'ready' || value.type === 'result' || value.type === 'memory')
  );
}
