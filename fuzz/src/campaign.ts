/**
 * A fuzz campaign on one target: fast-check drives it. The property is "this input, run in the
 * executor, gives a verdict that is not a finding"; each generated case is a base input from the
 * corpus (the seeds, then every input that reached blocks no earlier input reached) and a short
 * list of mutation steps `{ mutator, seed }`. A case that fails is minimised (steps dropped while
 * the same finding remains) and saved with its recipe, and the campaign goes on.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import fc from 'fast-check';

import { Executor } from './exec/executor.ts';
import type { Execution } from './exec/executor.ts';
import { FUZZ_LIMITS, OVER_BUDGET_GRACE_MS } from './exec/engine-job.ts';
import type { FindingKind, Job, Verdict } from './exec/protocol.ts';
import { Choices } from './random.ts';
import type { Seed } from './seeds.ts';
import type { Target } from './targets.ts';
import { MAX_FUZZ_INPUT_BYTES } from './mutate/types.ts';

/** Mutation steps in one generated case (on top of the base input's own). */
export const MAX_STEPS_PER_CASE = 6;
/** Steps a corpus entry may accumulate; deeper descendants are not kept. */
const MAX_RECIPE_STEPS = 48;
/** Executions the minimiser may spend on one finding. */
const MAX_MINIMISE_EXECUTIONS = 32;
/** Wall time the minimiser may spend on one finding. */
const MAX_MINIMISE_MS = 60_000;
/** Findings too slow to reproduce many times: each try costs the hang budget. */
const UNMINIMISED_KINDS: ReadonlySet<FindingKind> = new Set(['hang', 'memory', 'crash']);
/** Corpus entries kept (the seeds always are). */
const MAX_CORPUS_ENTRIES = 2_000;
/**
 * A job that has not answered by then is a hang: an engine job is two `disarm()` calls (the
 * file, then its output again), each with its budget and grace, and the HTTP front answers a few
 * requests.
 */
export const HANG_MS = 2 * ((FUZZ_LIMITS.timeoutMs ?? 0) + OVER_BUDGET_GRACE_MS) + 5_000;

/** One mutation step of a recipe. */
export interface Step {
  readonly mutator: string;
  readonly seed: number;
}

/** How an input is made: a seed and the steps applied to it, in order. */
export interface Recipe {
  readonly seed: string;
  readonly fileName: string;
  readonly steps: readonly Step[];
}

interface Entry {
  readonly recipe: Recipe;
  readonly bytes: Uint8Array;
}

/** One distinct finding of a campaign. */
export interface Finding {
  readonly kind: FindingKind;
  readonly message: string;
  readonly stack?: string;
  readonly recipe: Recipe;
  /** The input, minimised as far as the step list goes. */
  readonly bytes: Uint8Array;
  /** Where it was saved, when the campaign saves findings. */
  readonly savedAs?: string;
  /** Executions before it was first seen. */
  readonly afterExecutions: number;
}

/** What a campaign measured. */
export interface CampaignResult {
  readonly target: string;
  readonly seconds: number;
  readonly executions: number;
  readonly executionsPerSecond: number;
  /** Blocks covered once the seeds had run, and at the end. */
  readonly blocksAfterSeeds: number;
  readonly blocks: number;
  /** `[seconds, blocks]`, sampled as the campaign went. */
  readonly growth: readonly (readonly [number, number])[];
  readonly corpusEntries: number;
  /** Verdicts by outcome (`cleaned:png`, `rejected:invalid_file`, finding kinds). */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly findings: readonly Finding[];
  readonly executorStarts: number;
  readonly maxRssGrowthBytes: number;
  /** Executions whose mutation left the input unchanged or over the size cap (not run). */
  readonly skipped: number;
  /** Mean milliseconds per execution in the engine (or HTTP front), and in coverage collection. */
  readonly meanExecutionMs: number;
  readonly meanCoverageMs: number;
  /**
   * The executor's heap after forced collections: the first (once the seeds ran) and the last
   * of the run, in bytes, so a leak across inputs shows as growth. `undefined` when none ran.
   */
  readonly retainedHeap: { readonly first: number; readonly last: number } | undefined;
}

/** Options of {@link runCampaign}. */
export interface CampaignOptions {
  readonly target: Target;
  readonly seconds: number;
  /** fast-check's seed; the same seed replays the same first cases. */
  readonly seed: number;
  /** Folder to save findings in (`<dir>/<target>/<kind>-<hash>.bin` and `.json`). */
  readonly findingsDir?: string;
  /** Progress lines. */
  readonly log?: (line: string) => void;
  /** Judge coverage (keep inputs that reach new blocks); off, the corpus stays the seeds. */
  readonly coverageGuided?: boolean;
  /**
   * An executor to run in (its scope must be the target's kind), kept open afterwards: targets of
   * one kind can share a process and its start-up. @default a new one, closed at the end
   */
  readonly executor?: Executor;
  /** Only the seeds that build in milliseconds (the CI smoke). @default false */
  readonly quickSeeds?: boolean;
  /** Receives every block key the campaign covers (to compare with another run's). */
  readonly coveredBlocks?: Set<string>;
}

/** Thrown by the property once the campaign's time is up: ends fast-check's run, not a finding. */
class TimeUp extends Error {}

class FindingError extends Error {
  readonly verdict: Extract<Verdict, { ok: false }>;

  constructor(verdict: Extract<Verdict, { ok: false }>) {
    super(`${verdict.kind}: ${verdict.message}`);
    this.verdict = verdict;
  }
}

/** Applies `steps` to `bytes`; a step that does not apply is skipped. */
export function applySteps(
  target: Target,
  bytes: Uint8Array,
  steps: readonly Step[],
  donors: readonly Uint8Array[],
): Uint8Array {
  let current = bytes;
  for (const step of steps) {
    const mutator = target.mutators.find((candidate) => candidate.name === step.mutator);
    if (!mutator) continue;
    let next: Uint8Array | undefined;
    try {
      next = mutator.apply(current, { choices: new Choices(step.seed), donors });
    } catch {
      next = undefined;
    }
    if (next && next.length <= MAX_FUZZ_INPUT_BYTES) current = next;
  }
  return current;
}

/** Makes the input of `recipe` from the target's seeds. */
export function replayRecipe(target: Target, seeds: readonly Seed[], recipe: Recipe): Uint8Array {
  const seed = seeds.find((candidate) => candidate.name === recipe.seed);
  if (!seed) throw new Error(`no seed named ${recipe.seed} in target ${target.name}`);
  return applySteps(
    target,
    seed.bytes,
    recipe.steps,
    seeds.map((candidate) => candidate.bytes),
  );
}

/** A finding's identity: its kind and message with numbers and quoted names blurred. */
function signatureOf(verdict: Extract<Verdict, { ok: false }>): string {
  const message = verdict.message
    .replace(/\d+/g, 'N')
    .replace(/"[^"]*"/g, '"…"')
    .slice(0, 200);
  const frame = /\/packages\/([^:)]+)/.exec(verdict.stack ?? '')?.[1] ?? '';
  return `${verdict.kind}|${message}|${frame}`;
}

/** Runs one target for `seconds` and reports what it measured and found. */
export async function runCampaign(options: CampaignOptions): Promise<CampaignResult> {
  const { target } = options;
  const log = options.log ?? (() => undefined);
  const seeds = await target.seeds({ quick: options.quickSeeds === true });
  const donors = seeds.map((seed) => seed.bytes);
  const executor = options.executor ?? new Executor({ scope: target.kind, hangMs: HANG_MS });
  const startsBefore = executor.starts;
  const covered = options.coveredBlocks ?? new Set<string>();
  const corpus: Entry[] = [];
  const findings = new Map<string, Finding>();
  const outcomes: Record<string, number> = {};
  const growth: [number, number][] = [];
  let executions = 0;
  let skipped = 0;
  let maxRssGrowthBytes = 0;
  let retainedHeap: { first: number; last: number } | undefined;
  let executionMs = 0;
  let coverageMs = 0;
  const started = performance.now();
  const elapsed = (): number => (performance.now() - started) / 1000;

  const execute = async (bytes: Uint8Array, fileName: string): Promise<Execution> => {
    const job: Job = target.toJob(bytes, fileName);
    const execution = await executor.run(job);
    executions += 1;
    maxRssGrowthBytes = Math.max(maxRssGrowthBytes, execution.rssGrowthBytes);
    executionMs += execution.durationMs;
    if (execution.retainedHeapBytes !== undefined) {
      retainedHeap = {
        first: retainedHeap?.first ?? execution.retainedHeapBytes,
        last: execution.retainedHeapBytes,
      };
    }
    coverageMs += execution.coverageMs;
    const label = execution.verdict.ok
      ? execution.verdict.outcome
      : `finding:${execution.verdict.kind}`;
    outcomes[label] = (outcomes[label] ?? 0) + 1;
    return execution;
  };
  const absorb = (execution: Execution): number => {
    let fresh = 0;
    for (const block of execution.newBlocks) {
      if (!covered.has(block)) {
        covered.add(block);
        fresh += 1;
      }
    }
    return fresh;
  };

  const record = async (entry: Entry, verdict: Extract<Verdict, { ok: false }>): Promise<void> => {
    const signature = signatureOf(verdict);
    if (findings.has(signature)) return;
    log(`[${target.name}] finding ${verdict.kind}: ${verdict.message}`);
    const minimal = UNMINIMISED_KINDS.has(verdict.kind) ? entry : await minimise(entry, signature);
    const finding: Finding = {
      kind: verdict.kind,
      message: verdict.message,
      ...(verdict.stack === undefined ? {} : { stack: verdict.stack }),
      recipe: minimal.recipe,
      bytes: minimal.bytes,
      afterExecutions: executions,
    };
    const savedAs =
      options.findingsDir === undefined
        ? undefined
        : await save(options.findingsDir, target.name, finding);
    findings.set(signature, savedAs === undefined ? finding : { ...finding, savedAs });
  };

  const minimise = async (entry: Entry, signature: string): Promise<Entry> => {
    let best = entry;
    let budget = entry.recipe.steps.length === 0 ? 0 : MAX_MINIMISE_EXECUTIONS;
    const stopAt = performance.now() + MAX_MINIMISE_MS;
    for (
      let index = best.recipe.steps.length - 1;
      index >= 0 && budget > 0 && performance.now() < stopAt;
      index -= 1
    ) {
      const steps = best.recipe.steps.filter((_, at) => at !== index);
      const recipe = { ...best.recipe, steps };
      const bytes = replayRecipe(target, seeds, recipe);
      budget -= 1;
      const execution = await execute(bytes, recipe.fileName);
      if (!execution.verdict.ok && signatureOf(execution.verdict) === signature)
        best = { recipe, bytes };
    }
    return best;
  };

  try {
    await executor.start();
    log(`[${target.name}] ${seeds.length} seeds, executor ready after ${elapsed().toFixed(1)} s`);
    for (const seed of seeds) {
      const entry: Entry = {
        recipe: { seed: seed.name, fileName: seed.fileName, steps: [] },
        bytes: seed.bytes,
      };
      const execution = await execute(seed.bytes, seed.fileName);
      absorb(execution);
      corpus.push(entry);
      if (!execution.verdict.ok) await record(entry, execution.verdict);
    }
    const blocksAfterSeeds = covered.size;
    const fuzzStarted = elapsed();
    growth.push([Number(fuzzStarted.toFixed(1)), covered.size]);
    let nextSample = fuzzStarted + 1;
    const names = [...new Set(target.mutators.map((mutator) => mutator.name))];
    const weighted = target.mutators.map((mutator) => mutator.name);
    const stepArbitrary = fc.record({
      mutator: fc.constantFrom(...(weighted.length > 0 ? weighted : names)),
      seed: fc.nat(),
    });
    const caseArbitrary = fc.tuple(
      fc.nat(),
      fc.array(stepArbitrary, { minLength: 1, maxLength: MAX_STEPS_PER_CASE }),
    );
    let round = 0;
    while (elapsed() - fuzzStarted < options.seconds) {
      let failing: Entry | undefined;
      const property = fc.asyncProperty(caseArbitrary, async ([pick, steps]) => {
        // The clock is read here, between executions, so a run never overlaps the next one.
        if (elapsed() - fuzzStarted >= options.seconds) throw new TimeUp();
        const base = corpus[pick % corpus.length];
        if (!base) return true;
        const bytes = applySteps(target, base.bytes, steps, donors);
        if (bytes === base.bytes || bytes.length > MAX_FUZZ_INPUT_BYTES) {
          skipped += 1;
          return true;
        }
        const recipe: Recipe = { ...base.recipe, steps: [...base.recipe.steps, ...steps] };
        const execution = await execute(bytes, recipe.fileName);
        const fresh = absorb(execution);
        if (elapsed() >= nextSample) {
          growth.push([Number(elapsed().toFixed(1)), covered.size]);
          nextSample = elapsed() + Math.max(1, Math.floor(options.seconds / 60));
        }
        if (!execution.verdict.ok) {
          failing = { recipe, bytes };
          throw new FindingError(execution.verdict);
        }
        if (
          fresh > 0 &&
          options.coverageGuided !== false &&
          corpus.length < MAX_CORPUS_ENTRIES &&
          recipe.steps.length <= MAX_RECIPE_STEPS
        ) {
          corpus.push({ recipe, bytes });
        }
        return true;
      });
      const details = await fc.check(property, {
        seed: options.seed + round,
        numRuns: Number.MAX_SAFE_INTEGER,
        endOnFailure: true,
      });
      round += 1;
      const error = details.errorInstance;
      if (details.failed && error instanceof FindingError && failing) {
        await record(failing, error.verdict);
      } else if (details.failed && !(error instanceof TimeUp)) {
        throw error instanceof Error
          ? error
          : new Error('the fuzz property failed without a finding');
      }
    }
    growth.push([Number(elapsed().toFixed(1)), covered.size]);
    const seconds = elapsed() - fuzzStarted;
    return {
      target: target.name,
      seconds,
      executions,
      executionsPerSecond: executions / Math.max(seconds, 0.001),
      blocksAfterSeeds,
      blocks: covered.size,
      growth,
      corpusEntries: corpus.length,
      outcomes,
      findings: [...findings.values()],
      executorStarts: executor.starts - startsBefore,
      maxRssGrowthBytes,
      skipped,
      meanExecutionMs: executionMs / Math.max(1, executions),
      meanCoverageMs: coverageMs / Math.max(1, executions),
      retainedHeap,
    };
  } finally {
    if (!options.executor) await executor.close();
  }
}

async function save(dir: string, target: string, finding: Finding): Promise<string> {
  const folder = join(dir, target);
  await mkdir(folder, { recursive: true });
  const hash = createHash('sha256').update(finding.bytes).digest('hex').slice(0, 12);
  const base = join(folder, `${finding.kind}-${hash}`);
  await writeFile(`${base}.bin`, finding.bytes);
  const described: Omit<Finding, 'bytes'> & { bytes?: unknown } = { ...finding };
  delete described.bytes;
  await writeFile(`${base}.json`, `${JSON.stringify({ target, ...described }, null, 2)}\n`);
  return `${base}.bin`;
}
