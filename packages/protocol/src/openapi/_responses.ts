import { JSON_MEDIA_TYPES } from '../http/negotiation.ts';
import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode } from '../http/problems.ts';
import { schemaRef } from './_schemas.ts';
import type { SchemaName } from './_schemas.ts';
import type {
  ExampleObject,
  HeaderObject,
  MediaTypeObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from './types.ts';

/** RFC 9457. */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** IMF-fixdate (RFC 9110 5.6.7), or delay-seconds. */
const RETRY_AFTER_PATTERN =
  '^(?:[0-9]+|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT)$';

const optional = (header: HeaderObject): HeaderObject => ({ ...header, required: false });

/** Response headers by name; `required` says whether the response must carry it. */
export const HEADERS = {
  location: {
    description: 'The document’s statusUrl (absolute).',
    required: true,
    schema: { type: 'string', format: 'uri' },
  },
  retryAfterSeconds: {
    description: 'Seconds to wait before polling again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
    example: 2,
  },
  retryAfterUnavailable: {
    description: 'Seconds to wait before sending the request again.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
    example: 15,
  },
  retryAfter: {
    description:
      'RFC 9110 10.2.3. RateLimited: seconds until the window resets. QuotaExceeded: the period end (an HTTP-date, or seconds until it).',
    required: true,
    schema: { type: 'string', pattern: RETRY_AFTER_PATTERN },
    example: '30',
  },
  rateLimit: {
    description:
      'Current service limit of the partition this request counted against (draft-ietf-httpapi-ratelimit-headers), e.g. `"submissions";r=58;t=42` (remaining, seconds to reset). On every authenticated response.',
    required: true,
    schema: { type: 'string', minLength: 1 },
  },
  rateLimitPolicy: {
    description:
      'The quota policy (draft-ietf-httpapi-ratelimit-headers), e.g. `"submissions";q=60;w=60`. Submissions (POST /v1/documents, POST /v1/uploads) share one budget; status reads (GET /v1/documents/*) have their own at 10 times the plan limit.',
    required: true,
    schema: { type: 'string', minLength: 1 },
  },
  usageUsed: {
    description: 'Tier plans: documents used this period.',
    required: false,
    schema: { type: 'integer', minimum: 0 },
  },
  usageAllowance: {
    description: 'Tier plans: the monthly allowance.',
    required: false,
    schema: { type: 'integer', minimum: 0 },
  },
  usageRemaining: {
    description: 'Tier plans: documents remaining this period, floored at zero.',
    required: false,
    schema: { type: 'integer', minimum: 0 },
  },
  creditBalance: {
    description: 'Pay-as-you-go: the balance in pence after this request’s charge.',
    required: false,
    schema: { type: 'integer' },
  },
  idempotencyReplayed: {
    description: 'Present on a replay of the first response to this Idempotency-Key.',
    required: false,
    schema: { type: 'string', enum: ['true'] },
  },
  preferenceApplied: {
    description: 'RFC 7240: the preference honoured (`respond-sync`, `wait=N`).',
    required: false,
    schema: { type: 'string' },
  },
  noStore: {
    description: 'Never cached.',
    required: true,
    schema: { type: 'string', pattern: '(?:^|,)\\s*no-store\\s*(?:,|$)' },
  },
  vary: {
    description: 'The body’s media type depends on Accept.',
    required: false,
    schema: { type: 'string' },
  },
  pragmaNoCache: {
    description: 'RFC 6749 5.1: HTTP/1.0 caches must not keep token responses either.',
    required: true,
    schema: { type: 'string', enum: ['no-cache'] },
  },
  basicChallenge: {
    description:
      'RFC 9110 11.6.1: client authentication failed; HTTP Basic (client_secret_basic) is accepted.',
    required: true,
    schema: { type: 'string', pattern: '^Basic ' },
    example: 'Basic realm="disarm", charset="UTF-8"',
  },
  publicCache: {
    description: 'RFC 9111 5.2.2: the key set may be cached for five minutes.',
    required: true,
    schema: { type: 'string', pattern: '(?:^|,)\\s*max-age=[0-9]+' },
    example: 'public, max-age=300',
  },
  wwwAuthenticate: {
    description:
      'RFC 9110 11.6.1: the schemes accepted (Bearer; X-Api-Key is described in the docs), with RFC 6750 3 `error` and `error_description` when a credential was sent and refused.',
    required: true,
    schema: { type: 'string', minLength: 1 },
    example: 'Bearer realm="disarm"',
  },
  allow: {
    description: 'The methods this path answers.',
    required: true,
    schema: { type: 'string', minLength: 1 },
    example: 'GET, DELETE',
  },
  referrerPolicy: {
    description: 'The signed link must not leak through Referer.',
    required: true,
    schema: { type: 'string', enum: ['no-referrer'] },
  },
  contentSecurityPolicy: {
    description: 'The page’s Content-Security-Policy.',
    required: true,
    schema: { type: 'string', minLength: 1 },
  },
} as const satisfies Record<string, HeaderObject>;

/** Headers every successful response of the document API carries (rate limits, negotiation). */
export function rateLimitHeaders(required: boolean): Record<string, HeaderObject> {
  return {
    RateLimit: required ? HEADERS.rateLimit : optional(HEADERS.rateLimit),
    'RateLimit-Policy': required ? HEADERS.rateLimitPolicy : optional(HEADERS.rateLimitPolicy),
  };
}

/** Usage headers: on submissions and on the refusals where the numbers mean something. */
export const USAGE_HEADERS: Readonly<Record<string, HeaderObject>> = {
  'X-CDR-Usage-Used': HEADERS.usageUsed,
  'X-CDR-Usage-Allowance': HEADERS.usageAllowance,
  'X-CDR-Usage-Remaining': HEADERS.usageRemaining,
  'X-CDR-Credit-Balance-Pence': HEADERS.creditBalance,
};

/** A JSON body offered as application/json, text/json and text/plain (same schema). */
export function jsonContent(
  schema: SchemaName,
  examples?: Readonly<Record<string, ExampleObject>>,
): Record<string, MediaTypeObject> {
  const content: Record<string, MediaTypeObject> = {};
  for (const mediaType of JSON_MEDIA_TYPES) {
    content[mediaType] = {
      schema: schemaRef(schema),
      // Examples once, under the default media type, keep the document small.
      ...(mediaType === 'application/json' && examples !== undefined ? { examples } : {}),
    };
  }
  return content;
}

/** A successful JSON response. */
export function jsonResponse(options: {
  readonly description: string;
  readonly schema: SchemaName;
  readonly headers?: Readonly<Record<string, HeaderObject>>;
  readonly examples?: Readonly<Record<string, ExampleObject>>;
}): ResponseObject {
  return {
    description: options.description,
    headers: { 'Cache-Control': optional(HEADERS.noStore), Vary: HEADERS.vary, ...options.headers },
    content: jsonContent(options.schema, options.examples),
  };
}

/** A successful JSON response holding one array member, e.g. `{ "keys": [ApiKey] }`. */
export function listResponse(
  description: string,
  member: string,
  item: SchemaName,
): ResponseObject {
  const schema: SchemaObject = {
    type: 'object',
    additionalProperties: false,
    required: [member],
    properties: { [member]: { type: 'array', items: schemaRef(item) } },
  };
  return {
    description,
    headers: { 'Cache-Control': optional(HEADERS.noStore), Vary: HEADERS.vary },
    content: Object.fromEntries(JSON_MEDIA_TYPES.map((mediaType) => [mediaType, { schema }])),
  };
}

/** A problem response that may carry any of `codes` (all of one HTTP status). */
export function problemResponse(
  codes: readonly ProblemCode[],
  options: {
    readonly description?: string;
    readonly headers?: Readonly<Record<string, HeaderObject>>;
  } = {},
): ResponseObject {
  const description =
    options.description ??
    codes.map((code) => `\`${code}\`: ${PROBLEMS[code].description}`).join('\n\n');
  return {
    description,
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    content: { [PROBLEM_MEDIA_TYPE]: { schema: schemaRef('Problem') } },
    'x-problem-codes': codes,
  };
}

/** `#/components/responses/<name>`. */
export function responseRef(name: SharedResponseName): ReferenceObject {
  return { $ref: `#/components/responses/${name}` };
}

/** Responses shared by many operations. */
export const SHARED_RESPONSES = {
  Unauthorized: problemResponse(['Unauthorized'], {
    description:
      'The credential is missing, malformed, unknown, revoked, expired or otherwise refused. Send `Authorization: Bearer <token or API key>` or `X-Api-Key`. `code` is always `Unauthorized`; `detail` says what is wrong in one sentence (no credential; a header that is not `Bearer <token>`; a malformed key; an unknown or revoked key, which read the same; an expired token; a bad signature; the wrong `typ`, `aud` or `iss`). `WWW-Authenticate` repeats it as RFC 6750 `error_description`, with `error="invalid_request"` for a malformed header and `error="invalid_token"` for a refused credential (no `error` when nothing was sent).',
    headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate },
  }),
  InternalError: problemResponse(['InternalError'], {
    description: 'Something failed inside the service; the details are in its logs, never here.',
  }),
  ServiceUnavailable: problemResponse(['ServiceUnavailable'], {
    description:
      'The process is shutting down or not ready, or cannot reach its database or store files just now (nothing was done); retry on another instance or after `Retry-After`.',
    headers: { 'Retry-After': HEADERS.retryAfterUnavailable },
  }),
  MethodNotAllowed: problemResponse(['MethodNotAllowed'], {
    description: 'The path exists but not with this method; `Allow` lists the methods it answers.',
    headers: { Allow: HEADERS.allow },
  }),
  NotFound: problemResponse(['NotFound'], { description: 'No such route.' }),
  // The OAuth client admin routes' refusals (served when the API runs with OAuth).
  OAuthClientNotFound: problemResponse(['OAuthClientNotFound', 'OrganisationNotFound'], {
    description:
      '`OAuthClientNotFound`: the organisation has no client with this id (another organisation’s client is not found either). `OrganisationNotFound`: no such organisation.',
  }),
  OAuthClientRevoked: problemResponse(['OAuthClientRevoked'], {
    description: '`OAuthClientRevoked`: a revoked client’s secret cannot be rotated.',
  }),
} as const satisfies Record<string, ResponseObject>;

/** Name of a shared response. */
export type SharedResponseName = keyof typeof SHARED_RESPONSES;
