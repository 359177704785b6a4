import type { StateStore } from '../ports.ts';
import { hashApiKey, isWellFormedApiKey, looksLikeApiKey } from './api-keys.ts';
import { SCOPE_ADMIN, SCOPE_API } from './principal.ts';
import type { BearerVerifier, Principal } from './principal.ts';

/** What {@link authenticate} needs. */
export interface AuthenticateDeps {
  readonly store: StateStore;
  readonly adminTokenHashes: ReadonlySet<string>;
  readonly verifyBearer?: BearerVerifier;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Hex SHA-256 of a token, compared against configured hashes. */
async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

async function fromApiKey(key: string, store: StateStore): Promise<Principal | undefined> {
  // The checksum rejects typos and look-alikes before any lookup; the lookup is by hash, so the
  // secret itself is never compared character by character.
  if (!isWellFormedApiKey(key)) return undefined;
  const record = await store.findApiKeyByHash(await hashApiKey(key));
  if (record?.revokedAt !== null) return undefined;
  return {
    organisationId: record.organisationId,
    scopes: new Set([SCOPE_API]),
    credential: 'api_key',
    credentialId: record.id,
  };
}

/**
 * Finds the caller: `X-Api-Key`, or `Authorization: Bearer` carrying an API key (told apart by
 * its prefix), a bootstrap admin token, or an OAuth access token. `undefined` means 401.
 * A request that sends both headers is judged by `Authorization` alone.
 */
export async function authenticate(
  request: Request,
  deps: AuthenticateDeps,
): Promise<Principal | undefined> {
  const authorization = request.headers.get('Authorization');
  if (authorization !== null) {
    const token = BEARER.exec(authorization)?.[1];
    if (token === undefined) return undefined;
    if (looksLikeApiKey(token)) return fromApiKey(token, deps.store);
    if (deps.adminTokenHashes.size > 0 && deps.adminTokenHashes.has(await sha256Hex(token))) {
      return {
        organisationId: null,
        scopes: new Set([SCOPE_ADMIN]),
        credential: 'admin_token',
        credentialId: 'bootstrap',
      };
    }
    return deps.verifyBearer ? deps.verifyBearer(token) : undefined;
  }
  const apiKey = request.headers.get('X-Api-Key');
  return apiKey === null ? undefined : fromApiKey(apiKey.trim(), deps.store);
}
