import { createHmac } from 'node:crypto';

import {
  base64url,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  SignJWT,
} from 'jose';
import type { JWTPayload } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { createBearerVerifier } from '../src/oauth/bearer-verifier.ts';
import type { ExternalIssuerConfig } from '../src/oauth/config.ts';
import { resolveOAuthSettings } from '../src/oauth/config.ts';
import { AUDIENCE, BASE, createOAuthHarness } from './_oauth.ts';
import type { CreatedClient, OAuthHarness } from './_oauth.ts';

const HOUR_MS = 3600_000;

/** Claims without the members a case set to `undefined` (to drop them). */
function defined(claims: Record<string, unknown>): JWTPayload {
  return Object.fromEntries(Object.entries(claims).filter(([, value]) => value !== undefined));
}

describe('bearer verifier: our tokens', () => {
  let h: OAuthHarness;
  let organisationId: string;
  let client: CreatedClient;

  beforeAll(async () => {
    h = await createOAuthHarness();
    organisationId = await h.organisation();
    client = await h.client(organisationId, ['cdr.api']);
  });
  afterAll(async () => {
    await h.close();
  });

  /** Claims as the token endpoint writes them, at the harness clock. */
  function claims(overrides: Record<string, unknown> = {}): JWTPayload {
    const iat = Math.floor(h.clock.now().getTime() / 1000);
    return defined({
      iss: BASE,
      aud: AUDIENCE,
      sub: client.clientId,
      client_id: client.clientId,
      scope: 'cdr.api',
      org: organisationId,
      iat,
      exp: iat + 3600,
      jti: 'abc',
      ...overrides,
    });
  }

  /** Signs `payload` with OUR active key (what only the issuer can do). */
  async function signWithOurKey(
    payload: JWTPayload,
    header: Record<string, unknown> = {},
  ): Promise<string> {
    const key = await h.oauth.signingKeys.signingKey();
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt', ...header })
      .sign(key.privateKey);
  }

  it('turns a token of ours into the principal of its client and organisation', async () => {
    const token = await h.token(client, 'cdr.api');
    expect(await h.oauth.verifyBearer(token)).toEqual({
      organisationId,
      scopes: new Set(['cdr.api']),
      credential: 'oauth_token',
      credentialId: client.clientId,
    });
    expect(await h.oauth.verifyBearer(await signWithOurKey(claims()))).toBeDefined();
  });

  it('gives an operator client (no organisation, no org claim) cdr.admin, never an organisation’s client', async () => {
    const operator = await h.storedClient(null, ['cdr.admin']);
    const token = await h.token(operator, 'cdr.admin');
    expect(decodeJwt(token)).not.toHaveProperty('org');
    expect(await h.oauth.verifyBearer(token)).toEqual({
      organisationId: null,
      scopes: new Set(['cdr.admin']),
      credential: 'oauth_token',
      credentialId: operator.clientId,
    });
    // An operator token cannot be passed off as an organisation's, nor the other way round.
    const asCustomer = claims({
      client_id: operator.clientId,
      sub: operator.clientId,
      scope: 'cdr.admin',
    });
    expect(await h.oauth.verifyBearer(await signWithOurKey(asCustomer))).toBeUndefined();
    // A customer client still holding cdr.admin (a row from before migration 3) gets no admin.
    const legacy = await h.storedClient(organisationId, ['cdr.api', 'cdr.admin']);
    const legacyToken = await h.token(legacy, 'cdr.api cdr.admin');
    expect((await h.oauth.verifyBearer(legacyToken))?.scopes).toEqual(new Set(['cdr.api']));
  });

  it('honours exp with 60 s of skew on the manual clock, then refuses', async () => {
    const token = await h.token(client);
    h.clock.advance(HOUR_MS + 30_000);
    expect(await h.oauth.verifyBearer(token)).toBeDefined();
    h.clock.advance(31_000);
    expect(await h.oauth.verifyBearer(token)).toBeUndefined();
    const response = await h.send('/v1/account', { headers: { Authorization: `Bearer ${token}` } });
    expect(response.status).toBe(401);
  });

  it('refuses tokens not yet valid (nbf, iat in the future)', async () => {
    const now = Math.floor(h.clock.now().getTime() / 1000);
    expect(await h.oauth.verifyBearer(await signWithOurKey(claims({ nbf: now + 120 })))).toBe(
      undefined,
    );
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims({ iat: now + 120, exp: now + 3720 }))),
    ).toBeUndefined();
    // Within the skew is fine.
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims({ nbf: now + 30 }))),
    ).toBeDefined();
  });

  it('refuses a wrong iss, a wrong aud, a missing claim and a lifetime over an hour', async () => {
    for (const overrides of [
      { iss: 'https://evil.example.com' },
      { iss: `${BASE}/` },
      { aud: 'https://other.example.com/v1' },
      { aud: [BASE] },
      { client_id: undefined },
      { org: undefined },
      { jti: undefined },
      { sub: 'cli_someoneelse000000000' },
    ]) {
      expect(
        await h.oauth.verifyBearer(await signWithOurKey(claims(overrides))),
        JSON.stringify(overrides),
      ).toBeUndefined();
    }
    const now = Math.floor(h.clock.now().getTime() / 1000);
    const old = claims({ iat: now - 3700, exp: now + 3600 });
    expect(await h.oauth.verifyBearer(await signWithOurKey(old))).toBeUndefined();
  });

  it('refuses a wrong or missing typ (RFC 9068: at+jwt)', async () => {
    expect(await h.oauth.verifyBearer(await signWithOurKey(claims(), { typ: 'JWT' }))).toBe(
      undefined,
    );
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims(), { typ: undefined })),
    ).toBeUndefined();
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims(), { typ: 'application/at+jwt' })),
    ).toBeDefined();
  });

  it('refuses alg none, HS256 signed with the public key, and a tampered payload', async () => {
    const token = await h.token(client, 'cdr.api');
    const [header = '', payload = ''] = token.split('.');
    const json = (value: unknown): string => base64url.encode(JSON.stringify(value));
    const { kid } = decodeProtectedHeader(token);

    const none = `${json({ alg: 'none', typ: 'at+jwt', kid })}.${payload}.`;
    expect(await h.oauth.verifyBearer(none)).toBeUndefined();

    // The classic confusion: HMAC keyed with what the JWKS publishes.
    const jwks = (await (await h.send('/.well-known/jwks.json')).json()) as { keys: unknown[] };
    const hsHeader = json({ alg: 'HS256', typ: 'at+jwt', kid });
    for (const secret of [JSON.stringify(jwks.keys[0]), JSON.stringify(jwks)]) {
      const signature = createHmac('sha256', secret)
        .update(`${hsHeader}.${payload}`)
        .digest('base64url');
      expect(await h.oauth.verifyBearer(`${hsHeader}.${payload}.${signature}`)).toBeUndefined();
    }

    const elevated = json({ ...decodeJwt(token), scope: 'cdr.api cdr.admin' });
    const signature = token.split('.')[2] ?? '';
    expect(await h.oauth.verifyBearer(`${header}.${elevated}.${signature}`)).toBeUndefined();
    expect(await h.oauth.verifyBearer(token)).toBeDefined();
  });

  it('refuses an unknown kid and a foreign key claiming our kid', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const ours = await h.oauth.signingKeys.signingKey();
    for (const kid of ['unknown-kid', ours.kid]) {
      const token = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' })
        .sign(privateKey);
      expect(await h.oauth.verifyBearer(token), kid).toBeUndefined();
    }
    const noKid = await new SignJWT(claims())
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt' })
      .sign(ours.privateKey);
    expect(await h.oauth.verifyBearer(noKid)).toBeUndefined();
  });

  it('refuses a client of another organisation, an unknown client, and scopes it no longer holds', async () => {
    const otherOrganisation = await h.organisation();
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims({ org: otherOrganisation }))),
    ).toBeUndefined();
    const ghost = 'cli_00000000000000000000';
    expect(
      await h.oauth.verifyBearer(await signWithOurKey(claims({ client_id: ghost, sub: ghost }))),
    ).toBeUndefined();
    const narrow = await h.client(organisationId, ['cdr.api']);
    const principal = await h.oauth.verifyBearer(
      await signWithOurKey(
        claims({ client_id: narrow.clientId, sub: narrow.clientId, scope: 'cdr.api cdr.admin' }),
      ),
    );
    expect(principal?.scopes).toEqual(new Set(['cdr.api']));
  });

  it('refuses garbage without throwing, and logs the reason at debug without the token', async () => {
    const before = h.logs.length;
    for (const value of ['', 'abc', 'a.b.c', 'x'.repeat(10_000), `${'e'.repeat(20)}.e.`]) {
      expect(await h.oauth.verifyBearer(value)).toBeUndefined();
    }
    const token = await signWithOurKey(claims({ aud: 'nope' }));
    expect(await h.oauth.verifyBearer(token)).toBeUndefined();
    const lines = h.logs.slice(before);
    expect(lines.filter((line) => line.level === 'debug').length).toBeGreaterThanOrEqual(6);
    expect(JSON.stringify(lines)).not.toContain(token.split('.')[1]);
  });

  it('answers each refused token with its own 401 detail and RFC 6750 invalid_token', async () => {
    const now = Math.floor(h.clock.now().getTime() / 1000);
    const { privateKey: foreignKey } = await generateKeyPair('ES256');
    const ours = await h.oauth.signingKeys.signingKey();
    const valid = await h.token(client, 'cdr.api');
    const [header = '', payload = '', signature = ''] = valid.split('.');
    const flipped = `${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
    const revokedClient = await h.client(organisationId);
    const revokedToken = await h.token(revokedClient);
    await h.store.updateOAuthClient(organisationId, revokedClient.clientId, {
      kind: 'revoke',
      at: h.clock.now(),
    });
    const ghost = 'cli_00000000000000000000';
    const cases: [string, string, RegExp][] = [
      [
        'expired',
        await signWithOurKey(claims({ iat: now - 3000, exp: now - 600 })),
        /^The access token has expired \(exp\)/,
      ],
      ['tampered signature', `${header}.${payload}.${flipped}`, /signature does not verify/],
      [
        'signed by a foreign key under our kid',
        await new SignJWT(claims())
          .setProtectedHeader({ alg: 'ES256', kid: ours.kid, typ: 'at+jwt' })
          .sign(foreignKey),
        /signature does not verify/,
      ],
      [
        'unknown kid',
        await new SignJWT(claims())
          .setProtectedHeader({ alg: 'ES256', kid: 'unknown-kid', typ: 'at+jwt' })
          .sign(foreignKey),
        /signed by a key this service does not publish/,
      ],
      ['wrong typ', await signWithOurKey(claims(), { typ: 'JWT' }), /typ header is not at\+jwt/],
      [
        'wrong aud',
        await signWithOurKey(claims({ aud: 'https://other.example.com/v1' })),
        /another audience \(aud\)/,
      ],
      [
        'wrong iss',
        await signWithOurKey(claims({ iss: 'https://evil.example.com' })),
        /issuer this service does not accept \(iss\)/,
      ],
      [
        'missing claim',
        await signWithOurKey(claims({ jti: undefined })),
        /lacks the required claim jti/,
      ],
      ['not a JWT', 'a.b.c', /^The bearer token is malformed/],
      ['revoked client', revokedToken, /not \(or no longer\) registered here/],
      [
        'unknown client',
        await signWithOurKey(claims({ client_id: ghost, sub: ghost })),
        /not \(or no longer\) registered here/,
      ],
    ];
    const details = new Map<string, string>();
    for (const [name, token, expected] of cases) {
      const response = await h.send('/v1/account', {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(response.status, name).toBe(401);
      const body = (await response.json()) as { code: string; detail: string };
      expect(body.code, name).toBe('Unauthorized');
      expect(body.detail, name).toMatch(expected);
      expect(response.headers.get('WWW-Authenticate'), name).toBe(
        `Bearer realm="disarm", error="invalid_token", error_description="${body.detail.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "'")}"`,
      );
      details.set(name, body.detail);
    }
    // A revoked client and one that never existed are indistinguishable.
    expect(details.get('revoked client')).toBe(details.get('unknown client'));
  });

  it('refuses a token of ours on the API when the client is revoked (401 at once)', async () => {
    const doomed = await h.client(organisationId);
    const token = await h.token(doomed);
    expect(await h.oauth.verifyBearer(token)).toBeDefined();
    await h.store.updateOAuthClient(organisationId, doomed.clientId, {
      kind: 'revoke',
      at: h.clock.now(),
    });
    expect(await h.oauth.verifyBearer(token)).toBeUndefined();
  });
});

describe('bearer verifier: an external issuer', () => {
  const ISSUER = 'https://login.example.com/';
  let h: OAuthHarness;
  let organisationId: string;
  let rsa: CryptoKeyPair;

  beforeAll(async () => {
    h = await createOAuthHarness();
    organisationId = await h.organisation();
    rsa = await generateKeyPair('RS256');
  });
  afterAll(async () => {
    await h.close();
  });

  async function verifierFor(config: Partial<ExternalIssuerConfig> = {}) {
    const settings = resolveOAuthSettings(
      {
        keyEncryptionKey: h.keyEncryptionKey,
        external: { issuer: ISSUER, jwksUrl: 'https://login.example.com/jwks', ...config },
      },
      BASE,
    );
    const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', alg: 'RS256' };
    return createBearerVerifier({
      store: h.store,
      clock: h.clock,
      signingKeys: h.oauth.signingKeys,
      issuer: settings.issuer,
      audience: settings.audience,
      ...(settings.external ? { external: settings.external } : {}),
      externalKeys: createLocalJWKSet({ keys: [jwk] }),
    });
  }

  async function external(
    overrides: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
  ): Promise<string> {
    const iat = Math.floor(h.clock.now().getTime() / 1000);
    return new SignJWT(
      defined({
        iss: ISSUER,
        aud: [AUDIENCE, 'https://other.example.com'],
        sub: 'svc-1',
        client_id: 'svc-1',
        scope: 'cdr.api offline_access',
        org_id: organisationId,
        iat,
        exp: iat + 300,
        ...overrides,
      }),
    )
      .setProtectedHeader({ alg: 'RS256', kid: 'rsa-1', typ: 'at+jwt', ...header })
      .sign(rsa.privateKey);
  }

  it('maps a valid token to the organisation of its claim, with the honoured scopes', async () => {
    const verify = await verifierFor();
    expect(await verify(await external())).toEqual({
      organisationId,
      scopes: new Set(['cdr.api']),
      credential: 'oauth_token',
      credentialId: 'svc-1',
    });
    // `scp` as an array (Okta), no typ at all.
    const scp = await external({ scope: undefined, scp: ['cdr.api'] }, { typ: undefined });
    expect((await verify(scp))?.scopes).toEqual(new Set(['cdr.api']));
    // No scope claim: a valid caller with no scope (403 on the routes, not 401).
    expect((await verify(await external({ scope: undefined })))?.scopes).toEqual(new Set());
  });

  it('refuses an unknown organisation, a missing org claim, a wrong aud or iss, expiry', async () => {
    const verify = await verifierFor();
    const now = Math.floor(h.clock.now().getTime() / 1000);
    for (const overrides of [
      { org_id: 'org_doesnotexist' },
      { org_id: undefined },
      { org_id: 42 },
      { aud: 'https://other.example.com' },
      { iss: 'https://login.example.com' },
      { exp: now - 61 },
      { exp: undefined },
      { nbf: now + 120 },
      { iat: now + 120 },
    ]) {
      expect(await verify(await external(overrides)), JSON.stringify(overrides)).toBeUndefined();
    }
  });

  it('refuses a typ other than at+jwt when one is set, unless configured', async () => {
    const verify = await verifierFor();
    expect(await verify(await external({}, { typ: 'JWT' }))).toBeUndefined();
    expect(await verify(await external({}, { typ: 'application/at+jwt' }))).toBeDefined();
    const lenient = await verifierFor({ acceptedTypes: ['at+jwt', 'jwt'] });
    expect(await lenient(await external({}, { typ: 'JWT' }))).toBeDefined();
  });

  it('pins algorithms: an algorithm outside the list is refused', async () => {
    const verify = await verifierFor({ algorithms: ['ES256'] });
    expect(await verify(await external())).toBeUndefined();
  });

  it('honours cdr.admin only when configured, and the organisation claim it is told', async () => {
    const token = await external({ scope: 'cdr.api cdr.admin' });
    expect((await (await verifierFor())(token))?.scopes).toEqual(new Set(['cdr.api']));
    const trusted = await verifierFor({ scopes: ['cdr.api', 'cdr.admin'] });
    expect((await trusted(token))?.scopes).toEqual(new Set(['cdr.api', 'cdr.admin']));
    const custom = await verifierFor({ organisationClaim: 'https://example.com/org' });
    expect(
      await custom(await external({ 'https://example.com/org': organisationId })),
    ).toBeDefined();
    expect(await custom(await external())).toBeUndefined();
  });

  it('refuses insecure or confused configuration at construction', () => {
    const resolve = (external: ExternalIssuerConfig) =>
      resolveOAuthSettings({ keyEncryptionKey: h.keyEncryptionKey, external }, BASE);
    expect(() => resolve({ issuer: ISSUER, jwksUrl: 'http://login.example.com/jwks' })).toThrow(
      TypeError,
    );
    expect(() => resolve({ issuer: ISSUER, jwksUrl: 'http://127.0.0.1:1/jwks' })).not.toThrow();
    expect(() => resolve({ issuer: BASE, jwksUrl: 'https://login.example.com/jwks' })).toThrow(
      TypeError,
    );
    expect(() =>
      resolve({
        issuer: ISSUER,
        jwksUrl: 'https://login.example.com/jwks',
        algorithms: ['HS256' as 'RS256'],
      }),
    ).toThrow(TypeError);
    expect(() =>
      resolve({
        issuer: ISSUER,
        jwksUrl: 'https://login.example.com/jwks',
        algorithms: ['none' as 'RS256'],
      }),
    ).toThrow(TypeError);
    expect(() => resolveOAuthSettings({ keyEncryptionKey: new Uint8Array(16) }, BASE)).toThrow(
      TypeError,
    );
  });
});

describe('bearer verifier: tokens of no known issuer', () => {
  let h: OAuthHarness;
  afterEach(async () => {
    await h.close();
  });

  it('refuses them, and refuses external tokens when no external issuer is configured', async () => {
    h = await createOAuthHarness();
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ iss: 'https://login.example.com/', aud: AUDIENCE })
      .setProtectedHeader({ alg: 'RS256', kid: 'k' })
      .setExpirationTime('1h')
      .sign(privateKey);
    expect(await h.oauth.verifyBearer(token)).toBeUndefined();
  });
});
