/** Helpers shared by the engine's tests (not part of the package: nothing the engine imports). */
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
