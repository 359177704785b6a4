/**
 * One engine execution and the properties it must hold (issue 30 item 7):
 *
 * - exactly one outcome: `cleaned` (bytes, a name, known finding kinds) or `rejected` with a
 *   reason from the catalogue and a detail, or a thrown `DisarmError` with a closed code — and of
 *   those codes, `ERR_INTERNAL` and `ERR_VERIFY_FAILED` are findings too (a bad file must be a
 *   precise rejection, and a rebuild must not produce what verify refuses);
 * - within the budget: the call returns by `limits.timeoutMs` plus {@link OVER_BUDGET_GRACE_MS};
 * - idempotence: a cleaned output disarmed again is cleaned, with no findings and the same bytes.
 *
 * Memory is the parent's check (it reads this process's peak RSS after each job).
 */
import { disarm, DisarmError, FINDING_KINDS, REJECTION_REASONS } from '@disarm/core';
import type { DisarmErrorCode, Limits, Outcome } from '@disarm/core';

import type { Job, Verdict } from './protocol.ts';
import { outputDifference } from './same-output.ts';

/**
 * The engine's limits under fuzzing: the defaults, with a shorter time budget (a small input
 * that needs ten seconds is a finding) and smaller memory ceilings so the memory bound below is
 * tight.
 */
export const FUZZ_LIMITS: Partial<Limits> = {
  timeoutMs: 10_000,
  maxBytes: 16 * 1024 * 1024,
  maxDecodeBytes: 128 * 1024 * 1024,
  maxEntries: 2_000,
};

/** How late past its budget a call may return (timers, a native call finishing). */
export const OVER_BUDGET_GRACE_MS = 2_000;

const CLOSED_CODES: ReadonlySet<DisarmErrorCode> = new Set([
  'ERR_TIMEOUT',
  'ERR_NOT_YET_SUPPORTED',
  'ERR_INTERNAL',
  'ERR_WORKER_CRASHED',
  'ERR_VERIFY_FAILED',
]);

/** Runs `disarm()` on the job's file (and on its output), and judges what came back. */
export async function runEngineJob(job: Extract<Job, { kind: 'engine' }>): Promise<Verdict> {
  const first = await timed(job.bytes, job.fileName);
  if (!first.ok) return first;
  const { outcome } = first;
  if (outcome.status === 'rejected') return { ok: true, outcome: `rejected:${outcome.reason}` };
  const second = await timed(outcome.bytes, outcome.fileName);
  if (!second.ok) {
    return {
      ok: false,
      kind: 'idempotence',
      message: `the cleaned .${outcome.format} disarmed again: ${second.message}`,
      ...(second.stack === undefined ? {} : { stack: second.stack }),
    };
  }
  const again = second.outcome;
  if (again.status !== 'cleaned') {
    return {
      ok: false,
      kind: 'idempotence',
      message: `the cleaned .${outcome.format} disarmed again was rejected: ${again.reason}: ${again.detail}`,
    };
  }
  if (again.findings.length > 0) {
    return {
      ok: false,
      kind: 'idempotence',
      message: `the cleaned .${outcome.format} disarmed again had findings: ${again.findings.map((finding) => finding.kind).join(', ')}`,
    };
  }
  const difference = await outputDifference(outcome.bytes, again.bytes, outcome.fileName);
  if (difference !== undefined) {
    return {
      ok: false,
      kind: 'idempotence',
      message: `the cleaned .${outcome.format} disarmed again ${difference}`,
    };
  }
  return { ok: true, outcome: `cleaned:${outcome.format}` };
}

type Timed = { readonly ok: true; readonly outcome: Outcome } | Extract<Verdict, { ok: false }>;

async function timed(bytes: Uint8Array, fileName: string): Promise<Timed> {
  const started = performance.now();
  let outcome: Outcome;
  try {
    outcome = await disarm({ bytes, fileName }, { limits: FUZZ_LIMITS, renderers: [] });
  } catch (error) {
    return judgeFault(error);
  }
  const elapsedMs = performance.now() - started;
  const budgetMs = (FUZZ_LIMITS.timeoutMs ?? 0) + OVER_BUDGET_GRACE_MS;
  if (elapsedMs > budgetMs) {
    return {
      ok: false,
      kind: 'over-budget',
      message: `disarm() answered after ${Math.round(elapsedMs)} ms (budget ${budgetMs} ms)`,
    };
  }
  const wrong = outcomeProblem(outcome);
  return wrong === undefined
    ? { ok: true, outcome }
    : { ok: false, kind: 'bad-outcome', message: wrong };
}

function judgeFault(
  error: unknown,
): Extract<Verdict, { ok: false }> | { ok: true; outcome: Outcome } {
  if (!(error instanceof DisarmError) || !CLOSED_CODES.has(error.code)) {
    const described = error instanceof Error ? error : new Error(String(error));
    return {
      ok: false,
      kind: 'unexpected-error',
      message: `${described.name}: ${described.message}`,
      ...stackOf(described),
    };
  }
  const cause = error.cause instanceof Error ? error.cause : undefined;
  const message = `${error.code}: ${error.message}${cause ? ` (${cause.name}: ${cause.message})` : ''}`;
  switch (error.code) {
    case 'ERR_INTERNAL':
    case 'ERR_WORKER_CRASHED':
      return { ok: false, kind: 'internal-error', message, ...stackOf(cause ?? error) };
    case 'ERR_VERIFY_FAILED':
      return { ok: false, kind: 'verify-failed', message, ...stackOf(cause ?? error) };
    case 'ERR_NOT_YET_SUPPORTED':
      return { ok: false, kind: 'internal-error', message };
    case 'ERR_TIMEOUT':
      // The engine honoured its budget; whether that took too long is the parent's clock.
      return { ok: false, kind: 'over-budget', message };
  }
}

function stackOf(error: Error): { stack?: string } {
  return error.stack === undefined ? {} : { stack: error.stack };
}

/** What is wrong with the shape of an outcome, or `undefined`. */
function outcomeProblem(outcome: Outcome): string | undefined {
  if (outcome.status === 'rejected') {
    if (!REJECTION_REASONS.includes(outcome.reason))
      return `unknown rejection reason ${outcome.reason}`;
    if (typeof outcome.detail !== 'string' || outcome.detail.trim() === '')
      return 'a rejection without a detail';
    if ((outcome.threatNames !== undefined) !== (outcome.reason === 'threat_detected')) {
      return 'threatNames on a rejection that is not threat_detected, or missing on one that is';
    }
    return undefined;
  }
  if (!(outcome.bytes instanceof Uint8Array) || outcome.bytes.length === 0)
    return 'a cleaned outcome without bytes';
  if (typeof outcome.fileName !== 'string' || outcome.fileName === '')
    return 'a cleaned outcome without a name';
  for (const finding of outcome.findings) {
    if (!(finding.kind in FINDING_KINDS)) return `unknown finding kind ${finding.kind}`;
    if (!Number.isSafeInteger(finding.count) || finding.count < 1)
      return `finding ${finding.kind} counts ${finding.count}`;
  }
  return undefined;
}
