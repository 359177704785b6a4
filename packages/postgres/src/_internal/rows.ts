import type {
  ApiKeyRecord,
  DocumentOutput,
  DocumentRecord,
  DocumentStatus,
  IdempotencyRecord,
  Lane,
  OAuthClientRecord,
  Organisation,
  PlanName,
  PlanType,
  SigningKeyRecord,
  UploadRecord,
} from '@disarm/protocol';

// Engine types through the port's records, so this package depends on @disarm/protocol only.
type Finding = DocumentOutput['findings'][number];
type Policy = Organisation['policy'];
type DocumentReason = DocumentRecord['reason'];

/*
 * Row shapes as the schema stores them (timestamptz as Date, bigint as number, jsonb parsed by
 * the driver) and their conversions to the port's records. The unions in these types are
 * guaranteed by the tables' CHECK constraints.
 */

/** A row of `organisations`. */
export interface OrganisationRow {
  readonly id: string;
  readonly name: string;
  readonly status: 'active' | 'suspended';
  readonly plan: PlanName | null;
  readonly plan_type: PlanType | null;
  readonly monthly_allowance: number;
  readonly rate_limit_per_minute: number;
  readonly max_file_size_bytes: number;
  readonly max_upload_size_bytes: number;
  readonly price_per_document_pence: number | null;
  readonly credit_balance_pence: number;
  readonly period_start: Date;
  readonly period_end: Date;
  readonly period_used_submissions: number;
  readonly policy: Policy;
  readonly created_at: Date;
}

/** A row of `api_keys`. */
export interface ApiKeyRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly name: string;
  readonly display_prefix: string;
  readonly hash: string;
  readonly created_at: Date;
  readonly revoked_at: Date | null;
}

/** A row of `documents`. */
export interface DocumentRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly status: DocumentStatus;
  readonly lane: Lane;
  readonly file_name: string;
  readonly size_bytes: number;
  readonly delete_after_download: boolean;
  readonly status_style_202: boolean;
  readonly intake_key: string | null;
  readonly submitted_at: Date;
  readonly started_at: Date | null;
  readonly completed_at: Date | null;
  readonly output_blob_key: string | null;
  readonly output_file_name: string | null;
  readonly output_format: string | null;
  readonly output_media_type: string | null;
  readonly output_converted: boolean | null;
  readonly output_size_bytes: number | null;
  readonly output_findings: Finding[] | null;
  readonly reason: DocumentReason;
  readonly threat_names: string[];
  readonly detail: string | null;
  readonly reason_detail: string | null;
  readonly download_expires_at: Date | null;
  readonly first_download_at: Date | null;
  readonly deleted_at: Date | null;
  readonly output_removed_at: Date | null;
  readonly charged_pence: number;
  readonly counted_in_allowance: boolean;
  readonly attempts: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: Date | null;
  /** Added by migration 2: a requeued document is not leased before this time. */
  readonly retry_not_before: Date | null;
}

/** A row of `uploads`. */
export interface UploadRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly file_name: string;
  readonly blob_key: string;
  readonly created_at: Date;
  readonly put_expires_at: Date;
  readonly expires_at: Date;
  readonly max_size_bytes: number;
  readonly uploaded_at: Date | null;
  readonly size_bytes: number | null;
  readonly submitted_at: Date | null;
  readonly document_id: string | null;
}

/** A row of `idempotency_keys`. */
export interface IdempotencyRow {
  readonly organisation_id: string;
  readonly key: string;
  readonly endpoint: string;
  readonly request_hash: string;
  readonly state: 'in_flight' | 'completed';
  readonly created_at: Date;
  readonly expires_at: Date;
  readonly response_status: number | null;
  readonly response_headers: [string, string][] | null;
  readonly response_body: Buffer | null;
  readonly owner: string | null;
  readonly owner_process: string | null;
  readonly held_until: Date | null;
  readonly resource_id: string | null;
}

/** A row of `oauth_clients`. */
export interface OAuthClientRow {
  readonly id: string;
  readonly organisation_id: string | null;
  readonly name: string;
  readonly scopes: string[];
  readonly secret_hashes: string[];
  readonly created_at: Date;
  readonly revoked_at: Date | null;
}

/** A row of `signing_keys`. */
export interface SigningKeyRow {
  readonly kid: string;
  readonly algorithm: 'ES256' | 'RS256' | 'EdDSA';
  readonly public_jwk: string;
  readonly private_jwk: string;
  readonly created_at: Date;
  readonly active_from: Date | null;
  readonly active_until: Date | null;
  readonly retired_at: Date | null;
}

/** `date`, once it is known to be a valid time (the driver would send an invalid one as text). */
export function checkedDate(date: Date): Date {
  if (!Number.isFinite(date.getTime())) throw new RangeError('invalid Date');
  return date;
}

/** Nullable {@link checkedDate}. */
export function checkedDateOrNull(date: Date | null): Date | null {
  return date === null ? null : checkedDate(date);
}

/** The columns of an organisation, in {@link ORGANISATION_COLUMNS} order. */
export function organisationValues(organisation: Organisation): unknown[] {
  return [
    organisation.id,
    organisation.name,
    organisation.status,
    organisation.plan,
    organisation.planType,
    organisation.monthlyAllowance,
    organisation.rateLimitPerMinute,
    organisation.maxFileSizeBytes,
    organisation.maxUploadSizeBytes,
    organisation.pricePerDocumentPence,
    organisation.creditBalancePence,
    checkedDate(organisation.periodStart),
    checkedDate(organisation.periodEnd),
    organisation.periodUsedSubmissions,
    // jsonb parameters go as JSON text: the driver would send an array as a PostgreSQL array.
    JSON.stringify(organisation.policy),
    checkedDate(organisation.createdAt),
  ];
}

/** The columns {@link organisationValues} fills, `$1` onwards. */
export const ORGANISATION_COLUMNS = [
  'id',
  'name',
  'status',
  'plan',
  'plan_type',
  'monthly_allowance',
  'rate_limit_per_minute',
  'max_file_size_bytes',
  'max_upload_size_bytes',
  'price_per_document_pence',
  'credit_balance_pence',
  'period_start',
  'period_end',
  'period_used_submissions',
  'policy',
  'created_at',
] as const;

/** Converts a row of `organisations` (not rolled to the current period). */
export function toOrganisation(row: OrganisationRow): Organisation {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    plan: row.plan,
    planType: row.plan_type,
    monthlyAllowance: row.monthly_allowance,
    rateLimitPerMinute: row.rate_limit_per_minute,
    maxFileSizeBytes: row.max_file_size_bytes,
    maxUploadSizeBytes: row.max_upload_size_bytes,
    pricePerDocumentPence: row.price_per_document_pence,
    creditBalancePence: row.credit_balance_pence,
    periodStart: row.period_start,
    periodEnd: row.period_end,
    periodUsedSubmissions: row.period_used_submissions,
    policy: row.policy,
    createdAt: row.created_at,
  };
}

/** Converts a row of `api_keys`. */
export function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    name: row.name,
    displayPrefix: row.display_prefix,
    hash: row.hash,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** Converts a row of `documents`; the lease columns stay inside the store. */
export function toDocument(row: DocumentRow): DocumentRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    status: row.status,
    lane: row.lane,
    fileName: row.file_name,
    sizeBytes: row.size_bytes,
    deleteAfterDownload: row.delete_after_download,
    statusStyle202: row.status_style_202,
    intakeKey: row.intake_key,
    submittedAt: row.submitted_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    output:
      row.output_blob_key === null
        ? null
        : {
            blobKey: row.output_blob_key,
            fileName: row.output_file_name ?? '',
            format: row.output_format ?? '',
            mediaType: row.output_media_type ?? '',
            converted: row.output_converted === true,
            sizeBytes: row.output_size_bytes ?? 0,
            findings: row.output_findings ?? [],
          },
    reason: row.reason,
    threatNames: row.threat_names,
    detail: row.detail,
    reasonDetail: row.reason_detail,
    downloadExpiresAt: row.download_expires_at,
    firstDownloadAt: row.first_download_at,
    deletedAt: row.deleted_at,
    outputRemovedAt: row.output_removed_at,
    chargedPence: row.charged_pence,
    countedInAllowance: row.counted_in_allowance,
    attempts: row.attempts,
  };
}

/** Converts a row of `uploads`. */
export function toUpload(row: UploadRow): UploadRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    fileName: row.file_name,
    blobKey: row.blob_key,
    createdAt: row.created_at,
    putExpiresAt: row.put_expires_at,
    expiresAt: row.expires_at,
    maxSizeBytes: row.max_size_bytes,
    uploadedAt: row.uploaded_at,
    sizeBytes: row.size_bytes,
    submittedAt: row.submitted_at,
    documentId: row.document_id,
  };
}

/** Converts a row of `idempotency_keys`. */
export function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return {
    organisationId: row.organisation_id,
    key: row.key,
    endpoint: row.endpoint,
    requestHash: row.request_hash,
    state: row.state,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    response:
      row.state === 'completed' && row.response_status !== null
        ? {
            status: row.response_status,
            headers: row.response_headers ?? [],
            // A plain Uint8Array copy: the caller owns it and it compares equal to what was stored.
            body: new Uint8Array(row.response_body ?? new Uint8Array(0)),
          }
        : null,
    owner: row.owner,
    ownerProcess: row.owner_process,
    heldUntil: row.held_until,
    resourceId: row.resource_id,
  };
}

/** Converts a row of `oauth_clients`. */
export function toOAuthClient(row: OAuthClientRow): OAuthClientRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    name: row.name,
    scopes: row.scopes,
    secretHashes: row.secret_hashes,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** Converts a row of `signing_keys`. */
export function toSigningKey(row: SigningKeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    algorithm: row.algorithm,
    publicJwk: row.public_jwk,
    privateJwk: row.private_jwk,
    createdAt: row.created_at,
    activeFrom: row.active_from,
    activeUntil: row.active_until,
    retiredAt: row.retired_at,
  };
}
