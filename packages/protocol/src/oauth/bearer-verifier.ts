import { createRemoteJWKSet, decodeJwt, errors, jwtVerify } from 'jose';
import type { JWTPayload, JWTVerifyGetKey } from 'jose';

import { SCOPE_ADMIN } from '../auth/principal.ts';
import type { BearerVerifier, Principal } from '../auth/principal.ts';
import type { Logger } from '../config.ts';
import { StorageUnavailableError } from '../ports.ts';
import type { Clock, StateStore } from '../ports.ts';
import {
  ACCESS_TOKEN_LIFETIME_SECONDS,
  ACCESS_TOKEN_TYPE,
  CLOCK_SKEW_SECONDS,
  normaliseType,
  OAUTH_SCOPES,
  SIGNING_ALGORITHM,
} from './config.ts';
import type { ExternalIssuerSettings } from './config.ts';
import type { SigningKeyManager } from './signing-keys.ts';

/** Longest bearer value looked at; real access tokens are well under 2 KB. */
export const MAX_ACCESS_TOKEN_CHARS = 8192;
/** Most scope tokens read from one access token. */
const MAX_TOKEN_SCOPES = 64;
/** Longest organisation id accepted from a claim. */
const MAX_ORGANISATION_ID_CHARS = 200;
/** External JWKS: cached ten minutes, refetched at most every 30 s on an unknown `kid`. */
const EXTERNAL_JWKS_CACHE_MS = 10 * 60_000;
const EXTERNAL_JWKS_COOLDOWN_MS = 30_000;
const EXTERNAL_JWKS_TIMEOUT_MS = 5_000;

/** A logger that may also take debug lines (pino has them; the API's port need not). */
export type VerifierLogger = Logger & {
  debug?(object: Record<string, unknown>, message?: string): void;
};

/** Options of {@link createBearerVerifier}. */
export interface BearerVerifierOptions {
  readonly store: StateStore;
  /** Time of every `exp`/`nbf`/`iat` check (the manual clock in test mode). */
  readonly clock: Clock;
  /** The embedded issuer's keys. */
  readonly signingKeys: SigningKeyManager;
  /** `iss` of our tokens, compared exactly. */
  readonly issuer: string;
  /** `aud` our tokens must carry. */
  readonly audience: string;
  /** An external issuer whose tokens are accepted too. */
  readonly external?: ExternalIssuerSettings;
  /**
   * Test seam: how the external issuer's keys are found. @default `createRemoteJWKSet` over
   * `external.jwksUrl`
   */
  readonly externalKeys?: JWTVerifyGetKey;
  /** Refusals are logged at debug (reason only, never the token). */
  readonly logger?: VerifierLogger;
}

/**
 * Why a token was refused: `message` for the debug log, `publicDetail` for the caller (what is
 * wrong with the token, never whether a client or organisation exists).
 */
class Refusal extends Error {
  override readonly name = 'Refusal';
  readonly publicDetail: string;
  constructor(reason: string, publicDetail: string) {
    super(reason);
    this.publicDetail = publicDetail;
  }
}

const NOT_REGISTERED =
  "The access token's client or organisation is not (or no longer) registered here, or the client was revoked: request a token with current credentials.";
const MALFORMED_TOKEN =
  'The bearer token is malformed: it is neither a signed JWT access token (three base64url parts) nor an API key.';

function refuse(reason: string, publicDetail = `The access token is not valid: ${reason}.`): never {
  throw new Refusal(reason, publicDetail);
}

/** The caller's sentence for a JOSE verification error (RFC 7519 claim names kept as is). */
function joseRefusalDetail(error: errors.JOSEError): string {
  if (error instanceof errors.JWTExpired) {
    return 'The access token has expired (exp): request a new one from /connect/token.';
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.reason === 'missing') {
      return `The access token lacks the required claim ${error.claim}.`;
    }
    switch (error.claim) {
      case 'typ':
        return `The access token's typ header is not ${ACCESS_TOKEN_TYPE} (RFC 9068).`;
      case 'aud':
        return 'The access token is for another audience (aud): request it for this API.';
      case 'iss':
        return 'The access token is from another issuer (iss).';
      case 'nbf':
        return 'The access token is not valid yet (nbf).';
      case 'iat':
        return "The access token's issue time (iat) is in the future or more than an hour ago.";
      default:
        return `The access token's ${error.claim} claim is not accepted.`;
    }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "The access token's signature does not verify: it was altered or signed by another key.";
  }
  if (
    error instanceof errors.JWKSNoMatchingKey ||
    error instanceof errors.JWKSMultipleMatchingKeys
  ) {
    return 'The access token is signed by a key this service does not publish (kid).';
  }
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) {
    return "The access token's signing algorithm (alg) is not accepted.";
  }
  if (error instanceof errors.JWKSTimeout) {
    return "The access token could not be checked: the issuer's keys did not arrive in time; retry.";
  }
  return MALFORMED_TOKEN;
}

function parseScopes(value: unknown): string[] {
  const items =
    typeof value === 'string'
      ? value.split(' ')
      : Array.isArray(value)
        ? value.filter((item): item is string => typeof item === 'string')
        : refuse('no scope claim', 'The access token lacks the required claim scope.');
  return items.filter((item) => item !== '').slice(0, MAX_TOKEN_SCOPES);
}

function stringClaim(payload: JWTPayload, name: string): string {
  const value = payload[name];
  if (typeof value !== 'string' || value === '') {
    refuse(`no ${name} claim`, `The access token lacks the required claim ${name}.`);
  }
  return value;
}

/**
 * The bearer verifier of the API's OAuth tokens: an access token of the embedded issuer, or of
 * the configured external issuer, becomes the {@link Principal} it stands for; anything else is
 * `undefined` (a 401), after telling `onRefusal` why in a sentence safe to show the caller. It
 * never throws.
 *
 * Our tokens: signature against our published keys, `alg` pinned to ES256, `typ` `at+jwt`,
 * `iss` and `aud` exact, `exp`/`iat` within one hour and {@link CLOCK_SKEW_SECONDS} on `clock`,
 * and the client still existing, unrevoked and in the token's organisation (revocation is
 * effective at once). Scopes are those of the token the client still holds.
 *
 * External tokens: see {@link ExternalIssuerConfig}.
 *
 * @example
 * ```ts
 * const verifyBearer = createBearerVerifier({ store, clock, signingKeys, issuer, audience });
 * createDisarmApi(ports, config, { verifyBearer });
 * ```
 */
export function createBearerVerifier(options: BearerVerifierOptions): BearerVerifier {
  const { store, clock, signingKeys, issuer, audience, external, logger } = options;
  const externalKeys =
    external === undefined
      ? undefined
      : (options.externalKeys ??
        createRemoteJWKSet(external.jwksUrl, {
          cacheMaxAge: EXTERNAL_JWKS_CACHE_MS,
          cooldownDuration: EXTERNAL_JWKS_COOLDOWN_MS,
          timeoutDuration: EXTERNAL_JWKS_TIMEOUT_MS,
        }));

  const ownKey: JWTVerifyGetKey = async (header) => {
    if (typeof header.kid !== 'string') {
      refuse('no kid', "The access token's header names no signing key (kid).");
    }
    const key = await signingKeys.verificationKey(header.kid);
    if (key === undefined) throw new errors.JWKSNoMatchingKey();
    return key;
  };

  async function verifyOwn(token: string): Promise<Principal> {
    const { payload } = await jwtVerify(token, ownKey, {
      algorithms: [SIGNING_ALGORITHM],
      issuer,
      audience,
      typ: ACCESS_TOKEN_TYPE,
      currentDate: clock.now(),
      clockTolerance: CLOCK_SKEW_SECONDS,
      // Also refuses an `iat` in the future.
      maxTokenAge: ACCESS_TOKEN_LIFETIME_SECONDS,
      requiredClaims: ['exp', 'iat', 'jti', 'sub', 'client_id', 'scope'],
    });
    const clientId = stringClaim(payload, 'client_id');
    // No `org`: an operator client's token, checked against the client below.
    const organisationId = payload.org === undefined ? null : stringClaim(payload, 'org');
    if (payload.sub !== clientId) {
      refuse('sub is not the client', "The access token's sub is not its client_id.");
    }
    const client = await store.getOAuthClient(clientId);
    if (client === undefined) refuse('unknown client', NOT_REGISTERED);
    if (client.revokedAt !== null) refuse('revoked client', NOT_REGISTERED);
    if (client.organisationId !== organisationId) {
      refuse('client of another organisation', NOT_REGISTERED);
    }
    // Platform administration is never a customer organisation's right, whatever a row says.
    const held = new Set(
      client.scopes.filter((scope) => organisationId === null || scope !== SCOPE_ADMIN),
    );
    return {
      organisationId,
      scopes: new Set(parseScopes(payload.scope).filter((scope) => held.has(scope))),
      credential: 'oauth_token',
      credentialId: client.id,
    };
  }

  async function verifyExternal(
    token: string,
    settings: ExternalIssuerSettings,
    keys: JWTVerifyGetKey,
  ): Promise<Principal> {
    const now = clock.now();
    const { payload, protectedHeader } = await jwtVerify(token, keys, {
      algorithms: [...settings.algorithms],
      issuer: settings.issuer,
      audience: settings.audience,
      currentDate: now,
      clockTolerance: CLOCK_SKEW_SECONDS,
      requiredClaims: ['exp'],
    });
    // RFC 8725 3.11: explicit typing, checked where the issuer sets it.
    if (
      protectedHeader.typ !== undefined &&
      !settings.acceptedTypes.has(normaliseType(protectedHeader.typ))
    ) {
      refuse('typ not accepted', "The access token's typ header is not one this service accepts.");
    }
    if (payload.iat !== undefined && payload.iat > now.getTime() / 1000 + CLOCK_SKEW_SECONDS) {
      refuse('iat in the future', "The access token's issue time (iat) is in the future.");
    }
    const organisationId = payload[settings.organisationClaim];
    if (
      typeof organisationId !== 'string' ||
      organisationId === '' ||
      organisationId.length > MAX_ORGANISATION_ID_CHARS
    ) {
      refuse(
        'no organisation claim',
        `The access token lacks the organisation claim ${settings.organisationClaim}.`,
      );
    }
    if ((await store.getOrganisation(organisationId, now)) === undefined) {
      refuse('unknown organisation', NOT_REGISTERED);
    }
    // No scope claim at all is a valid token with no scope: the routes answer 403, not 401.
    const claimed = payload.scope ?? payload.scp;
    const scopes = (claimed === undefined ? [] : parseScopes(claimed)).filter((scope) =>
      settings.scopes.has(scope),
    );
    const who = payload.client_id ?? payload.azp ?? payload.sub;
    return {
      organisationId,
      scopes: new Set(scopes.filter((scope) => OAUTH_SCOPES.includes(scope))),
      credential: 'oauth_token',
      credentialId: typeof who === 'string' ? who.slice(0, MAX_ORGANISATION_ID_CHARS) : 'external',
    };
  }

  return async (token, onRefusal) => {
    let claimedIssuer: unknown;
    try {
      if (token.length > MAX_ACCESS_TOKEN_CHARS) {
        refuse(
          'token too long',
          `The bearer token is longer than ${MAX_ACCESS_TOKEN_CHARS} characters; no access token of this service is.`,
        );
      }
      // The unverified `iss` only chooses whose keys and rules apply; nothing else is trusted.
      claimedIssuer = decodeJwt(token).iss;
      if (claimedIssuer === issuer) return await verifyOwn(token);
      if (
        external !== undefined &&
        externalKeys !== undefined &&
        claimedIssuer === external.issuer
      ) {
        return await verifyExternal(token, external, externalKeys);
      }
      refuse(
        'unknown issuer',
        'The access token is from an issuer this service does not accept (iss).',
      );
    } catch (error) {
      const reason =
        error instanceof Refusal
          ? error.message
          : error instanceof errors.JOSEError
            ? error.code
            : 'verification failed';
      logger?.debug?.(
        {
          reason,
          issuer:
            claimedIssuer === issuer
              ? 'embedded'
              : claimedIssuer === external?.issuer
                ? 'external'
                : 'other',
        },
        'bearer token refused',
      );
      if (error instanceof Refusal) onRefusal?.(error.publicDetail);
      else if (error instanceof errors.JOSEError) onRefusal?.(joseRefusalDetail(error));
      // The database is out of reach: the token may well be good, so the answer is 503 and
      // Retry-After (as for every request meanwhile), not a 401 that reads as a bad credential.
      else if (error instanceof StorageUnavailableError) throw error;
      else {
        // A fault (the store, the JWKS fetch): worth more than a debug line, and nothing of it
        // reaches the caller.
        logger?.warn({ err: error }, 'bearer token verification failed');
        onRefusal?.('The access token could not be checked just now; retry.');
      }
      return undefined;
    }
  };
}
