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
 * Row shapes as the schema (migration 1) stores them, and their conversions to the port's
 * records. The unions in these types are guaranteed by the tables' CHECK constraints.
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
  readonly period_start: number;
  readonly period_end: number;
  readonly period_used_submissions: number;
  readonly policy: string;
  readonly created_at: number;
}

/** A row of `api_keys`. */
export interface ApiKeyRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly name: string;
  readonly display_prefix: string;
  readonly hash: string;
  readonly created_at: number;
  readonly revoked_at: number | null;
}

/** A row of `documents`. */
export interface DocumentRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly status: DocumentStatus;
  readonly lane: Lane;
  readonly file_name: string;
  readonly size_bytes: number;
  readonly delete_after_download: 0 | 1;
  readonly status_style_202: 0 | 1;
  readonly intake_key: string | null;
  readonly submitted_at: number;
  readonly started_at: number | null;
  readonly completed_at: number | null;
  readonly output_blob_key: string | null;
  readonly output_file_name: string | null;
  readonly output_format: string | null;
  readonly output_media_type: string | null;
  readonly output_converted: 0 | 1 | null;
  readonly output_size_bytes: number | null;
  readonly output_findings: string | null;
  readonly reason: DocumentReason;
  readonly threat_names: string;
  readonly detail: string | null;
  /** Added by migration 5; absent on rows read from an older schema (never in practice). */
  readonly reason_detail: string | null;
  /** Added by migration 6: moved by every update of the row. */
  readonly revision: number;
  readonly download_expires_at: number | null;
  readonly first_download_at: number | null;
  readonly deleted_at: number | null;
  readonly output_removed_at: number | null;
  readonly charged_pence: number;
  readonly counted_in_allowance: 0 | 1;
  readonly attempts: number;
  readonly lease_owner: string | null;
  readonly lease_expires_at: number | null;
  /** Added by migration 7: a requeued document is not leased before this time. */
  readonly retry_not_before: number | null;
}

/** A row of `uploads`. */
export interface UploadRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly file_name: string;
  readonly blob_key: string;
  readonly created_at: number;
  readonly put_expires_at: number;
  readonly expires_at: number;
  readonly max_size_bytes: number;
  readonly uploaded_at: number | null;
  readonly size_bytes: number | null;
  readonly submitted_at: number | null;
  readonly document_id: string | null;
  readonly blob_removed_at: number | null;
}

/** A row of `idempotency_keys`. */
export interface IdempotencyRow {
  readonly organisation_id: string;
  readonly key: string;
  readonly endpoint: string;
  readonly request_hash: string;
  readonly state: 'in_flight' | 'completed';
  readonly created_at: number;
  readonly expires_at: number;
  readonly response_status: number | null;
  readonly response_headers: string | null;
  readonly response_body: Buffer | null;
  readonly owner: string | null;
  readonly owner_process: string | null;
  readonly held_until: number | null;
  readonly resource_id: string | null;
}

/** A row of `oauth_clients`. */
export interface OAuthClientRow {
  readonly id: string;
  readonly organisation_id: string | null;
  readonly name: string;
  readonly scopes: string;
  readonly secret_hashes: string;
  readonly created_at: number;
  readonly revoked_at: number | null;
}

/** A row of `signing_keys`. */
export interface SigningKeyRow {
  readonly kid: string;
  readonly algorithm: 'ES256' | 'RS256' | 'EdDSA';
  readonly public_jwk: string;
  readonly private_jwk: string;
  readonly created_at: number;
  readonly active_from: number | null;
  readonly active_until: number | null;
  readonly retired_at: number | null;
}

/** `Date` -> stored milliseconds. */
export function toMillis(date: Date): number {
  const millis = date.getTime();
  if (!Number.isFinite(millis)) throw new RangeError('invalid Date');
  return millis;
}

/** `date`, once it is known to be a valid time (what a stored one must be). */
export function checkedDate(date: Date): Date {
  toMillis(date);
  return date;
}

/** Nullable `Date` -> stored milliseconds. */
export function toMillisOrNull(date: Date | null): number | null {
  return date === null ? null : toMillis(date);
}

function toDateOrNull(millis: number | null): Date | null {
  return millis === null ? null : new Date(millis);
}

/** JSON this store wrote itself; callers assert the type they wrote. */
function parseStored(text: string): unknown {
  return JSON.parse(text);
}

/** Converts a row of `organisations` (already rolled to the current period). */
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
    periodStart: new Date(row.period_start),
    periodEnd: new Date(row.period_end),
    periodUsedSubmissions: row.period_used_submissions,
    policy: parseStored(row.policy) as Policy,
    createdAt: new Date(row.created_at),
  };
}

/** Converts an organisation to its row (the inverse of {@link toOrganisation}). */
export function fromOrganisation(organisation: Organisation): OrganisationRow {
  return {
    id: organisation.id,
    name: organisation.name,
    status: organisation.status,
    plan: organisation.plan,
    plan_type: organisation.planType,
    monthly_allowance: organisation.monthlyAllowance,
    rate_limit_per_minute: organisation.rateLimitPerMinute,
    max_file_size_bytes: organisation.maxFileSizeBytes,
    max_upload_size_bytes: organisation.maxUploadSizeBytes,
    price_per_document_pence: organisation.pricePerDocumentPence,
    credit_balance_pence: organisation.creditBalancePence,
    period_start: toMillis(organisation.periodStart),
    period_end: toMillis(organisation.periodEnd),
    period_used_submissions: organisation.periodUsedSubmissions,
    policy: JSON.stringify(organisation.policy),
    created_at: toMillis(organisation.createdAt),
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
    createdAt: new Date(row.created_at),
    revokedAt: toDateOrNull(row.revoked_at),
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
    deleteAfterDownload: row.delete_after_download === 1,
    statusStyle202: row.status_style_202 === 1,
    intakeKey: row.intake_key,
    submittedAt: new Date(row.submitted_at),
    startedAt: toDateOrNull(row.started_at),
    completedAt: toDateOrNull(row.completed_at),
    output: row.output_blob_key === null ? null : toOutput(row, row.output_blob_key),
    reason: row.reason,
    threatNames: parseStored(row.threat_names) as string[],
    detail: row.detail,
    reasonDetail: row.reason_detail,
    downloadExpiresAt: toDateOrNull(row.download_expires_at),
    firstDownloadAt: toDateOrNull(row.first_download_at),
    deletedAt: toDateOrNull(row.deleted_at),
    outputRemovedAt: toDateOrNull(row.output_removed_at),
    chargedPence: row.charged_pence,
    countedInAllowance: row.counted_in_allowance === 1,
    attempts: row.attempts,
  };
}

/**
 * The output columns of a document row. Its findings are parsed on first use: a status read,
 * the busiest query there is, never shows them.
 */
function toOutput(row: DocumentRow, blobKey: string): NonNullable<DocumentRecord['output']> {
  const stored = row.output_findings ?? '[]';
  let findings: Finding[] | undefined;
  return {
    blobKey,
    fileName: row.output_file_name ?? '',
    format: row.output_format ?? '',
    mediaType: row.output_media_type ?? '',
    converted: row.output_converted === 1,
    sizeBytes: row.output_size_bytes ?? 0,
    get findings(): Finding[] {
      findings ??= parseStored(stored) as Finding[];
      return findings;
    },
  };
}

/** Converts a row of `uploads`; `blob_removed_at` stays inside the store. */
export function toUpload(row: UploadRow): UploadRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    fileName: row.file_name,
    blobKey: row.blob_key,
    createdAt: new Date(row.created_at),
    putExpiresAt: new Date(row.put_expires_at),
    expiresAt: new Date(row.expires_at),
    maxSizeBytes: row.max_size_bytes,
    uploadedAt: toDateOrNull(row.uploaded_at),
    sizeBytes: row.size_bytes,
    submittedAt: toDateOrNull(row.submitted_at),
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
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    response:
      row.state === 'completed' && row.response_status !== null
        ? {
            status: row.response_status,
            headers: parseStored(row.response_headers ?? '[]') as [string, string][],
            // A plain Uint8Array copy: the caller owns it and it compares equal to what was stored.
            body: new Uint8Array(row.response_body ?? new Uint8Array(0)),
          }
        : null,
    owner: row.owner,
    ownerProcess: row.owner_process,
    heldUntil: toDateOrNull(row.held_until),
    resourceId: row.resource_id,
  };
}

/** Converts a row of `oauth_clients`. */
export function toOAuthClient(row: OAuthClientRow): OAuthClientRecord {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    name: row.name,
    scopes: parseStored(row.scopes) as string[],
    secretHashes: parseStored(row.secret_hashes) as string[],
    createdAt: new Date(row.created_at),
    revokedAt: toDateOrNull(row.revoked_at),
  };
}

/** Converts a row of `signing_keys`. */
export function toSigningKey(row: SigningKeyRow): SigningKeyRecord {
  return {
    kid: row.kid,
    algorithm: row.algorithm,
    publicJwk: row.public_jwk,
    privateJwk: row.private_jwk,
    createdAt: new Date(row.created_at),
    activeFrom: toDateOrNull(row.active_from),
    activeUntil: toDateOrNull(row.active_until),
    retiredAt: toDateOrNull(row.retired_at),
  };
}

/** `true`/`false` -> the stored 1/0 (SQLite has no boolean and better-sqlite3 binds none). */
export function toFlag(value: boolean): 0 | 1 {
  return value ? 1 : 0;
}
