import { DisarmError } from './errors.ts';
import { formatBytes } from './_internal/bytes.ts';
import { Rejection } from './_internal/rejection.ts';

/**
 * Bounds on the work one file may cause. Exceeding a size, pixel or expansion bound rejects the
 * file with `file_too_large`; too deep nesting or too many entries is `policy_violation`; running
 * out of time throws {@link DisarmError} `ERR_TIMEOUT`.
 */
export interface Limits {
  /**
   * Ceiling on content bytes: the submitted file, everything an archive expands to (nested
   * archives included), and the rebuilt output. Pass the plan's ceiling here.
   * @default 104_857_600 (100 MiB, the multipart lane's ceiling)
   */
  readonly maxBytes: number;
  /**
   * How deep archives may nest: 1 allows a zip of files, 2 a zip holding a zip of files.
   * @default 5
   */
  readonly maxDepth: number;
  /**
   * Entries of an archive and of every archive nested in it, counted together (directories
   * included): one member budget across all nesting levels, so nesting cannot multiply it.
   * Counted from the central directories before any member is rebuilt.
   * @default 10_000
   */
  readonly maxEntries: number;
  /**
   * Largest expansion of one compressed unit (a zip member, an OOXML or ODF part, a PDF stream)
   * over its stored size; checked only for units that expand past
   * {@link EXPANSION_RATIO_FLOOR_BYTES}, so a small, very compressible file (a blank scan, a
   * PDF/A with a large empty colour profile) passes. Bombs below that size are bounded by
   * `maxBytes`, which counts every expanded byte of the document.
   * @default 1_000
   */
  readonly maxExpansionRatio: number;
  /** Pixels of one image, all frames and pages counted. @default 100_000_000 */
  readonly maxPixels: number;
  /**
   * Memory one image may need to decode and re-encode, estimated from its headers before any
   * pixel is decoded: decoded samples of every frame, the re-encoded copy, and the coefficient
   * buffers of progressive or multi-scan JPEG (width x height x components x 2 bytes, decoder
   * and progressive encoder). Images of one file decode side by side only while their estimates
   * together fit this figure. A larger
   * estimate rejects the file with `file_too_large` before anything is allocated, so a worker's
   * peak memory stays near this figure plus the runtime's own (about 150 MiB).
   * @default 1_073_741_824 (1 GiB)
   */
  readonly maxDecodeBytes: number;
  /** Wall-clock budget for the whole file in milliseconds. @default 120_000 */
  readonly timeoutMs: number;
}

/**
 * Units (zip members, package parts, PDF streams) smaller than this when expanded are not held to
 * `maxExpansionRatio`: a ratio alone is not a bomb. Deflate reaches about 1030-fold on uniform
 * data, so benign files (blank images, padding, repeated rows) expand a few MiB past the ratio;
 * what such a unit costs is already counted against `maxBytes`. 64 MiB.
 */
export const EXPANSION_RATIO_FLOOR_BYTES = 64 * 1024 * 1024;

/** The defaults of {@link Limits}. */
export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxBytes: 100 * 1024 * 1024,
  maxDepth: 5,
  maxEntries: 10_000,
  maxExpansionRatio: 1_000,
  maxPixels: 100_000_000,
  maxDecodeBytes: 1024 * 1024 * 1024,
  timeoutMs: 120_000,
});

/** Fills in defaults and checks the values; a bad value is a programming error (`TypeError`). */
export function resolveLimits(overrides: Partial<Limits> = {}): Limits {
  const limits: Limits = { ...DEFAULT_LIMITS, ...stripUndefined(overrides) };
  for (const [name, value] of Object.entries(limits as unknown as Record<string, unknown>)) {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new TypeError(`limits.${name} must be a positive safe integer, got ${String(value)}`);
    }
  }
  return Object.freeze(limits);
}

function stripUndefined(values: Partial<Limits>): Partial<Limits> {
  const entries: [string, unknown][] = Object.entries(values);
  return Object.fromEntries(entries.filter(([, value]) => value !== undefined));
}

/**
 * The wall clock and cancellation of one `disarm()` call. Long loops call {@link check}, so a file
 * that would take too long stops with `ERR_TIMEOUT` instead of hanging.
 */
export class Deadline {
  readonly #expiresAt: number;
  readonly #signal: AbortSignal | undefined;

  constructor(timeoutMs: number, signal?: AbortSignal) {
    this.#expiresAt = Date.now() + timeoutMs;
    this.#signal = signal;
  }

  /** Milliseconds left, at least 0. */
  remainingMs(): number {
    return Math.max(0, this.#expiresAt - Date.now());
  }

  /** Throws `ERR_TIMEOUT` when the budget is spent or the caller aborted. */
  check(): void {
    if (this.#signal?.aborted === true) {
      throw new DisarmError('ERR_TIMEOUT', 'processing was aborted by the caller', {
        cause: this.#signal.reason,
      });
    }
    if (Date.now() >= this.#expiresAt) {
      throw new DisarmError('ERR_TIMEOUT', 'processing did not finish within the time budget');
    }
  }

  /**
   * Runs `work`, rejecting with `ERR_TIMEOUT` as soon as the budget runs out or the caller aborts,
   * even when `work` itself cannot be interrupted (a native codec call). The worker pool kills a
   * process whose abandoned work keeps running.
   */
  async race<T>(work: Promise<T>): Promise<T> {
    this.check();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, rejectStop) => {
      const fail = (): void => {
        try {
          this.check();
          rejectStop(new DisarmError('ERR_TIMEOUT', 'processing did not finish in time'));
        } catch (error) {
          rejectStop(error instanceof Error ? error : new Error(String(error)));
        }
      };
      timer = setTimeout(fail, this.remainingMs());
      onAbort = fail;
      this.#signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([work, stop]);
    } finally {
      clearTimeout(timer);
      if (onAbort) this.#signal?.removeEventListener('abort', onAbort);
    }
  }
}

/**
 * Rejects a compressed unit (a zip member, a package part, a PDF stream) that expands more than
 * `maxRatio` times its stored size: a decompression bomb. Only units past
 * {@link EXPANSION_RATIO_FLOOR_BYTES} are held to it, so small, very compressible files pass.
 * @param what names the unit in the detail, e.g. `member "a.png"`.
 */
export function assertExpansionRatio(
  sizes: { readonly uncompressedSize: number; readonly compressedSize: number },
  maxRatio: number,
  what: string,
): void {
  const ratio = sizes.uncompressedSize / Math.max(1, sizes.compressedSize);
  if (sizes.uncompressedSize > EXPANSION_RATIO_FLOOR_BYTES && ratio > maxRatio) {
    throw new Rejection(
      'file_too_large',
      `${what} expands ${Math.round(ratio)} times to ${formatBytes(sizes.uncompressedSize)} (limit ${maxRatio} times past ${formatBytes(EXPANSION_RATIO_FLOOR_BYTES)}); a decompression bomb`,
    );
  }
}

/**
 * Counts content bytes across one file and everything nested in it, against `maxBytes`. Shared
 * by every level of archive recursion so a bomb cannot spread its expansion over many members.
 */
export class ExpansionBudget {
  readonly #maxBytes: number;
  #used = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Bytes counted so far. */
  get used(): number {
    return this.#used;
  }

  /** Bytes still allowed. */
  get remaining(): number {
    return Math.max(0, this.#maxBytes - this.#used);
  }

  /** Counts `bytes` more; rejects with `file_too_large` past the ceiling. */
  consume(bytes: number, what: string): void {
    this.#used += bytes;
    if (this.#used > this.#maxBytes) {
      throw new Rejection(
        'file_too_large',
        `${what} expands past the ${formatBytes(this.#maxBytes)} ceiling`,
      );
    }
  }
}

/**
 * Counts archive entries across one file and everything nested in it, against `maxEntries`: the
 * member budget shared by every level of archive recursion.
 */
export class EntryBudget {
  readonly #maxEntries: number;
  #used = 0;

  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  /** Counts `entries` more; rejects with `policy_violation` past the limit. */
  consume(entries: number): void {
    this.#used += entries;
    if (this.#used > this.#maxEntries) {
      throw entryLimitRejection(this.#maxEntries, this.#used);
    }
  }
}

/** The rejection for an archive tree holding more than `maxEntries` entries. */
export function entryLimitRejection(maxEntries: number, counted: number): Rejection {
  return new Rejection(
    'policy_violation',
    `the archive holds at least ${counted} entries, counting nested archives; the limit is ${maxEntries}`,
  );
}
