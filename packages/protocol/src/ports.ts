import type { Finding, Policy, RejectionReason } from '@disarm/core';

import type { UploadRefusal } from './domain/billing.ts';
import type { PlanName } from './domain/plans.ts';
import type {
  ApiKeyRecord,
  DocumentRecord,
  FailureReason,
  Lane,
  Organisation,
  UploadRecord,
} from './domain/types.ts';

/** Time. The system clock in production; a manual clock in tests and test mode. */
export interface Clock {
  now(): Date;
}

/** Randomness for ids and secrets. Default: `crypto.getRandomValues`. */
export interface Random {
  bytes(length: number): Uint8Array;
}

// ─── State store ────────────────────────────────────────────────────────────────────────────

/** Input of {@link StateStore.createOrganisation}. */
export interface NewOrganisation {
  readonly id: string;
  readonly name: string;
  readonly plan: PlanName | null;
  /** Overrides of the plan's terms (Volume is custom). */
  readonly terms?: Partial<PlanTermsOverride>;
  readonly creditBalancePence?: number;
  readonly policy?: Policy;
}

/** Terms an admin may set per organisation. */
export interface PlanTermsOverride {
  readonly monthlyAllowance: number;
  readonly rateLimitPerMinute: number;
  readonly maxUploadSizeBytes: number;
  readonly pricePerDocumentPence: number;
}

/** Changes to an organisation; only the given fields change. */
export interface OrganisationPatch {
  readonly name?: string;
  readonly status?: 'active' | 'suspended';
  /** Re-provision on another plan (terms reset to the plan's, then `terms` applied). */
  readonly plan?: PlanName;
  readonly terms?: Partial<PlanTermsOverride>;
  /** Added to (or, negative, taken from) the credit balance. */
  readonly creditDeltaPence?: number;
  readonly policy?: Policy;
}

/** Input of {@link StateStore.acceptDocument}. */
export interface NewDocument {
  readonly id: string;
  readonly organisationId: string;
  readonly lane: Lane;
  readonly fileName: string;
  readonly sizeBytes: number;
  readonly intakeKey: string;
  readonly deleteAfterDownload: boolean;
  readonly statusStyle202: boolean;
  /**
   * Submit-by-reference: the upload consumed in the same transaction. The document then takes
   * its `fileName`, `intakeKey` and `sizeBytes` from the upload; the values given here are ignored.
   */
  readonly uploadId?: string;
  /**
   * The `Idempotency-Key` claim the submission runs under: checked to be still this request's and
   * given the document's id, in the same transaction (`holdsClaim`). When a retry has taken the
   * claim over, nothing is created or charged (`claim_lost`).
   */
  readonly idempotency?: IdempotencyCompletion;
}

/** Why an organisation cannot submit right now. */
export type SubmitRefusal =
  | { readonly kind: 'not_provisioned' }
  | { readonly kind: 'suspended' }
  | { readonly kind: 'quota_exceeded'; readonly organisation: Organisation }
  | {
      readonly kind: 'insufficient_credit';
      readonly organisation: Organisation;
      readonly balancePence: number;
      readonly pricePence: number;
    };

/** Result of {@link StateStore.acceptDocument}. */
export type AcceptResult =
  | {
      readonly kind: 'accepted';
      readonly document: DocumentRecord;
      /** The organisation after the charge (for usage headers). */
      readonly organisation: Organisation;
    }
  | SubmitRefusal
  | UploadRefusal
  /** The submission's `Idempotency-Key` claim is no longer its own: nothing was created. */
  | { readonly kind: 'claim_lost' };

/** How processing ended, as the worker reports it. */
export type DocumentResult =
  | {
      readonly status: 'completed';
      readonly blobKey: string;
      readonly fileName: string;
      readonly format: string;
      readonly mediaType: string;
      readonly converted: boolean;
      readonly sizeBytes: number;
      readonly findings: readonly Finding[];
    }
  | {
      readonly status: 'rejected';
      readonly reason: RejectionReason;
      readonly threatNames: readonly string[];
      readonly detail: string;
    }
  | { readonly status: 'failed'; readonly reason: FailureReason; readonly detail: string };

/** Result of {@link StateStore.deleteDocumentFile}. */
export type DeleteFileResult =
  | { readonly kind: 'not_found' }
  | { readonly kind: 'in_flight'; readonly document: DocumentRecord }
  /** The file is marked deleted now; the caller removes `blobKey` from the blob store. */
  | { readonly kind: 'deleted'; readonly document: DocumentRecord; readonly blobKey: string | null }
  /** Nothing to delete (already deleted, never had a file): DELETE is idempotent. */
  | { readonly kind: 'nothing_to_delete'; readonly document: DocumentRecord };

/** A blob the sweeper must remove, and what to record once it is gone. */
export interface SweepItem {
  readonly kind: 'intake' | 'expired-output' | 'downloaded-output' | 'expired-upload';
  readonly id: string;
  readonly blobKey: string;
}

/** The queue at one moment, for metrics; see {@link StateStore.queueStats}. */
export interface QueueStats {
  /** Documents waiting for a worker. */
  readonly pending: number;
  /** Documents leased by a worker now. */
  readonly processing: number;
  /** Submission time of the oldest `pending` document, or `null` when none waits. */
  readonly oldestPendingSubmittedAt: Date | null;
}

/** Stored idempotency record of one (organisation, key). */
export interface IdempotencyRecord {
  readonly organisationId: string;
  readonly key: string;
  /** Route the key was first used on, e.g. `POST /v1/documents`. */
  readonly endpoint: string;
  /**
   * The request's fingerprint (`RequestFingerprint`): `''` until the body has been read, then
   * recorded with the document or upload it created, or with the response.
   */
  readonly requestHash: string;
  readonly state: 'in_flight' | 'completed';
  readonly createdAt: Date;
  readonly expiresAt: Date;
  /** The first response, replayed byte for byte. */
  readonly response: StoredResponse | null;
  /**
   * The request holding the claim (a token unique to it), compared on every later write of the
   * claim; `null` on records written before claims had owners.
   */
  readonly owner: string | null;
  /** The process running that request (`ProcessIdentity.id`), to tell when it is gone. */
  readonly ownerProcess: string | null;
  /** The claim's lease: renewed while the request runs; past it the key is free (`isClaimHeld`). */
  readonly heldUntil: Date | null;
  /**
   * The document (`POST /v1/documents`) or upload (`POST /v1/uploads`) the request created,
   * recorded in the transaction that created it: a retry finding it without a response answers
   * for that resource instead of creating another.
   */
  readonly resourceId: string | null;
}

/** A claim on an `Idempotency-Key`, as the request holding it names it. */
export interface IdempotencyHold {
  readonly organisationId: string;
  readonly key: string;
  /** The holding request's token ({@link IdempotencyRecord.owner}). */
  readonly owner: string;
}

/** A claim and the fingerprint of its request, recorded with what the request created. */
export interface IdempotencyCompletion extends IdempotencyHold {
  readonly requestHash: string;
}

/** Input of {@link StateStore.claimIdempotencyKey}. */
export interface IdempotencyClaimRequest {
  readonly organisationId: string;
  readonly key: string;
  /** The route, e.g. `POST /v1/documents`. */
  readonly endpoint: string;
  /** A token unique to the claiming request. */
  readonly owner: string;
  /** The identity of the process running it (`ProcessIdentity.id`). */
  readonly ownerProcess: string;
  /** Now: the claim's creation time, and the start of its lease. */
  readonly at: Date;
  /**
   * The owner of an in-flight claim whose process the caller found gone
   * (`ProcessIdentity.isGone`): that claim is taken over even though its lease still runs.
   */
  readonly replacing?: string;
}

/** A response kept for idempotent replay. */
export interface StoredResponse {
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Uint8Array;
}

/**
 * Result of {@link StateStore.claimIdempotencyKey}: the key is this request's now (`record` is the
 * claim as stored, with the first request's `resourceId` and `requestHash` when it was taken
 * over), or another request's record answers it.
 */
export type IdempotencyClaim =
  | { readonly kind: 'claimed'; readonly record: IdempotencyRecord }
  | { readonly kind: 'existing'; readonly record: IdempotencyRecord };

/**
 * Who runs this process, so that a claim left by a process that died is freed at once instead of
 * when its lease lapses. Embedded default: hostname, boot id, pid namespace, pid and the
 * process's start time, checked through `/proc` (`@disarm/node`).
 */
export interface ProcessIdentity {
  /** This process's identity, recorded with every claim it makes. At most 512 characters. */
  readonly id: string;
  /**
   * True only when the process `id` names is known to have ended (on this host: its pid is gone
   * or now belongs to another process). `false` when it cannot tell (another host): the claim's
   * lease then bounds how long it holds.
   */
  isGone(id: string): Promise<boolean>;
}

/** An OAuth 2.0 client (client credentials grant); the secret is stored only as a hash. */
export interface OAuthClientRecord {
  readonly id: string;
  /**
   * The customer organisation the client acts for, or `null` for an operator client (the
   * platform's own, belonging to no customer organisation).
   */
  readonly organisationId: string | null;
  readonly name: string;
  /**
   * Scopes the client may ask for: `cdr.api` (organisation clients), `cdr.admin` (operator
   * clients only: platform administration is never a customer organisation's right).
   */
  readonly scopes: readonly string[];
  /** Hashes of the current secret(s): two during a rotation overlap. */
  readonly secretHashes: readonly string[];
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
}

/** An asymmetric key the embedded token endpoint signs with (private JWK kept encrypted at rest). */
export interface SigningKeyRecord {
  readonly kid: string;
  readonly algorithm: 'ES256' | 'RS256' | 'EdDSA';
  readonly publicJwk: string;
  readonly privateJwk: string;
  readonly createdAt: Date;
  /**
   * Signs from this time on; before it the key is only published, so that verifiers caching the
   * JWKS know it before the first token it signs. `null`: signs from creation.
   */
  readonly activeFrom: Date | null;
  /** Stops signing after this; still published in the JWKS until `retiredAt`. */
  readonly activeUntil: Date | null;
  readonly retiredAt: Date | null;
}

/** One change to an OAuth client, applied atomically by {@link StateStore.updateOAuthClient}. */
export type OAuthClientChange =
  /** Rotation: this hash becomes the current secret, the current one the previous; older end. */
  | { readonly kind: 'rotate-secret'; readonly secretHash: string }
  /** Ends a rotation's overlap: only the current secret stays. */
  | { readonly kind: 'drop-previous-secret' }
  /** Revocation; a client revoked earlier keeps its first revocation time. */
  | { readonly kind: 'revoke'; readonly at: Date };

/**
 * Durable state: organisations, credentials, documents (with the queue), uploads, and the books.
 * Every read and write of tenant data takes the organisation id, so a foreign id is simply not
 * found. Money and allowance move only inside the transaction of the state change that causes
 * them (accept charges, failure refunds).
 *
 * A store decides nothing itself: inside each transaction it reads the rows, asks the domain's
 * rules what follows (`rollBillingPeriod`, `decideAcceptance`, `submitRefusal`, `endDocument`,
 * `refundFailure`, `lapsedLeaseOutcome`, `deletionOf`, `patchOrganisation`, …, all exported by
 * this package) and writes their answer, so every store bills, refuses and retains alike.
 *
 * An operation that fails because the database cannot be reached or cannot write (after the
 * store's own retries) throws {@link StorageUnavailableError}, with nothing of it applied.
 */
export interface StateStore {
  // Organisations
  createOrganisation(input: NewOrganisation, at: Date): Promise<Organisation>;
  getOrganisation(id: string, at: Date): Promise<Organisation | undefined>;
  listOrganisations(at: Date): Promise<Organisation[]>;
  updateOrganisation(
    id: string,
    patch: OrganisationPatch,
    at: Date,
  ): Promise<Organisation | undefined>;

  // API keys
  createApiKey(record: ApiKeyRecord): Promise<void>;
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(organisationId: string): Promise<ApiKeyRecord[]>;
  revokeApiKey(organisationId: string, keyId: string, at: Date): Promise<ApiKeyRecord | undefined>;

  // Documents and the queue
  /**
   * Checks the organisation can submit (provisioned, active, allowance or credit left) and, if
   * so, creates the document as `pending`, queues it and charges it — all in one transaction.
   * With `uploadId`, also consumes that upload (once) in the same transaction.
   */
  acceptDocument(input: NewDocument, at: Date): Promise<AcceptResult>;
  /** The same checks as {@link acceptDocument} without charging (uploads are refused up front). */
  checkCanSubmit(organisationId: string, at: Date): Promise<SubmitRefusal | undefined>;
  getDocument(organisationId: string, id: string): Promise<DocumentRecord | undefined>;
  /** Sets `firstDownloadAt` if it is not set yet; returns the document. */
  recordDownload(organisationId: string, id: string, at: Date): Promise<DocumentRecord | undefined>;
  /** DELETE: marks the cleaned file deleted (idempotent); refused while in flight. */
  deleteDocumentFile(organisationId: string, id: string, at: Date): Promise<DeleteFileResult>;
  /**
   * Leases the oldest `pending` document whose retry back-off is over at `at`: it becomes
   * `processing`, owned until the lease lapses.
   */
  leaseDocument(owner: string, at: Date, leaseMs: number): Promise<DocumentRecord | undefined>;
  /** Extends a lease still held by `owner`; false when it was lost. */
  renewLease(id: string, owner: string, at: Date, leaseMs: number): Promise<boolean>;
  /**
   * Ends processing: `processing` -> terminal, only while `owner` holds the lease. A `failed`
   * result refunds in the same transaction, exactly once: pay-as-you-go credit comes back, and
   * the document's unit of `periodUsedSubmissions` is given back if it was submitted in the
   * current period (a refunded document is not billable). Returns `undefined` if the lease was
   * lost.
   */
  finishDocument(
    id: string,
    owner: string,
    result: DocumentResult,
    at: Date,
  ): Promise<DocumentRecord | undefined>;
  /**
   * After a crash or restart: documents whose lease lapsed go back to `pending`, not leased again
   * before their back-off (`lapsedLeaseOutcome`) is over, or end as `failed` (`internal_error`,
   * refunded) once they have had `maxAttempts` attempts.
   * @returns the documents that were failed.
   */
  recoverLapsedLeases(at: Date, maxAttempts: number): Promise<DocumentRecord[]>;
  /** Forgets the intake blob key once the bytes are deleted. */
  clearIntake(id: string): Promise<void>;
  /** How many documents wait and run, across all organisations (read-only, for metrics). */
  queueStats(): Promise<QueueStats>;

  // Uploads
  /**
   * Creates the upload. With `idempotency`, only while that claim is still the request's
   * (`holdsClaim`), recording the upload's id on it in the same transaction.
   * @returns false when the claim was lost: nothing was created.
   */
  createUpload(record: UploadRecord, idempotency?: IdempotencyCompletion): Promise<boolean>;
  getUpload(organisationId: string, id: string): Promise<UploadRecord | undefined>;
  /** Storage side (no organisation: the signed link is the authority). */
  getUploadById(id: string): Promise<UploadRecord | undefined>;
  /** Records the one PUT; false if the upload was already uploaded. */
  markUploaded(id: string, sizeBytes: number, at: Date): Promise<boolean>;

  // Retention
  /**
   * Blobs due for removal at `at`: intake bytes of terminal documents, outputs 24 h after
   * completion, outputs `graceMs` after the first download of a delete-after-download document,
   * uploads past their 24 h window (or whose bytes were never submitted).
   */
  listSweepable(at: Date, graceMs: number, limit: number): Promise<SweepItem[]>;
  /** Records that the sweeper removed the blob of `item` (sets `deletedAt` after a downloaded one). */
  markSwept(item: SweepItem, at: Date): Promise<void>;
  /**
   * Of `keys` (at most `MAX_OWNERSHIP_KEYS`), those a document or upload still owns
   * (`ownedBlobKeys`): intakes not yet deleted, the output key of a document in flight, cleaned
   * files not yet removed, staged uploads not submitted nor swept. The orphan sweep deletes the
   * others once they are older than `ORPHAN_BLOB_GRACE_MS`.
   */
  ownedBlobKeys(keys: readonly string[]): Promise<string[]>;

  // Rate limits (fixed one-minute windows, shared by every process)
  /** Counts one request in `bucket` for the window starting at `windowStart`; returns the count. */
  hitRateLimit(bucket: string, windowStart: Date, at: Date): Promise<number>;

  // Idempotency
  /**
   * Atomically claims `(organisationId, key)` for this request, or returns the record that
   * answers it, as `decideClaim` says: a record past its `expiresAt` counts as absent, and an
   * in-flight claim whose lease lapsed (or whose owner is `request.replacing`) is taken over.
   */
  claimIdempotencyKey(request: IdempotencyClaimRequest): Promise<IdempotencyClaim>;
  /**
   * Extends the lease of a claim `hold.owner` still holds (`claimHeldUntil(at)`).
   * @returns false when the claim is no longer that request's.
   */
  renewIdempotencyKey(hold: IdempotencyHold, at: Date): Promise<boolean>;
  /**
   * Stores the response of a claim `hold.owner` still holds, and the fingerprint of its request,
   * for replays and for telling a different request apart.
   * @returns false when the claim is no longer that request's (a retry answers for it).
   */
  completeIdempotencyKey(
    hold: IdempotencyHold,
    response: StoredResponse,
    requestHash: string,
  ): Promise<boolean>;
  /**
   * Gives up a claim `hold.owner` holds without a response to keep (`releaseOf`): removed when it
   * created nothing (so a corrected retry can pass), else its lease ends so the next retry
   * answers for what it created.
   */
  releaseIdempotencyKey(hold: IdempotencyHold): Promise<void>;
  /** Removes expired records. */
  purgeIdempotencyKeys(at: Date): Promise<number>;

  // OAuth clients and signing keys
  createOAuthClient(record: OAuthClientRecord): Promise<void>;
  getOAuthClient(id: string): Promise<OAuthClientRecord | undefined>;
  /** An organisation's clients, or with `null` the operator clients; newest first. */
  listOAuthClients(organisationId: string | null): Promise<OAuthClientRecord[]>;
  /**
   * Changes a client in one atomic step, scoped by organisation (`null`: the operator clients;
   * undefined when there is no such client there). The store derives the new secret list itself, so two rotations at once
   * never lose a secret that was handed out.
   */
  updateOAuthClient(
    organisationId: string | null,
    id: string,
    change: OAuthClientChange,
  ): Promise<OAuthClientRecord | undefined>;
  listSigningKeys(): Promise<SigningKeyRecord[]>;
  saveSigningKey(record: SigningKeyRecord): Promise<void>;

  /** Closes connections. */
  close(): Promise<void>;
}

// ─── Storage faults ─────────────────────────────────────────────────────────────────────────

/** Which storage a {@link StorageUnavailableError} is about. */
export type UnavailableStorage = 'state-store' | 'blob-store';

/**
 * Thrown by a {@link StateStore} or {@link BlobStore} operation when the storage cannot do its
 * work right now, through no fault of the request: the database cannot be reached or cannot
 * write (connection refused or lost after the store's own retries, its disk full), the blob
 * folder's disk is full or over quota or failing (`ENOSPC`, `EDQUOT`, `EIO`), the bucket answers
 * 5xx (`SlowDown`, `InternalError`) or cannot be reached.
 *
 * The operation did not complete and left nothing half-done (a `put` keeps no partial blob; a
 * transaction is all or nothing), so it may simply be asked again later. (Should a database take
 * a commit whose answer is then lost with its connection, a store looks for its own row where
 * it can, as `acceptDocument` and `finishDocument` do; every operation tolerates being asked
 * again.) The API answers it with 503 `ServiceUnavailable` and `Retry-After`, never 500, and a
 * worker keeps the document it holds instead of failing it: a full disk is not the file's fault.
 * Any other error a store throws is a fault of its own (an opaque 500).
 */
export class StorageUnavailableError extends Error {
  /**
   * @param storage which storage could not do its work.
   * @param reason what it said, for the logs (never shown to a caller), e.g. `ENOSPC`,
   *   `ECONNREFUSED`, `SQLITE_FULL`, `SlowDown`.
   */
  constructor(
    readonly storage: UnavailableStorage,
    readonly reason: string,
    options?: { readonly cause?: unknown },
  ) {
    super(
      `${storage === 'state-store' ? 'the state store' : 'the blob store'} is unavailable: ${reason}`,
      options,
    );
    this.name = 'StorageUnavailableError';
  }
}

// ─── Blob store ─────────────────────────────────────────────────────────────────────────────

/** Thrown by {@link BlobStore.put} when the body passes `maxBytes` (nothing is kept). */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the body is larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

/** Thrown by {@link BlobStore.put} when `contentMd5` does not match (nothing is kept). */
export class BlobDigestMismatchError extends Error {
  constructor() {
    super('the body does not match its Content-MD5');
    this.name = 'BlobDigestMismatchError';
  }
}

/** Most keys one {@link BlobStore.list} page looks at (S3's own page size). */
export const MAX_BLOB_LIST_LIMIT = 1_000;

/** Options of {@link BlobStore.list}. */
export interface BlobListOptions {
  /** Only blobs last written strictly before this are returned. */
  readonly modifiedBefore: Date;
  /** Keys to look at, 1 to {@link MAX_BLOB_LIST_LIMIT}. */
  readonly limit: number;
  /** Continue after this key (a previous page's `next`); from the start when absent. */
  readonly startAfter?: string | undefined;
}

/** A blob as {@link BlobStore.list} reports it. */
export interface ListedBlob {
  readonly key: string;
  readonly modifiedAt: Date;
  readonly sizeBytes: number;
}

/** One page of {@link BlobStore.list}. */
export interface BlobListPage {
  readonly blobs: readonly ListedBlob[];
  /** Where the next page starts (`startAfter`), or `undefined` when this page reached the end. */
  readonly next: string | undefined;
}

/** A signed, time-limited upload link. */
export interface SignedUpload {
  readonly url: string;
  readonly method: 'PUT';
  readonly requiredHeaders: Readonly<Record<string, string>>;
}

/**
 * Bytes: submitted files, cleaned files, staged uploads. Embedded: a local directory with
 * HMAC-signed links served on their own origin. Scale-out: S3 or Azure Blob.
 *
 * An operation that fails because the storage itself cannot serve right now (not because of the
 * key or the bytes) throws {@link StorageUnavailableError}.
 */
export interface BlobStore {
  /**
   * Streams `body` into `key`, durably (on disk / acknowledged) before resolving. Nothing is
   * left behind when it throws.
   * @throws {BlobTooLargeError} past `maxBytes`
   * @throws {BlobDigestMismatchError} when `contentMd5` (base64) does not match
   * @throws {StorageUnavailableError} when the storage cannot take the bytes now (disk full,
   *   quota, I/O error, the bucket failing or out of reach)
   */
  put(
    key: string,
    body: ReadableStream<Uint8Array>,
    options: { readonly maxBytes: number; readonly contentMd5?: string },
  ): Promise<{ readonly sizeBytes: number }>;
  /** The bytes of `key`, or `undefined` if absent. */
  get(key: string): Promise<ReadableStream<Uint8Array> | undefined>;
  /** Size of `key`, or `undefined` if absent. */
  stat(key: string): Promise<{ readonly sizeBytes: number } | undefined>;
  /** Removes `key`; removing an absent key succeeds. */
  delete(key: string): Promise<void>;
  /**
   * One page of the blobs under `prefix` (a key prefix ending in `/`), in key order, each with
   * when it was last written: for the sweeper, which finds blobs no row names this way. A page
   * looks at up to `limit` keys after `startAfter` and returns those last written before
   * `modifiedBefore`; `next` continues after the last key looked at, `undefined` at the end.
   * Temporary files and unfinished writes are never listed.
   * @throws {TypeError} for a bad prefix or a `limit` outside 1 to `MAX_BLOB_LIST_LIMIT`.
   */
  list(prefix: string, options: BlobListOptions): Promise<BlobListPage>;
  /** A link that serves `key` as an attachment named `fileName` until `expiresAt`. */
  signedDownloadUrl(
    key: string,
    options: { readonly expiresAt: Date; readonly fileName: string; readonly contentType: string },
  ): Promise<string>;
  /** A create-only, write-only link for one PUT of at most `maxBytes` to `key` until `expiresAt`. */
  signedUploadUrl(
    key: string,
    options: { readonly expiresAt: Date; readonly maxBytes: number },
  ): Promise<SignedUpload>;
}

// ─── Processing events ──────────────────────────────────────────────────────────────────────

/**
 * Wakes the processors when a document is queued and the sync waiters when one ends.
 * Embedded: in process. Scale-out: PostgreSQL LISTEN/NOTIFY. Waiters also poll, so a lost
 * notification only costs latency.
 */
export interface DocumentEvents {
  /** A document was queued. */
  queued(documentId: string): void;
  /** A document reached a terminal status. */
  finished(documentId: string): void;
  /** Resolves when `documentId` is reported finished, or when `signal` aborts. */
  waitForFinish(documentId: string, signal: AbortSignal): Promise<void>;
  /** Resolves on the next `queued`, or when `signal` aborts. */
  waitForQueued(signal: AbortSignal): Promise<void>;
}
