import { ProblemError } from '../http/problem-error.ts';
import { usageHeaders } from './usage.ts';
import type { SubmitRefusal } from '../ports.ts';

/** Seconds from `now` to `until`, at least 1 (for `Retry-After`). */
export function secondsUntil(now: Date, until: Date): number {
  return Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
}

/** The problem an account refusal answers with (402, 403 or 429). */
export function refusalProblem(refusal: SubmitRefusal, now: Date): ProblemError {
  switch (refusal.kind) {
    case 'not_provisioned':
      return new ProblemError('NotProvisioned', {
        detail: 'The organisation has no active plan yet.',
      });
    case 'suspended':
      return new ProblemError('CustomerSuspended', {
        detail: 'The organisation’s account is suspended.',
      });
    case 'quota_exceeded':
      return new ProblemError('QuotaExceeded', {
        detail: `The monthly allowance of ${refusal.organisation.monthlyAllowance} documents is used up until ${refusal.organisation.periodEnd.toISOString()}.`,
        extensions: { periodEnd: refusal.organisation.periodEnd.toISOString() },
        headers: {
          ...usageHeaders(refusal.organisation),
          'Retry-After': String(secondsUntil(now, refusal.organisation.periodEnd)),
        },
      });
    case 'insufficient_credit':
      return new ProblemError('InsufficientCredit', {
        detail: `The credit balance of ${refusal.balancePence} pence does not cover the price of ${refusal.pricePence} pence per document.`,
        extensions: {
          balancePence: refusal.balancePence,
          pricePerDocumentPence: refusal.pricePence,
        },
        headers: usageHeaders(refusal.organisation),
      });
  }
}
