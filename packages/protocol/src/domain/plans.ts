/** The plans of README "Plans, metering and usage". */
export type PlanName = 'starter' | 'growth' | 'business' | 'volume' | 'payg' | 'internal';

/** How a plan is metered: monthly allowance, prepaid credit, or not at all. */
export type PlanType = 'tier' | 'payg' | 'internal';

/** What a plan grants; an organisation copies these at provisioning and admins may override. */
export interface PlanTerms {
  readonly name: PlanName;
  readonly type: PlanType;
  /** Documents per billing period (tier plans; 0 otherwise). */
  readonly monthlyAllowance: number;
  readonly rateLimitPerMinute: number;
  /** Multipart and raw lanes: 100 MB on every plan. */
  readonly maxFileSizeBytes: number;
  /** Upload lane: 250 MB on Pay-as-you-go and Starter, 450 MB on Growth and above. */
  readonly maxUploadSizeBytes: number;
  /** Pay-as-you-go price per document in pence; `null` on other plans. */
  readonly pricePerDocumentPence: number | null;
}

const MiB = 1024 * 1024;
/** Multipart and raw lane ceiling on every plan ("100 MB"). */
export const MAX_FILE_SIZE_BYTES = 100 * MiB;
const SMALL_UPLOAD_BYTES = 250 * MiB;
const LARGE_UPLOAD_BYTES = 450 * MiB;

/**
 * Default terms per plan. Volume's terms are "custom": these are its starting values, set per
 * organisation through the admin API.
 */
export const PLANS: Readonly<Record<PlanName, PlanTerms>> = {
  starter: {
    name: 'starter',
    type: 'tier',
    monthlyAllowance: 1_000,
    rateLimitPerMinute: 60,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: SMALL_UPLOAD_BYTES,
    pricePerDocumentPence: null,
  },
  growth: {
    name: 'growth',
    type: 'tier',
    monthlyAllowance: 10_000,
    rateLimitPerMinute: 120,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: LARGE_UPLOAD_BYTES,
    pricePerDocumentPence: null,
  },
  business: {
    name: 'business',
    type: 'tier',
    monthlyAllowance: 50_000,
    rateLimitPerMinute: 180,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: LARGE_UPLOAD_BYTES,
    pricePerDocumentPence: null,
  },
  volume: {
    name: 'volume',
    type: 'tier',
    monthlyAllowance: 250_000,
    rateLimitPerMinute: 600,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: LARGE_UPLOAD_BYTES,
    pricePerDocumentPence: null,
  },
  payg: {
    name: 'payg',
    type: 'payg',
    monthlyAllowance: 0,
    rateLimitPerMinute: 30,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: SMALL_UPLOAD_BYTES,
    pricePerDocumentPence: 10,
  },
  internal: {
    name: 'internal',
    type: 'internal',
    monthlyAllowance: 0,
    rateLimitPerMinute: 600,
    maxFileSizeBytes: MAX_FILE_SIZE_BYTES,
    maxUploadSizeBytes: LARGE_UPLOAD_BYTES,
    pricePerDocumentPence: null,
  },
};

/** True when `name` is a plan name. */
export function isPlanName(name: string): name is PlanName {
  return Object.hasOwn(PLANS, name);
}
