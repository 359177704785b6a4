import { HEADERS, jsonResponse, listResponse, problemResponse, responseRef } from './_responses.ts';
import { schemaRef } from './_schemas.ts';
import type {
  HeaderObject,
  OperationObject,
  ParameterObject,
  PathItemObject,
  ReferenceObject,
  ResponseObject,
  SecurityRequirement,
  SecuritySchemeObject,
} from './types.ts';

/** Tag of the token endpoint and the JWKS. */
export const OAUTH_TAG = {
  name: 'OAuth',
  description:
    'OAuth 2.0 client credentials: the token endpoint and the keys that verify its tokens.',
} as const;

/** `clientSecretBasic`: HTTP Basic with the form-urlencoded client id and secret (RFC 6749 2.3.1). */
export const CLIENT_SECRET_BASIC_SCHEME: SecuritySchemeObject = {
  type: 'http',
  scheme: 'basic',
  description:
    'client_secret_basic (RFC 6749 2.3.1): `Authorization: Basic base64(urlencode(client_id) ":" urlencode(client_secret))`. Only on the token endpoint; alternatively send `client_id` and `client_secret` in the form (client_secret_post), never both.',
};

const ADMIN_SECURITY: readonly SecurityRequirement[] = [
  { bearer: ['cdr.admin'] },
  { oauth2: ['cdr.admin'] },
];
/** Basic, or (the empty requirement) the credentials in the form body. */
const TOKEN_SECURITY: readonly SecurityRequirement[] = [{ clientSecretBasic: [] }, {}];
const PUBLIC: readonly SecurityRequirement[] = [];

const ORGANISATION_ID: ReferenceObject = { $ref: '#/components/parameters/OrganisationId' };
const CLIENT_ID: ParameterObject = {
  name: 'clientId',
  in: 'path',
  required: true,
  description: 'The OAuth client id (`cli_…`).',
  schema: { type: 'string', minLength: 1 },
};

const noStoreHeaders = (): Record<string, HeaderObject> => ({
  'Cache-Control': HEADERS.noStore,
  Pragma: HEADERS.pragmaNoCache,
});

function oauthErrorResponse(
  description: string,
  headers: Record<string, HeaderObject> = {},
): ResponseObject {
  return {
    description,
    headers: { ...noStoreHeaders(), ...headers },
    content: { 'application/json': { schema: schemaRef('OAuthError') } },
  };
}

function adminOperation(body: Omit<OperationObject, 'tags' | 'security'>): OperationObject {
  return { ...body, tags: ['Admin'], security: ADMIN_SECURITY };
}

function adminErrors(): Record<string, ResponseObject | ReferenceObject> {
  return {
    '401': responseRef('Unauthorized'),
    '403': problemResponse(['Forbidden'], {
      description: '`Forbidden`: the credential lacks scope `cdr.admin` (API keys never have it).',
    }),
    '500': responseRef('InternalError'),
    '503': responseRef('ServiceUnavailable'),
  };
}

/**
 * The path items of OAuth: the token endpoint, the JWKS, and the admin routes of clients and
 * signing keys. Described only when the API serves them (`oauth: true`).
 */
export function oauthPaths(): Record<string, PathItemObject> {
  const clients = '/v1/admin/organisations/{organisationId}/clients';
  const clientNotFound = responseRef('OAuthClientNotFound');
  return {
    '/connect/token': {
      post: {
        operationId: 'issueAccessToken',
        summary: 'Issue an access token (client credentials)',
        description: [
          'The OAuth 2.0 client credentials grant (RFC 6749 4.4). Authenticate with HTTP Basic (client_secret_basic) or with `client_id` and `client_secret` in the form (client_secret_post), not both. Without `scope`, every scope the client holds is granted.',
          '',
          'The token is an RFC 9068 JWT valid one hour: send it as `Authorization: Bearer <token>` and reuse it until shortly before it expires. Errors are RFC 6749 5.2 JSON; an unknown client, a wrong secret and a revoked client are the same `invalid_client`.',
        ].join('\n'),
        tags: [OAUTH_TAG.name],
        security: TOKEN_SECURITY,
        requestBody: {
          description: 'Form-encoded (RFC 6749 4.4.2).',
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: schemaRef('TokenRequest'),
              examples: {
                post: {
                  summary: 'client_secret_post',
                  value: {
                    grant_type: 'client_credentials',
                    client_id: 'cli_8k2m4q7w9x1c3v5b6n0p',
                    client_secret: 'dsm_secret_0123456789abcdefghjkmnpqrstvwxyz0123456789a',
                    scope: 'cdr.api',
                  },
                },
              },
            },
          },
        },
        responses: {
          '200': {
            description: 'The access token (RFC 6749 5.1).',
            headers: noStoreHeaders(),
            content: {
              'application/json': {
                schema: schemaRef('TokenResponse'),
                examples: {
                  token: {
                    value: {
                      access_token: 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjbGkifQ.c2lnbmF0dXJl',
                      token_type: 'Bearer',
                      expires_in: 3600,
                      scope: 'cdr.api',
                    },
                  },
                },
              },
            },
          },
          '400': oauthErrorResponse(
            '`invalid_request` (not form-encoded, a missing or repeated parameter, two authentication methods, credentials in the URL), `unsupported_grant_type` (only client_credentials), `invalid_scope` (a scope the client does not hold).',
          ),
          '401': oauthErrorResponse(
            '`invalid_client`: client authentication failed (unknown client, wrong secret, revoked client, malformed Basic credentials).',
            { 'WWW-Authenticate': HEADERS.basicChallenge },
          ),
          '500': responseRef('InternalError'),
          '503': responseRef('ServiceUnavailable'),
        },
      },
    },
    '/.well-known/jwks.json': {
      get: {
        operationId: 'getJsonWebKeySet',
        summary: 'The public keys that verify access tokens (JWKS)',
        description:
          'RFC 7517 JWK Set of the embedded issuer. Match a token’s `kid` header to a key; on an unknown `kid`, fetch again (a rotation adds a key), but not more than every few seconds.',
        tags: [OAUTH_TAG.name],
        security: PUBLIC,
        responses: {
          '200': {
            description: 'The key set.',
            headers: { 'Cache-Control': HEADERS.publicCache },
            content: { 'application/json': { schema: schemaRef('JsonWebKeySet') } },
          },
          '500': responseRef('InternalError'),
          '503': responseRef('ServiceUnavailable'),
        },
      },
    },
    [clients]: {
      parameters: [ORGANISATION_ID],
      post: adminOperation({
        operationId: 'createOAuthClient',
        summary: 'Create an OAuth client',
        description:
          'The secret is in this response only: store it now. Only its SHA-256 is kept. Default scopes: `["cdr.api"]`.',
        requestBody: {
          description: 'JSON body (optional).',
          required: false,
          content: { 'application/json': { schema: schemaRef('OAuthClientCreate') } },
        },
        responses: {
          '201': jsonResponse({
            description: 'The new client and its secret, shown once.',
            schema: 'OAuthClientWithSecret',
          }),
          '400': problemResponse(['ValidationFailed']),
          '404': problemResponse(['OrganisationNotFound']),
          '413': problemResponse(['PayloadTooLarge']),
          ...adminErrors(),
        },
      }),
      get: adminOperation({
        operationId: 'listOAuthClients',
        summary: 'List OAuth clients',
        description: 'Revoked clients stay listed (with `revokedAt`). Never the secrets.',
        responses: {
          '200': listResponse('The organisation’s clients.', 'clients', 'OAuthClient'),
          '404': problemResponse(['OrganisationNotFound']),
          ...adminErrors(),
        },
      }),
    },
    [`${clients}/{clientId}`]: {
      parameters: [ORGANISATION_ID, CLIENT_ID],
      delete: adminOperation({
        operationId: 'revokeOAuthClient',
        summary: 'Revoke an OAuth client',
        description:
          'Takes effect at once: the token endpoint refuses the client and every token it holds stops working. Revoking again succeeds.',
        responses: {
          '200': jsonResponse({
            description: 'The client, with `revokedAt` set.',
            schema: 'OAuthClient',
          }),
          '404': clientNotFound,
          ...adminErrors(),
        },
      }),
    },
    [`${clients}/{clientId}/rotate`]: {
      parameters: [ORGANISATION_ID, CLIENT_ID],
      post: adminOperation({
        operationId: 'rotateOAuthClientSecret',
        summary: 'Rotate a client secret',
        description:
          'A new secret, shown once. The previous secret keeps working until `DELETE .../previous-secret` or the next rotation (at most two live secrets), so integrations switch without downtime.',
        responses: {
          '200': jsonResponse({
            description: 'The client and its new secret.',
            schema: 'OAuthClientWithSecret',
          }),
          '404': clientNotFound,
          '409': responseRef('OAuthClientRevoked'),
          ...adminErrors(),
        },
      }),
    },
    [`${clients}/{clientId}/previous-secret`]: {
      parameters: [ORGANISATION_ID, CLIENT_ID],
      delete: adminOperation({
        operationId: 'removePreviousOAuthClientSecret',
        summary: 'End a secret rotation’s overlap',
        description: 'The previous secret stops working at once. Succeeds when there is none.',
        responses: {
          '200': jsonResponse({ description: 'The client.', schema: 'OAuthClient' }),
          '404': clientNotFound,
          ...adminErrors(),
        },
      }),
    },
    '/v1/admin/signing-keys': {
      get: adminOperation({
        operationId: 'listSigningKeys',
        summary: 'List the token signing keys',
        description: 'Newest first; never private material.',
        responses: {
          '200': listResponse('Every signing key.', 'keys', 'SigningKey'),
          ...adminErrors(),
        },
      }),
    },
    '/v1/admin/signing-keys/rotate': {
      post: adminOperation({
        operationId: 'rotateSigningKey',
        summary: 'Rotate the token signing key',
        description:
          'Staged (the default): the new key is in the JWKS at once (status `upcoming`) and signs from `activeFrom`, seven minutes later — longer than every process takes to publish it plus the JWKS `max-age` — so a verifier that caches the JWKS never meets a token whose key it has not fetched; the current key signs until then. With `immediate=true` (a key that may be compromised) the new key signs now and every other key stops signing now. A replaced key stays in the JWKS until every token it signed has expired (one hour and five minutes after it stopped), then retires. Every process sees the change within a minute.',
        parameters: [
          {
            name: 'immediate',
            in: 'query',
            description: 'Switch signing to the new key now instead of after the pre-publication.',
            schema: { type: 'boolean', default: false },
          },
        ],
        responses: {
          '200': jsonResponse({ description: 'The new key.', schema: 'SigningKey' }),
          '400': problemResponse(['ValidationFailed']),
          ...adminErrors(),
        },
      }),
    },
  };
}
