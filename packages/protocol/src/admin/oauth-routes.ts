import type { RouteDefinition, RouteOptions } from '../api.ts';
import { SCOPE_ADMIN, SCOPE_API } from '../auth/principal.ts';
import { assertAdmin } from './routes.ts';
import { newId } from '../domain/ids.ts';
import type { Organisation } from '../domain/types.ts';
import type { Handler, RequestContext } from '../http/context.ts';
import { asJsonObject, readJsonBody } from '../http/json-body.ts';
import { jsonResponse } from '../http/negotiation.ts';
import { ProblemError } from '../http/problem-error.ts';
import { FieldErrors, parseBoolean } from '../http/validation.ts';
import { generateClientSecret } from '../oauth/client-secrets.ts';
import { OAUTH_SCOPES } from '../oauth/config.ts';
import type { SigningKeyManager, SigningKeyView } from '../oauth/signing-keys.ts';
import type { OAuthClientRecord } from '../ports.ts';

const MAX_NAME_CHARS = 200;
/** Name of a client created without one. */
const DEFAULT_CLIENT_NAME = 'default';

/** The admin view of an OAuth client: never a secret or its hash. */
export function toClientView(record: OAuthClientRecord): Record<string, unknown> {
  return {
    clientId: record.id,
    organisationId: record.organisationId,
    name: record.name,
    scopes: [...record.scopes],
    createdAt: record.createdAt.toISOString(),
    revokedAt: record.revokedAt?.toISOString() ?? null,
    previousSecretActive: record.secretHashes.length > 1,
  };
}

/** The admin view of a signing key: never private material. */
export function toSigningKeyView(view: SigningKeyView): Record<string, unknown> {
  return {
    kid: view.kid,
    algorithm: view.algorithm,
    status: view.status,
    createdAt: view.createdAt.toISOString(),
    activeFrom: view.activeFrom?.toISOString() ?? null,
    activeUntil: view.activeUntil?.toISOString() ?? null,
    retiredAt: view.retiredAt?.toISOString() ?? null,
  };
}

async function loadOrganisation(context: RequestContext): Promise<Organisation> {
  const organisation = await context.api.store.getOrganisation(
    context.params.organisationId ?? '',
    context.api.clock.now(),
  );
  if (!organisation) throw new ProblemError('OrganisationNotFound');
  return organisation;
}

async function loadClient(
  context: RequestContext,
): Promise<{ organisation: Organisation; client: OAuthClientRecord }> {
  const organisation = await loadOrganisation(context);
  const client = await context.api.store.getOAuthClient(context.params.clientId ?? '');
  // Another organisation's client is as absent as an unknown one.
  if (client?.organisationId !== organisation.id) throw new ProblemError('OAuthClientNotFound');
  return { organisation, client };
}

function parseCreateBody(body: Record<string, unknown>): { name: string; scopes: string[] } {
  const errors = new FieldErrors();
  for (const key of Object.keys(body)) {
    if (key !== 'name' && key !== 'scopes') {
      errors.add(`body.${key}`, 'unknown property; allowed: name, scopes');
    }
  }
  const { name = DEFAULT_CLIENT_NAME, scopes = [SCOPE_API] } = body;
  if (typeof name !== 'string' || name.trim() === '' || name.length > MAX_NAME_CHARS) {
    errors.add('body.name', `1 to ${MAX_NAME_CHARS} characters`);
  }
  const valid =
    Array.isArray(scopes) &&
    scopes.length > 0 &&
    scopes.every((scope) => typeof scope === 'string' && OAUTH_SCOPES.includes(scope)) &&
    new Set(scopes).size === scopes.length;
  if (!valid) {
    errors.add('body.scopes', `a non-empty list of distinct scopes: ${OAUTH_SCOPES.join(', ')}`);
  } else if ((scopes as string[]).includes(SCOPE_ADMIN)) {
    errors.add(
      'body.scopes',
      `${SCOPE_ADMIN} is platform administration and never an organisation's right: an organisation's client may hold ${SCOPE_API} only (operator clients, which belong to no organisation, are made with disarm admin client create --operator)`,
    );
  }
  errors.throwIfAny();
  const granted = new Set(scopes as string[]);
  return {
    name: (name as string).trim(),
    scopes: OAUTH_SCOPES.filter((scope) => granted.has(scope)),
  };
}

/** `POST /v1/admin/organisations/{organisationId}/clients`: the secret is in this response only. */
const createClient: Handler = async (context) => {
  assertAdmin(context);
  const { api, request } = context;
  const organisation = await loadOrganisation(context);
  const hasBody = request.headers.get('Content-Length') !== '0' && request.body !== null;
  const { name, scopes } = parseCreateBody(
    hasBody ? asJsonObject(await readJsonBody(request)) : {},
  );
  const secret = await generateClientSecret(api.random);
  const record: OAuthClientRecord = {
    id: newId('cli', api.random),
    organisationId: organisation.id,
    name,
    scopes,
    secretHashes: [secret.hash],
    createdAt: api.clock.now(),
    revokedAt: null,
  };
  await api.store.createOAuthClient(record);
  api.logger.info(
    { organisationId: organisation.id, clientId: record.id, scopes },
    'oauth client created',
  );
  return jsonResponse(
    request,
    { ...toClientView(record), clientSecret: secret.secret },
    { status: 201 },
  );
};

/** `GET /v1/admin/organisations/{organisationId}/clients`: revoked clients stay listed. */
const listClients: Handler = async (context) => {
  assertAdmin(context);
  const organisation = await loadOrganisation(context);
  const clients = await context.api.store.listOAuthClients(organisation.id);
  return jsonResponse(context.request, { clients: clients.map(toClientView) });
};

/**
 * `POST .../clients/{clientId}/rotate`: a new secret, shown once. The previous secret keeps
 * working (zero-downtime rotation) until `DELETE .../previous-secret` or the next rotation: at
 * most two secrets are live.
 */
const rotateClientSecret: Handler = async (context) => {
  assertAdmin(context);
  const { api } = context;
  const { organisation, client } = await loadClient(context);
  if (client.revokedAt !== null) throw new ProblemError('OAuthClientRevoked');
  const secret = await generateClientSecret(api.random);
  const updated = await api.store.updateOAuthClient(organisation.id, client.id, {
    kind: 'rotate-secret',
    secretHash: secret.hash,
  });
  if (!updated) throw new ProblemError('OAuthClientNotFound');
  api.logger.info(
    { organisationId: organisation.id, clientId: client.id },
    'oauth client secret rotated',
  );
  return jsonResponse(context.request, { ...toClientView(updated), clientSecret: secret.secret });
};

/** `DELETE .../clients/{clientId}/previous-secret`: ends a rotation's overlap (idempotent). */
const dropPreviousSecret: Handler = async (context) => {
  assertAdmin(context);
  const { api } = context;
  const { organisation, client } = await loadClient(context);
  let result = client;
  if (client.secretHashes.length > 1) {
    const updated = await api.store.updateOAuthClient(organisation.id, client.id, {
      kind: 'drop-previous-secret',
    });
    if (!updated) throw new ProblemError('OAuthClientNotFound');
    result = updated;
    api.logger.info(
      { organisationId: organisation.id, clientId: client.id },
      'oauth client previous secret removed',
    );
  }
  return jsonResponse(context.request, toClientView(result));
};

/**
 * `DELETE .../clients/{clientId}`: revokes (idempotent). The token endpoint refuses the client
 * and its tokens stop working at once; it stays listed.
 */
const revokeClient: Handler = async (context) => {
  assertAdmin(context);
  const { api } = context;
  const { organisation, client } = await loadClient(context);
  let result = client;
  if (client.revokedAt === null) {
    const updated = await api.store.updateOAuthClient(organisation.id, client.id, {
      kind: 'revoke',
      at: api.clock.now(),
    });
    if (!updated) throw new ProblemError('OAuthClientNotFound');
    result = updated;
    api.logger.info(
      { organisationId: organisation.id, clientId: client.id },
      'oauth client revoked',
    );
  }
  return jsonResponse(context.request, toClientView(result));
};

/** What {@link oauthAdminRoutes} needs. */
export interface OAuthAdminRoutesOptions {
  readonly signingKeys: SigningKeyManager;
}

/**
 * The admin routes of OAuth (scope `cdr.admin`): an organisation's clients (create, list, rotate
 * a secret, end the overlap, revoke) and the embedded issuer's signing keys (list, rotate).
 */
export function oauthAdminRoutes(options: OAuthAdminRoutesOptions): RouteDefinition[] {
  const { signingKeys } = options;
  const authed = (handler: Handler): RouteOptions => ({ handler, auth: 'required' });

  /** `GET /v1/admin/signing-keys`: newest first, never private material. */
  const listSigningKeys: Handler = async (context) => {
    assertAdmin(context);
    const keys = await signingKeys.list();
    return jsonResponse(context.request, { keys: keys.map(toSigningKeyView) });
  };

  /**
   * `POST /v1/admin/signing-keys/rotate[?immediate=true]`: a new key, published now; it signs
   * once verifiers have had time to fetch it, or at once with `immediate`.
   */
  const rotateSigningKey: Handler = async (context) => {
    assertAdmin(context);
    const values = context.url.searchParams.getAll('immediate');
    const immediate = values.length === 1 ? parseBoolean(values[0] ?? '') : undefined;
    if (values.length > 0 && immediate === undefined) {
      const errors = new FieldErrors();
      errors.add('query.immediate', 'give it once, true or false');
      errors.throwIfAny();
    }
    const key = await signingKeys.rotate({ immediate: immediate === true });
    context.api.logger.warn(
      {
        kid: key.kid,
        activeFrom: key.activeFrom?.toISOString() ?? 'now',
        credentialId: context.principal?.credentialId,
      },
      'signing key rotated',
    );
    return jsonResponse(context.request, toSigningKeyView(key));
  };

  const clients = '/v1/admin/organisations/:organisationId/clients';
  return [
    { pattern: clients, methods: { GET: authed(listClients), POST: authed(createClient) } },
    { pattern: `${clients}/:clientId`, methods: { DELETE: authed(revokeClient) } },
    { pattern: `${clients}/:clientId/rotate`, methods: { POST: authed(rotateClientSecret) } },
    {
      pattern: `${clients}/:clientId/previous-secret`,
      methods: { DELETE: authed(dropPreviousSecret) },
    },
    { pattern: '/v1/admin/signing-keys', methods: { GET: authed(listSigningKeys) } },
    { pattern: '/v1/admin/signing-keys/rotate', methods: { POST: authed(rotateSigningKey) } },
  ];
}
