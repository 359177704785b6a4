export { createOAuth, JWKS_PATH } from './create-oauth.ts';
export type { OAuth, OAuthPorts } from './create-oauth.ts';
export {
  ACCESS_TOKEN_LIFETIME_SECONDS,
  ACCESS_TOKEN_TYPE,
  CLOCK_SKEW_SECONDS,
  EXTERNAL_ALGORITHMS,
  KEY_ENCRYPTION_KEY_BYTES,
  KEY_RETIREMENT_GRACE_SECONDS,
  KEY_SET_CACHE_MS,
  OAUTH_SCOPES,
  resolveOAuthSettings,
  SIGNING_ALGORITHM,
} from './config.ts';
export type {
  ExternalAlgorithm,
  ExternalIssuerConfig,
  ExternalIssuerSettings,
  OAuthConfig,
  OAuthSettings,
} from './config.ts';
export { createBearerVerifier, MAX_ACCESS_TOKEN_CHARS } from './bearer-verifier.ts';
export type { BearerVerifierOptions, VerifierLogger } from './bearer-verifier.ts';
export { createSigningKeyManager } from './signing-keys.ts';
export type {
  ActiveSigningKey,
  PublicJwk,
  SigningKeyManager,
  SigningKeyManagerOptions,
  SigningKeyStatus,
  SigningKeyView,
} from './signing-keys.ts';
export { createTokenEndpoint, TOKEN_PATH } from './token-endpoint.ts';
export type { TokenEndpointOptions, TokenErrorCode } from './token-endpoint.ts';
export { signAccessToken } from './access-token.ts';
export type { AccessTokenClaims, AccessTokenInput } from './access-token.ts';
export {
  CLIENT_SECRET_PREFIX,
  generateClientSecret,
  hashClientSecret,
  MAX_LIVE_SECRETS,
  verifyClientSecret,
} from './client-secrets.ts';
export type { NewClientSecret } from './client-secrets.ts';
export { oauthAdminRoutes, toClientView, toSigningKeyView } from '../admin/oauth-routes.ts';
export type { OAuthAdminRoutesOptions } from '../admin/oauth-routes.ts';
