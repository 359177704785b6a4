/**
 * Checks of written parts in worker threads, while the parts are being written.
 *
 * Verify before release parses every written XML part again, independently of the rewrite. On one
 * thread that second parse comes after the rewrite and costs about half as much again. Here the
 * rewrite hands each chunk of a part to a check worker as it hands it to the zip writer, so the
 * check runs beside the rewrite on another core. The worker parses exactly the bytes it was given
 * and reports their SHA-256 and size; verify before release still lists the written package,
 * inflates every member and holds it to its CRC-32, and accepts a worker's verdict for a member
 * only when the member's SHA-256 and size are those the worker checked (other bytes fail verify).
 * A member without a verdict (no worker could start here, or its worker died) is checked on the
 * main thread as before: the workers only ever save time, never a check.
 */
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

import { sha256Hex } from '../../_internal/bytes.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { XmlChunkWalk } from '../../_internal/xml-rewrite.ts';
import type { XmlWalker } from '../../_internal/xml-rewrite.ts';
import type { Deadline } from '../../limits.ts';
import { VerifyFailure } from '../types.ts';
import type { PartCheckResult } from '../types.ts';

/** The checks a worker can run: an OOXML XML part, an ODF XML stream. */
export type PartCheckKind = 'ooxml-xml' | 'odf-xml';

/** What a part passed its check with: what it names that only the package can resolve. */
export interface PartReport {
  /**
   * OOXML: relationship id -> the first element naming it. ODF: package path -> the first link
   * to it, as written.
   */
  readonly references: ReadonlyMap<string, string>;
}

/**
 * One part checked as its bytes come, on whichever thread.
 * @throws {VerifyFailure} from `write` or `end`, the part's failure.
 */
export interface PartCheck {
  write(chunk: Uint8Array): void;
  end(): PartReport;
}

/**
 * A part check that walks the part's XML as its chunks come. The family's walker throws its
 * {@link VerifyFailure}s and records in `references` what only the package can resolve; a part the
 * parser refuses (malformed, a DOCTYPE, too large) fails `parseCheck`.
 */
export class WalkedPartCheck implements PartCheck {
  readonly #walk: XmlChunkWalk;
  readonly #references = new Map<string, string>();
  readonly #parseCheck: string;

  constructor(
    name: string,
    parseCheck: string,
    walker: (references: Map<string, string>) => XmlWalker,
  ) {
    this.#parseCheck = parseCheck;
    this.#walk = new XmlChunkWalk(name, walker(this.#references));
  }

  write(chunk: Uint8Array): void {
    this.#parsing(() => {
      this.#walk.write(chunk);
    });
  }

  end(): PartReport {
    this.#parsing(() => {
      this.#walk.close();
    });
    return { references: this.#references };
  }

  #parsing(step: () => void): void {
    try {
      step();
    } catch (error) {
      if (error instanceof Rejection) throw new VerifyFailure(this.#parseCheck, error.message);
      throw error;
    }
  }
}

/** Runs a check over a whole part at once. */
export function checkWhole(check: PartCheck, bytes: Uint8Array): PartReport {
  check.write(bytes);
  return check.end();
}

/** Main thread -> worker. */
export type PartCheckRequest =
  | {
      readonly type: 'start';
      readonly id: number;
      readonly kind: PartCheckKind;
      readonly name: string;
    }
  | { readonly type: 'chunk'; readonly id: number; readonly bytes: Uint8Array }
  | { readonly type: 'end'; readonly id: number }
  | { readonly type: 'abort'; readonly id: number };

/** Worker -> main thread. */
export type PartCheckReply =
  | { readonly type: 'consumed'; readonly id: number; readonly bytes: number }
  | { readonly type: 'done'; readonly id: number; readonly result: PartCheckResult }
  /** The check itself broke (not the part): the main thread checks the part instead. */
  | { readonly type: 'error'; readonly id: number; readonly message: string };

/** One part being checked while it is written. */
export interface PartCheckSession {
  /**
   * Hands on the next chunk. Resolves at once unless the worker is more than
   * {@link HIGH_WATER_BYTES} behind on this part, so a slow worker bounds, not grows, memory.
   */
  write(chunk: Uint8Array): Promise<void>;
  /** The part is complete. */
  end(): void;
  /** The part will not be completed (its rewrite failed); the worker forgets it. */
  abort(): void;
  /**
   * The verdict. Rejects when no verdict can be had (the worker died or could not start, the
   * session was aborted); the part must then be checked another way. Never unhandled.
   */
  readonly result: Promise<PartCheckResult>;
}

/** Bytes handed to a worker and not yet parsed, per part, before `write` waits. */
const HIGH_WATER_BYTES = 8 * 1024 * 1024;

/** A worker with no part to check for this long is ended (a new one starts when needed). */
const IDLE_MS = 10_000;

/**
 * Worker threads beside the main thread: one per spare core, at least one (the main thread keeps
 * rewriting; a single core still gains nothing but loses little), at most four.
 */
const WORKERS = Math.max(1, Math.min(4, availableParallelism() - 1));

/**
 * The worker module. From source (this file is `.ts`, under vitest or tsx) it is
 * `src/check-worker.ts`, started through tsx; in the bundle every module sits in `dist/`, beside
 * `check-worker.mjs`.
 */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_MODULE = FROM_SOURCE
  ? new URL('../../check-worker.ts', import.meta.url)
  : new URL('./check-worker.mjs', import.meta.url);

interface Pending {
  readonly resolve: (result: PartCheckResult) => void;
  readonly reject: (error: Error) => void;
  inFlight: number;
  drained: (() => void) | undefined;
}

class CheckWorker {
  readonly #worker: Worker;
  readonly #sessions = new Map<number, Pending>();
  readonly #onGone: (worker: CheckWorker, healthy: boolean) => void;
  #idle: NodeJS.Timeout | undefined;
  #gone = false;
  /** Whether the worker ever answered (one that never did could not start here). */
  #answered = false;
  /** Ended for being idle, not broken. */
  #retired = false;

  constructor(onGone: (worker: CheckWorker, healthy: boolean) => void) {
    this.#onGone = onGone;
    this.#worker = startWorker();
    // Ended when no part comes within the idle time (it may have been started ahead).
    this.#rest();
    this.#worker.on('message', (reply: PartCheckReply) => {
      this.#receive(reply);
    });
    this.#worker.on('error', (error) => {
      this.#end(error);
    });
    this.#worker.on('exit', (code) => {
      this.#end(new Error(`the check worker exited with code ${code}`));
    });
  }

  /** Bytes handed on and not yet parsed, across this worker's parts. */
  get load(): number {
    let load = 0;
    for (const session of this.#sessions.values()) load += session.inFlight + 1;
    return load;
  }

  /** Broken, exited, or ending for being idle: takes no new part. */
  get gone(): boolean {
    return this.#gone || this.#retired;
  }

  start(id: number, kind: PartCheckKind, name: string): PartCheckSession {
    let settle: Pick<Pending, 'resolve' | 'reject'> | undefined;
    const result = new Promise<PartCheckResult>((resolve, reject) => {
      settle = { resolve, reject };
    });
    // Awaited by verify in its turn, or never (the write failed): not an unhandled rejection.
    result.catch(() => undefined);
    if (!settle) throw new Error('unreachable: a promise executor runs at once');
    const pending: Pending = { ...settle, inFlight: 0, drained: undefined };
    if (this.#gone) {
      pending.reject(new Error('the check worker is gone'));
    } else {
      this.#sessions.set(id, pending);
      this.#busy();
      this.#post({ type: 'start', id, kind, name });
    }
    return {
      write: async (bytes) => {
        if (!this.#sessions.has(id)) return;
        pending.inFlight += bytes.length;
        this.#post({ type: 'chunk', id, bytes });
        if (pending.inFlight <= HIGH_WATER_BYTES) return;
        await new Promise<void>((resolve) => {
          pending.drained = resolve;
        });
      },
      end: () => {
        if (this.#sessions.has(id)) this.#post({ type: 'end', id });
      },
      abort: () => {
        if (!this.#sessions.has(id)) return;
        this.#post({ type: 'abort', id });
        this.#settle(id, () => {
          pending.reject(new Error('the check was aborted'));
        });
      },
      result,
    };
  }

  #receive(reply: PartCheckReply): void {
    this.#answered = true;
    const pending = this.#sessions.get(reply.id);
    if (!pending) return;
    switch (reply.type) {
      case 'consumed':
        pending.inFlight -= reply.bytes;
        if (pending.inFlight <= HIGH_WATER_BYTES / 2) this.#wake(pending);
        return;
      case 'done':
        this.#settle(reply.id, () => {
          pending.resolve(reply.result);
        });
        return;
      case 'error':
        this.#settle(reply.id, () => {
          pending.reject(new Error(reply.message));
        });
        return;
    }
  }

  #settle(id: number, settle: () => void): void {
    const pending = this.#sessions.get(id);
    if (!pending) return;
    this.#sessions.delete(id);
    this.#wake(pending);
    settle();
    if (this.#sessions.size === 0) this.#rest();
  }

  #wake(pending: Pending): void {
    const drained = pending.drained;
    pending.drained = undefined;
    drained?.();
  }

  #post(request: PartCheckRequest): void {
    this.#worker.postMessage(request);
  }

  /** Keeps the process alive while a part is being checked (a verdict is awaited). */
  #busy(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    this.#worker.ref();
  }

  #rest(): void {
    clearTimeout(this.#idle);
    this.#worker.unref();
    this.#idle = setTimeout(() => {
      if (this.#sessions.size > 0) return;
      this.#retired = true;
      void this.#worker.terminate();
    }, IDLE_MS);
    this.#idle.unref();
  }

  #end(error: Error): void {
    if (this.#gone) return;
    this.#gone = true;
    clearTimeout(this.#idle);
    for (const [id, pending] of [...this.#sessions]) {
      this.#sessions.delete(id);
      this.#wake(pending);
      pending.reject(error);
    }
    this.#onGone(this, this.#answered || this.#retired);
  }
}

/**
 * Nothing of the parent's command line: a worker inherits it by default, and options such as
 * `--input-type` (a parent started with `node --input-type=module -e ...`) stop it loading.
 */
export const WORKER_OPTIONS = Object.freeze({ execArgv: [] as string[] });

function startWorker(): Worker {
  const options = { ...WORKER_OPTIONS };
  if (!FROM_SOURCE) return new Worker(WORKER_MODULE, options);
  // TypeScript source (tests, development): tsx registers its loader in the worker first.
  const tsxApi = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const bootstrap = [
    `const { register } = await import(${JSON.stringify(tsxApi)});`,
    'register();',
    `await import(${JSON.stringify(WORKER_MODULE.href)});`,
  ].join('\n');
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), options);
}

/** The pool: workers are started on first use and end when idle or broken. */
class CheckPool {
  readonly #workers: CheckWorker[] = [];
  #nextId = 1;
  /** Set once a worker could not be started or died: parts are then checked on the main thread. */
  #unavailable = false;

  /** Starts a worker if none is running, so that its start-up overlaps other work. */
  prepare(): void {
    if (this.#unavailable || this.#workers.some((worker) => !worker.gone)) return;
    try {
      this.#pick();
    } catch {
      this.#unavailable = true;
    }
  }

  start(kind: PartCheckKind, name: string): PartCheckSession | undefined {
    if (this.#unavailable) return undefined;
    let worker: CheckWorker | undefined;
    try {
      worker = this.#pick();
    } catch {
      this.#unavailable = true;
      return undefined;
    }
    const id = this.#nextId;
    this.#nextId += 1;
    return worker.start(id, kind, name);
  }

  #pick(): CheckWorker {
    const live = this.#workers.filter((worker) => !worker.gone);
    const idle = live.find((worker) => worker.load === 0);
    if (idle) return idle;
    if (live.length < WORKERS) {
      const worker = new CheckWorker((gone, healthy) => {
        this.#forget(gone);
        if (!healthy) this.#unavailable = true;
      });
      this.#workers.push(worker);
      return worker;
    }
    return live.reduce((least, worker) => (worker.load < least.load ? worker : least));
  }

  #forget(worker: CheckWorker): void {
    const index = this.#workers.indexOf(worker);
    if (index >= 0) this.#workers.splice(index, 1);
  }
}

const pool = new CheckPool();

/**
 * Starts checking one part in a worker thread; its chunks follow with `write`. `undefined` when
 * workers are unavailable here: the part is then checked on the main thread by verify.
 */
export function startPartCheck(kind: PartCheckKind, name: string): PartCheckSession | undefined {
  return pool.start(kind, name);
}

/**
 * Starts a check worker ahead of its first part (a worker takes tens of milliseconds to start),
 * for a caller that knows a part large enough for one is coming.
 */
export function preparePartChecks(): void {
  pool.prepare();
}

/**
 * A part's chunks, each handed to a check worker as it is handed on to the zip writer; the
 * worker's verdict is kept in `verdicts` under `key` for verify before release. A part of one
 * chunk is left to verify: checking it there costs less than a worker's turn.
 */
export async function* checkedWhileWritten(
  chunks: AsyncIterable<Uint8Array>,
  kind: PartCheckKind,
  name: string,
  verdicts: Map<string, Promise<PartCheckResult>>,
  key: string,
  deadline: Pick<Deadline, 'race'>,
): AsyncGenerator<Uint8Array, void, undefined> {
  let first: Uint8Array | undefined;
  let session: PartCheckSession | undefined;
  let complete = false;
  try {
    for await (const chunk of chunks) {
      if (first === undefined && session === undefined) {
        first = chunk;
        continue;
      }
      if (first !== undefined) {
        session = startPartCheck(kind, name);
        if (session) verdicts.set(key, session.result);
        // A worker that stops answering must not hold the rewrite past the file's deadline.
        if (session) await deadline.race(session.write(first));
        yield first;
        first = undefined;
      }
      if (session) await deadline.race(session.write(chunk));
      yield chunk;
    }
    if (first !== undefined) yield first;
    complete = true;
    session?.end();
  } finally {
    if (!complete) session?.abort();
  }
}

/**
 * A check worker's verdict on a part, taken only for the very bytes the package holds: their
 * SHA-256 and size must be those the worker parsed. `undefined` when there is no verdict to take
 * (none was reached, or the worker broke): the caller then checks the part itself.
 * @throws {VerifyFailure} the part's failure as the worker found it; `zipCheck` when the member
 *   is not the bytes the worker checked.
 * @throws {DisarmError} `ERR_TIMEOUT` when the deadline passes first.
 */
export async function verdictOn(
  verdict: Promise<PartCheckResult> | undefined,
  bytes: Uint8Array,
  name: string,
  zipCheck: string,
  deadline: Pick<Deadline, 'race'>,
): Promise<PartReport | undefined> {
  if (verdict === undefined) return undefined;
  // Waited for no longer than the file's deadline (ERR_TIMEOUT), like any other step.
  const result = await deadline.race(verdict.catch(() => undefined));
  if (result === undefined) return undefined;
  if (result.status === 'failed') throw new VerifyFailure(result.check, result.message);
  if (result.size !== bytes.length || result.sha256 !== sha256Hex(bytes)) {
    throw new VerifyFailure(zipCheck, `${name} is not the part that was checked as written`);
  }
  return { references: result.references };
}
