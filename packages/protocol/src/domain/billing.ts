import type {
  NewDocument,
  NewOrganisation,
  OrganisationPatch,
  PlanTermsOverride,
  SubmitRefusal,
} from '../ports.ts';
import { PLANS } from './plans.ts';
import { isLive } from './processing.ts';
import type { PlanName, PlanType } from './plans.ts';
import type { DocumentRecord, Organisation, UploadRecord } from './types.ts';

/*
 * The metering rules of README "Plans, metering and usage", once for every store: a store reads
 * the rows inside its transaction, asks these functions what follows, and writes the answer in
 * the same transaction. Nothing here reads a clock or a database.
 */

/** The terms an organisation carries: copied from a plan at provisioning, then overridden. */
export interface OrganisationTerms {
  readonly planType: PlanType | null;
  readonly monthlyAllowance: number;
  readonly rateLimitPerMinute: number;
  readonly maxFileSizeBytes: number;
  readonly maxUploadSizeBytes: number;
  readonly pricePerDocumentPence: number | null;
}

/**
 * Terms of an organisation that is not provisioned yet: it cannot submit (NotProvisioned), so no
 * allowance and no price; the ceilings are the smallest plan's so nothing it can reach is larger
 * than a real plan grants.
 */
const UNPROVISIONED_TERMS: OrganisationTerms = {
  planType: null,
  monthlyAllowance: 0,
  rateLimitPerMinute: PLANS.payg.rateLimitPerMinute,
  maxFileSizeBytes: PLANS.payg.maxFileSizeBytes,
  maxUploadSizeBytes: PLANS.payg.maxUploadSizeBytes,
  pricePerDocumentPence: null,
};

function planTerms(plan: PlanName | null): OrganisationTerms {
  if (plan === null) return UNPROVISIONED_TERMS;
  const terms = PLANS[plan];
  return {
    planType: terms.type,
    monthlyAllowance: terms.monthlyAllowance,
    rateLimitPerMinute: terms.rateLimitPerMinute,
    maxFileSizeBytes: terms.maxFileSizeBytes,
    maxUploadSizeBytes: terms.maxUploadSizeBytes,
    pricePerDocumentPence: terms.pricePerDocumentPence,
  };
}

/**
 * `base` (default: the plan's own terms, or the unprovisioned ones) with an admin's overrides
 * applied. The multipart and raw ceiling is the same on every plan and is never overridden.
 */
export function termsFor(
  plan: PlanName | null,
  overrides: Partial<PlanTermsOverride> | undefined,
  base: OrganisationTerms = planTerms(plan),
): OrganisationTerms {
  return {
    planType: base.planType,
    monthlyAllowance: overrides?.monthlyAllowance ?? base.monthlyAllowance,
    rateLimitPerMinute: overrides?.rateLimitPerMinute ?? base.rateLimitPerMinute,
    maxFileSizeBytes: base.maxFileSizeBytes,
    maxUploadSizeBytes: overrides?.maxUploadSizeBytes ?? base.maxUploadSizeBytes,
    pricePerDocumentPence: overrides?.pricePerDocumentPence ?? base.pricePerDocumentPence,
  };
}

/** The billing period containing `at`: its calendar month in UTC, end exclusive. */
export function billingPeriodContaining(at: Date): { readonly start: Date; readonly end: Date } {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  // Date.UTC normalises month 12 to January of the next year.
  return { start: new Date(Date.UTC(year, month, 1)), end: new Date(Date.UTC(year, month + 1, 1)) };
}

/**
 * `organisation` as seen at `at`: once `at` reaches `periodEnd`, the period moves to the month
 * containing `at` (however many months passed) and usage starts again at zero. Returns the same
 * object when nothing changed, so a store can tell whether to write it back.
 */
export function rollBillingPeriod(organisation: Organisation, at: Date): Organisation {
  if (at.getTime() < organisation.periodEnd.getTime()) return organisation;
  const period = billingPeriodContaining(at);
  return {
    ...organisation,
    periodStart: period.start,
    periodEnd: period.end,
    periodUsedSubmissions: 0,
  };
}

/** A new organisation, provisioned on `input.plan` (or not yet: `null`) at `at`. */
export function provisionOrganisation(input: NewOrganisation, at: Date): Organisation {
  const period = billingPeriodContaining(at);
  return {
    id: input.id,
    name: input.name,
    status: 'active',
    plan: input.plan,
    ...termsFor(input.plan, input.terms),
    creditBalancePence: input.creditBalancePence ?? 0,
    periodStart: period.start,
    periodEnd: period.end,
    periodUsedSubmissions: 0,
    policy: input.policy ?? {},
    createdAt: at,
  };
}

/**
 * `organisation` (already rolled to the current period) with `patch` applied. A new plan starts
 * from its own terms; otherwise the overrides apply to the current terms.
 */
export function patchOrganisation(
  organisation: Organisation,
  patch: OrganisationPatch,
): Organisation {
  const plan = patch.plan ?? organisation.plan;
  const terms = termsFor(plan, patch.terms, patch.plan === undefined ? organisation : undefined);
  return {
    ...organisation,
    ...terms,
    name: patch.name ?? organisation.name,
    status: patch.status ?? organisation.status,
    plan,
    creditBalancePence: organisation.creditBalancePence + (patch.creditDeltaPence ?? 0),
    policy: patch.policy ?? organisation.policy,
  };
}

/**
 * Why `organisation` cannot submit now, or `undefined`. The order is the API's: not provisioned,
 * suspended, then allowance (tier) or credit (pay-as-you-go). An unknown organisation is treated
 * as never provisioned.
 */
export function submitRefusal(organisation: Organisation | undefined): SubmitRefusal | undefined {
  return accountRefusal(organisation) ?? meterRefusal(organisation);
}

function accountRefusal(organisation: Organisation | undefined): SubmitRefusal | undefined {
  if (organisation?.planType == null) return { kind: 'not_provisioned' };
  if (organisation.status === 'suspended') return { kind: 'suspended' };
  return undefined;
}

function meterRefusal(organisation: Organisation | undefined): SubmitRefusal | undefined {
  switch (organisation?.planType) {
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
    case undefined:
      return undefined;
  }
}

/** What {@link decideAcceptance} reads: the rows as they are inside the store's transaction. */
export interface AcceptanceInput {
  readonly document: NewDocument;
  /** The organisation, already rolled to the current period; `undefined` when unknown. */
  readonly organisation: Organisation | undefined;
  /**
   * With `document.uploadId`: that upload of the same organisation, or `undefined` when there is
   * none (an upload of another organisation is not looked at).
   */
  readonly upload: UploadRecord | undefined;
  readonly at: Date;
}

/** What a store writes when {@link decideAcceptance} accepts, all in one transaction. */
export interface Acceptance {
  readonly kind: 'accept';
  /** The new `pending` document, queued and charged, with the key of its submitted bytes. */
  readonly document: DocumentRecord & { readonly intakeKey: string };
  /** The organisation after the charge. */
  readonly organisation: Organisation;
  /** The upload now consumed by `document` (submitted by reference), or `null`. */
  readonly upload: UploadRecord | null;
}

/** Refusals of {@link decideAcceptance} beyond the account's. */
export type UploadRefusal =
  | { readonly kind: 'upload_not_found' }
  | { readonly kind: 'upload_already_submitted' }
  | { readonly kind: 'upload_not_uploaded' }
  | { readonly kind: 'upload_too_large'; readonly maxSizeBytes: number };

/**
 * Accepts or refuses one submission. Refusal order: not provisioned, suspended, the upload's own
 * refusals (unknown or expired, not uploaded, already submitted, too large), then allowance or
 * credit. An accepted document counts one submission in the period and, on pay-as-you-go, is
 * charged the organisation's price; submitted by reference it takes its name, bytes and size
 * from the upload.
 */
export function decideAcceptance(
  input: AcceptanceInput,
): Acceptance | SubmitRefusal | UploadRefusal {
  const { document: submission, organisation, upload, at } = input;
  const refused = accountRefusal(organisation);
  if (refused !== undefined || organisation === undefined) {
    return refused ?? { kind: 'not_provisioned' };
  }
  if (submission.uploadId !== undefined) {
    // Unknown, expired or foreign uploads are all UploadNotFound.
    if (upload === undefined || !isLive(upload.expiresAt, at)) {
      return { kind: 'upload_not_found' };
    }
    if (upload.uploadedAt === null) return { kind: 'upload_not_uploaded' };
    if (upload.submittedAt !== null) return { kind: 'upload_already_submitted' };
    if ((upload.sizeBytes ?? 0) > organisation.maxUploadSizeBytes) {
      return { kind: 'upload_too_large', maxSizeBytes: organisation.maxUploadSizeBytes };
    }
  }
  const meter = meterRefusal(organisation);
  if (meter !== undefined) return meter;

  const chargedPence =
    organisation.planType === 'payg' ? (organisation.pricePerDocumentPence ?? 0) : 0;
  const byReference = submission.uploadId === undefined ? undefined : upload;
  return {
    kind: 'accept',
    document: {
      id: submission.id,
      organisationId: submission.organisationId,
      status: 'pending',
      lane: submission.lane,
      // By reference, the staged upload is the truth about the bytes and their name.
      fileName: byReference?.fileName ?? submission.fileName,
      sizeBytes: byReference?.sizeBytes ?? submission.sizeBytes,
      deleteAfterDownload: submission.deleteAfterDownload,
      statusStyle202: submission.statusStyle202,
      intakeKey: byReference?.blobKey ?? submission.intakeKey,
      submittedAt: at,
      startedAt: null,
      completedAt: null,
      output: null,
      reason: null,
      threatNames: [],
      detail: null,
      reasonDetail: null,
      downloadExpiresAt: null,
      firstDownloadAt: null,
      deletedAt: null,
      outputRemovedAt: null,
      chargedPence,
      countedInAllowance: organisation.planType === 'tier',
      attempts: 0,
    },
    organisation: {
      ...organisation,
      creditBalancePence: organisation.creditBalancePence - chargedPence,
      periodUsedSubmissions: organisation.periodUsedSubmissions + 1,
    },
    upload:
      byReference === undefined
        ? null
        : { ...byReference, submittedAt: at, documentId: submission.id },
  };
}

/**
 * The refund of a document that `failed` (the service's fault): its pay-as-you-go charge comes
 * back, and its unit of usage if it was submitted in the current period (a closed period is not
 * reopened; usage never goes below zero). Returns the organisation and the document after it,
 * which no longer counts as charged. Called once, with the ending that makes it `failed`.
 */
export function refundFailure(
  document: DocumentRecord,
  organisation: Organisation,
): { readonly organisation: Organisation; readonly document: DocumentRecord } {
  const inPeriod = document.submittedAt.getTime() >= organisation.periodStart.getTime();
  return {
    organisation: {
      ...organisation,
      creditBalancePence: organisation.creditBalancePence + document.chargedPence,
      periodUsedSubmissions: inPeriod
        ? Math.max(0, organisation.periodUsedSubmissions - 1)
        : organisation.periodUsedSubmissions,
    },
    document: { ...document, chargedPence: 0, countedInAllowance: false },
  };
}
