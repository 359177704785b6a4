import { SCOPE_ADMIN, SCOPE_API } from '../auth/principal.ts';

/** Lifetime of an access token the embedded issuer signs (one hour; `issueAccessToken`). */
export const ACCESS_TOKEN_LIFETIME_SECONDS = 3600;
/** Clock skew tolerated on `exp`, `nbf` and `iat` when verifying a token. */
export const CLOCK_SKEW_SECONDS = 60;
/**
 * How long a signing key stays published after it stopped signing, beyond the token lifetime:
 * every token it signed has expired (even on a clock that runs this far behind) before it leaves
 * the JWKS.
 */
export const KEY_RETIREMENT_GRACE_SECONDS = 300;
/** `Cache-Control: max-age` of the JWKS: how long a third-party verifier may keep its copy. */
export const JWKS_MAX_AGE_SECONDS = 300;
/** Longest a process trusts its in-memory copy of the signing keys (rotation reaches every node). */
export const KEY_SET_CACHE_MS = 60_000;
/**
 * How long a rotated-in key is published before it signs (seven minutes): every process serves
 * it in its JWKS within {@link KEY_SET_CACHE_MS}, a verifier that fetched the JWKS just before
 * then has refetched it within {@link JWKS_MAX_AGE_SECONDS}, and clocks may differ by
 * {@link CLOCK_SKEW_SECONDS} — all before the first token the new key signs.
 */
export const KEY_PREPUBLICATION_SECONDS =
  KEY_SET_CACHE_MS / 1000 + JWKS_MAX_AGE_SECONDS + CLOCK_SKEW_SECONDS;
/** Shortest interval between two store reads forced by a token whose `kid` is not cached. */
export const KEY_SET_REFRESH_COOLDOWN_MS = 1_000;
/** Length of the AES-256-GCM key-encryption key that seals private signing keys at rest. */
export const KEY_ENCRYPTION_KEY_BYTES = 32;
/** The one algorithm the embedded issuer signs with, and accepts on its own tokens. */
export const SIGNING_ALGORITHM = 'ES256';
/** RFC 9068 2.1: the `typ` of a JWT access token (`application/at+jwt`, prefix omitted). */
export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Scopes a client can hold and ask for. */
export const OAUTH_SCOPES: readonly string[] = [SCOPE_API, SCOPE_ADMIN];

/** Asymmetric JWS algorithms an external issuer may be trusted with (never `none`, never HS*). */
export type ExternalAlgorithm =
  | 'RS256'
  | 'RS384'
  | 'RS512'
  | 'PS256'
  | 'PS384'
  | 'PS512'
  | 'ES256'
  | 'ES384'
  | 'ES512'
  | 'EdDSA'
  | 'Ed25519';

/** Asymmetric algorithms an external issuer may be pinned to (never `none` or HS*). */
export const EXTERNAL_ALGORITHMS: readonly ExternalAlgorithm[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/**
 * An external identity provider whose access tokens the API accepts besides its own (Auth0,
 * Okta, Entra ID, Keycloak, ...). A token is routed here when its `iss` equals {@link issuer}.
 *
 * **Security**: a token of this issuer is as good as one of ours. Every check is strict: the
 * signature against the provider's JWKS, the algorithm against {@link algorithms}, `iss` exactly,
 * `aud` containing {@link audience}, `exp` required, `nbf` and `iat` honoured (60 s skew), `typ`
 * (when the token carries one) against {@link acceptedTypes}, and the organisation claim naming
 * an existing organisation.
 */
export interface ExternalIssuerConfig {
  /** The provider's issuer identifier, compared byte for byte with the token's `iss`. */
  readonly issuer: string;
  /**
   * Where the provider publishes its signing keys (RFC 7517 JWK Set). Must be `https:`; `http:`
   * is accepted for loopback hosts only (tests, a sidecar). Fetched on first use, cached for ten
   * minutes, refetched at most every 30 s when a token names an unknown `kid`; redirects are
   * not followed.
   */
  readonly jwksUrl: string;
  /**
   * The `aud` value the provider puts in tokens for this API (the resource indicator, RFC 8707).
   * @default the embedded issuer's audience (`<publicBaseUrl>/v1`)
   */
  readonly audience?: string;
  /**
   * Algorithms accepted on this provider's tokens: pin them to what it signs with. Symmetric
   * (`HS*`) and `none` cannot be configured: with a public JWKS they would let anyone forge.
   * @default ['RS256', 'ES256']
   */
  readonly algorithms?: readonly ExternalAlgorithm[];
  /**
   * The claim carrying the caller's organisation id; its value must be the id of an existing
   * organisation, or the token is refused.
   * @default 'org_id'
   */
  readonly organisationClaim?: string;
  /**
   * `typ` header values accepted when a token carries one (compared without the `application/`
   * prefix, case-insensitively). A token without `typ` is accepted. Adding `jwt` admits
   * providers that label access tokens as plain JWTs, at the cost of RFC 8725 3.11's defence
   * against an ID token being replayed as an access token (the audience check still applies).
   * @default ['at+jwt'] (RFC 9068)
   */
  readonly acceptedTypes?: readonly string[];
  /**
   * Scopes honoured from this provider's tokens (read from `scope`, a space-separated string, or
   * else `scp`, an array or string); others are ignored.
   *
   * **Security**: `cdr.admin` opens the platform-wide admin API to whoever the provider lets mint
   * it; list it only when the provider is trusted to run the platform.
   * @default ['cdr.api']
   */
  readonly scopes?: readonly string[];
}

/**
 * OAuth 2.0 for the API: the embedded client-credentials issuer (`POST /connect/token`, signed
 * JWT access tokens, `GET /.well-known/jwks.json`, client and signing-key admin routes) and,
 * optionally, an external identity provider whose tokens are accepted too.
 *
 * @example
 * ```ts
 * createDisarmApi(ports, {
 *   publicBaseUrl: 'https://cdr.example.com',
 *   oauth: {
 *     keyEncryptionKey: kek, // 32 random bytes, kept outside the state store
 *     external: { issuer: 'https://login.example.com/', jwksUrl: 'https://login.example.com/jwks' },
 *   },
 * });
 * ```
 */
export interface OAuthConfig {
  /**
   * 32-byte AES-256-GCM key that seals the private signing keys in the state store. Every process
   * sharing the store needs the same key; keep it outside the store (a secrets file, a KMS), so
   * a copy of the database alone cannot mint tokens.
   *
   * **Security**: whoever holds this key and a copy of the store can sign tokens for any client.
   * Losing it makes stored signing keys unusable: rotate (`POST /v1/admin/signing-keys/rotate`)
   * to continue with a new key; tokens already issued keep verifying until they expire.
   */
  readonly keyEncryptionKey: Uint8Array;
  /** `iss` of the tokens the embedded issuer signs. @default the API's `publicBaseUrl` */
  readonly issuer?: string;
  /** `aud` of the tokens the embedded issuer signs. @default `<publicBaseUrl>/v1` */
  readonly audience?: string;
  /** An external identity provider whose tokens are accepted too. @default none */
  readonly external?: ExternalIssuerConfig;
}

/** {@link ExternalIssuerConfig} with its defaults applied. */
export interface ExternalIssuerSettings {
  readonly issuer: string;
  readonly jwksUrl: URL;
  readonly audience: string;
  readonly algorithms: readonly ExternalAlgorithm[];
  readonly organisationClaim: string;
  /** Normalised: lower case, without `application/`. */
  readonly acceptedTypes: ReadonlySet<string>;
  readonly scopes: ReadonlySet<string>;
}

/** {@link OAuthConfig} with its defaults applied. */
export interface OAuthSettings {
  readonly keyEncryptionKey: Uint8Array;
  readonly issuer: string;
  readonly audience: string;
  readonly external: ExternalIssuerSettings | undefined;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const MAX_IDENTIFIER_CHARS = 2000;

/** Lower case, without the `application/` prefix (RFC 7515 4.1.9 says it may be omitted). */
export function normaliseType(value: string): string {
  const lower = value.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

function assertIdentifier(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_IDENTIFIER_CHARS) {
    throw new TypeError(`${name} must be a non-empty string of at most ${MAX_IDENTIFIER_CHARS}`);
  }
}

function resolveExternal(
  config: ExternalIssuerConfig,
  defaultAudience: string,
): ExternalIssuerSettings {
  assertIdentifier(config.issuer, 'oauth.external.issuer');
  let jwksUrl: URL;
  try {
    jwksUrl = new URL(config.jwksUrl);
  } catch {
    throw new TypeError(`oauth.external.jwksUrl must be an absolute URL, got ${config.jwksUrl}`);
  }
  // Keys fetched over plain HTTP could be swapped in transit: anyone on the path could forge.
  if (
    jwksUrl.protocol !== 'https:' &&
    !(jwksUrl.protocol === 'http:' && LOOPBACK_HOSTS.has(jwksUrl.hostname))
  ) {
    throw new TypeError('oauth.external.jwksUrl must be https (http only for loopback hosts)');
  }
  const audience = config.audience ?? defaultAudience;
  assertIdentifier(audience, 'oauth.external.audience');
  const algorithms = config.algorithms ?? ['RS256', 'ES256'];
  if (algorithms.length === 0 || algorithms.some((alg) => !EXTERNAL_ALGORITHMS.includes(alg))) {
    throw new TypeError(
      `oauth.external.algorithms must be some of ${EXTERNAL_ALGORITHMS.join(', ')} (never none or HS*)`,
    );
  }
  const organisationClaim = config.organisationClaim ?? 'org_id';
  assertIdentifier(organisationClaim, 'oauth.external.organisationClaim');
  const acceptedTypes = config.acceptedTypes ?? [ACCESS_TOKEN_TYPE];
  const scopes = config.scopes ?? [SCOPE_API];
  for (const scope of scopes) {
    if (!OAUTH_SCOPES.includes(scope)) {
      throw new TypeError(`oauth.external.scopes: unknown scope ${scope}`);
    }
  }
  return {
    issuer: config.issuer,
    jwksUrl,
    audience,
    algorithms: [...new Set(algorithms)],
    organisationClaim,
    acceptedTypes: new Set(acceptedTypes.map(normaliseType)),
    scopes: new Set(scopes),
  };
}

/**
 * Applies the defaults of {@link OAuthConfig} against the API's public base URL (without a
 * trailing slash).
 * @throws {TypeError} on a key-encryption key that is not 32 bytes, an empty issuer or
 *   audience, an insecure JWKS URL, or an external issuer equal to ours.
 */
export function resolveOAuthSettings(config: OAuthConfig, publicBaseUrl: string): OAuthSettings {
  if (
    !(config.keyEncryptionKey instanceof Uint8Array) ||
    config.keyEncryptionKey.length !== KEY_ENCRYPTION_KEY_BYTES
  ) {
    throw new TypeError(`oauth.keyEncryptionKey must be ${KEY_ENCRYPTION_KEY_BYTES} bytes`);
  }
  const issuer = config.issuer ?? publicBaseUrl;
  const audience = config.audience ?? `${publicBaseUrl}/v1`;
  assertIdentifier(issuer, 'oauth.issuer');
  assertIdentifier(audience, 'oauth.audience');
  const external =
    config.external === undefined ? undefined : resolveExternal(config.external, audience);
  if (external?.issuer === issuer) {
    throw new TypeError('oauth.external.issuer must differ from the embedded issuer');
  }
  return { keyEncryptionKey: config.keyEncryptionKey, issuer, audience, external };
}
