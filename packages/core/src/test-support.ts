/** Helpers shared by the engine's tests (not part of the package: nothing the engine imports). */
import type { ByteSource } from './_internal/byte-source.ts';
import { DecodeGate } from './_internal/concurrency.ts';
import type { EngineContext } from './handlers/types.ts';
import { DEFAULT_LIMITS, Deadline, EntryBudget, ExpansionBudget } from './limits.ts';
import type { CleanedOutcome, Outcome } from './outcome.ts';

/** The outcome, which must be `cleaned`; any other fails the test with its reason and detail. */
export function cleaned(outcome: Outcome): CleanedOutcome {
  if (outcome.status !== 'cleaned') {
    throw new Error(`expected cleaned, got ${outcome.reason}: ${outcome.detail}`);
  }
  return outcome;
}

/** A cleaned outcome's findings as `{ kind: count }`. */
export const findingsOf = (outcome: CleanedOutcome): Record<string, number> =>
  Object.fromEntries(outcome.findings.map((finding) => [finding.kind, finding.count]));

/** A real engine context, as `disarm()` makes one, for calling a handler or a verify directly. */
export function engineContext(timeoutMs = DEFAULT_LIMITS.timeoutMs): EngineContext {
  const limits = DEFAULT_LIMITS;
  return {
    limits,
    policy: {},
    scanners: [],
    renderers: [],
    deadline: new Deadline(timeoutMs),
    budget: new ExpansionBudget(limits.maxBytes),
    entries: new EntryBudget(limits.maxEntries),
    decodes: new DecodeGate(limits.maxDecodeBytes),
    signal: new AbortController().signal,
    depth: 0,
    ancestors: [],
    processMember: () => Promise.reject(new Error('no members here')),
    scanMember: () => Promise.resolve([]),
  };
}

/**
 * A source that records the largest read made of it (by range or in chunks) and refuses to be
 * read whole: for the tests that hold a family to reading a large file by range.
 */
export class CountingSource implements ByteSource {
  readonly length: number;
  readonly bytes = undefined;
  /** Bytes of the largest single read so far. */
  largestRead = 0;
  readonly #inner: ByteSource;

  constructor(inner: ByteSource) {
    this.#inner = inner;
    this.length = inner.length;
  }

  read(offset: number, length: number): Uint8Array {
    const bytes = this.#inner.read(offset, length);
    this.largestRead = Math.max(this.largestRead, bytes.length);
    return bytes;
  }

  async *chunks(start?: number, end?: number): AsyncGenerator<Uint8Array, void, undefined> {
    for await (const chunk of this.#inner.chunks(start, end)) {
      this.largestRead = Math.max(this.largestRead, chunk.length);
      yield chunk;
    }
  }

  readAll(): Promise<Uint8Array> {
    return Promise.reject(new Error('a family read the whole file'));
  }
}
