export { createDisarmApi } from './api.ts';
export { MAX_REASON_DETAIL_CHARS, toReasonDetail } from './documents/reason-detail.ts';
export type {
  DisarmApi,
  DisarmApiExtensions,
  Middleware,
  RouteDefinition,
  RouteOptions,
} from './api.ts';
export type { BearerVerifier, CredentialKind, Principal } from './auth/principal.ts';
export { SCOPE_ADMIN, SCOPE_API } from './auth/principal.ts';
export type { ApiContext, Handler, RequestContext } from './http/context.ts';
export { ProblemError } from './http/problem-error.ts';
export { problemResponse } from './http/problem-response.ts';
export { jsonResponse } from './http/negotiation.ts';
export { bufferedBodyOf, bufferedResponse } from './http/buffered-response.ts';
export type { BufferedResponseInit } from './http/buffered-response.ts';
export type {
  AcceptedSample,
  ApiFailpoint,
  ApiObserver,
  DisarmApiConfig,
  DisarmApiPorts,
  DocsAsset,
  Logger,
  Readiness,
  RequestSample,
} from './config.ts';
export { MAX_REQUEST_ID_CHARS, REQUEST_ID_HEADER } from './http/request-id.ts';
export { contentDisposition, createStorageApi, UPLOAD_CONTENT_TYPE } from './storage/api.ts';
export {
  assertBlobKey,
  assertBlobKeyPrefix,
  assertBlobListOptions,
  isBlobKey,
  MAX_BLOB_KEY_CHARS,
  MAX_BLOB_KEY_SEGMENTS,
} from './blobs/keys.ts';
export type { StorageApiOptions } from './storage/api.ts';
export { createLinkSigner, STORAGE_PATH_PREFIX } from './storage/signer.ts';
export type { LinkClaims, LinkRefusal, LinkSigner } from './storage/signer.ts';
export {
  BlobDigestMismatchError,
  BlobTooLargeError,
  MAX_BLOB_LIST_LIMIT,
  StorageUnavailableError,
} from './ports.ts';
export type {
  AcceptResult,
  BlobListOptions,
  BlobListPage,
  BlobStore,
  Clock,
  DeleteFileResult,
  DocumentEvents,
  DocumentResult,
  IdempotencyClaim,
  IdempotencyClaimRequest,
  IdempotencyCompletion,
  IdempotencyHold,
  IdempotencyRecord,
  ListedBlob,
  NewDocument,
  NewOrganisation,
  OAuthClientChange,
  OAuthClientRecord,
  OrganisationPatch,
  PlanTermsOverride,
  ProcessIdentity,
  QueueStats,
  Random,
  SignedUpload,
  SigningKeyRecord,
  StateStore,
  StoredResponse,
  SubmitRefusal,
  SweepItem,
  UnavailableStorage,
} from './ports.ts';
export { isPlanName, MAX_FILE_SIZE_BYTES, PLANS } from './domain/plans.ts';
export type { PlanName, PlanTerms, PlanType } from './domain/plans.ts';
export type {
  ApiKeyRecord,
  DocumentOutput,
  DocumentRecord,
  DocumentStatus,
  FailureReason,
  Lane,
  Organisation,
  UploadRecord,
} from './domain/types.ts';
export {
  billingPeriodContaining,
  decideAcceptance,
  patchOrganisation,
  provisionOrganisation,
  refundFailure,
  rollBillingPeriod,
  submitRefusal,
  termsFor,
} from './domain/billing.ts';
export type {
  Acceptance,
  AcceptanceInput,
  OrganisationTerms,
  UploadRefusal,
} from './domain/billing.ts';
export {
  deletionOf,
  DOWNLOAD_RETENTION_MS,
  endDocument,
  isLive,
  lapsedLeaseOutcome,
  RETRY_BACKOFF_BASE_MS,
  RETRY_BACKOFF_FACTOR,
  RETRY_BACKOFF_MAX_MS,
  retryBackoffMs,
} from './domain/processing.ts';
export {
  claimHeldUntil,
  decideClaim,
  holdsClaim,
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_RENEW_INTERVAL_MS,
  IDEMPOTENCY_WINDOW_MS,
  isClaimHeld,
  releaseOf,
} from './domain/idempotency.ts';
export type { ClaimDecision } from './domain/idempotency.ts';
export {
  assertOwnershipKeys,
  BLOB_KEY_PREFIXES,
  blobKeyOwnedByUpload,
  blobKeysOwnedBy,
  documentIdsNamedBy,
  intakeKeyOf,
  MAX_OWNERSHIP_KEYS,
  ORPHAN_BLOB_GRACE_MS,
  outputKeyOf,
  ownedBlobKeys,
  uploadKeyOf,
} from './domain/blob-ownership.ts';
export type { UploadBlobState } from './domain/blob-ownership.ts';
export { cryptoRandom, newId } from './domain/ids.ts';
export type { IdKind } from './domain/ids.ts';
export { API_KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey } from './auth/api-keys.ts';
export type { NewApiKey } from './auth/api-keys.ts';
export {
  assertTransition,
  canTransition,
  isInFlight,
  isTerminal,
  TRANSITIONS,
} from './documents/state-machine.ts';
export { PROBLEMS } from './http/problems.ts';
export type { ProblemCode, ProblemType } from './http/problems.ts';
export {
  createOpenApiDocument,
  DOCS_ASSET_TYPES,
  DOCS_CSP,
  DOCS_PATH,
  HTTP_METHODS,
  isDocsAssetName,
  OPENAPI_PATH,
} from './openapi/index.ts';
export type { OpenApiDocument, OpenApiDocumentOptions } from './openapi/index.ts';
