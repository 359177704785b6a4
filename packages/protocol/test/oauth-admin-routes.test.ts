import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createOAuthHarness } from './_oauth.ts';
import type { OAuthHarness } from './_oauth.ts';

interface ClientView {
  clientId: string;
  organisationId: string;
  name: string;
  scopes: string[];
  createdAt: string;
  revokedAt: string | null;
  previousSecretActive: boolean;
  clientSecret?: string;
}

async function problemCode(response: Response): Promise<string> {
  expect(response.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
  return ((await response.json()) as { code: string }).code;
}

describe('OAuth admin routes', () => {
  let h: OAuthHarness;
  let organisationId: string;
  let clients: string;

  beforeAll(async () => {
    h = await createOAuthHarness();
    organisationId = await h.organisation();
    clients = `/v1/admin/organisations/${organisationId}/clients`;
  });
  afterAll(async () => {
    await h.close();
  });

  it('creates a client with cdr.api by default and shows its secret once', async () => {
    const created = await h.admin('POST', clients);
    expect(created.status).toBe(201);
    const body = (await created.json()) as ClientView;
    expect(body).toEqual({
      clientId: expect.stringMatching(/^cli_[0-9a-z]{20}$/) as string,
      organisationId,
      name: 'default',
      scopes: ['cdr.api'],
      createdAt: h.clock.now().toISOString(),
      revokedAt: null,
      previousSecretActive: false,
      clientSecret: expect.stringMatching(/^dsm_secret_[0-9a-z]{43}$/) as string,
    });
    const listed = (await (await h.admin('GET', clients)).json()) as { clients: ClientView[] };
    const row = listed.clients.find((client) => client.clientId === body.clientId);
    expect(row).toBeDefined();
    expect(row).not.toHaveProperty('clientSecret');
    expect(JSON.stringify(listed)).not.toContain(body.clientSecret);
  });

  it('takes a name and scopes', async () => {
    const created = await h.admin('POST', clients, { name: '  ops  ', scopes: ['cdr.api'] });
    expect(await created.json()).toMatchObject({ name: 'ops', scopes: ['cdr.api'] });
  });

  it('refuses cdr.admin for an organisation’s client: platform administration is no organisation’s right', async () => {
    for (const scopes of [['cdr.admin'], ['cdr.api', 'cdr.admin']]) {
      const refused = await h.admin('POST', clients, { name: 'ops', scopes });
      expect(refused.status).toBe(400);
      const problem = (await refused.json()) as {
        code: string;
        errors: { field: string; message: string }[];
      };
      expect(problem.code).toBe('ValidationFailed');
      expect(problem.errors).toEqual([
        {
          field: 'body.scopes',
          message: expect.stringMatching(
            /^cdr\.admin is platform administration and never an organisation's right/,
          ) as string,
        },
      ]);
    }
    const listed = (await (await h.admin('GET', clients)).json()) as { clients: ClientView[] };
    expect(listed.clients.filter((client) => client.scopes.includes('cdr.admin'))).toEqual([]);
  });

  it('refuses invalid bodies with ValidationFailed', async () => {
    for (const body of [
      { scopes: [] },
      { scopes: ['openid'] },
      { scopes: ['cdr.api', 'cdr.api'] },
      { scopes: 'cdr.api' },
      { name: '' },
      { name: 'x'.repeat(201) },
      { secret: 'mine' },
    ]) {
      const response = await h.admin('POST', clients, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await problemCode(response)).toBe('ValidationFailed');
    }
  });

  it('answers 404 for an unknown organisation or client, and another organisation’s client', async () => {
    const unknownOrg = await h.admin('POST', '/v1/admin/organisations/org_nope/clients');
    expect(unknownOrg.status).toBe(404);
    expect(await problemCode(unknownOrg)).toBe('OrganisationNotFound');
    const unknownClient = await h.admin('DELETE', `${clients}/cli_00000000000000000000`);
    expect(unknownClient.status).toBe(404);
    expect(await problemCode(unknownClient)).toBe('OAuthClientNotFound');

    const other = await h.organisation();
    const foreign = await h.client(other);
    for (const [method, suffix] of [
      ['DELETE', ''],
      ['POST', '/rotate'],
      ['DELETE', '/previous-secret'],
    ] as const) {
      const response = await h.admin(method, `${clients}/${foreign.clientId}${suffix}`);
      expect(response.status).toBe(404);
      expect(await problemCode(response)).toBe('OAuthClientNotFound');
    }
    // The foreign client is untouched.
    expect((await h.store.getOAuthClient(foreign.clientId))?.revokedAt).toBeNull();
  });

  it('revokes idempotently; a revoked client stays listed and cannot be rotated', async () => {
    const client = await h.client(organisationId);
    const first = (await (
      await h.admin('DELETE', `${clients}/${client.clientId}`)
    ).json()) as ClientView;
    expect(first.revokedAt).toBe(h.clock.now().toISOString());
    h.clock.advance(5_000);
    const again = (await (
      await h.admin('DELETE', `${clients}/${client.clientId}`)
    ).json()) as ClientView;
    expect(again.revokedAt).toBe(first.revokedAt);
    const rotate = await h.admin('POST', `${clients}/${client.clientId}/rotate`);
    expect(rotate.status).toBe(409);
    expect(await problemCode(rotate)).toBe('OAuthClientRevoked');
    const listed = (await (await h.admin('GET', clients)).json()) as { clients: ClientView[] };
    expect(listed.clients.find((row) => row.clientId === client.clientId)?.revokedAt).toBe(
      first.revokedAt,
    );
  });

  it('keeps at most two live secrets', async () => {
    const client = await h.client(organisationId);
    for (let round = 0; round < 3; round += 1) {
      await h.admin('POST', `${clients}/${client.clientId}/rotate`);
    }
    expect((await h.store.getOAuthClient(client.clientId))?.secretHashes).toHaveLength(2);
  });

  it('needs scope cdr.admin: API keys and cdr.api tokens get 403; an operator client token works', async () => {
    const key = (await (
      await h.admin('POST', `/v1/admin/organisations/${organisationId}/keys`, { name: 'k' })
    ).json()) as { key: string };
    const apiClient = await h.client(organisationId, ['cdr.api']);
    const apiToken = await h.token(apiClient);
    const adminClient = await h.storedClient(null, ['cdr.admin']);
    const adminToken = await h.token(adminClient, 'cdr.admin');
    // An organisation's client that still holds cdr.admin (from before migration 3) is refused.
    const legacy = await h.storedClient(organisationId, ['cdr.api', 'cdr.admin']);
    const legacyToken = await h.token(legacy, 'cdr.admin');
    for (const [method, path] of [
      ['GET', clients],
      ['POST', clients],
      ['GET', '/v1/admin/signing-keys'],
      ['POST', '/v1/admin/signing-keys/rotate'],
      ['GET', '/v1/admin/organisations'],
    ] as const) {
      for (const credential of [key.key, apiToken, legacyToken]) {
        const refused = await h.admin(method, path, undefined, credential);
        expect(refused.status, `${method} ${path}`).toBe(403);
      }
      const allowed = await h.admin(method, path, undefined, adminToken);
      expect(allowed.status, `${method} ${path}`).toBeLessThan(300);
    }
    const anonymous = await h.send(clients);
    expect(anonymous.status).toBe(401);
  });

  it('lists and rotates signing keys without private material', async () => {
    const rotated = await h.admin('POST', '/v1/admin/signing-keys/rotate');
    const key = (await rotated.json()) as Record<string, unknown>;
    expect(Object.keys(key).sort()).toEqual(
      ['activeFrom', 'activeUntil', 'algorithm', 'createdAt', 'kid', 'retiredAt', 'status'].sort(),
    );
    expect(key).toMatchObject({ algorithm: 'ES256', status: 'upcoming', activeUntil: null });
    expect(key.activeFrom).toEqual(expect.any(String));
    const listed = (await (await h.admin('GET', '/v1/admin/signing-keys')).json()) as {
      keys: Record<string, unknown>[];
    };
    expect(listed.keys[0]?.kid).toBe(key.kid);
    expect(JSON.stringify(listed)).not.toMatch(/"d"|privateJwk|v1\.[0-9a-f]{16}\./);
  });
});
