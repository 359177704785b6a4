/** Helpers shared by the engine's tests (not part of the package: nothing the engine imports). */
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
