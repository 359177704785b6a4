/**
 * The parent side of an executor: forks the child, sends it one job at a time, and turns what
 * cannot come back as a verdict into one — the child dying (`crash`), not answering in time
 * (`hang`, the child is killed), or its RSS passing the bound (`memory`). After any of them a
 * fresh child is started for the next job.
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import type { ChildMessage, Job, Verdict } from './protocol.ts';
import { COVERAGE_SCOPE_ENV, FAILPOINTS_ENV } from './protocol.ts';

/** The child's V8 heap ceiling; past it V8 aborts, which is a `crash` with the input saved. */
export const CHILD_HEAP_LIMIT_MIB = 1_024;
/**
 * How far one input may raise the child's peak RSS above its warmed-up level. Sized from the
 * engine's own model (`maxDecodeBytes` of decodes in flight plus a few copies of a `maxBytes`
 * file, README "Limits") under the fuzzing limits: 128 MiB + 8 x 16 MiB, and 128 MiB of slack.
 */
export const MAX_RSS_GROWTH_BYTES = 384 * 1024 * 1024;
/** Past this growth the child is killed mid-job rather than waiting for it to finish. */
const KILL_RSS_GROWTH_BYTES = 2 * MAX_RSS_GROWTH_BYTES;
/** How often the parent reads the child's RSS while a job runs. */
const RSS_POLL_MS = 100;
/** How long a child may take to load the engine before it is judged broken. */
const STARTUP_TIMEOUT_MS = 120_000;

/** What one execution gave back. */
export interface Execution {
  readonly verdict: Verdict;
  readonly newBlocks: readonly string[];
  readonly durationMs: number;
  /** Time the child spent collecting coverage after the job (0 when it did not answer). */
  readonly coverageMs: number;
  /** The child's heap right after a forced collection, when it ran one after this job. */
  readonly retainedHeapBytes?: number;
  /** Growth of the child's peak RSS over its warmed-up RSS, bytes. */
  readonly rssGrowthBytes: number;
}

/** Options of {@link Executor}. */
export interface ExecutorOptions {
  /** Which scripts count for coverage: the engine's or the HTTP front's. */
  readonly scope: 'engine' | 'http';
  /** Longest a job may take before it is a hang and the child is killed. */
  readonly hangMs: number;
  /** The child honours the failpoints of {@link FAILPOINTS_ENV} (the executor's own tests). */
  readonly failpoints?: boolean;
}

interface Running {
  readonly id: number;
  /** The child's RSS once warmed up. */
  readonly baseline: number;
  readonly resolve: (execution: Execution) => void;
  readonly timer: NodeJS.Timeout;
  readonly poll: NodeJS.Timeout;
}

/** One child process running jobs, replaced whenever it dies or is killed. */
export class Executor {
  readonly #options: ExecutorOptions;
  #child: ChildProcess | undefined;
  #ready: Promise<number> | undefined;
  #running: Running | undefined;
  #nextId = 1;
  /** Children started (the first one and every replacement). */
  starts = 0;

  constructor(options: ExecutorOptions) {
    this.#options = options;
  }

  /** Starts the child (if none runs) and waits until it has loaded the code under test. */
  async start(): Promise<number> {
    if (this.#ready) return this.#ready;
    const child = fork(fileURLToPath(new URL('./child.ts', import.meta.url)), [], {
      execArgv: [
        '--expose-gc',
        '--import',
        'tsx',
        '--conditions=@disarm/source',
        `--max-old-space-size=${CHILD_HEAP_LIMIT_MIB}`,
      ],
      env: {
        ...process.env,
        [COVERAGE_SCOPE_ENV]: this.#options.scope,
        [FAILPOINTS_ENV]: this.#options.failpoints === true ? '1' : '0',
      },
      serialization: 'advanced',
      // `--import tsx` resolves from here, whoever started the campaign.
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.starts += 1;
    this.#child = child;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-8_192);
    });
    this.#ready = new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`the fuzz executor did not start within ${STARTUP_TIMEOUT_MS} ms`));
      }, STARTUP_TIMEOUT_MS);
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve(message.rssBytes);
        } else this.#onResult(message);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(`the fuzz executor exited before it was ready (${signal ?? code}): ${stderr}`),
        );
        this.#onExit(child, code, signal, stderr);
      });
    });
    return this.#ready;
  }

  /** Runs one job; never rejects for anything the job does. */
  async run(job: Job): Promise<Execution> {
    if (this.#running) throw new Error('the executor runs one job at a time');
    const baseline = await this.start();
    const child = this.#child;
    if (!child) throw new Error('no executor');
    const id = this.#nextId++;
    return new Promise<Execution>((resolve) => {
      const timer = setTimeout(() => {
        this.#kill(child, {
          ok: false,
          kind: 'hang',
          message: `no answer within ${this.#options.hangMs} ms`,
        });
      }, this.#options.hangMs);
      const poll = setInterval(() => {
        void rssOf(child.pid).then((rss) => {
          if (rss !== undefined && rss - baseline > KILL_RSS_GROWTH_BYTES) {
            this.#kill(child, {
              ok: false,
              kind: 'memory',
              message: `RSS reached ${mib(rss)} MiB (${mib(rss - baseline)} MiB over the warmed-up level)`,
            });
          }
        });
      }, RSS_POLL_MS);
      this.#running = {
        id,
        baseline,
        timer,
        poll,
        resolve: (execution) => {
          const growth = execution.rssGrowthBytes;
          if (execution.verdict.ok && growth > MAX_RSS_GROWTH_BYTES) {
            // The peak stays raised in this process: start a fresh one for the next input.
            this.#kill(child, undefined);
            resolve({
              ...execution,
              verdict: {
                ok: false,
                kind: 'memory',
                message: `peak RSS grew ${mib(growth)} MiB (bound ${mib(MAX_RSS_GROWTH_BYTES)} MiB)`,
              },
            });
            return;
          }
          resolve(execution);
        },
      };
      child.send({ type: 'run', id, job }, (error) => {
        if (error)
          this.#kill(child, {
            ok: false,
            kind: 'crash',
            message: `the job could not be sent: ${error.message}`,
          });
      });
    });
  }

  /** Stops the child. */
  async close(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    this.#ready = undefined;
    if (child?.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  #onResult(message: Extract<ChildMessage, { type: 'result' }>): void {
    const running = this.#running;
    if (running?.id !== message.id) return;
    this.#settle(
      {
        verdict: message.verdict,
        newBlocks: message.newBlocks,
        durationMs: message.durationMs,
        coverageMs: message.coverageMs,
        rssGrowthBytes: 0,
        ...(message.collected ? { retainedHeapBytes: message.heapUsedBytes } : {}),
      },
      message.peakRssBytes,
    );
  }

  #settle(execution: Execution, peakRssBytes: number | undefined): void {
    const running = this.#running;
    if (!running) return;
    this.#running = undefined;
    clearTimeout(running.timer);
    clearInterval(running.poll);
    running.resolve({
      ...execution,
      rssGrowthBytes: peakRssBytes === undefined ? 0 : Math.max(0, peakRssBytes - running.baseline),
    });
  }

  /** Kills the child; the job in flight (if any) ends with `verdict`. */
  #kill(child: ChildProcess, verdict: Verdict | undefined): void {
    if (verdict)
      this.#settle(
        { verdict, newBlocks: [], durationMs: 0, coverageMs: 0, rssGrowthBytes: 0 },
        undefined,
      );
    if (this.#child === child) {
      this.#child = undefined;
      this.#ready = undefined;
    }
    child.kill('SIGKILL');
  }

  #onExit(
    child: ChildProcess,
    code: number | null,
    signal: NodeJS.Signals | null,
    stderr: string,
  ): void {
    if (this.#child === child) {
      this.#child = undefined;
      this.#ready = undefined;
    }
    if (this.#running) {
      this.#settle(
        {
          verdict: {
            ok: false,
            kind: 'crash',
            message: `the executor died (${signal ?? `exit ${code}`})`,
            stack: stderr.trim(),
          },
          newBlocks: [],
          durationMs: 0,
          coverageMs: 0,
          rssGrowthBytes: 0,
        },
        undefined,
      );
    }
  }
}

function mib(bytes: number): number {
  return Math.round(bytes / (1024 * 1024));
}

/** The RSS of a process from `/proc` (Linux), or `undefined` elsewhere or once it is gone. */
async function rssOf(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const statm = await readFile(`/proc/${pid}/statm`, 'utf8');
    const pages = Number(statm.split(' ')[1]);
    return Number.isFinite(pages) ? pages * 4096 : undefined;
  } catch {
    return undefined;
  }
}
