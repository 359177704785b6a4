import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AUDIENCE, BASE, basic, createOAuthHarness } from './_oauth.ts';
import type { CreatedClient, OAuthHarness } from './_oauth.ts';

/** RFC 6749 5.2: the characters `error_description` may use. */
const DESCRIPTION_CHARS = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

interface TokenError {
  error: string;
  error_description?: string;
}

async function expectError(response: Response, status: number, error: string): Promise<TokenError> {
  expect(response.status).toBe(status);
  expect(response.headers.get('Content-Type')).toMatch(/^application\/json/);
  expect(response.headers.get('Cache-Control')).toBe('no-store');
  expect(response.headers.get('Pragma')).toBe('no-cache');
  const body = (await response.json()) as TokenError;
  expect(body.error).toBe(error);
  expect(body.error_description ?? '').toMatch(DESCRIPTION_CHARS);
  if (status === 401) {
    expect(response.headers.get('WWW-Authenticate')).toMatch(/^Basic realm="disarm"/);
  }
  return body;
}

describe('POST /connect/token', () => {
  let h: OAuthHarness;
  let organisationId: string;
  let client: CreatedClient;
  let both: CreatedClient;
  const grant = { grant_type: 'client_credentials' };

  beforeAll(async () => {
    h = await createOAuthHarness();
    organisationId = await h.organisation();
    client = await h.client(organisationId);
    // A row from before schema migration 3: the endpoint grants what a client holds.
    both = await h.storedClient(organisationId, ['cdr.api', 'cdr.admin']);
  });
  afterAll(async () => {
    await h.close();
  });

  it('issues an RFC 9068 access token to a client authenticating in the form (client_secret_post)', async () => {
    const response = await h.tokenRequest({
      ...grant,
      client_id: client.clientId,
      client_secret: client.clientSecret,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('Cache-Control')).toBe('no-store');
    expect(response.headers.get('Pragma')).toBe('no-cache');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toEqual({
      access_token: expect.any(String) as string,
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'cdr.api',
    });
    const token = String(body.access_token);
    const header = decodeProtectedHeader(token);
    expect(header).toEqual({ alg: 'ES256', kid: expect.any(String) as string, typ: 'at+jwt' });
    const jwks = (await (await h.send('/.well-known/jwks.json')).json()) as {
      keys: { kid: string }[];
    };
    expect(jwks.keys.map((key) => key.kid)).toContain(header.kid);
    const claims = decodeJwt(token);
    const now = Math.floor(h.clock.now().getTime() / 1000);
    expect(claims).toEqual({
      iss: BASE,
      aud: AUDIENCE,
      sub: client.clientId,
      client_id: client.clientId,
      scope: 'cdr.api',
      org: organisationId,
      iat: now,
      exp: now + 3600,
      jti: expect.stringMatching(/^[0-9a-z]{26}$/) as string,
    });
    expect(h.logs.some((line) => JSON.stringify(line).includes(client.clientSecret))).toBe(false);
    expect(h.logs.some((line) => JSON.stringify(line).includes(token))).toBe(false);
  });

  it('accepts HTTP Basic (client_secret_basic), with or without a matching client_id', async () => {
    const alone = await h.tokenRequest(grant, {
      Authorization: basic(client.clientId, client.clientSecret),
    });
    expect(alone.status).toBe(200);
    const withId = await h.tokenRequest(
      { ...grant, client_id: client.clientId },
      { Authorization: basic(client.clientId, client.clientSecret) },
    );
    expect(withId.status).toBe(200);
    // The scheme name is case-insensitive (RFC 9110 11.1).
    const lower = await h.tokenRequest(grant, {
      Authorization: basic(client.clientId, client.clientSecret).replace('Basic', 'basic'),
    });
    expect(lower.status).toBe(200);
  });

  it('refuses two authentication methods at once, and a client_id that differs from Basic', async () => {
    const twice = await h.tokenRequest(
      { ...grant, client_id: client.clientId, client_secret: client.clientSecret },
      { Authorization: basic(client.clientId, client.clientSecret) },
    );
    await expectError(twice, 400, 'invalid_request');
    const other = await h.tokenRequest(
      { ...grant, client_id: both.clientId },
      { Authorization: basic(client.clientId, client.clientSecret) },
    );
    await expectError(other, 400, 'invalid_request');
  });

  it('grants every scope the client holds by default, and narrows to what is asked', async () => {
    const all = await h.tokenRequest({
      ...grant,
      client_id: both.clientId,
      client_secret: both.clientSecret,
    });
    expect(((await all.json()) as { scope: string }).scope).toBe('cdr.api cdr.admin');
    const narrowed = await h.tokenRequest({
      ...grant,
      client_id: both.clientId,
      client_secret: both.clientSecret,
      scope: 'cdr.admin',
    });
    const body = (await narrowed.json()) as { scope: string; access_token: string };
    expect(body.scope).toBe('cdr.admin');
    expect(decodeJwt(body.access_token).scope).toBe('cdr.admin');
    const repeated = await h.tokenRequest({
      ...grant,
      client_id: both.clientId,
      client_secret: both.clientSecret,
      scope: 'cdr.api  cdr.api',
    });
    expect(((await repeated.json()) as { scope: string }).scope).toBe('cdr.api');
  });

  it('answers invalid_scope for a scope the client lacks, an unknown or an empty scope', async () => {
    const credentials = { client_id: client.clientId, client_secret: client.clientSecret };
    for (const scope of ['cdr.admin', 'cdr.api cdr.admin', 'openid', ' ']) {
      await expectError(
        await h.tokenRequest({ ...grant, ...credentials, scope }),
        400,
        'invalid_scope',
      );
    }
  });

  it('answers invalid_client alike for an unknown client, a wrong secret and no secret', async () => {
    const descriptions = new Set<string | undefined>();
    const cases: Record<string, string>[] = [
      { client_id: 'cli_00000000000000000000', client_secret: client.clientSecret },
      { client_id: client.clientId, client_secret: both.clientSecret },
      { client_id: client.clientId, client_secret: `${client.clientSecret}x` },
      { client_id: client.clientId },
      { client_id: 'x'.repeat(5000), client_secret: 'y' },
      {},
    ];
    for (const fields of cases) {
      const body = await expectError(
        await h.tokenRequest({ ...grant, ...fields }),
        401,
        'invalid_client',
      );
      descriptions.add(body.error_description);
    }
    for (const authorization of [
      basic(client.clientId, 'wrong'),
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      'Bearer something',
    ]) {
      const body = await expectError(
        await h.tokenRequest(grant, { Authorization: authorization }),
        401,
        'invalid_client',
      );
      descriptions.add(body.error_description);
    }
    expect(descriptions.size).toBe(1);
  });

  it('answers the RFC 6749 5.2 request errors', async () => {
    const credentials = { client_id: client.clientId, client_secret: client.clientSecret };
    await expectError(await h.tokenRequest(credentials), 400, 'invalid_request');
    await expectError(
      await h.tokenRequest({ ...credentials, grant_type: 'password' }),
      400,
      'unsupported_grant_type',
    );
    await expectError(
      await h.tokenRequest({ ...credentials, grant_type: 'authorization_code' }),
      400,
      'unsupported_grant_type',
    );
    const json = await h.send('/connect/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...grant, ...credentials }),
    });
    await expectError(json, 400, 'invalid_request');
    const repeated = await h.send('/connect/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&grant_type=client_credentials&client_id=${client.clientId}&client_secret=${client.clientSecret}`,
    });
    await expectError(repeated, 400, 'invalid_request');
    const inUrl = await h.send(
      `/connect/token?client_secret=${encodeURIComponent(client.clientSecret)}`,
      {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...grant, client_id: client.clientId }).toString(),
      },
    );
    await expectError(inUrl, 400, 'invalid_request');
    const huge = await h.tokenRequest({ ...grant, ...credentials, padding: 'x'.repeat(9000) });
    await expectError(huge, 400, 'invalid_request');
    const notUtf8 = await h.send('/connect/token', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new Uint8Array([0x67, 0x3d, 0xff]),
    });
    await expectError(notUtf8, 400, 'invalid_request');
  });

  it('ignores unknown parameters and treats empty ones as absent (RFC 6749 3.1, 3.2)', async () => {
    const response = await h.tokenRequest({
      ...grant,
      client_id: client.clientId,
      client_secret: client.clientSecret,
      scope: '',
      audience: 'https://elsewhere.example.com',
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { scope: string }).scope).toBe('cdr.api');
  });

  it('answers 405 with Allow for other methods', async () => {
    const response = await h.send('/connect/token');
    expect(response.status).toBe(405);
    expect(response.headers.get('Allow')).toBe('POST');
  });

  it('keeps the previous secret working after a rotation until it is dropped or rotated again', async () => {
    const rotating = await h.client(organisationId);
    const path = `/v1/admin/organisations/${organisationId}/clients/${rotating.clientId}`;
    const first = rotating.clientSecret;
    const rotated = await h.admin('POST', `${path}/rotate`);
    expect(rotated.status).toBe(200);
    const { clientSecret: second, previousSecretActive } = (await rotated.json()) as {
      clientSecret: string;
      previousSecretActive: boolean;
    };
    expect(previousSecretActive).toBe(true);
    expect(second).not.toBe(first);
    expect((await h.token({ ...rotating, clientSecret: first })).length).toBeGreaterThan(0);
    expect((await h.token({ ...rotating, clientSecret: second })).length).toBeGreaterThan(0);

    const third = (
      (await (await h.admin('POST', `${path}/rotate`)).json()) as {
        clientSecret: string;
      }
    ).clientSecret;
    const refusedFirst = await h.tokenRequest({
      ...grant,
      client_id: rotating.clientId,
      client_secret: first,
    });
    await expectError(refusedFirst, 401, 'invalid_client');
    await h.token({ ...rotating, clientSecret: second });
    await h.token({ ...rotating, clientSecret: third });

    const dropped = await h.admin('DELETE', `${path}/previous-secret`);
    expect(((await dropped.json()) as { previousSecretActive: boolean }).previousSecretActive).toBe(
      false,
    );
    await expectError(
      await h.tokenRequest({ ...grant, client_id: rotating.clientId, client_secret: second }),
      401,
      'invalid_client',
    );
    await h.token({ ...rotating, clientSecret: third });
  });

  it('keeps both secrets of two concurrent rotations working', async () => {
    const rotating = await h.client(organisationId);
    const path = `/v1/admin/organisations/${organisationId}/clients/${rotating.clientId}/rotate`;
    const answers = await Promise.all([h.admin('POST', path), h.admin('POST', path)]);
    const secrets = await Promise.all(
      answers.map(async (answer) => {
        expect(answer.status).toBe(200);
        return ((await answer.json()) as { clientSecret: string }).clientSecret;
      }),
    );
    expect(new Set(secrets).size).toBe(2);
    for (const clientSecret of secrets) {
      expect((await h.token({ ...rotating, clientSecret })).length).toBeGreaterThan(0);
    }
    await expectError(
      await h.tokenRequest({
        ...grant,
        client_id: rotating.clientId,
        client_secret: rotating.clientSecret,
      }),
      401,
      'invalid_client',
    );
  });

  it('refuses a revoked client, and its tokens stop working at once', async () => {
    const doomed = await h.client(organisationId);
    const token = await h.token(doomed);
    const account = await h.send('/v1/account', { headers: { Authorization: `Bearer ${token}` } });
    expect(account.status).toBe(200);
    const revoked = await h.admin(
      'DELETE',
      `/v1/admin/organisations/${organisationId}/clients/${doomed.clientId}`,
    );
    expect(revoked.status).toBe(200);
    const after = await h.send('/v1/account', { headers: { Authorization: `Bearer ${token}` } });
    expect(after.status).toBe(401);
    await expectError(
      await h.tokenRequest({
        ...grant,
        client_id: doomed.clientId,
        client_secret: doomed.clientSecret,
      }),
      401,
      'invalid_client',
    );
  });

  it('stores only hashes of client secrets', async () => {
    const stored = await h.store.getOAuthClient(client.clientId);
    expect(stored?.secretHashes).toHaveLength(1);
    expect(stored?.secretHashes[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(client.clientSecret);
  });
});
