import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode } from '../http/problems.ts';
import { problemTypeUrl } from '../http/problem-response.ts';
import {
  HEADERS,
  jsonResponse,
  listResponse,
  problemResponse,
  PROBLEM_MEDIA_TYPE,
  rateLimitHeaders,
  responseRef,
  SHARED_RESPONSES,
  USAGE_HEADERS,
} from './_responses.ts';
import { CLIENT_SECRET_BASIC_SCHEME, OAUTH_TAG, oauthPaths } from './_oauth-paths.ts';
import { schemaRef, SCHEMAS } from './_schemas.ts';
import { DOCS_ASSET_TYPES, DOCS_ASSETS_PATH, DOCS_PATH, PROBLEMS_PATH } from './docs-page.ts';
import type {
  ExampleObject,
  OpenApiDocument,
  OperationObject,
  ParameterObject,
  PathItemObject,
  ProblemCatalogueEntry,
  ReferenceObject,
  ResponseObject,
  SecurityRequirement,
} from './types.ts';
import { HTTP_METHODS } from './types.ts';

/** Where the API serves this document. */
export const OPENAPI_PATH = '/v1/openapi.json';

/** Options of {@link createOpenApiDocument}. */
export interface OpenApiDocumentOptions {
  /** Absolute base URL clients reach the API at (`servers[0].url`, token URL, problem types). */
  readonly publicBaseUrl: string;
  /** Describe the test-mode routes (`POST /v1/admin/clock`). Never true in production. */
  readonly testMode: boolean;
  /**
   * Path items of routes served beyond the built-in ones (e.g. `POST /connect/token` and
   * `GET /.well-known/jwks.json` once the token endpoint is served). Describe only routes that
   * exist. A path that is already described throws `TypeError`.
   */
  readonly extraPaths?: Readonly<Record<string, PathItemObject>>;
  /**
   * Whether successful document-API responses must carry `RateLimit` and `RateLimit-Policy`
   * (they are described either way). Set false while no rate-limit middleware is installed.
   * @default true
   */
  readonly requireRateLimitHeaders?: boolean;
  /**
   * Describe the OAuth routes the API serves when it runs with `oauth` configured: `POST
   * /connect/token`, `GET /.well-known/jwks.json`, the OAuth client admin routes and the
   * signing-key admin routes (and the `clientSecretBasic` security scheme).
   * @default false
   */
  readonly oauth?: boolean;
}

/** Problem codes that only the storage origin (signed upload and download links) answers with. */
const STORAGE_ONLY_CODES: ReadonlySet<ProblemCode> = new Set<ProblemCode>([
  'InvalidSignature',
  'AuthorizationHeaderNotAllowed',
  'LinkExpired',
  'DigestMismatch',
  'UploadAlreadyUploaded',
]);

/** Codes the storage origin answers with as well as the API. */
const STORAGE_SHARED_CODES: ReadonlySet<ProblemCode> = new Set<ProblemCode>([
  'ValidationFailed',
  'NoFileProvided',
  'NotFound',
  'MethodNotAllowed',
  'FileTooLargeForPlan',
  'UnsupportedContentEncoding',
  'InternalError',
]);

const TAGS = [
  {
    name: 'Documents',
    description: 'Submit documents, poll their envelopes, fetch the cleaned files.',
  },
  { name: 'Uploads', description: 'The staged-upload lane for files over 100 MB.' },
  {
    name: 'Account',
    description: 'Plan, allowance, credit and limits of the caller’s organisation.',
  },
  {
    name: 'Admin',
    description:
      'Organisations, API keys, OAuth clients and token signing keys (scope `cdr.admin`; API keys never work here).',
  },
  {
    name: 'Meta',
    description: 'The contract, the reference, the problem catalogue and health probes.',
  },
] as const;

type TagName = (typeof TAGS)[number]['name'];

const DOCUMENT_API_SECURITY: readonly SecurityRequirement[] = [
  { bearer: [] },
  { apiKey: [] },
  { oauth2: ['cdr.api'] },
];
const ADMIN_SECURITY: readonly SecurityRequirement[] = [
  { bearer: ['cdr.admin'] },
  { oauth2: ['cdr.admin'] },
];
const PUBLIC: readonly SecurityRequirement[] = [];

const parameterRef = (name: keyof typeof PARAMETERS): ReferenceObject => ({
  $ref: `#/components/parameters/${name}`,
});

const PARAMETERS = {
  DocumentId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The document id.',
    schema: { type: 'string', minLength: 1 },
  },
  OrganisationId: {
    name: 'organisationId',
    in: 'path',
    required: true,
    description: 'The organisation id.',
    schema: { type: 'string', minLength: 1 },
  },
  KeyId: {
    name: 'keyId',
    in: 'path',
    required: true,
    description: 'The API key id.',
    schema: { type: 'string', minLength: 1 },
  },
  StatusStyle: {
    name: 'statusStyle',
    in: 'query',
    description:
      'Literal `202` selects the 202-while-pending polling contract: in flight answers 202 with `Location` and `Retry-After`.',
    schema: { type: 'string', enum: ['202'] },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description:
      'For 24 hours a retry with the same key replays the first response byte for byte (`Idempotency-Replayed: true`). A concurrent duplicate gets 409 IdempotencyKeyInFlight while the first request runs; once that request has died (a crash), a retry is answered at once, for the document or upload it created if it created one; the key on another endpoint 422 IdempotencyKeyEndpointMismatch; with another body 422 IdempotencyKeyReused.',
    schema: { type: 'string', minLength: 1, maxLength: 200 },
  },
} as const satisfies Record<string, ParameterObject>;

/** Shared answers of every authenticated document-API operation. */
function documentApiErrors(
  forbidden: readonly ProblemCode[] = ['Forbidden'],
): Record<string, ResponseObject | ReferenceObject> {
  return {
    '401': responseRef('Unauthorized'),
    '403': problemResponse(forbidden),
    '500': responseRef('InternalError'),
    '503': responseRef('ServiceUnavailable'),
  };
}

function rateLimited(
  codes: readonly ProblemCode[] = ['RateLimited'],
  usage = false,
): ResponseObject {
  return problemResponse(codes, {
    headers: {
      'Retry-After': HEADERS.retryAfter,
      ...rateLimitHeaders(false),
      ...(usage ? USAGE_HEADERS : {}),
    },
  });
}

/** A JSON request body over the API's cap. */
const jsonBodyErrors = (): Record<string, ResponseObject> => ({
  '413': problemResponse(['PayloadTooLarge']),
});

function operation(
  tag: TagName,
  security: readonly SecurityRequirement[],
  body: Omit<OperationObject, 'tags' | 'security'>,
): OperationObject {
  return { ...body, tags: [tag], security };
}

// ─── Examples (validated against their schemas by the tests) ────────────────────────────────

const EXAMPLE_ID = 'doc_8k2m4q7w9x1c3v5b6n0p';

function documentExamples(base: string): {
  readonly pending: ExampleObject;
  readonly completed: ExampleObject;
  readonly completedWithFindings: ExampleObject;
  readonly rejected: ExampleObject;
} {
  const statusUrl = `${base}/v1/documents/${EXAMPLE_ID}`;
  return {
    pending: {
      summary: 'Accepted, in flight',
      value: {
        id: EXAMPLE_ID,
        status: 'pending',
        statusUrl,
        submittedAt: '2025-03-01T10:00:00.000Z',
        pollAfterSeconds: 2,
      },
    },
    completed: {
      summary: 'Completed, converted to PDF',
      value: {
        id: EXAMPLE_ID,
        status: 'completed',
        statusUrl,
        outcome: 'cleaned',
        modifications: ['rebuilt', 'converted'],
        outputFormat: 'pdf',
        findings: [{ kind: 'script', count: 2, locations: [] }],
        submittedAt: '2025-03-01T10:00:00.000Z',
        completedAt: '2025-03-01T10:00:03.000Z',
        downloadUrl:
          'https://storage.example.com/blobs/outputs/doc_8k2m4q7w9x1c3v5b6n0p?sig=Xq3v9J2kPa',
        downloadExpiresAt: '2025-03-02T10:00:03.000Z',
      },
    },
    completedWithFindings: {
      summary: 'Completed: an archive whose macros and PDF scripts were removed',
      value: {
        id: EXAMPLE_ID,
        status: 'completed',
        statusUrl,
        outcome: 'cleaned',
        modifications: ['rebuilt'],
        findings: [
          {
            kind: 'pdf-javascript',
            count: 2,
            locations: [
              { member: ['bundle.zip', 'docs/report.pdf'], page: 2, count: 1 },
              { member: ['bundle.zip', 'docs/report.pdf'], count: 1 },
            ],
          },
          {
            kind: 'vba-macro',
            count: 1,
            locations: [{ member: ['budget.xlsm'], part: 'xl/vbaProject.bin', count: 1 }],
          },
        ],
        submittedAt: '2025-03-01T10:00:00.000Z',
        completedAt: '2025-03-01T10:00:03.000Z',
        downloadUrl:
          'https://storage.example.com/blobs/outputs/doc_8k2m4q7w9x1c3v5b6n0p?sig=Xq3v9J2kPa',
        downloadExpiresAt: '2025-03-02T10:00:03.000Z',
      },
    },
    rejected: {
      summary: 'Rejected: a threat that cannot be removed',
      value: {
        id: EXAMPLE_ID,
        status: 'rejected',
        statusUrl,
        reason: 'threat_detected',
        reasonDetail: 'The archive contains EICAR-Test-File in member "eicar.com".',
        threatNames: ['EICAR-Test-File'],
        submittedAt: '2025-03-01T10:00:00.000Z',
        completedAt: '2025-03-01T10:00:01.000Z',
        helpUrl: `${base}/docs`,
      },
    },
  };
}

function problemExample(
  base: string,
  code: ProblemCode,
  members: Record<string, number | string> = {},
): ExampleObject {
  const row = PROBLEMS[code];
  return {
    summary: row.title,
    value: {
      type: problemTypeUrl(base, code),
      title: row.title,
      status: row.status,
      code,
      detail: row.description,
      ...members,
    },
  };
}

// ─── Paths ──────────────────────────────────────────────────────────────────────────────────

function documentPaths(base: string, rateLimitRequired: boolean): Record<string, PathItemObject> {
  const examples = documentExamples(base);
  const pendingOnly = { pending: examples.pending };
  const submit = operation('Documents', DOCUMENT_API_SECURITY, {
    operationId: 'submitDocument',
    summary: 'Submit a document',
    description: [
      'Three request lanes, chosen by Content-Type; all return the same envelope and run the same pipeline.',
      '',
      '- `multipart/form-data`: form field `file` (up to the plan’s `maxFileSizeBytes`, 100 MB) and optional `deleteAfterDownload`.',
      '- `application/json`: submit a staged upload by reference (`POST /v1/uploads` first).',
      '- `application/octet-stream`: the raw bytes; `filename` query parameter required, `Content-Length` required (411), no `Content-Encoding` (415).',
      '',
      'Default: 202 and poll `statusUrl`. Sync mode (`wait=true`, `waitSeconds=N` or `Prefer: respond-sync`) holds the request for the final envelope (200) and degrades to 202 when the wait budget runs out. Every accepted document is metered: allowance on tier plans, credit on pay-as-you-go.',
    ].join('\n'),
    parameters: [
      {
        name: 'wait',
        in: 'query',
        description: 'Sync mode: hold the request open for the result (as `Prefer: respond-sync`).',
        schema: { type: 'boolean', default: false },
      },
      {
        name: 'waitSeconds',
        in: 'query',
        description:
          'Cap the sync wait at N seconds, clamped to the server budget (45 s by default); implies `wait`.',
        schema: { type: 'integer', format: 'int32', minimum: 0 },
      },
      parameterRef('StatusStyle'),
      {
        name: 'filename',
        in: 'query',
        description: 'Raw lane only, and required there: the file name with its extension.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
      {
        name: 'deleteAfterDownload',
        in: 'query',
        description: 'Raw lane only: delete the cleaned file shortly after its first download.',
        schema: { type: 'boolean', default: false },
      },
      parameterRef('IdempotencyKey'),
      {
        name: 'Prefer',
        in: 'header',
        description: 'RFC 7240: `respond-sync` (as `wait=true`) or `wait=N` (as `waitSeconds=N`).',
        schema: { type: 'string' },
        example: 'respond-sync',
      },
    ],
    requestBody: {
      description: 'The file, by one of three lanes.',
      required: true,
      content: {
        'multipart/form-data': {
          schema: schemaRef('MultipartSubmission'),
          encoding: { file: { contentType: 'application/octet-stream' } },
        },
        'application/json': {
          schema: schemaRef('SubmitByReference'),
          examples: {
            byReference: {
              value: { uploadId: 'upl_3c9f0a2b7d4e6g8h1j5k', deleteAfterDownload: false },
            },
          },
        },
        'application/octet-stream': {
          schema: {
            type: 'string',
            format: 'binary',
            contentMediaType: 'application/octet-stream',
          },
        },
      },
    },
    responses: {
      '200': jsonResponse({
        description:
          'Sync mode only: the document reached a terminal status within the wait budget.',
        schema: 'Document',
        headers: {
          'Preference-Applied': HEADERS.preferenceApplied,
          'Idempotency-Replayed': HEADERS.idempotencyReplayed,
          ...USAGE_HEADERS,
          ...rateLimitHeaders(rateLimitRequired),
        },
        examples: {
          completed: examples.completed,
          completedWithFindings: examples.completedWithFindings,
          rejected: examples.rejected,
        },
      }),
      '202': jsonResponse({
        description:
          'Accepted (also sync mode when the budget runs out, and the upload lane in sync mode, which skips the wait). Poll `Location`.',
        schema: 'Document',
        headers: {
          Location: HEADERS.location,
          'Retry-After': HEADERS.retryAfterSeconds,
          'Preference-Applied': HEADERS.preferenceApplied,
          'Idempotency-Replayed': HEADERS.idempotencyReplayed,
          ...USAGE_HEADERS,
          ...rateLimitHeaders(rateLimitRequired),
        },
        examples: pendingOnly,
      }),
      '400': problemResponse(['ValidationFailed', 'NoFileProvided', 'UnsupportedFileType']),
      '402': {
        ...problemResponse(['InsufficientCredit'], { headers: USAGE_HEADERS }),
        content: {
          [PROBLEM_MEDIA_TYPE]: {
            schema: schemaRef('Problem'),
            examples: {
              insufficientCredit: problemExample(base, 'InsufficientCredit', {
                balancePence: 4,
                pricePerDocumentPence: 10,
              }),
            },
          },
        },
      },
      '404': problemResponse(['UploadNotFound']),
      '409': problemResponse(['UploadAlreadySubmitted', 'IdempotencyKeyInFlight']),
      '411': problemResponse(['LengthRequired']),
      '413': {
        ...problemResponse(['FileTooLargeForPlan', 'PayloadTooLarge']),
        content: {
          [PROBLEM_MEDIA_TYPE]: {
            schema: schemaRef('Problem'),
            examples: {
              tooLargeForLane: problemExample(base, 'FileTooLargeForPlan', {
                maxSizeBytes: 104_857_600,
                acceptedByLane: 'upload',
              }),
            },
          },
        },
      },
      '415': problemResponse(['UnsupportedMediaType', 'UnsupportedContentEncoding']),
      '422': problemResponse(['IdempotencyKeyEndpointMismatch', 'IdempotencyKeyReused']),
      '429': rateLimited(['QuotaExceeded', 'RateLimited'], true),
      ...documentApiErrors(['CustomerSuspended', 'NotProvisioned', 'Forbidden']),
    },
  });

  return {
    '/v1/documents': { post: submit },
    '/v1/documents/{id}': {
      parameters: [parameterRef('DocumentId')],
      get: operation('Documents', DOCUMENT_API_SECURITY, {
        operationId: 'getDocument',
        summary: 'Get a document’s envelope',
        description:
          'Always 200 with the envelope, unless `statusStyle=202` is given: then 202 (with `Location` and `Retry-After`) while in flight, 200 once terminal. Status reads have their own rate-limit partition.',
        parameters: [parameterRef('StatusStyle')],
        responses: {
          '200': jsonResponse({
            description: 'The envelope.',
            schema: 'Document',
            headers: rateLimitHeaders(rateLimitRequired),
            examples,
          }),
          '202': jsonResponse({
            description: '`statusStyle=202` only: still in flight.',
            schema: 'Document',
            headers: {
              Location: HEADERS.location,
              'Retry-After': HEADERS.retryAfterSeconds,
              ...rateLimitHeaders(rateLimitRequired),
            },
            examples: pendingOnly,
          }),
          '400': problemResponse(['ValidationFailed']),
          '404': problemResponse(['DocumentNotFound']),
          '429': rateLimited(),
          ...documentApiErrors(),
        },
      }),
      delete: operation('Documents', DOCUMENT_API_SECURITY, {
        operationId: 'deleteDocument',
        summary: 'Delete the cleaned file early',
        description:
          'Removes the cleaned file permanently; status, outcome and metadata stay readable (`deletedAt`). Idempotent: 204 also when there never was a file.',
        responses: {
          '204': {
            description: 'The cleaned file is gone.',
            headers: rateLimitHeaders(rateLimitRequired),
          },
          '404': problemResponse(['DocumentNotFound']),
          '409': problemResponse(['DocumentNotDeletable']),
          '429': rateLimited(),
          ...documentApiErrors(),
        },
      }),
    },
    '/v1/documents/{id}/download': {
      parameters: [parameterRef('DocumentId')],
      get: operation('Documents', DOCUMENT_API_SECURITY, {
        operationId: 'downloadDocument',
        summary: 'Redirect to the cleaned file',
        description:
          'Redirects to a pre-authorised, time-limited link on the storage origin. Do not forward your credentials to it: storage refuses a link that arrives with an `Authorization` header (400). With `deleteAfterDownload`, the first call starts the deletion grace clock.',
        responses: {
          '302': {
            description: 'Follow `Location` (without credentials) to the cleaned file. No body.',
            headers: {
              Location: {
                ...HEADERS.location,
                description: 'The signed, time-limited link to the cleaned file.',
              },
              'Cache-Control': HEADERS.noStore,
              'Referrer-Policy': HEADERS.referrerPolicy,
              ...rateLimitHeaders(false),
            },
          },
          '404': problemResponse(['DocumentNotFound', 'DownloadExpired']),
          '409': {
            description:
              'DocumentNotCompleted: there is no cleaned file (yet) — in flight, rejected or failed. The body is the current document envelope, not a problem.',
            'x-catalogue-code': 'DocumentNotCompleted',
            headers: {
              'Cache-Control': { ...HEADERS.noStore, required: false },
              ...rateLimitHeaders(false),
            },
            content: {
              'application/json': {
                schema: schemaRef('Document'),
                examples: { pending: examples.pending },
              },
              'text/json': { schema: schemaRef('Document') },
              'text/plain': { schema: schemaRef('Document') },
            },
          },
          '410': problemResponse(['DocumentDeleted']),
          '429': rateLimited(),
          ...documentApiErrors(),
        },
      }),
    },
    '/v1/uploads': {
      post: operation('Uploads', DOCUMENT_API_SECURITY, {
        operationId: 'createUpload',
        summary: 'Create a staged upload',
        description: [
          'For files over 100 MB (up to the plan’s `maxUploadSizeBytes`). The file name is checked against the supported types now. Counts against the submission rate-limit budget and is refused up front if the account could not submit; nothing is metered until the upload is submitted by reference.',
          '',
          '1. `POST /v1/uploads` → `uploadId`, `uploadUrl`, `method`, `requiredHeaders`, `maxSizeBytes`, `expiresAt`.',
          '2. `PUT` the raw bytes to `uploadUrl` with every header of `requiredHeaders` and no `Authorization` (optionally `Content-MD5`).',
          '3. `POST /v1/documents` with `{"uploadId": "…"}`.',
        ].join('\n'),
        parameters: [parameterRef('IdempotencyKey')],
        requestBody: {
          description: 'The name of the file to be uploaded.',
          required: true,
          content: { 'application/json': { schema: schemaRef('UploadCreate') } },
        },
        responses: {
          '201': jsonResponse({
            description: 'The upload was created: PUT the bytes to `uploadUrl` within 60 minutes.',
            schema: 'Upload',
            headers: {
              'Idempotency-Replayed': HEADERS.idempotencyReplayed,
              ...USAGE_HEADERS,
              ...rateLimitHeaders(rateLimitRequired),
            },
          }),
          '400': problemResponse(['UnsupportedFileType', 'ValidationFailed']),
          '402': problemResponse(['InsufficientCredit'], { headers: USAGE_HEADERS }),
          '409': problemResponse(['IdempotencyKeyInFlight']),
          '422': problemResponse(['IdempotencyKeyEndpointMismatch', 'IdempotencyKeyReused']),
          '429': rateLimited(['QuotaExceeded', 'RateLimited'], true),
          ...jsonBodyErrors(),
          ...documentApiErrors(['CustomerSuspended', 'NotProvisioned', 'Forbidden']),
        },
      }),
    },
    '/v1/account': {
      get: operation('Account', DOCUMENT_API_SECURITY, {
        operationId: 'getAccount',
        summary: 'Get the account snapshot',
        description: 'A fresh read on every call, never cached.',
        responses: {
          '200': jsonResponse({
            description: 'The account snapshot.',
            schema: 'Account',
            headers: { 'Cache-Control': HEADERS.noStore, ...rateLimitHeaders(rateLimitRequired) },
          }),
          '404': problemResponse(['NotProvisioned'], {
            description:
              '`NotProvisioned`: the organisation has no account yet (404 on this route, 403 elsewhere).',
          }),
          '429': rateLimited(),
          ...documentApiErrors(),
        },
      }),
    },
  };
}

function adminPaths(testMode: boolean): Record<string, PathItemObject> {
  const adminErrors = (): Record<string, ResponseObject | ReferenceObject> => ({
    '401': responseRef('Unauthorized'),
    '403': problemResponse(['Forbidden'], {
      description: '`Forbidden`: the credential lacks scope `cdr.admin` (API keys never have it).',
    }),
    '500': responseRef('InternalError'),
    '503': responseRef('ServiceUnavailable'),
  });
  const organisationNotFound = problemResponse(['OrganisationNotFound']);
  const organisation = (description: string): ResponseObject =>
    jsonResponse({ description, schema: 'AdminOrganisation' });
  const jsonBody = (schema: Parameters<typeof schemaRef>[0], required = true) => ({
    description: 'JSON body.',
    required,
    content: { 'application/json': { schema: schemaRef(schema) } },
  });

  const paths: Record<string, PathItemObject> = {
    '/v1/admin/organisations': {
      post: operation('Admin', ADMIN_SECURITY, {
        operationId: 'createOrganisation',
        summary: 'Create an organisation',
        description:
          'Without `plan`, the organisation exists but is not provisioned (NotProvisioned).',
        requestBody: jsonBody('AdminOrganisationCreate'),
        responses: {
          '201': organisation('The organisation.'),
          '400': problemResponse(['ValidationFailed']),
          ...jsonBodyErrors(),
          ...adminErrors(),
        },
      }),
      get: operation('Admin', ADMIN_SECURITY, {
        operationId: 'listOrganisations',
        summary: 'List organisations',
        responses: {
          '200': listResponse('Every organisation.', 'organisations', 'AdminOrganisation'),
          ...adminErrors(),
        },
      }),
    },
    '/v1/admin/organisations/{organisationId}': {
      parameters: [parameterRef('OrganisationId')],
      get: operation('Admin', ADMIN_SECURITY, {
        operationId: 'getOrganisation',
        summary: 'Get an organisation',
        responses: {
          '200': organisation('The organisation.'),
          '404': organisationNotFound,
          ...adminErrors(),
        },
      }),
      patch: operation('Admin', ADMIN_SECURITY, {
        operationId: 'updateOrganisation',
        summary: 'Change an organisation',
        description:
          'Only the given members change. `status: suspended` refuses submissions (CustomerSuspended); `plan` re-provisions; `creditDeltaPence` adds or takes credit.',
        requestBody: jsonBody('AdminOrganisationPatch'),
        responses: {
          '200': organisation('The organisation after the change.'),
          '400': problemResponse(['ValidationFailed']),
          '404': organisationNotFound,
          ...jsonBodyErrors(),
          ...adminErrors(),
        },
      }),
    },
    '/v1/admin/organisations/{organisationId}/keys': {
      parameters: [parameterRef('OrganisationId')],
      post: operation('Admin', ADMIN_SECURITY, {
        operationId: 'createApiKey',
        summary: 'Create an API key',
        description: 'The key is in this response only: store it now. Only its hash is kept.',
        requestBody: jsonBody('ApiKeyCreate', false),
        responses: {
          '201': jsonResponse({ description: 'The new key, shown once.', schema: 'ApiKeyCreated' }),
          '400': problemResponse(['ValidationFailed']),
          '404': organisationNotFound,
          ...jsonBodyErrors(),
          ...adminErrors(),
        },
      }),
      get: operation('Admin', ADMIN_SECURITY, {
        operationId: 'listApiKeys',
        summary: 'List API keys',
        description: 'Revoked keys stay listed (with `revokedAt`).',
        responses: {
          '200': listResponse('The organisation’s keys (never the secrets).', 'keys', 'ApiKey'),
          '404': organisationNotFound,
          ...adminErrors(),
        },
      }),
    },
    '/v1/admin/organisations/{organisationId}/keys/{keyId}': {
      parameters: [parameterRef('OrganisationId'), parameterRef('KeyId')],
      delete: operation('Admin', ADMIN_SECURITY, {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key',
        description: 'Takes effect within one minute. Revoking again succeeds.',
        responses: {
          '200': jsonResponse({ description: 'The key, with `revokedAt` set.', schema: 'ApiKey' }),
          '404': problemResponse(['ApiKeyNotFound', 'OrganisationNotFound']),
          ...adminErrors(),
        },
      }),
    },
  };
  if (testMode) {
    paths['/v1/admin/clock'] = {
      post: operation('Admin', ADMIN_SECURITY, {
        operationId: 'advanceClock',
        summary: 'Advance the manual clock (test mode)',
        description: 'Served only in test mode, where the service runs on a manual clock.',
        requestBody: jsonBody('ClockAdvance'),
        responses: {
          '200': jsonResponse({ description: 'The clock after advancing.', schema: 'ClockNow' }),
          '400': problemResponse(['ValidationFailed']),
          ...jsonBodyErrors(),
          ...adminErrors(),
        },
      }),
    };
  }
  return paths;
}

function metaPaths(): Record<string, PathItemObject> {
  const html = (description: string, csp: boolean): ResponseObject => ({
    description,
    headers: csp ? { 'Content-Security-Policy': HEADERS.contentSecurityPolicy } : {},
    content: { 'text/html': { schema: { type: 'string' } } },
  });
  const common = { '500': responseRef('InternalError'), '503': responseRef('ServiceUnavailable') };
  const health = (description: string): ResponseObject =>
    jsonResponse({ description, schema: 'HealthStatus' });
  return {
    [OPENAPI_PATH]: {
      get: operation('Meta', PUBLIC, {
        operationId: 'getOpenApiDocument',
        summary: 'This contract (OpenAPI 3.1)',
        responses: {
          '200': {
            description: 'The OpenAPI 3.1 document.',
            content: Object.fromEntries(
              ['application/json', 'text/json', 'text/plain'].map((mediaType) => [
                mediaType,
                {
                  schema: {
                    type: 'object',
                    required: ['openapi', 'info', 'paths'],
                    properties: { openapi: { type: 'string', pattern: '^3\\.1\\.' } },
                  },
                },
              ]),
            ),
          },
          ...common,
        },
      }),
    },
    [DOCS_PATH]: {
      get: operation('Meta', PUBLIC, {
        operationId: 'getDocs',
        summary: 'Interactive reference (Swagger UI, served offline)',
        responses: { '200': html('The reference page.', true), ...common },
      }),
    },
    [`${DOCS_ASSETS_PATH}/{name}`]: {
      get: operation('Meta', PUBLIC, {
        operationId: 'getDocsAsset',
        summary: 'A script or style of the reference page',
        parameters: [
          {
            name: 'name',
            in: 'path',
            required: true,
            description: 'The asset.',
            schema: { type: 'string', enum: Object.keys(DOCS_ASSET_TYPES) },
          },
        ],
        responses: {
          '200': {
            description: 'The asset.',
            content: {
              'text/css': { schema: { type: 'string' } },
              'text/javascript': { schema: { type: 'string' } },
              'application/javascript': { schema: { type: 'string' } },
            },
          },
          '404': responseRef('NotFound'),
          ...common,
        },
      }),
    },
    [PROBLEMS_PATH]: {
      get: operation('Meta', PUBLIC, {
        operationId: 'listProblemTypes',
        summary: 'The problem catalogue',
        responses: {
          '200': html('Every problem code, with its status and meaning.', true),
          ...common,
        },
      }),
    },
    [`${PROBLEMS_PATH}/{code}`]: {
      get: operation('Meta', PUBLIC, {
        operationId: 'getProblemType',
        summary: 'One problem type (the target of a problem’s `type`)',
        parameters: [
          {
            name: 'code',
            in: 'path',
            required: true,
            description: 'The problem code.',
            schema: schemaRef('ProblemCode'),
          },
        ],
        responses: {
          '200': html('The catalogue entry.', true),
          '404': responseRef('NotFound'),
          ...common,
        },
      }),
    },
    '/healthz': {
      get: operation('Meta', PUBLIC, {
        operationId: 'getHealth',
        summary: 'Liveness: the process answers',
        responses: { '200': health('`{"status": "ok"}`.'), ...common },
      }),
    },
    '/readyz': {
      get: operation('Meta', PUBLIC, {
        operationId: 'getReadiness',
        summary: 'Readiness: the store is reachable and workers are up',
        responses: {
          '200': health(
            '`{"status": "ready", "renderers": {"svg": "builtin", …}}`: `renderers` names the renderer of each format returned as PDF.',
          ),
          '503': {
            description:
              'Not ready (`{"status": "not ready"}`), or shutting down (ServiceUnavailable).',
            content: {
              'application/json': { schema: schemaRef('HealthStatus') },
              'text/json': { schema: schemaRef('HealthStatus') },
              'text/plain': { schema: schemaRef('HealthStatus') },
              [PROBLEM_MEDIA_TYPE]: { schema: schemaRef('Problem') },
            },
            'x-problem-codes': ['ServiceUnavailable'],
          },
          '500': responseRef('InternalError'),
        },
      }),
    },
  };
}

/** Adds `x-other-methods` (405 with `Allow`) to every path item. */
function withMethodNotAllowed(
  paths: Record<string, PathItemObject>,
): Record<string, PathItemObject> {
  const result: Record<string, PathItemObject> = {};
  for (const [path, item] of Object.entries(paths)) {
    result[path] = { ...item, 'x-other-methods': responseRef('MethodNotAllowed') };
  }
  return result;
}

function catalogue(base: string): Record<ProblemCode, ProblemCatalogueEntry> {
  const entries = (Object.keys(PROBLEMS) as ProblemCode[]).map(
    (code): [ProblemCode, ProblemCatalogueEntry] => {
      const row = PROBLEMS[code];
      const servedBy: ('api' | 'storage')[] = STORAGE_ONLY_CODES.has(code)
        ? ['storage']
        : STORAGE_SHARED_CODES.has(code)
          ? ['api', 'storage']
          : ['api'];
      return [
        code,
        {
          type: problemTypeUrl(base, code),
          status: row.status,
          title: row.title,
          description: row.description,
          servedBy,
        },
      ];
    },
  );
  return Object.fromEntries(entries) as Record<ProblemCode, ProblemCatalogueEntry>;
}

function description(base: string): string {
  return [
    'Content Disarm and Reconstruction: submit a document, receive a rebuilt copy with everything disallowed removed.',
    '',
    '**Authentication.** OAuth 2.0 client credentials (`Authorization: Bearer <access token>`, scope `cdr.api`) or an API key (`X-Api-Key: <key>`, or the key as the bearer value; the `dsm_live_` prefix tells them apart). Admin routes need scope `cdr.admin`; API keys never work there.',
    '',
    '**Bodies.** JSON members are camelCase; null members of envelopes are omitted. Successful JSON bodies are served as `application/json`, `text/json` or `text/plain` (by `Accept`). Errors are RFC 9457 `application/problem+json` with a stable `code`; the catalogue is at ' +
      `[${base}${PROBLEMS_PATH}](${base}${PROBLEMS_PATH}).`,
    '',
    '**Every route** answers `405 MethodNotAllowed` (with `Allow`) for a method it does not list, and any other path `404 NotFound`. Every `GET` operation also answers `HEAD` (RFC 9110 9.3.2): the same status and headers, no content; a `HEAD` of a download does not start the delete-after-download grace clock.',
    '',
    '**Request ids.** Every response carries `X-Request-Id`: the request’s own when it is 1 to 128 characters of letters, digits, `.`, `_`, `~` and `-`, otherwise a new `req_` id. A problem’s `instance` is the request path and, after `#`, that id; quote it when reporting a problem.',
    '',
    '**Limits.** Authenticated responses carry `RateLimit` and `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers); submissions carry usage headers (`X-CDR-Usage-*` on tier plans, `X-CDR-Credit-Balance-Pence` on pay-as-you-go). Exceeding a limit gives `429` with `Retry-After`.',
  ].join('\n');
}

/**
 * The OpenAPI 3.1 document of the v1 API: every route, parameter, body, status, header and
 * problem code as served. Served at {@link OPENAPI_PATH}; checked against real responses by
 * `createOpenApiValidator` (`@disarm/protocol/testing`).
 *
 * @example
 * ```ts
 * const document = createOpenApiDocument({ publicBaseUrl: 'https://cdr.example.com', testMode: false });
 * return Response.json(document);
 * ```
 * @throws {TypeError} when `publicBaseUrl` is not an absolute URL, or an `extraPaths` path is
 * already described.
 */
export function createOpenApiDocument(options: OpenApiDocumentOptions): OpenApiDocument {
  let base: string;
  try {
    base = new URL(options.publicBaseUrl).toString().replace(/\/+$/, '');
  } catch {
    throw new TypeError(`publicBaseUrl must be an absolute URL, got ${options.publicBaseUrl}`);
  }
  const oauth = options.oauth === true;
  const paths: Record<string, PathItemObject> = {
    ...documentPaths(base, options.requireRateLimitHeaders ?? true),
    ...adminPaths(options.testMode),
    ...metaPaths(),
    ...(oauth ? oauthPaths() : {}),
  };
  for (const [path, item] of Object.entries(options.extraPaths ?? {})) {
    if (Object.hasOwn(paths, path)) throw new TypeError(`extraPaths: ${path} is already described`);
    if (!HTTP_METHODS.some((method) => item[method] !== undefined)) {
      throw new TypeError(`extraPaths: ${path} describes no operation`);
    }
    paths[path] = item;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'disarm CDR API',
      version: '1.0.0',
      summary: 'Content Disarm and Reconstruction over HTTP.',
      description: description(base),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: base }],
    tags: oauth ? [...TAGS, OAUTH_TAG] : TAGS,
    security: DOCUMENT_API_SECURITY,
    paths: withMethodNotAllowed(paths),
    components: {
      schemas: SCHEMAS,
      responses: SHARED_RESPONSES,
      parameters: PARAMETERS,
      securitySchemes: {
        ...(oauth ? { clientSecretBasic: CLIENT_SECRET_BASIC_SCHEME } : {}),
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            '`Authorization: Bearer <value>`, where the value is either an OAuth 2.0 access token (a JWT from the client-credentials grant, valid one hour, scope `cdr.api` or `cdr.admin`) or an API key (prefix `dsm_live_`, which tells the service it is a key). Keys never carry `cdr.admin`.',
        },
        apiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Api-Key',
          description:
            'An API key: `dsm_live_` then a 43-character body. Same document-API access as a token; never works on admin routes. Keys do not expire; revocation takes effect within one minute.',
        },
        oauth2: {
          type: 'oauth2',
          description:
            'OAuth 2.0 client credentials: POST the token URL (form-encoded `grant_type=client_credentials`, `client_id`, `client_secret`, `scope`) and send the token as a bearer. Cache it for its hour.',
          flows: {
            clientCredentials: {
              tokenUrl: `${base}/connect/token`,
              scopes: {
                'cdr.api': 'The document API: submit, poll, download, uploads, account.',
                'cdr.admin': 'The admin API: organisations, API keys, OAuth clients, signing keys.',
              },
            },
          },
        },
      },
      'x-problem-catalogue': catalogue(base),
    },
    'x-unknown-path': responseRef('NotFound'),
  };
}

/** Codes the API origin never answers with (the storage origin does); for tests and docs. */
export function isStorageOnlyProblem(code: ProblemCode): boolean {
  return STORAGE_ONLY_CODES.has(code);
}
