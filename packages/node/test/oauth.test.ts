/**
 * OAuth 2.0 against a real `disarm serve` (loopback): tokens from its own token endpoint, and
 * tokens of a real, independent OAuth server (oidc-provider) started here. Every API response is
 * validated against the served OpenAPI document.
 */
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { join } from 'node:path';

import { buildImage } from '@disarm/fixtures';
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createClient, multipart } from './conformance/_harness.ts';
import type { Client, ConformanceTarget, Envelope } from './conformance/_harness.ts';
import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

/** A loopback conformance target over a test server started with extra flags. */
function targetOf(server: TestServer): ConformanceTarget {
  return {
    name: 'loopback',
    apiUrl: server.apiUrl,
    storageUrl: server.storageUrl,
    adminToken: server.adminToken,
    loopback: true,
    send: (url, init) => fetch(url, init),
    blobExists: () => Promise.resolve(false),
    async advanceClock(milliseconds) {
      await server.advanceClock(milliseconds);
    },
    async stop() {
      await server.stop();
    },
  };
}

interface OAuthClient {
  clientId: string;
  clientSecret: string;
}

interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
}

const bearer = (token: string): Record<string, string> => ({ Authorization: `Bearer ${token}` });

describe('OAuth client credentials (real disarm serve)', () => {
  let server: TestServer;
  let client: Client;
  let png: Uint8Array<ArrayBuffer>;
  let orgA: string;
  let orgB: string;

  beforeAll(async () => {
    server = await startTestServer({ args: ['--no-processing'] });
    client = await createClient(targetOf(server));
    png = new Uint8Array(await buildImage('png', { width: 8, height: 8 }));
    orgA = (await client.newOrganisation({ name: 'A', plan: 'internal' })).id;
    orgB = (await client.newOrganisation({ name: 'B', plan: 'internal' })).id;
  });
  afterAll(async () => {
    await server.stop();
  });

  async function createOAuthClient(
    organisationId: string,
    scopes?: string[],
  ): Promise<OAuthClient> {
    const response = await client.admin(
      'POST',
      `/v1/admin/organisations/${organisationId}/clients`,
      { name: 'ci', ...(scopes ? { scopes } : {}) },
    );
    expect(response.status).toBe(201);
    return (await response.json()) as OAuthClient;
  }

  async function token(oauthClient: OAuthClient, scope?: string): Promise<string> {
    const response = await client.api('/connect/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: oauthClient.clientId,
        client_secret: oauthClient.clientSecret,
        ...(scope ? { scope } : {}),
      }).toString(),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as TokenResponse;
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    return body.access_token;
  }

  const submit = (accessToken: string): Promise<Response> =>
    client.api('/v1/documents', {
      method: 'POST',
      headers: bearer(accessToken),
      body: multipart({ name: 'a.png', bytes: png }),
    });

  it('issues a token that works on /v1/account and POST /v1/documents', async () => {
    const accessToken = await token(await createOAuthClient(orgA));
    expect(decodeProtectedHeader(accessToken)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(decodeJwt(accessToken)).toMatchObject({
      iss: server.apiUrl,
      aud: `${server.apiUrl}/v1`,
      org: orgA,
      scope: 'cdr.api',
    });
    const account = await client.api('/v1/account', { headers: bearer(accessToken) });
    expect(account.status).toBe(200);
    expect(((await account.json()) as { organisationId: string }).organisationId).toBe(orgA);
    const submitted = await submit(accessToken);
    expect(submitted.status).toBe(202);
    const envelope = (await submitted.json()) as Envelope;
    const status = await client.api(`/v1/documents/${envelope.id}`, {
      headers: bearer(accessToken),
    });
    expect(status.status).toBe(200);
  });

  it('never lets organisation B read organisation A’s document (404)', async () => {
    const tokenA = await token(await createOAuthClient(orgA));
    const tokenB = await token(await createOAuthClient(orgB));
    const { id } = (await (await submit(tokenA)).json()) as Envelope;
    const foreign = await client.api(`/v1/documents/${id}`, { headers: bearer(tokenB) });
    expect(foreign.status).toBe(404);
    expect(((await foreign.json()) as { code: string }).code).toBe('DocumentNotFound');
    const deleted = await client.api(`/v1/documents/${id}`, {
      method: 'DELETE',
      headers: bearer(tokenB),
    });
    expect(deleted.status).toBe(404);
  });

  it('gives a cdr.api token 403 on admin routes; an operator client token 200', async () => {
    const apiToken = await token(await createOAuthClient(orgA));
    for (const path of ['/v1/admin/organisations', `/v1/admin/organisations/${orgA}/clients`]) {
      expect((await client.api(path, { headers: bearer(apiToken) })).status).toBe(403);
    }
    const operator = await server.admin('client', 'create', '--operator', '--name=ops', '--json');
    expect(operator.code, operator.stderr).toBe(0);
    const operatorClient = JSON.parse(operator.stdout) as OAuthClient & {
      organisationId: string | null;
      scopes: string[];
    };
    expect(operatorClient).toMatchObject({ organisationId: null, scopes: ['cdr.admin'] });
    const adminToken = await token(operatorClient);
    const organisations = await client.api('/v1/admin/organisations', {
      headers: bearer(adminToken),
    });
    expect(organisations.status).toBe(200);
    const clients = await client.api(`/v1/admin/organisations/${orgB}/clients`, {
      headers: bearer(adminToken),
    });
    expect(clients.status).toBe(200);
    // Admin scope alone does not open the document API.
    expect((await client.api('/v1/account', { headers: bearer(adminToken) })).status).toBe(403);
  });

  it('revokes a client (CLI): its token gets 401 at once and no new token is issued', async () => {
    const doomed = await createOAuthClient(orgA);
    const accessToken = await token(doomed);
    expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(200);
    const revoked = await server.admin(
      'client',
      'revoke',
      `--org=${orgA}`,
      `--client=${doomed.clientId}`,
      '--json',
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((JSON.parse(revoked.stdout) as { revokedAt: string | null }).revokedAt).not.toBeNull();
    const after = await client.api('/v1/account', { headers: bearer(accessToken) });
    expect(after.status).toBe(401);
    const refused = await client.api('/connect/token', {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-www-form-urlencoded',
        Authorization: `Basic ${Buffer.from(`${doomed.clientId}:${doomed.clientSecret}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_client');
  });

  it('makes, rotates and lists clients from the CLI; the printed secret works once shown', async () => {
    const created = await server.admin(
      'client',
      'create',
      `--org=${orgB}`,
      '--name=cli-made',
      '--scope=cdr.api',
      '--json',
    );
    expect(created.code, created.stderr).toBe(0);
    const made = JSON.parse(created.stdout) as OAuthClient & { scopes: string[] };
    expect(made.scopes).toEqual(['cdr.api']);
    expect(made.clientSecret).toMatch(/^dsm_secret_[0-9a-z]{43}$/);
    const first = await token(made);
    const rotated = await server.admin(
      'client',
      'rotate',
      `--org=${orgB}`,
      `--client=${made.clientId}`,
      '--json',
    );
    const { clientSecret } = JSON.parse(rotated.stdout) as OAuthClient;
    await token(made);
    await token({ ...made, clientSecret });
    const listed = await server.admin('client', 'list', `--org=${orgB}`, '--json');
    expect(listed.stdout).not.toContain(made.clientSecret);
    expect(listed.stdout).not.toContain(clientSecret);
    expect((await client.api('/v1/account', { headers: bearer(first) })).status).toBe(200);
    const human = await server.admin('client', 'create', `--org=${orgB}`, '--scope=openid');
    expect(human.code).toBe(64);
  });

  it('refuses cdr.admin for an organisation’s client from the CLI, with the reason', async () => {
    const refused = await server.admin(
      'client',
      'create',
      `--org=${orgB}`,
      '--scope=cdr.api',
      '--scope=cdr.admin',
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `disarm admin: cdr.admin is platform administration and never an organisation's right: a client of ${orgB} may hold cdr.api only; for an operator client use --operator instead of --org\n`,
    );
    const listed = await server.admin('client', 'list', `--org=${orgB}`, '--json');
    expect(listed.stdout).not.toContain('cdr.admin');
    const both = await server.admin('client', 'create', `--org=${orgB}`, '--operator');
    expect(both.code).toBe(64);
    const operatorApi = await server.admin('client', 'create', '--operator', '--scope=cdr.api');
    expect(operatorApi.code).toBe(1);
    const operators = await server.admin('client', 'list', '--operator', '--json');
    expect(operators.code, operators.stderr).toBe(0);
  });

  it('serves the JWKS and rotates the signing key without breaking issued tokens', async () => {
    const oauthClient = await createOAuthClient(orgA);
    const before = await token(oauthClient);
    const jwks = await client.api('/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('Cache-Control')).toBe('public, max-age=300');
    const kids = ((await jwks.json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
    expect(kids).toContain(decodeProtectedHeader(before).kid);

    // Staged: the new key is in the JWKS at once, and signs seven minutes later.
    const rotated = await client.admin('POST', '/v1/admin/signing-keys/rotate');
    const { kid, status } = (await rotated.json()) as { kid: string; status: string };
    expect(status).toBe('upcoming');
    const published = await client.api('/.well-known/jwks.json');
    expect(
      ((await published.json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid),
    ).toContain(kid);
    expect(decodeProtectedHeader(await token(oauthClient)).kid).toBe(
      decodeProtectedHeader(before).kid,
    );
    await server.advanceClock(7 * 60_000 + 1_000);
    const after = await token(oauthClient);
    expect(decodeProtectedHeader(after).kid).toBe(kid);
    for (const accessToken of [before, after]) {
      expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(200);
    }
    const listed = await server.admin('signing-key', 'list', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    const keys = (
      JSON.parse(listed.stdout) as { keys: { kid: string; activeFrom: string | null }[] }
    ).keys;
    // (The CLI judges status by the real clock, which the test server's manual clock has left.)
    expect(keys[0]?.kid).toBe(kid);
    expect(keys[0]?.activeFrom).toEqual(expect.any(String));
    expect(listed.stdout).not.toMatch(/"d"|v1\.[0-9a-f]{16}\./);
  });

  it('picks up a signing key rotated by another process (the CLI) within a minute', async () => {
    const oauthClient = await createOAuthClient(orgA);
    const before = decodeProtectedHeader(await token(oauthClient)).kid;
    const rotated = await server.admin('signing-key', 'rotate', '--immediate', '--json');
    expect(rotated.code, rotated.stderr).toBe(0);
    const { kid, status } = JSON.parse(rotated.stdout) as { kid: string; status: string };
    expect(kid).not.toBe(before);
    expect(status).toBe('active');
    // The server trusts its cached key set for at most a minute (of its manual clock).
    await server.advanceClock(61_000);
    const after = await token(oauthClient);
    expect(decodeProtectedHeader(after).kid).toBe(kid);
    expect((await client.api('/v1/account', { headers: bearer(after) })).status).toBe(200);

    const dropped = await server.admin(
      'client',
      'drop-previous',
      `--org=${orgA}`,
      `--client=${oauthClient.clientId}`,
      '--json',
    );
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(JSON.parse(dropped.stdout)).toMatchObject({ previousSecretActive: false });
  });
});

describe('OAuth with an external identity provider (oidc-provider)', () => {
  /** The API's audience as the provider's resource indicator (fixed: the API port is random). */
  const AUDIENCE = 'https://cdr.test/v1';
  const OTHER_API = 'https://other.test/api';
  const SECRET = 'idp-client-secret-0123456789abcdef';
  /** oidc-provider client id -> the organisation id it puts in `org_id`. */
  const organisationOf = new Map<string, string>();
  let idp: Server;
  let issuer: string;
  let server: TestServer;
  let client: Client;
  let png: Uint8Array<ArrayBuffer>;

  beforeAll(async () => {
    idp = createServer();
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    issuer = `http://localhost:${(idp.address() as { port: number }).port}`;
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const signingKey = {
      ...(await exportJWK(privateKey)),
      kid: 'idp-rsa-1',
      alg: 'RS256',
      use: 'sig',
    };
    const idpClient = (clientId: string, scope: string) => ({
      client_id: clientId,
      client_secret: SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope,
    });
    const provider = new Provider(issuer, {
      clients: [
        idpClient('svc-a', 'cdr.api'),
        idpClient('svc-ghost', 'cdr.api'),
        idpClient('svc-admin-only', 'cdr.admin'),
      ],
      jwks: { keys: [signingKey] },
      scopes: ['cdr.api', 'cdr.admin'],
      ttl: { ClientCredentials: 600 },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => AUDIENCE,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, resource) => {
            if (resource !== AUDIENCE && resource !== OTHER_API) throw new errors.InvalidTarget();
            return {
              scope: 'cdr.api cdr.admin',
              audience: resource,
              accessTokenTTL: 600,
              accessTokenFormat: 'jwt',
              jwt: { sign: { alg: 'RS256' } },
            };
          },
        },
      },
      extraTokenClaims: (_ctx, token) => ({
        org_id: token.clientId === undefined ? undefined : organisationOf.get(token.clientId),
      }),
    });
    const handle = provider.callback();
    idp.on('request', (request, response) => {
      void handle(request, response);
    });

    server = await startTestServer({
      args: [
        '--no-processing',
        `--oauth-external-issuer=${issuer}`,
        `--oauth-external-jwks-url=${issuer}/jwks`,
        `--oauth-external-audience=${AUDIENCE}`,
      ],
    });
    client = await createClient(targetOf(server));
    png = new Uint8Array(await buildImage('png', { width: 8, height: 8 }));
    const organisation = (await client.newOrganisation({ name: 'IdP org', plan: 'internal' })).id;
    organisationOf.set('svc-a', organisation);
    organisationOf.set('svc-admin-only', organisation);
    organisationOf.set('svc-ghost', 'org_00000000000000000000');
  });
  afterAll(async () => {
    await server.stop();
    await new Promise((resolve) => idp.close(resolve));
  });

  /** A token from oidc-provider's own token endpoint (its client credentials grant). */
  async function idpToken(clientId: string, fields: Record<string, string> = {}): Promise<string> {
    const response = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: SECRET,
        ...fields,
      }),
    });
    const body = (await response.json()) as TokenResponse;
    expect(response.status, JSON.stringify(body)).toBe(200);
    return body.access_token;
  }

  it('accepts the provider’s token for the organisation of its claim', async () => {
    const accessToken = await idpToken('svc-a', { scope: 'cdr.api' });
    expect(decodeProtectedHeader(accessToken)).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
    expect(decodeJwt(accessToken)).toMatchObject({ iss: issuer, aud: AUDIENCE });
    const account = await client.api('/v1/account', { headers: bearer(accessToken) });
    expect(account.status).toBe(200);
    expect(((await account.json()) as { organisationId: string }).organisationId).toBe(
      organisationOf.get('svc-a'),
    );
    const submitted = await client.api('/v1/documents', {
      method: 'POST',
      headers: bearer(accessToken),
      body: multipart({ name: 'a.png', bytes: png }),
    });
    expect(submitted.status).toBe(202);
  });

  it('refuses a token whose organisation claim names no organisation (401)', async () => {
    const accessToken = await idpToken('svc-ghost', { scope: 'cdr.api' });
    expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(401);
  });

  it('refuses a token for another audience (401)', async () => {
    const accessToken = await idpToken('svc-a', { scope: 'cdr.api', resource: OTHER_API });
    expect(decodeJwt(accessToken).aud).toBe(OTHER_API);
    expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(401);
  });

  it('answers 403 on document routes to a token without cdr.api, and on admin routes', async () => {
    const accessToken = await idpToken('svc-admin-only', { scope: 'cdr.admin' });
    const submitted = await client.api('/v1/documents', {
      method: 'POST',
      headers: bearer(accessToken),
      body: multipart({ name: 'a.png', bytes: png }),
    });
    expect(submitted.status).toBe(403);
    expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(403);
    // cdr.admin from an external issuer is not honoured unless the operator allows it.
    expect(
      (await client.api('/v1/admin/organisations', { headers: bearer(accessToken) })).status,
    ).toBe(403);
  });

  it('still issues and accepts its own tokens beside the provider’s', async () => {
    const organisation = organisationOf.get('svc-a') ?? '';
    const created = await client.admin('POST', `/v1/admin/organisations/${organisation}/clients`);
    const own = (await created.json()) as OAuthClient;
    const response = await client.api('/connect/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: own.clientId,
        client_secret: own.clientSecret,
      }).toString(),
    });
    const { access_token: accessToken } = (await response.json()) as TokenResponse;
    expect((await client.api('/v1/account', { headers: bearer(accessToken) })).status).toBe(200);
  });
});

// The data folder holds the key that seals the signing keys, beside the link secret.
describe('disarm serve data folder', () => {
  it('creates secrets/token-signing.kek (0600) on first start', async () => {
    const server = await startTestServer();
    try {
      const info = await stat(join(server.dataDir, 'secrets', 'token-signing.kek'));
      expect(info.size).toBe(32);
      expect(info.mode & 0o777).toBe(0o600);
    } finally {
      await server.stop();
    }
  });
});
