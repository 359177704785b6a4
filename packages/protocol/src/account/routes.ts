import type { Organisation } from '../domain/types.ts';
import type { Handler } from '../http/context.ts';
import { jsonResponse } from '../http/negotiation.ts';
import { ProblemError } from '../http/problem-error.ts';
import { organisationOf } from '../documents/routes.ts';

/** The account snapshot (`getAccount`). */
export function toAccountSnapshot(organisation: Organisation): Record<string, unknown> {
  const tier = organisation.planType === 'tier';
  return {
    organisationId: organisation.id,
    organisationName: organisation.name,
    planType: organisation.planType,
    status: organisation.status,
    monthlyAllowance: tier ? organisation.monthlyAllowance : 0,
    periodStart: organisation.periodStart.toISOString(),
    periodEnd: organisation.periodEnd.toISOString(),
    periodUsedSubmissions: organisation.periodUsedSubmissions,
    periodRemainingSubmissions: tier
      ? Math.max(0, organisation.monthlyAllowance - organisation.periodUsedSubmissions)
      : null,
    creditBalancePence: organisation.creditBalancePence,
    ...(organisation.planType === 'payg' && organisation.pricePerDocumentPence !== null
      ? { pricePerDocumentPence: organisation.pricePerDocumentPence }
      : {}),
    rateLimitPerMinute: organisation.rateLimitPerMinute,
    maxFileSizeBytes: organisation.maxFileSizeBytes,
    maxUploadSizeBytes: organisation.maxUploadSizeBytes,
  };
}

/** `GET /v1/account`: a fresh read, never cached; 404 NotProvisioned before provisioning. */
export const getAccount: Handler = async (context) => {
  const organisation = await organisationOf(context);
  if (organisation.plan === null || organisation.planType === null) {
    throw new ProblemError('NotProvisioned', {
      detail: 'The organisation has no account yet.',
      status: 404,
    });
  }
  return jsonResponse(context.request, toAccountSnapshot(organisation), {
    headers: { 'Cache-Control': 'no-store' },
  });
};
