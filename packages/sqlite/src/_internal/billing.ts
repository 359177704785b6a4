import { PLANS } from '@disarm/protocol';
import type {
  Organisation,
  PlanName,
  PlanTermsOverride,
  PlanType,
  SubmitRefusal,
} from '@disarm/protocol';

import type { OrganisationRow } from './rows.ts';

/** The terms an organisation row carries, copied from a plan and then overridden. */
export interface StoredTerms {
  readonly plan_type: PlanType | null;
  readonly monthly_allowance: number;
  readonly rate_limit_per_minute: number;
  readonly max_file_size_bytes: number;
  readonly max_upload_size_bytes: number;
  readonly price_per_document_pence: number | null;
}

/**
 * Terms of an organisation that is not provisioned yet: it cannot submit (NotProvisioned), so no
 * allowance and no price; the ceilings are the smallest plan's so nothing it can reach is larger
 * than a real plan grants.
 */
const UNPROVISIONED_TERMS: StoredTerms = {
  plan_type: null,
  monthly_allowance: 0,
  rate_limit_per_minute: PLANS.payg.rateLimitPerMinute,
  max_file_size_bytes: PLANS.payg.maxFileSizeBytes,
  max_upload_size_bytes: PLANS.payg.maxUploadSizeBytes,
  price_per_document_pence: null,
};

/** A plan's terms (or the unprovisioned ones) with the admin's overrides applied. */
export function termsFor(
  plan: PlanName | null,
  overrides: Partial<PlanTermsOverride> | undefined,
  base?: StoredTerms,
): StoredTerms {
  const start = base ?? planTerms(plan);
  return {
    plan_type: start.plan_type,
    monthly_allowance: overrides?.monthlyAllowance ?? start.monthly_allowance,
    rate_limit_per_minute: overrides?.rateLimitPerMinute ?? start.rate_limit_per_minute,
    max_file_size_bytes: start.max_file_size_bytes,
    max_upload_size_bytes: overrides?.maxUploadSizeBytes ?? start.max_upload_size_bytes,
    price_per_document_pence: overrides?.pricePerDocumentPence ?? start.price_per_document_pence,
  };
}

function planTerms(plan: PlanName | null): StoredTerms {
  if (plan === null) return UNPROVISIONED_TERMS;
  const terms = PLANS[plan];
  return {
    plan_type: terms.type,
    monthly_allowance: terms.monthlyAllowance,
    rate_limit_per_minute: terms.rateLimitPerMinute,
    max_file_size_bytes: terms.maxFileSizeBytes,
    max_upload_size_bytes: terms.maxUploadSizeBytes,
    price_per_document_pence: terms.pricePerDocumentPence,
  };
}

/** The billing period containing `atMs`: its calendar month in UTC, end exclusive. */
export function billingPeriodContaining(atMs: number): { start: number; end: number } {
  const at = new Date(atMs);
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  // Date.UTC normalises month 12 to January of the next year.
  return { start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) };
}

/**
 * The row as seen at `atMs`: once `atMs` reaches `period_end`, the period moves to the month
 * containing `atMs` (however many months passed) and usage starts again at zero. Returns the same
 * object when nothing changed, so callers can tell whether to write it back.
 */
export function rollPeriod(row: OrganisationRow, atMs: number): OrganisationRow {
  if (atMs < row.period_end) return row;
  const period = billingPeriodContaining(atMs);
  return { ...row, period_start: period.start, period_end: period.end, period_used_submissions: 0 };
}

/**
 * Why `organisation` cannot submit now, or `undefined`. Order: not provisioned, suspended, then
 * (call {@link meterRefusal} separately so upload checks can sit between) allowance or credit.
 */
export function accountRefusal(organisation: Organisation | undefined): SubmitRefusal | undefined {
  // An unknown organisation is treated as never provisioned: it cannot submit.
  if (organisation?.planType == null) return { kind: 'not_provisioned' };
  if (organisation.status === 'suspended') return { kind: 'suspended' };
  return undefined;
}

/** The allowance (tier) or credit (pay-as-you-go) refusal for one more document, or `undefined`. */
export function meterRefusal(organisation: Organisation): SubmitRefusal | undefined {
  switch (organisation.planType) {
    case 'tier':
      return organisation.periodUsedSubmissions >= organisation.monthlyAllowance
        ? { kind: 'quota_exceeded', organisation }
        : undefined;
    case 'payg': {
      const price = organisation.pricePerDocumentPence ?? 0;
      return organisation.creditBalancePence < price
        ? {
            kind: 'insufficient_credit',
            organisation,
            balancePence: organisation.creditBalancePence,
            pricePence: price,
          }
        : undefined;
    }
    case 'internal':
    case null:
      return undefined;
  }
}
