import { SignJWT } from 'jose';

import { randomBase32 } from '../domain/ids.ts';
import type { Random } from '../ports.ts';
import { ACCESS_TOKEN_LIFETIME_SECONDS, ACCESS_TOKEN_TYPE } from './config.ts';
import type { ActiveSigningKey } from './signing-keys.ts';

/** Random characters of a token's `jti` (130 bits: never repeats). */
const JTI_CHARS = 26;

/** The claims of an access token the embedded issuer signs (RFC 9068 2.2). */
export interface AccessTokenClaims {
  readonly iss: string;
  readonly aud: string;
  /** The client id: client-credentials tokens act for the client itself (RFC 9068 2.2). */
  readonly sub: string;
  readonly client_id: string;
  /** Space-separated (RFC 9068 2.2.3, RFC 8693 4.2). */
  readonly scope: string;
  /** The organisation the client belongs to; absent for an operator client. */
  readonly org?: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
}

/** Input of {@link signAccessToken}. */
export interface AccessTokenInput {
  readonly signingKey: ActiveSigningKey;
  readonly issuer: string;
  readonly audience: string;
  readonly clientId: string;
  /** `null` for an operator client: its tokens carry no `org` claim. */
  readonly organisationId: string | null;
  /** Granted scopes, in the order they are written. */
  readonly scopes: readonly string[];
  readonly issuedAt: Date;
  readonly random: Random;
}

/**
 * Signs an RFC 9068 JWT access token valid {@link ACCESS_TOKEN_LIFETIME_SECONDS} from
 * `issuedAt`: header `{ alg: ES256, kid, typ: at+jwt }`.
 */
export async function signAccessToken(input: AccessTokenInput): Promise<string> {
  const iat = Math.floor(input.issuedAt.getTime() / 1000);
  return new SignJWT({
    client_id: input.clientId,
    scope: input.scopes.join(' '),
    ...(input.organisationId === null ? {} : { org: input.organisationId }),
  })
    .setProtectedHeader({
      alg: input.signingKey.algorithm,
      kid: input.signingKey.kid,
      typ: ACCESS_TOKEN_TYPE,
    })
    .setIssuer(input.issuer)
    .setAudience(input.audience)
    .setSubject(input.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ACCESS_TOKEN_LIFETIME_SECONDS)
    .setJti(randomBase32(input.random, JTI_CHARS))
    .sign(input.signingKey.privateKey);
}
