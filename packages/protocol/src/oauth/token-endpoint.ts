import type { Logger } from '../config.ts';
import type { Handler } from '../http/context.ts';
import type { Clock, OAuthClientRecord, Random, StateStore } from '../ports.ts';
import { InvalidRequest, parseBasicCredentials, readTokenForm, safe } from './_form.ts';
import { signAccessToken } from './access-token.ts';
import { verifyClientSecret } from './client-secrets.ts';
import { ACCESS_TOKEN_LIFETIME_SECONDS, OAUTH_SCOPES } from './config.ts';
import type { SigningKeyManager } from './signing-keys.ts';
import { bufferedResponse } from '../http/buffered-response.ts';

/** Where the token endpoint is served. */
export const TOKEN_PATH = '/connect/token';
/** Longest client id looked up (ours are 24 characters). */
const MAX_CLIENT_ID_CHARS = 200;
/** RFC 6749 3.3 scope-token: %x21 / %x23-5B / %x5D-7E. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
/** RFC 9110 11.6.1 and RFC 7617 2.1: the challenge a 401 names. */
const BASIC_CHALLENGE = 'Basic realm="disarm", charset="UTF-8"';

/** The error codes of RFC 6749 5.2 this endpoint answers with. */
export type TokenErrorCode =
  'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

const STATUS: Readonly<Record<TokenErrorCode, number>> = {
  invalid_request: 400,
  // RFC 9110 15.5.2 requires WWW-Authenticate on every 401; RFC 6749 5.2 allows 401 here.
  invalid_client: 401,
  unsupported_grant_type: 400,
  invalid_scope: 400,
};

/** The one answer to every failed client authentication (no oracle for which part failed). */
const CLIENT_AUTHENTICATION_FAILED = 'Client authentication failed.';

/** What the token endpoint needs. */
export interface TokenEndpointOptions {
  readonly store: StateStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly signingKeys: SigningKeyManager;
  readonly issuer: string;
  readonly audience: string;
  readonly logger?: Logger;
}

/** RFC 6749 5.1 and 5.2: JSON, never cached. */
function oauthJson(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return bufferedResponse(JSON.stringify(body), {
    status,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': 'no-store',
      Pragma: 'no-cache',
      ...headers,
    },
  });
}

function tokenError(error: TokenErrorCode, description: string): Response {
  return oauthJson(
    { error, error_description: description },
    STATUS[error],
    error === 'invalid_client' ? { 'WWW-Authenticate': BASIC_CHALLENGE } : {},
  );
}

/** Scopes granted for `requested` (RFC 6749 3.3), or the error to answer. */
function grantScopes(
  requested: string | undefined,
  client: OAuthClientRecord,
): readonly string[] | Response {
  const held = new Set(client.scopes);
  if (requested === undefined) return OAUTH_SCOPES.filter((scope) => held.has(scope));
  const asked = new Set(requested.split(' ').filter((token) => token !== ''));
  if (asked.size === 0) return tokenError('invalid_scope', 'The scope is empty.');
  for (const scope of asked) {
    if (!SCOPE_TOKEN.test(scope) || !held.has(scope)) {
      return tokenError('invalid_scope', `The client may not ask for scope ${safe(scope)}.`);
    }
  }
  return OAUTH_SCOPES.filter((scope) => asked.has(scope));
}

/**
 * `POST /connect/token`: the OAuth 2.0 client credentials grant (RFC 6749 4.4). Clients
 * authenticate with `client_secret_basic` or `client_secret_post` (RFC 6749 2.3.1), not both.
 * `scope` is optional: without it, every scope the client holds is granted. Success is
 * `{ access_token, token_type: "Bearer", expires_in: 3600, scope }` (RFC 6749 5.1); errors are
 * RFC 6749 5.2 JSON. Unknown client, wrong secret and revoked client are one answer, reached in
 * the same time (the secret is hashed and compared in every case).
 */
export function createTokenEndpoint(options: TokenEndpointOptions): Handler {
  const { store, clock, random, signingKeys, issuer, audience, logger } = options;
  return async ({ request, url }) => {
    // RFC 6749 2.3.1: client credentials must not be sent in the request URI.
    if (url.searchParams.has('client_secret')) {
      return tokenError('invalid_request', 'Send client credentials in the body, never the URL.');
    }
    const authorization = request.headers.get('Authorization');
    const basic = authorization === null ? undefined : parseBasicCredentials(authorization);
    if (authorization !== null && basic === undefined) {
      // RFC 6749 5.2: a failed Authorization header is invalid_client with a 401 challenge.
      return tokenError('invalid_client', CLIENT_AUTHENTICATION_FAILED);
    }
    let form: Map<string, string>;
    try {
      form = await readTokenForm(request);
    } catch (error) {
      if (error instanceof InvalidRequest) return tokenError('invalid_request', error.message);
      throw error;
    }
    const grantType = form.get('grant_type');
    if (grantType === undefined) return tokenError('invalid_request', 'grant_type is required.');
    if (grantType !== 'client_credentials') {
      return tokenError(
        'unsupported_grant_type',
        'Only the client_credentials grant is supported.',
      );
    }
    const formId = form.get('client_id');
    const formSecret = form.get('client_secret');
    if (basic !== undefined && formSecret !== undefined) {
      // RFC 6749 2.3: a client must not use more than one authentication method per request.
      return tokenError(
        'invalid_request',
        'Authenticate with HTTP Basic or with client_secret in the body, not both.',
      );
    }
    if (basic !== undefined && formId !== undefined && formId !== basic.clientId) {
      return tokenError('invalid_request', 'client_id differs from the Basic credentials.');
    }
    const clientId = basic?.clientId ?? formId;
    const secret = basic?.clientSecret ?? formSecret;
    if (clientId === undefined || secret === undefined) {
      return tokenError('invalid_client', CLIENT_AUTHENTICATION_FAILED);
    }

    const client =
      clientId.length <= MAX_CLIENT_ID_CHARS ? await store.getOAuthClient(clientId) : undefined;
    const live = client?.revokedAt === null;
    // Hashed and compared whether or not the client exists: no timing oracle for client ids.
    const matches = await verifyClientSecret(secret, live ? client.secretHashes : []);
    if (!live || !matches) {
      logger?.info(
        {
          clientId: clientId.length <= MAX_CLIENT_ID_CHARS ? clientId : undefined,
          reason: client === undefined ? 'unknown client' : live ? 'wrong secret' : 'revoked',
        },
        'token request refused',
      );
      return tokenError('invalid_client', CLIENT_AUTHENTICATION_FAILED);
    }

    const scopes = grantScopes(form.get('scope'), client);
    if (scopes instanceof Response) return scopes;
    const now = clock.now();
    const accessToken = await signAccessToken({
      signingKey: await signingKeys.signingKey(),
      issuer,
      audience,
      clientId: client.id,
      organisationId: client.organisationId,
      scopes,
      issuedAt: now,
      random,
    });
    logger?.info(
      { clientId: client.id, organisationId: client.organisationId, scopes },
      'access token issued',
    );
    return oauthJson(
      {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_LIFETIME_SECONDS,
        scope: scopes.join(' '),
      },
      200,
    );
  };
}
