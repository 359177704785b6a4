/**
 * The problem catalogue (RFC 9457): every error the API returns, by its stable `code`. A code
 * without a row here does not compile.
 */
export type ProblemCode =
  | 'ValidationFailed'
  | 'NoFileProvided'
  | 'UnsupportedFileType'
  | 'Unauthorized'
  | 'Forbidden'
  | 'InsufficientCredit'
  | 'CustomerSuspended'
  | 'NotProvisioned'
  | 'NotFound'
  | 'UploadNotFound'
  | 'DocumentNotFound'
  | 'OrganisationNotFound'
  | 'ApiKeyNotFound'
  | 'DownloadExpired'
  | 'MethodNotAllowed'
  | 'UploadAlreadySubmitted'
  | 'UploadAlreadyUploaded'
  | 'IdempotencyKeyInFlight'
  | 'DocumentNotDeletable'
  | 'DocumentNotCompleted'
  | 'DocumentDeleted'
  | 'LengthRequired'
  | 'FileTooLargeForPlan'
  | 'PayloadTooLarge'
  | 'UnsupportedMediaType'
  | 'UnsupportedContentEncoding'
  | 'IdempotencyKeyEndpointMismatch'
  | 'IdempotencyKeyReused'
  | 'QuotaExceeded'
  | 'RateLimited'
  | 'InvalidSignature'
  | 'AuthorizationHeaderNotAllowed'
  | 'LinkExpired'
  | 'DigestMismatch'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'OAuthClientNotFound'
  | 'OAuthClientRevoked';

/** One row of the catalogue. */
export interface ProblemType {
  readonly status: number;
  readonly title: string;
  /** When the problem happens, for the docs and the openapi document. */
  readonly description: string;
}

/** The catalogue. */
export const PROBLEMS: Readonly<Record<ProblemCode, ProblemType>> = {
  ValidationFailed: {
    status: 400,
    title: 'Validation failed',
    description:
      'A request value is missing or invalid. The `errors` member lists each problem as `{ "field", "message" }`.',
  },
  NoFileProvided: {
    status: 400,
    title: 'No file provided',
    description: 'The multipart body has no `file` field, or it is empty; or a raw body is empty.',
  },
  UnsupportedFileType: {
    status: 400,
    title: 'Unsupported file type',
    description: 'The file name’s extension is not one of the supported types.',
  },
  Unauthorized: {
    status: 401,
    title: 'Unauthorized',
    description: 'The credential is missing, expired or invalid.',
  },
  Forbidden: {
    status: 403,
    title: 'Forbidden',
    description: 'The credential is valid but lacks the scope this route needs (e.g. `cdr.admin`).',
  },
  InsufficientCredit: {
    status: 402,
    title: 'Insufficient credit',
    description:
      'The prepaid balance cannot cover the per-document price. Members `balancePence` and `pricePerDocumentPence`.',
  },
  CustomerSuspended: {
    status: 403,
    title: 'Customer suspended',
    description: 'The organisation’s account is suspended.',
  },
  NotProvisioned: {
    status: 403,
    title: 'Not provisioned',
    description:
      'The organisation has no active plan yet (403 on submissions and uploads, 404 on GET /v1/account).',
  },
  NotFound: { status: 404, title: 'Not found', description: 'No such route.' },
  UploadNotFound: {
    status: 404,
    title: 'Upload not found',
    description: 'The upload id is unknown, expired, or belongs to another organisation.',
  },
  DocumentNotFound: {
    status: 404,
    title: 'Document not found',
    description: 'No such document under the caller’s organisation.',
  },
  OrganisationNotFound: {
    status: 404,
    title: 'Organisation not found',
    description: 'No organisation has this id (admin API).',
  },
  ApiKeyNotFound: {
    status: 404,
    title: 'API key not found',
    description: 'The organisation has no key with this id (admin API).',
  },
  DownloadExpired: {
    status: 404,
    title: 'Download expired',
    description:
      'The cleaned file was retained for 24 hours after completion and is gone; submit again.',
  },
  MethodNotAllowed: {
    status: 405,
    title: 'Method not allowed',
    description: 'The route exists but not with this method; `Allow` lists the methods.',
  },
  UploadAlreadySubmitted: {
    status: 409,
    title: 'Upload already submitted',
    description: 'An upload can be submitted once.',
  },
  UploadAlreadyUploaded: {
    status: 409,
    title: 'Upload already uploaded',
    description: 'The upload link is create-only: its bytes were already written.',
  },
  IdempotencyKeyInFlight: {
    status: 409,
    title: 'Idempotency key in flight',
    description: 'The first request with this Idempotency-Key is still running; retry later.',
  },
  DocumentNotDeletable: {
    status: 409,
    title: 'Document not deletable',
    description: 'The document is still being processed.',
  },
  DocumentNotCompleted: {
    status: 409,
    title: 'Document not completed',
    description:
      'There is no cleaned file (yet): the document is in flight, rejected or failed. The body is the document envelope.',
  },
  DocumentDeleted: {
    status: 410,
    title: 'Document deleted',
    description: 'The cleaned file was deleted by DELETE or after its delete-after-download grace.',
  },
  LengthRequired: {
    status: 411,
    title: 'Length required',
    description: 'A raw-binary submission must carry Content-Length.',
  },
  FileTooLargeForPlan: {
    status: 413,
    title: 'File too large for plan',
    description:
      'The file is over this lane’s or the plan’s ceiling. `maxSizeBytes` gives the ceiling; `acceptedByLane` names the lane that would accept it.',
  },
  PayloadTooLarge: {
    status: 413,
    title: 'Payload too large',
    description: 'A JSON body is larger than this endpoint accepts.',
  },
  UnsupportedMediaType: {
    status: 415,
    title: 'Unsupported media type',
    description:
      'The Content-Type is not one this endpoint takes (POST /v1/documents: multipart/form-data, application/json, application/octet-stream).',
  },
  UnsupportedContentEncoding: {
    status: 415,
    title: 'Unsupported content encoding',
    description: 'Raw-binary bodies are not decoded: send them without Content-Encoding.',
  },
  IdempotencyKeyEndpointMismatch: {
    status: 422,
    title: 'Idempotency key endpoint mismatch',
    description: 'The Idempotency-Key was first used on another endpoint.',
  },
  IdempotencyKeyReused: {
    status: 422,
    title: 'Idempotency key reused',
    description:
      'The Idempotency-Key was first used with a different request body (IETF Idempotency-Key draft).',
  },
  QuotaExceeded: {
    status: 429,
    title: 'Quota exceeded',
    description: 'The monthly allowance is used up; `Retry-After` gives the period end.',
  },
  RateLimited: {
    status: 429,
    title: 'Rate limited',
    description: 'Too many requests this minute; `Retry-After` gives the seconds to wait.',
  },
  InvalidSignature: {
    status: 403,
    title: 'Invalid signature',
    description: 'The storage link is not signed by this service, or was altered.',
  },
  AuthorizationHeaderNotAllowed: {
    status: 400,
    title: 'Authorization header not allowed',
    description:
      'Storage links are pre-authorised; a request that also carries an Authorization header is refused so bearer tokens never reach storage.',
  },
  LinkExpired: {
    status: 403,
    title: 'Link expired',
    description: 'The storage link is past its expiry.',
  },
  DigestMismatch: {
    status: 400,
    title: 'Digest mismatch',
    description: 'The uploaded bytes do not match their Content-MD5; nothing was stored.',
  },
  InternalError: {
    status: 500,
    title: 'Internal error',
    description: 'Something failed inside the service; the details are in its logs.',
  },
  ServiceUnavailable: {
    status: 503,
    title: 'Service unavailable',
    description:
      'The service is shutting down or not ready, or cannot reach its database or store files just now (a disk full, a database restarting). Nothing was done; `Retry-After` says when to try again.',
  },
  OAuthClientNotFound: {
    status: 404,
    title: 'OAuth client not found',
    description: 'The organisation has no OAuth client with this id (admin API).',
  },
  OAuthClientRevoked: {
    status: 409,
    title: 'OAuth client revoked',
    description: 'The OAuth client is revoked: its secrets cannot be rotated (admin API).',
  },
};
