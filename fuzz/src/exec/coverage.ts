/**
 * Block coverage from V8 itself, through `node:inspector`'s `Profiler.startPreciseCoverage`
 * (`callCount: false, detailed: true`: binary block coverage, counters reset on every take).
 * After each execution the executor takes the coverage and turns it into block keys; a key never
 * seen before is what makes an input worth keeping.
 *
 * V8 reports, for each function run since the last take, its range and the ranges of the blocks
 * whose count differs from their parent: a block that ran as often as its function is not listed.
 * So every range ever reported is remembered per function, and on a later take a remembered
 * block counts as covered when the innermost reported range around it ran.
 */
import { Session } from 'node:inspector/promises';

/** Functions whose remembered blocks are kept (a cap on the collector's own memory). */
const MAX_TRACKED_FUNCTIONS = 200_000;

interface Range {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly count: number;
}

interface FunctionCoverage {
  readonly functionName: string;
  readonly ranges: readonly Range[];
  readonly isBlockCoverage: boolean;
}

interface ScriptCoverage {
  readonly url: string;
  readonly functions: readonly FunctionCoverage[];
}

/** Collects the blocks an execution reached in the scripts `include` accepts. */
export class BlockCoverage {
  readonly #session = new Session();
  readonly #include: (url: string) => boolean;
  /** Per function (`url@start`): every block range ever reported, as `start:end`. */
  readonly #known = new Map<string, Set<string>>();
  /** Every block key this process has seen covered. */
  readonly #seen = new Set<string>();

  constructor(include: (url: string) => boolean) {
    this.#include = include;
  }

  async start(): Promise<void> {
    this.#session.connect();
    await this.#session.post('Profiler.enable');
    await this.#session.post('Profiler.startPreciseCoverage', { callCount: false, detailed: true });
  }

  /** Blocks this process has seen covered so far. */
  get size(): number {
    return this.#seen.size;
  }

  /**
   * The blocks covered since the last call that this process had not seen covered before (and
   * resets V8's counters).
   */
  async takeNew(): Promise<string[]> {
    const { result } = (await this.#session.post('Profiler.takePreciseCoverage')) as {
      result: ScriptCoverage[];
    };
    const fresh: string[] = [];
    for (const script of result) {
      if (!this.#include(script.url)) continue;
      const file = shortName(script.url);
      for (const fn of script.functions) this.#collect(file, fn, fresh);
    }
    return fresh;
  }

  #collect(file: string, fn: FunctionCoverage, fresh: string[]): void {
    const [own, ...blocks] = fn.ranges;
    if (!own || own.count === 0) return;
    const id = `${file}@${own.startOffset}`;
    let known = this.#known.get(id);
    if (!known && this.#known.size < MAX_TRACKED_FUNCTIONS) {
      known = new Set();
      this.#known.set(id, known);
    }
    for (const block of blocks) known?.add(`${block.startOffset}:${block.endOffset}`);
    const mark = (key: string): void => {
      if (this.#seen.has(key)) return;
      this.#seen.add(key);
      fresh.push(key);
    };
    mark(id);
    for (const range of known ?? []) {
      const [start = 0, end = 0] = range.split(':').map(Number);
      if (innermostCount(fn.ranges, start, end) > 0) mark(`${id}/${range}`);
    }
  }

  async stop(): Promise<void> {
    await this.#session.post('Profiler.stopPreciseCoverage');
    this.#session.disconnect();
  }
}

/** The count of the innermost reported range enclosing `[start, end)`. */
function innermostCount(ranges: readonly Range[], start: number, end: number): number {
  let count = 0;
  let width = Infinity;
  for (const range of ranges) {
    if (range.startOffset <= start && range.endOffset >= end) {
      const span = range.endOffset - range.startOffset;
      if (span <= width) {
        width = span;
        count = range.count;
      }
    }
  }
  return count;
}

/** `file:///work/x/packages/core/src/a.ts` -> `core/src/a.ts`. */
function shortName(url: string): string {
  const at = url.indexOf('/packages/');
  return at >= 0 ? url.slice(at + '/packages/'.length) : url;
}
