import type { RouteDefinition } from '../api.ts';
import { oauthAdminRoutes } from '../admin/oauth-routes.ts';
import type { BearerVerifier } from '../auth/principal.ts';
import type { Logger } from '../config.ts';
import { cryptoRandom } from '../domain/ids.ts';
import type { Clock, Random, StateStore } from '../ports.ts';
import { createBearerVerifier } from './bearer-verifier.ts';
import type { VerifierLogger } from './bearer-verifier.ts';
import { JWKS_MAX_AGE_SECONDS, resolveOAuthSettings } from './config.ts';
import type { OAuthConfig, OAuthSettings } from './config.ts';
import { createSigningKeyManager } from './signing-keys.ts';
import type { SigningKeyManager } from './signing-keys.ts';
import { createTokenEndpoint, TOKEN_PATH } from './token-endpoint.ts';

/** Where the embedded issuer publishes its public keys (RFC 8414 `jwks_uri`). */
export const JWKS_PATH = '/.well-known/jwks.json';
/** RFC 9111 5.2.2.1: resource servers may cache the key set for five minutes. */

/** The ports OAuth runs on (the API's own). */
export interface OAuthPorts {
  readonly store: StateStore;
  readonly clock: Clock;
  /** Default: `crypto.getRandomValues`. */
  readonly random?: Random;
  /** Default: no logging. A `debug` method, when present, gets refused-token lines. */
  readonly logger?: Logger | VerifierLogger;
}

/** OAuth for the API, ready to mount. */
export interface OAuth {
  /** The settings with their defaults applied (issuer, audience, external issuer). */
  readonly settings: OAuthSettings;
  /**
   * Every OAuth route: `POST /connect/token` and `GET /.well-known/jwks.json` (public), the
   * client routes under `/v1/admin/organisations/{organisationId}/clients` and the signing-key
   * routes under `/v1/admin/signing-keys` (scope `cdr.admin`).
   */
  readonly routes: readonly RouteDefinition[];
  /** Turns an access token of ours or of the external issuer into its principal. */
  readonly verifyBearer: BearerVerifier;
  /** The embedded issuer's keys (for an operator's CLI, a rotation job). */
  readonly signingKeys: SigningKeyManager;
}

/**
 * OAuth 2.0 for the v1 API: the embedded client-credentials issuer, its JWKS, the admin routes
 * of clients and signing keys, and the bearer verifier (ours and, if configured, an external
 * issuer's tokens). `createDisarmApi` calls it when `config.oauth` is set.
 *
 * @example
 * ```ts
 * const oauth = createOAuth({ store, clock }, { keyEncryptionKey }, 'https://cdr.example.com');
 * const api = createDisarmApi(ports, config, { routes: oauth.routes, verifyBearer: oauth.verifyBearer });
 * ```
 * @throws {TypeError} on a misconfiguration (see {@link resolveOAuthSettings}).
 */
export function createOAuth(ports: OAuthPorts, config: OAuthConfig, publicBaseUrl: string): OAuth {
  const settings = resolveOAuthSettings(config, publicBaseUrl.replace(/\/+$/, ''));
  const random = ports.random ?? cryptoRandom;
  const { store, clock, logger } = ports;
  const signingKeys = createSigningKeyManager({
    store,
    clock,
    random,
    keyEncryptionKey: settings.keyEncryptionKey,
    ...(logger ? { logger } : {}),
  });
  const verifyBearer = createBearerVerifier({
    store,
    clock,
    signingKeys,
    issuer: settings.issuer,
    audience: settings.audience,
    ...(settings.external ? { external: settings.external } : {}),
    ...(logger ? { logger } : {}),
  });
  const token = createTokenEndpoint({
    store,
    clock,
    random,
    signingKeys,
    issuer: settings.issuer,
    audience: settings.audience,
    ...(logger ? { logger } : {}),
  });
  const routes: RouteDefinition[] = [
    { pattern: TOKEN_PATH, methods: { POST: { auth: 'none', handler: token } } },
    {
      pattern: JWKS_PATH,
      methods: {
        GET: {
          auth: 'none',
          handler: async () =>
            Response.json(
              { keys: await signingKeys.publicKeys() },
              { headers: { 'Cache-Control': `public, max-age=${JWKS_MAX_AGE_SECONDS}` } },
            ),
        },
      },
    },
    ...oauthAdminRoutes({ signingKeys }),
  ];
  return { settings, routes, verifyBearer, signingKeys };
}
