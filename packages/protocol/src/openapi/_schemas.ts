import {
  FINDING_KINDS,
  MAX_FINDING_LOCATIONS,
  MAX_LOCATION_CHARS,
  REJECTION_REASONS,
} from '@disarm/core';

import { MAX_REASON_DETAIL_CHARS } from '../documents/reason-detail.ts';
import { PLANS } from '../domain/plans.ts';
import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode } from '../http/problems.ts';
import type { SchemaObject } from './types.ts';

/** `#/components/schemas/<name>`. */
export function schemaRef(name: SchemaName): SchemaObject {
  return { $ref: `#/components/schemas/${name}` };
}

const int32 = (minimum?: number): SchemaObject => ({
  type: 'integer',
  format: 'int32',
  ...(minimum !== undefined ? { minimum } : {}),
});
const int64 = (minimum?: number): SchemaObject => ({
  type: 'integer',
  format: 'int64',
  ...(minimum !== undefined ? { minimum } : {}),
});
const dateTime: SchemaObject = { type: 'string', format: 'date-time' };
const absoluteUrl: SchemaObject = { type: 'string', format: 'uri' };

/** Finding kinds an organisation policy may name. */
const FINDING_KIND_NAMES = Object.keys(FINDING_KINDS);
const PLAN_NAMES = Object.keys(PLANS);
const FAILURE_REASONS = ['timeout', 'internal_error'] as const;
const IN_FLIGHT = ['pending', 'processing'] as const;

/** Members that only a completed document carries. */
const COMPLETED_ONLY = [
  'outcome',
  'modifications',
  'outputFormat',
  'findings',
  'downloadUrl',
  'downloadExpiresAt',
];
/** Members that only a rejected or failed document carries. */
const TERMINAL_NOT_COMPLETED_ONLY = ['reason', 'reasonDetail', 'threatNames', 'helpUrl'];

/** `{ not: { anyOf: [{ required: [a] }, ...] } }`: none of `members` is present. */
function absent(members: readonly string[]): SchemaObject {
  return { not: { anyOf: members.map((member) => ({ required: [member] })) } };
}

/** Where in the submitted file items of one kind were removed. */
const findingLocation: SchemaObject = {
  type: 'object',
  description: `Where items of one kind were removed, as far as the format tells: a member only applies inside an archive, a part inside an Office or OpenDocument package, a sheet for a workbook sheet, a page inside a PDF. Absent members do not apply. The names of one location hold at most ${MAX_LOCATION_CHARS} characters together; a location with longer names is not listed.`,
  required: ['count'],
  additionalProperties: false,
  properties: {
    member: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: MAX_LOCATION_CHARS },
      minItems: 1,
      description:
        'Archive member path, outermost archive first: `["bundle.zip", "docs/report.pdf"]` is docs/report.pdf inside bundle.zip inside the submitted archive. Names as submitted (before a converted member takes its new extension).',
      examples: [['bundle.zip', 'docs/report.pdf']],
    },
    part: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_LOCATION_CHARS,
      description:
        'Package part, as its path in the package: `word/document.xml`, `xl/vbaProject.bin`, `content.xml`, or a folder such as `Basic/`.',
      examples: ['word/vbaProject.bin'],
    },
    sheet: {
      type: 'string',
      maxLength: MAX_LOCATION_CHARS,
      description: 'Sheet name, when the part is a sheet of an Office workbook.',
      examples: ['Sheet1'],
    },
    page: { ...int32(1), description: 'PDF page, 1-based.' },
    count: { ...int32(1), description: 'Items of the kind removed at this location.' },
  },
};

/** What the rebuild removed, by kind. */
const finding: SchemaObject = {
  type: 'object',
  description: `What the rebuild removed, by kind. \`count\` covers every item; \`locations\` lists at most ${MAX_FINDING_LOCATIONS} places, in the order found, so their counts add up to \`count\` or less: the rest were document-wide (no more precise place to name) or past the limit. Documents completed before locations were recorded carry an empty list.`,
  required: ['kind', 'count', 'locations'],
  additionalProperties: false,
  properties: {
    kind: {
      type: 'string',
      enum: FINDING_KIND_NAMES,
      description: 'What was removed (the same names as the organisation policy uses).',
    },
    count: { ...int32(1), description: 'Items of this kind removed from the whole file.' },
    locations: {
      type: 'array',
      items: schemaRef('FindingLocation'),
      maxItems: MAX_FINDING_LOCATIONS,
    },
  },
  examples: [
    {
      kind: 'pdf-javascript',
      count: 2,
      locations: [
        { member: ['bundle.zip', 'docs/report.pdf'], page: 2, count: 1 },
        { member: ['bundle.zip', 'docs/report.pdf'], count: 1 },
      ],
    },
  ],
};

/** The document envelope, with its "completed only" / "in flight only" rules. */
const documentEnvelope: SchemaObject = {
  type: 'object',
  description:
    'The document envelope. Null members are omitted. Returned by every successful /v1/documents call and as the 409 body of a premature download.',
  required: ['id', 'status', 'statusUrl'],
  additionalProperties: false,
  properties: {
    id: {
      type: 'string',
      minLength: 1,
      description: 'Document request id.',
      examples: ['doc_8k2m4q7w9x1c3v5b6n0p'],
    },
    status: {
      type: 'string',
      enum: ['pending', 'processing', 'completed', 'rejected', 'failed'],
      description: '`pending` and `processing` are in flight; the others are terminal.',
    },
    statusUrl: {
      ...absoluteUrl,
      description:
        'Where to poll this document. Carries `statusStyle=202` when the submission opted into the 202-while-pending contract.',
    },
    outcome: {
      type: 'string',
      enum: ['cleaned', 'clean'],
      description:
        'Completed only. `cleaned`: rebuilt, disallowed content removed. `clean` is reserved.',
    },
    modifications: {
      type: 'array',
      items: { type: 'string', enum: ['rebuilt', 'converted'] },
      uniqueItems: true,
      contains: { const: 'rebuilt' },
      description:
        'Completed only. `rebuilt` always; `converted` when the returned format differs from the submitted one.',
    },
    outputFormat: {
      type: 'string',
      minLength: 1,
      description:
        'Only with `converted`: the format the cleaned file is returned in (e.g. `pdf`).',
    },
    findings: {
      type: 'array',
      items: schemaRef('Finding'),
      description:
        'Completed only (an addition to the v1 envelope; clients that ignore unknown members are unaffected): what the rebuild removed, one item per kind, sorted by kind, with where it was found. An empty array when nothing was removed. Rejected and failed documents carry none: their `reasonDetail` says why.',
    },
    reason: {
      type: 'string',
      enum: [...REJECTION_REASONS, ...FAILURE_REASONS],
      description:
        'Terminal non-completed only: the rejection reason (`rejected`) or failure reason (`failed`: `timeout`, `internal_error`, credited back). May be absent on requests predating structured outcomes.',
    },
    reasonDetail: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_REASON_DETAIL_CHARS,
      description:
        'Present exactly when `reason` is (an addition to the v1 envelope; branch on `reason`, show this to people). One sentence on why: for a rejection, what the engine found, in which member, against which limit (e.g. `Threat found: EICAR-Test-File in member docs/a.txt.`); for a failure, a fixed sentence per reason that never carries internals. Control characters are removed; at most 500 characters.',
    },
    threatNames: {
      type: 'array',
      items: { type: 'string' },
      description: 'Rejected with `threat_detected` only: names of the threats found.',
    },
    submittedAt: { ...dateTime, description: 'Submission time, UTC.' },
    completedAt: { ...dateTime, description: 'Terminal time, UTC; absent while in flight.' },
    downloadUrl: {
      ...absoluteUrl,
      description:
        'Completed only, while valid: pre-authorised, time-limited link to the cleaned file. Never present with `deleteAfterDownload`. Do not send credentials to it.',
    },
    downloadExpiresAt: {
      ...dateTime,
      description: 'Completed only: 24 hours after completion.',
    },
    pollAfterSeconds: {
      ...int32(0),
      description: 'In flight only: suggested seconds before the next poll.',
    },
    helpUrl: {
      ...absoluteUrl,
      description: 'Terminal non-completed only: where to manage the account.',
    },
    deleteAfterDownload: {
      type: 'boolean',
      description: 'True when the early-deletion opt-in was used.',
    },
    deletedAt: {
      ...dateTime,
      description:
        'When the cleaned file was deleted (DELETE or the delete-after-download sweep). Status, outcome and metadata stay readable.',
    },
  },
  allOf: [
    {
      if: { properties: { status: { enum: [...IN_FLIGHT] } } },
      then: absent([...COMPLETED_ONLY, ...TERMINAL_NOT_COMPLETED_ONLY, 'completedAt', 'deletedAt']),
      else: absent(['pollAfterSeconds']),
    },
    {
      if: { properties: { status: { const: 'completed' } } },
      then: {
        allOf: [
          { required: ['outcome', 'modifications', 'findings'] },
          absent(TERMINAL_NOT_COMPLETED_ONLY),
        ],
      },
    },
    {
      if: { properties: { status: { enum: ['rejected', 'failed'] } } },
      then: absent(COMPLETED_ONLY),
    },
    {
      if: { properties: { status: { const: 'rejected' } } },
      then: { properties: { reason: { enum: [...REJECTION_REASONS] } } },
    },
    {
      if: { properties: { status: { const: 'failed' } } },
      then: { properties: { reason: { enum: [...FAILURE_REASONS] } } },
    },
    {
      // reasonDetail goes with reason, both ways.
      if: { required: ['reason'] },
      then: { required: ['reasonDetail'] },
    },
    {
      if: { required: ['reasonDetail'] },
      then: { required: ['reason'] },
    },
    {
      // threatNames: "rejected with threat_detected only".
      if: { required: ['threatNames'] },
      then: {
        required: ['reason'],
        properties: { status: { const: 'rejected' }, reason: { const: 'threat_detected' } },
      },
    },
    {
      // outputFormat: "only with converted", and a converted file names its format.
      if: {
        required: ['modifications'],
        properties: { modifications: { contains: { const: 'converted' } } },
      },
      then: { required: ['outputFormat'] },
      else: absent(['outputFormat']),
    },
    {
      // "Never present when deleteAfterDownload is true."
      if: {
        required: ['deleteAfterDownload'],
        properties: { deleteAfterDownload: { const: true } },
      },
      then: absent(['downloadUrl']),
    },
  ],
};

const account: SchemaObject = {
  type: 'object',
  description: 'The account snapshot: a fresh read on every call (never cached).',
  additionalProperties: false,
  required: [
    'organisationId',
    'organisationName',
    'planType',
    'status',
    'monthlyAllowance',
    'periodStart',
    'periodEnd',
    'periodUsedSubmissions',
    'creditBalancePence',
    'rateLimitPerMinute',
    'maxFileSizeBytes',
    'maxUploadSizeBytes',
  ],
  properties: {
    organisationId: { type: 'string', description: 'Organisation of the caller.' },
    organisationName: { type: 'string', description: 'Display name.' },
    planType: { type: 'string', enum: ['tier', 'payg', 'internal'] },
    status: { type: 'string', enum: ['active', 'suspended'] },
    monthlyAllowance: {
      ...int64(0),
      description: 'Documents per billing period (tier plans; 0 for pay-as-you-go).',
    },
    periodStart: { ...dateTime, description: 'Start of the current billing period, UTC.' },
    periodEnd: {
      ...dateTime,
      description: 'End of the period, UTC, exclusive: when the allowance resets.',
    },
    periodUsedSubmissions: {
      ...int64(0),
      description: 'Billable documents accepted this period.',
    },
    periodRemainingSubmissions: {
      type: ['integer', 'null'],
      format: 'int64',
      minimum: 0,
      description: 'Remaining allowance, floored at zero; null for plans without an allowance.',
    },
    creditBalancePence: {
      ...int64(),
      description: 'Prepaid credit in pence; present on every plan.',
    },
    pricePerDocumentPence: {
      ...int32(0),
      description: 'Per-document price in pence; pay-as-you-go only, absent on other plans.',
    },
    rateLimitPerMinute: { ...int32(0), description: 'API requests per minute.' },
    maxFileSizeBytes: { ...int64(0), description: 'Multipart and raw lane ceiling in bytes.' },
    maxUploadSizeBytes: { ...int64(0), description: 'Upload-lane ceiling in bytes.' },
  },
  allOf: [
    {
      if: { properties: { planType: { const: 'payg' } } },
      then: { required: ['pricePerDocumentPence'] },
      else: absent(['pricePerDocumentPence']),
    },
    {
      if: { properties: { planType: { const: 'tier' } } },
      then: {
        required: ['periodRemainingSubmissions'],
        properties: { periodRemainingSubmissions: { type: 'integer' } },
      },
      else: { properties: { periodRemainingSubmissions: { type: 'null' } } },
    },
  ],
};

const uploadEnvelope: SchemaObject = {
  type: 'object',
  description:
    'A staged upload: PUT the bytes to `uploadUrl`, then submit `uploadId` by reference.',
  additionalProperties: false,
  required: ['uploadId', 'uploadUrl', 'method', 'requiredHeaders', 'maxSizeBytes', 'expiresAt'],
  properties: {
    uploadId: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: 'Id to submit by reference.',
    },
    uploadUrl: {
      ...absoluteUrl,
      description:
        'Time-limited, single-blob, create+write-only storage link (60 minutes); the API is not in the data path. Send no Authorization header (400 AuthorizationHeaderNotAllowed). Storage answers 201, or a problem: ValidationFailed (wrong Content-Type), DigestMismatch (Content-MD5 does not match), FileTooLargeForPlan, UnsupportedContentEncoding, UploadAlreadyUploaded (409), InvalidSignature or LinkExpired (403).',
    },
    method: { type: 'string', enum: ['PUT'], description: 'HTTP method to use against uploadUrl.' },
    requiredHeaders: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'Headers the PUT must carry.',
    },
    maxSizeBytes: { ...int64(0), description: 'The plan’s upload-lane ceiling.' },
    expiresAt: { ...dateTime, description: 'When the link stops accepting the PUT, UTC.' },
  },
};

const uploadCreate: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['fileName'],
  properties: {
    fileName: {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description:
        'The file name including its extension; checked against the supported types now, before any bytes move.',
      examples: ['quarterly-report.docx'],
    },
  },
};

const submitByReference: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['uploadId'],
  properties: {
    uploadId: {
      type: 'string',
      minLength: 1,
      maxLength: 64,
      description: 'Id from POST /v1/uploads.',
    },
    deleteAfterDownload: {
      type: 'boolean',
      default: false,
      description:
        'Delete the cleaned file shortly after its first download (no downloadUrl is given).',
    },
  },
};

const multipartSubmission: SchemaObject = {
  type: 'object',
  required: ['file'],
  properties: {
    file: {
      type: 'string',
      format: 'binary',
      contentMediaType: 'application/octet-stream',
      description:
        'The file, up to the plan’s maxFileSizeBytes (100 MB); its name picks the format.',
    },
    deleteAfterDownload: { type: 'boolean', default: false },
  },
};

const problemCode: SchemaObject = {
  type: 'string',
  description:
    'The stable, machine-readable problem code: branch on it, never on `title` or `detail`. `components.x-problem-catalogue` and `/problems/{code}` describe each.',
  enum: Object.keys(PROBLEMS),
};

const fieldError: SchemaObject = {
  type: 'object',
  required: ['field', 'message'],
  properties: {
    field: {
      type: 'string',
      description:
        'Where the value is: `query.waitSeconds`, `body.uploadId`, `header.Idempotency-Key`, `form.file`.',
    },
    message: { type: 'string' },
  },
};

/** Codes whose problem bodies must carry extension members. */
const REQUIRED_MEMBERS: readonly (readonly [ProblemCode, readonly string[]])[] = [
  ['FileTooLargeForPlan', ['maxSizeBytes']],
  ['InsufficientCredit', ['balancePence', 'pricePerDocumentPence']],
];

const problem: SchemaObject = {
  type: 'object',
  description:
    'RFC 9457 problem details. Extension members beyond the listed ones may appear; ignore those you do not know.',
  required: ['type', 'title', 'status', 'code', 'detail'],
  properties: {
    type: { ...absoluteUrl, description: 'Catalogue entry: `{base_url}/problems/{code}`.' },
    title: { type: 'string' },
    status: { ...int32(), minimum: 400, maximum: 599 },
    code: schemaRef('ProblemCode'),
    detail: { type: 'string', description: 'Human text; do not parse.' },
    instance: { type: 'string', format: 'uri-reference' },
    errors: {
      type: 'array',
      items: schemaRef('FieldError'),
      description: 'ValidationFailed: each problem with one request value.',
    },
    maxSizeBytes: {
      ...int64(0),
      description: 'FileTooLargeForPlan: the ceiling that was exceeded.',
    },
    acceptedByLane: {
      type: 'string',
      enum: ['upload'],
      description: 'FileTooLargeForPlan: the lane that would accept the file.',
    },
    balancePence: { ...int64(), description: 'InsufficientCredit: the current balance.' },
    pricePerDocumentPence: {
      ...int32(0),
      description: 'InsufficientCredit: the per-document price.',
    },
  },
  allOf: REQUIRED_MEMBERS.map(([code, members]) => ({
    if: { required: ['code'], properties: { code: { const: code } } },
    then: { required: [...members] },
  })),
};

const policy: SchemaObject = {
  type: 'object',
  description:
    'Per finding kind, `strip` (default: remove and rebuild) or `reject` (policy_violation).',
  propertyNames: { enum: FINDING_KIND_NAMES },
  additionalProperties: { type: 'string', enum: ['strip', 'reject'] },
  examples: [{ 'vba-macro': 'reject' }],
};

const terms: SchemaObject = {
  type: 'object',
  description: 'Overrides of the plan’s terms (Volume is custom); only the given members change.',
  additionalProperties: false,
  properties: {
    monthlyAllowance: int64(0),
    rateLimitPerMinute: int32(0),
    maxUploadSizeBytes: int64(0),
    pricePerDocumentPence: int32(0),
  },
};

const planName: SchemaObject = { type: 'string', enum: PLAN_NAMES };

const adminOrganisation: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'name',
    'status',
    'plan',
    'planType',
    'monthlyAllowance',
    'rateLimitPerMinute',
    'maxFileSizeBytes',
    'maxUploadSizeBytes',
    'pricePerDocumentPence',
    'creditBalancePence',
    'periodStart',
    'periodEnd',
    'periodUsedSubmissions',
    'policy',
    'createdAt',
  ],
  properties: {
    id: { type: 'string', minLength: 1 },
    name: { type: 'string' },
    status: { type: 'string', enum: ['active', 'suspended'] },
    plan: {
      type: ['string', 'null'],
      enum: [...PLAN_NAMES, null],
      description: 'Null until provisioned.',
    },
    planType: { type: ['string', 'null'], enum: ['tier', 'payg', 'internal', null] },
    monthlyAllowance: int64(0),
    rateLimitPerMinute: int32(0),
    maxFileSizeBytes: int64(0),
    maxUploadSizeBytes: int64(0),
    pricePerDocumentPence: { type: ['integer', 'null'], format: 'int32', minimum: 0 },
    creditBalancePence: int64(),
    periodStart: dateTime,
    periodEnd: dateTime,
    periodUsedSubmissions: int64(0),
    policy: schemaRef('Policy'),
    createdAt: dateTime,
  },
};

const adminOrganisationCreate: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    plan: {
      ...planName,
      description: 'Omit to create the organisation unprovisioned (NotProvisioned).',
    },
    creditPence: { ...int64(0), description: 'Opening prepaid credit.' },
    terms: schemaRef('PlanTerms'),
    policy: schemaRef('Policy'),
  },
};

const adminOrganisationPatch: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    status: { type: 'string', enum: ['active', 'suspended'] },
    plan: {
      ...planName,
      description: 'Re-provision: terms reset to the plan’s, then `terms` apply.',
    },
    terms: schemaRef('PlanTerms'),
    creditDeltaPence: { ...int64(), description: 'Added to (negative: taken from) the balance.' },
    policy: schemaRef('Policy'),
  },
};

const apiKeyProperties = {
  id: { type: 'string', minLength: 1 },
  name: { type: 'string' },
  displayPrefix: {
    type: 'string',
    description: 'The first characters of the key, to recognise it.',
  },
  createdAt: dateTime,
} as const;

const apiKey: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'displayPrefix', 'createdAt', 'revokedAt'],
  properties: {
    ...apiKeyProperties,
    revokedAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'Revocation takes effect within one minute; revoked keys stay listed.',
    },
  },
};

const apiKeyCreated: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'displayPrefix', 'key', 'createdAt'],
  properties: {
    ...apiKeyProperties,
    revokedAt: { type: 'null', description: 'A new key is not revoked.' },
    key: {
      type: 'string',
      pattern: '^dsm_live_[0-9a-z]{43}$',
      description: 'The key itself, shown exactly once: only its hash is stored.',
    },
  },
};

const apiKeyCreate: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  properties: { name: { type: 'string', minLength: 1, maxLength: 200 } },
};

const clockAdvance: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['advanceSeconds'],
  properties: { advanceSeconds: int64(0) },
};

const clockNow: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: ['now'],
  properties: { now: dateTime },
};

const healthStatus: SchemaObject = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ok', 'ready', 'not ready'] },
    renderers: {
      type: 'object',
      description:
        "Readiness only: which renderer draws each format returned as PDF, by extension (`chromium`, `libreoffice`, or `builtin`, the engine's own lower-fidelity renderer). Absent where the process does not convert documents.",
      additionalProperties: { type: 'string' },
      examples: [
        { svg: 'chromium', html: 'chromium', htm: 'chromium', ods: 'builtin', odp: 'builtin' },
      ],
    },
    checks: {
      type: 'object',
      description:
        'Readiness only: how each dependency stands. `database` is `ok` or `unreachable` (not ready); `blobs` is `ok` or `unavailable` (a full disk, a failing bucket: submissions answer 503, status reads still work, so the process stays ready).',
      additionalProperties: { type: 'string' },
      examples: [{ database: 'unreachable', blobs: 'ok' }],
    },
  },
};

// ─── OAuth ──────────────────────────────────────────────────────────────────────────────────

const OAUTH_SCOPE_NAMES = ['cdr.api', 'cdr.admin'];

const tokenRequest: SchemaObject = {
  type: 'object',
  description:
    'RFC 6749 4.4.2. Authenticate with `client_id` and `client_secret` here (client_secret_post) or with HTTP Basic (client_secret_basic), not both.',
  required: ['grant_type'],
  properties: {
    grant_type: { type: 'string', enum: ['client_credentials'] },
    client_id: { type: 'string', description: 'client_secret_post: the client id.' },
    client_secret: {
      type: 'string',
      description: 'client_secret_post: the client secret. Never put it in the URL.',
    },
    scope: {
      type: 'string',
      description:
        'Space-separated scopes (`cdr.api`, `cdr.admin`), each held by the client. Default: every scope the client holds.',
      examples: ['cdr.api'],
    },
  },
};

const tokenResponse: SchemaObject = {
  type: 'object',
  description:
    'RFC 6749 5.1. Cache the token and reuse it until shortly before it expires; do not request one per call.',
  additionalProperties: false,
  required: ['access_token', 'token_type', 'expires_in', 'scope'],
  properties: {
    access_token: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
      description:
        'An RFC 9068 JWT access token: ES256, `typ` `at+jwt`, claims `iss`, `aud`, `sub` and `client_id` (the client), `scope`, `org` (its organisation), `iat`, `exp`, `jti`. Verify it with the JWKS at `/.well-known/jwks.json`.',
    },
    token_type: { type: 'string', enum: ['Bearer'] },
    expires_in: { ...int32(1), description: 'Seconds the token is valid: 3600.' },
    scope: {
      type: 'string',
      description: 'The granted scopes, space-separated.',
      examples: ['cdr.api'],
    },
  },
};

const oauthError: SchemaObject = {
  type: 'object',
  description: 'RFC 6749 5.2 error response (not a problem document: OAuth clients expect this).',
  additionalProperties: false,
  required: ['error'],
  properties: {
    error: {
      type: 'string',
      enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope'],
    },
    error_description: { type: 'string', pattern: '^[\\x20\\x21\\x23-\\x5B\\x5D-\\x7E]*$' },
  },
};

const jsonWebKeySet: SchemaObject = {
  type: 'object',
  description:
    'RFC 7517 5: the public keys of the active and not yet retired signing keys. A key stays published for the token lifetime plus five minutes after it stops signing.',
  additionalProperties: false,
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        description: 'An EC P-256 public key (RFC 7518 6.2.1); never private members.',
        additionalProperties: false,
        required: ['kty', 'crv', 'x', 'y', 'kid', 'alg', 'use'],
        properties: {
          kty: { type: 'string', enum: ['EC'] },
          crv: { type: 'string', enum: ['P-256'] },
          x: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
          y: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
          kid: {
            type: 'string',
            pattern: '^[A-Za-z0-9_-]{43}$',
            description: 'The RFC 7638 SHA-256 thumbprint of the key.',
          },
          alg: { type: 'string', enum: ['ES256'] },
          use: { type: 'string', enum: ['sig'] },
        },
      },
    },
  },
};

const oauthClientProperties = {
  clientId: { type: 'string', pattern: '^cli_[0-9a-z]{20}$' },
  organisationId: { type: 'string', minLength: 1 },
  name: { type: 'string' },
  scopes: {
    type: 'array',
    minItems: 1,
    uniqueItems: true,
    items: { type: 'string', enum: OAUTH_SCOPE_NAMES },
  },
  createdAt: dateTime,
  previousSecretActive: {
    type: 'boolean',
    description:
      'True between a rotation and `DELETE .../previous-secret` (or the next rotation): the previous secret still works.',
  },
} as const;

const OAUTH_CLIENT_REQUIRED = [
  'clientId',
  'organisationId',
  'name',
  'scopes',
  'createdAt',
  'revokedAt',
  'previousSecretActive',
];

const oauthClient: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: OAUTH_CLIENT_REQUIRED,
  properties: {
    ...oauthClientProperties,
    revokedAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description:
        'Revocation takes effect at once: the token endpoint refuses the client and its tokens stop working. Revoked clients stay listed.',
    },
  },
};

const oauthClientWithSecret: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  required: [...OAUTH_CLIENT_REQUIRED, 'clientSecret'],
  properties: {
    ...oauthClientProperties,
    revokedAt: { type: 'null', description: 'A client with a new secret is not revoked.' },
    clientSecret: {
      type: 'string',
      pattern: '^dsm_secret_[0-9a-z]{43}$',
      description: 'The secret, shown exactly once: only its SHA-256 is stored.',
    },
  },
};

const oauthClientCreate: SchemaObject = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200, default: 'default' },
    scopes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { type: 'string', enum: OAUTH_SCOPE_NAMES },
      default: ['cdr.api'],
      description:
        'An organisation’s client may hold `cdr.api` only: `cdr.admin` (the platform-wide admin API) is refused here with `ValidationFailed`, and belongs to operator clients, which belong to no organisation (`disarm admin client create --operator`).',
    },
  },
  examples: [{ name: 'billing-sync', scopes: ['cdr.api'] }],
};

const signingKey: SchemaObject = {
  type: 'object',
  description: 'A signing key of the embedded issuer (never its private half).',
  additionalProperties: false,
  required: ['kid', 'algorithm', 'status', 'createdAt', 'activeFrom', 'activeUntil', 'retiredAt'],
  properties: {
    kid: { type: 'string', minLength: 1 },
    algorithm: { type: 'string', enum: ['ES256', 'RS256', 'EdDSA'] },
    status: {
      type: 'string',
      enum: ['upcoming', 'active', 'published', 'retired'],
      description:
        '`upcoming`: in the JWKS, signs from `activeFrom`; `active`: signs new tokens; `published`: only verifies tokens it signed; `retired`: out of the JWKS.',
    },
    createdAt: dateTime,
    activeFrom: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When it starts (or started) signing; null: from `createdAt`.',
    },
    activeUntil: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When it stops (or stopped) signing; null while no rotation replaced it.',
    },
    retiredAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When it left the JWKS.',
    },
  },
};

/** Every component schema by name. */
export const SCHEMAS = {
  Document: documentEnvelope,
  Finding: finding,
  FindingLocation: findingLocation,
  Account: account,
  UploadCreate: uploadCreate,
  Upload: uploadEnvelope,
  SubmitByReference: submitByReference,
  MultipartSubmission: multipartSubmission,
  Problem: problem,
  ProblemCode: problemCode,
  FieldError: fieldError,
  Policy: policy,
  PlanTerms: terms,
  PlanName: planName,
  AdminOrganisation: adminOrganisation,
  AdminOrganisationCreate: adminOrganisationCreate,
  AdminOrganisationPatch: adminOrganisationPatch,
  ApiKey: apiKey,
  ApiKeyCreated: apiKeyCreated,
  ApiKeyCreate: apiKeyCreate,
  ClockAdvance: clockAdvance,
  ClockNow: clockNow,
  HealthStatus: healthStatus,
  TokenRequest: tokenRequest,
  TokenResponse: tokenResponse,
  OAuthError: oauthError,
  JsonWebKeySet: jsonWebKeySet,
  OAuthClient: oauthClient,
  OAuthClientWithSecret: oauthClientWithSecret,
  OAuthClientCreate: oauthClientCreate,
  SigningKey: signingKey,
} as const satisfies Record<string, SchemaObject>;

/** Name of a component schema. */
export type SchemaName = keyof typeof SCHEMAS;
