import { boundedMemo } from '../_internal/bounded-memo.ts';
import type { StateStore } from '../ports.ts';
import type { ApiKeyCache } from './api-key-cache.ts';
import { API_KEY_PREFIX, hashApiKey, isWellFormedApiKey, looksLikeApiKey } from './api-keys.ts';
import { SCOPE_ADMIN, SCOPE_API } from './principal.ts';
import type { BearerVerifier, Principal } from './principal.ts';

/** What {@link authenticate} needs. */
export interface AuthenticateDeps {
  readonly store: StateStore;
  /** Keys recently found valid (revocation reaches other processes within its time-to-live). */
  readonly apiKeys: ApiKeyCache;
  readonly adminTokenHashes: ReadonlySet<string>;
  readonly verifyBearer?: BearerVerifier;
}

/**
 * Why a request is not authenticated: the RFC 6750 3.1 error code (`undefined` when no
 * credential was sent at all, which RFC 6750 answers with a bare challenge) and the sentence the
 * 401 carries in `detail` and `error_description`.
 */
export interface AuthFailure {
  readonly error: 'invalid_request' | 'invalid_token' | undefined;
  readonly detail: string;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const SCHEME = /^(\S+)/;

/**
 * Hashes of recently seen well-formed keys: saves a WebCrypto round trip on every request of a
 * client that polls. Bounded, so a flood of made-up keys only evicts.
 */
const API_KEY_HASH_CACHE_ENTRIES = 1024;
const hashOfApiKey = boundedMemo(API_KEY_HASH_CACHE_ENTRIES, hashApiKey);

const MISSING: AuthFailure = {
  error: undefined,
  detail:
    'No credential was sent: send an API key in X-Api-Key or a bearer token in Authorization: Bearer <token>.',
};
const MALFORMED_KEY: AuthFailure = {
  error: 'invalid_token',
  detail: `The API key is malformed: a key is ${API_KEY_PREFIX} followed by 43 lowercase letters and digits, as shown once at creation (check for a truncated or altered copy).`,
};
// One sentence for both: a caller must not learn whether a key ever existed.
const UNKNOWN_OR_REVOKED_KEY: AuthFailure = {
  error: 'invalid_token',
  detail: 'The API key is not valid: it is unknown or has been revoked.',
};
const UNRECOGNISED_BEARER: AuthFailure = {
  error: 'invalid_token',
  detail: `The bearer token is not valid: it is neither an access token this service accepts nor an API key (${API_KEY_PREFIX}...).`,
};

/** Hex SHA-256 of a token, compared against configured hashes. */
async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

async function fromApiKey(key: string, deps: AuthenticateDeps): Promise<Principal | AuthFailure> {
  // The checksum rejects typos and look-alikes before any lookup; the lookup is by hash, so the
  // secret itself is never compared character by character.
  if (!isWellFormedApiKey(key)) return MALFORMED_KEY;
  const hash = await hashOfApiKey(key);
  let record = deps.apiKeys.get(hash);
  if (record === undefined) {
    record = await deps.store.findApiKeyByHash(hash);
    if (record?.revokedAt !== null) return UNKNOWN_OR_REVOKED_KEY;
    deps.apiKeys.set(hash, record);
  }
  return {
    organisationId: record.organisationId,
    scopes: new Set([SCOPE_API]),
    credential: 'api_key',
    credentialId: record.id,
  };
}

/** True when {@link authenticate} found no caller. */
export function isAuthFailure(value: Principal | AuthFailure): value is AuthFailure {
  return 'detail' in value;
}

/**
 * Finds the caller: `X-Api-Key`, or `Authorization: Bearer` carrying an API key (told apart by
 * its prefix), a bootstrap admin token, or an OAuth access token. A request that sends both
 * headers is judged by `Authorization` alone.
 *
 * @returns the {@link Principal}, or an {@link AuthFailure} saying precisely what is wrong (a
 *   401): nothing sent, a header that is not `Bearer <token>` (`invalid_request`), a malformed,
 *   unknown or revoked key, or a refused access token (`invalid_token`). An unknown and a revoked
 *   key read the same.
 */
export async function authenticate(
  request: Request,
  deps: AuthenticateDeps,
): Promise<Principal | AuthFailure> {
  const authorization = request.headers.get('Authorization');
  if (authorization !== null) {
    const token = BEARER.exec(authorization)?.[1];
    if (token === undefined) {
      const scheme = SCHEME.exec(authorization.trim())?.[1];
      return {
        error: 'invalid_request',
        detail:
          scheme === undefined
            ? 'The Authorization header is empty: send Authorization: Bearer <token or API key>.'
            : /^bearer$/i.test(scheme)
              ? 'The Authorization header carries no token: send Authorization: Bearer <token or API key>, one value without spaces.'
              : // Only the scheme name is echoed (at most 20 characters), never what follows it.
                `The Authorization scheme ${JSON.stringify(scheme.slice(0, 20))} is not accepted: send Authorization: Bearer <token or API key>.`,
      };
    }
    if (looksLikeApiKey(token)) return fromApiKey(token, deps);
    if (deps.adminTokenHashes.size > 0 && deps.adminTokenHashes.has(await sha256Hex(token))) {
      return {
        organisationId: null,
        scopes: new Set([SCOPE_ADMIN]),
        credential: 'admin_token',
        credentialId: 'bootstrap',
      };
    }
    if (deps.verifyBearer === undefined) return UNRECOGNISED_BEARER;
    let refusal: string | undefined;
    const principal = await deps.verifyBearer(token, (detail) => {
      refusal = detail;
    });
    if (principal !== undefined) return principal;
    return refusal === undefined
      ? UNRECOGNISED_BEARER
      : { error: 'invalid_token', detail: refusal };
  }
  const apiKey = request.headers.get('X-Api-Key');
  if (apiKey === null) return MISSING;
  const key = apiKey.trim();
  if (key === '') {
    return { error: 'invalid_request', detail: 'The X-Api-Key header is empty.' };
  }
  return fromApiKey(key, deps);
}

/**
 * The RFC 6750 3 challenge of a 401: `Bearer realm="disarm"`, plus `error` and
 * `error_description` when a credential was sent and refused.
 */
export function bearerChallenge(failure: AuthFailure): string {
  if (failure.error === undefined) return 'Bearer realm="disarm"';
  // RFC 6750 3: error_description is %x20-21 / %x23-5B / %x5D-7E (no `"` or `\`).
  const description = failure.detail.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "'");
  return `Bearer realm="disarm", error="${failure.error}", error_description="${description}"`;
}
