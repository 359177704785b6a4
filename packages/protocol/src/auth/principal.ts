/** Scope of the document API. */
export const SCOPE_API = 'cdr.api';
/** Scope of the admin API. */
export const SCOPE_ADMIN = 'cdr.admin';

/** How the caller proved who they are. */
export type CredentialKind = 'api_key' | 'oauth_token' | 'admin_token';

/** The authenticated caller of one request. */
export interface Principal {
  /** The organisation the caller acts for; `null` for the bootstrap admin token. */
  readonly organisationId: string | null;
  readonly scopes: ReadonlySet<string>;
  readonly credential: CredentialKind;
  /** Id of the key, client or token (never the secret), for logs. */
  readonly credentialId: string;
}

/**
 * Verifies one kind of bearer token (an OAuth access token); returns `undefined` when the
 * token is not valid, and may first tell `onRefusal` why in one sentence the caller can act on
 * ("The access token has expired …"). That sentence goes to the client in the 401's `detail` and
 * `error_description`: it must name what is wrong with the token, never a secret, a key, or
 * whether a client or organisation exists. `createOAuth` plugs one in; the API-key and
 * admin-token paths are built in.
 */
export type BearerVerifier = (
  token: string,
  onRefusal?: (detail: string) => void,
) => Promise<Principal | undefined>;
