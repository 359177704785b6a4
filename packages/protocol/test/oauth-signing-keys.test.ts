import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createSigningKeyManager } from '../src/oauth/signing-keys.ts';
import { createOAuthHarness, createTestClock } from './_oauth.ts';
import type { CreatedClient, OAuthHarness } from './_oauth.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/** Seven minutes: a minute for every process to publish, the JWKS max-age, a minute of skew. */
const PREPUBLICATION_MS = 7 * MINUTE_MS;

interface KeyListing {
  keys: {
    kid: string;
    status: string;
    activeFrom: string | null;
    activeUntil: string | null;
    retiredAt: string | null;
  }[];
}

describe('signing keys: rotation without downtime', () => {
  let h: OAuthHarness;
  let client: CreatedClient;

  beforeAll(async () => {
    h = await createOAuthHarness();
    client = await h.client(await h.organisation());
  });
  afterAll(async () => {
    await h.close();
  });

  const jwksKids = async (): Promise<string[]> => {
    const response = await h.send('/.well-known/jwks.json');
    expect(response.headers.get('Cache-Control')).toBe('public, max-age=300');
    return ((await response.json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
  };

  it('creates the first key on first use, ES256 with its RFC 7638 thumbprint as kid', async () => {
    expect(await jwksKids()).toEqual([]);
    const token = await h.token(client);
    const { kid } = decodeProtectedHeader(token);
    expect(kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await jwksKids()).toEqual([kid]);
    const listing = (await (await h.admin('GET', '/v1/admin/signing-keys')).json()) as KeyListing;
    expect(listing.keys).toEqual([
      expect.objectContaining({
        kid,
        status: 'active',
        activeFrom: null,
        activeUntil: null,
        retiredAt: null,
      }),
    ]);
  });

  it('staged rotation: the new key is published first and signs seven minutes later', async () => {
    const before = await h.token(client);
    const oldKid = decodeProtectedHeader(before).kid;
    const rotatedAt = h.clock.now().getTime();
    const rotated = await h.admin('POST', '/v1/admin/signing-keys/rotate');
    expect(rotated.status).toBe(200);
    const view = (await rotated.json()) as KeyListing['keys'][number];
    const newKid = view.kid;
    expect(newKid).not.toBe(oldKid);
    const switchAt = new Date(rotatedAt + PREPUBLICATION_MS).toISOString();
    expect(view).toMatchObject({ status: 'upcoming', activeFrom: switchAt, activeUntil: null });

    // Verifiers can fetch the new key now; the old one keeps signing until the switch.
    expect((await jwksKids()).sort()).toEqual([oldKid, newKid].sort());
    expect(decodeProtectedHeader(await h.token(client)).kid).toBe(oldKid);
    const during = (await (await h.admin('GET', '/v1/admin/signing-keys')).json()) as KeyListing;
    expect(during.keys.map((key) => [key.kid, key.status, key.activeUntil])).toEqual([
      [newKid, 'upcoming', null],
      [oldKid, 'active', switchAt],
    ]);
    h.clock.advance(PREPUBLICATION_MS - 1_000);
    expect(decodeProtectedHeader(await h.token(client)).kid).toBe(oldKid);

    h.clock.advance(1_000);
    const after = await h.token(client);
    expect(decodeProtectedHeader(after).kid).toBe(newKid);
    expect(await h.oauth.verifyBearer(before)).toBeDefined();
    expect(await h.oauth.verifyBearer(after)).toBeDefined();
    const listing = (await (await h.admin('GET', '/v1/admin/signing-keys')).json()) as KeyListing;
    expect(listing.keys.map((key) => [key.kid, key.status])).toEqual([
      [newKid, 'active'],
      [oldKid, 'published'],
    ]);
    // The key that no longer signs keeps no private half.
    const stored = (await h.store.listSigningKeys()).find((key) => key.kid === oldKid);
    expect(stored?.privateJwk).toBe('');

    // One hour on: the old token expired; the old key is still published (skew grace).
    h.clock.advance(HOUR_MS + 2 * MINUTE_MS);
    expect(await h.oauth.verifyBearer(before)).toBeUndefined();
    expect(await jwksKids()).toContain(oldKid);
    // Past its last token's lifetime plus five minutes: retired and gone from the JWKS.
    h.clock.advance(4 * MINUTE_MS);
    expect(await jwksKids()).toEqual([newKid]);
    const later = (await (await h.admin('GET', '/v1/admin/signing-keys')).json()) as KeyListing;
    expect(later.keys[1]).toMatchObject({ kid: oldKid, status: 'retired' });
    expect(later.keys[1]?.retiredAt).not.toBeNull();
    expect((await h.store.listSigningKeys()).find((key) => key.kid === oldKid)?.retiredAt).not.toBe(
      null,
    );
  });

  it('immediate rotation: the new key signs now and the old one stops at once', async () => {
    const before = await h.token(client);
    const oldKid = decodeProtectedHeader(before).kid;
    const rotated = await h.admin('POST', '/v1/admin/signing-keys/rotate?immediate=true');
    const view = (await rotated.json()) as KeyListing['keys'][number];
    expect(view).toMatchObject({ status: 'active', activeFrom: null });
    const after = await h.token(client);
    expect(decodeProtectedHeader(after).kid).toBe(view.kid);
    expect(await h.oauth.verifyBearer(before)).toBeDefined();
    const stored = (await h.store.listSigningKeys()).find((key) => key.kid === oldKid);
    expect(stored?.privateJwk).toBe('');
    expect(stored?.activeUntil?.getTime()).toBe(h.clock.now().getTime());

    const refused = await h.admin('POST', '/v1/admin/signing-keys/rotate?immediate=soon');
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { code: string }).code).toBe('ValidationFailed');
  });

  it('a second staged rotation before the switch: each key signs in turn, none is skipped', async () => {
    const current = decodeProtectedHeader(await h.token(client)).kid;
    const first = (await (await h.admin('POST', '/v1/admin/signing-keys/rotate')).json()) as {
      kid: string;
    };
    h.clock.advance(2 * MINUTE_MS);
    const second = (await (await h.admin('POST', '/v1/admin/signing-keys/rotate')).json()) as {
      kid: string;
    };
    expect(decodeProtectedHeader(await h.token(client)).kid).toBe(current);
    h.clock.advance(PREPUBLICATION_MS - 2 * MINUTE_MS);
    expect(decodeProtectedHeader(await h.token(client)).kid).toBe(first.kid);
    h.clock.advance(2 * MINUTE_MS);
    expect(decodeProtectedHeader(await h.token(client)).kid).toBe(second.kid);
  });

  it('stores private keys sealed (AES-256-GCM) and publishes only public members', async () => {
    const active = (await h.store.listSigningKeys()).find((key) => key.activeUntil === null);
    expect(active?.privateJwk).toMatch(/^v1\.[0-9a-f]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(active?.privateJwk).not.toContain('"d"');
    expect(JSON.parse(active?.publicJwk ?? '{}')).not.toHaveProperty('d');
    const jwks = (await (await h.send('/.well-known/jwks.json')).json()) as {
      keys: Record<string, unknown>[];
    };
    for (const key of jwks.keys) {
      expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    }
  });

  it('cannot sign under another key-encryption key, and says why', async () => {
    const stranger = createSigningKeyManager({
      store: h.store,
      clock: h.clock,
      keyEncryptionKey: new Uint8Array(randomBytes(32)),
    });
    await expect(stranger.signingKey()).rejects.toThrow(/another key-encryption key/);
    // A sealed key moved to another kid does not open either (the kid is authenticated).
    const active = (await h.store.listSigningKeys()).find((key) => key.activeUntil === null);
    expect(active).toBeDefined();
    const moved = createSigningKeyManager({
      store: {
        ...h.store,
        listSigningKeys: () => Promise.resolve(active ? [{ ...active, kid: 'moved' }] : []),
        saveSigningKey: () => Promise.reject(new Error('read-only in this test')),
      },
      clock: h.clock,
      keyEncryptionKey: h.keyEncryptionKey,
    });
    await expect(moved.signingKey()).rejects.toThrow(/operation-specific reason|decrypt/i);
    expect(() =>
      createSigningKeyManager({
        store: h.store,
        clock: h.clock,
        keyEncryptionKey: new Uint8Array(8),
      }),
    ).toThrow(TypeError);
  });
});

describe('signing keys: several processes sharing one store', () => {
  it('publish a staged key within a minute; see an immediate rotation at once when verifying, and sign with it within a minute', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'disarm-oauth-shared-'));
    const keyEncryptionKey = new Uint8Array(randomBytes(32));
    const clock = createTestClock();
    const a = await createOAuthHarness({ directory, keyEncryptionKey, clock });
    const b = await createOAuthHarness({ directory, keyEncryptionKey, clock });
    try {
      const client = await a.client(await a.organisation());
      const fromA = await a.token(client);
      const fromB = await b.token(client);
      expect(decodeProtectedHeader(fromB).kid).toBe(decodeProtectedHeader(fromA).kid);

      // B serves a staged key in its JWKS within a minute, long before the key signs.
      const { kid: staged } = (await (
        await a.admin('POST', '/v1/admin/signing-keys/rotate')
      ).json()) as { kid: string };
      clock.advance(MINUTE_MS + 1_000);
      expect((await b.oauth.signingKeys.publicKeys()).map((key) => key.kid)).toContain(staged);
      clock.advance(PREPUBLICATION_MS - MINUTE_MS);
      expect(decodeProtectedHeader(await b.token(client)).kid).toBe(staged);

      const { kid: newKid } = (await (
        await a.admin('POST', '/v1/admin/signing-keys/rotate?immediate=true')
      ).json()) as { kid: string };
      const newFromA = await a.token(client);
      expect(decodeProtectedHeader(newFromA).kid).toBe(newKid);
      // B has never seen the new key: the unknown kid makes it read the store again.
      expect(await b.oauth.verifyBearer(newFromA)).toBeDefined();
      expect(await b.oauth.verifyBearer(fromA)).toBeDefined();
      expect(await b.oauth.verifyBearer(fromB)).toBeDefined();

      clock.advance(MINUTE_MS + 1_000);
      expect(decodeProtectedHeader(await b.token(client)).kid).toBe(newKid);
    } finally {
      await a.close();
      await b.close();
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('a rotation with no key signing yet signs at once (nothing to overlap with)', async () => {
    const h = await createOAuthHarness();
    try {
      const view = await h.oauth.signingKeys.rotate();
      expect(view).toMatchObject({ status: 'active', activeFrom: null });
      expect((await h.oauth.signingKeys.signingKey()).kid).toBe(view.kid);
    } finally {
      await h.close();
    }
  });

  it('converge on one signing key when two make the first key at once', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'disarm-oauth-race-'));
    const keyEncryptionKey = new Uint8Array(randomBytes(32));
    const clock = createTestClock();
    const a = await createOAuthHarness({ directory, keyEncryptionKey, clock });
    const b = await createOAuthHarness({ directory, keyEncryptionKey, clock });
    try {
      const [keyA, keyB] = await Promise.all([
        a.oauth.signingKeys.signingKey(),
        b.oauth.signingKeys.signingKey(),
      ]);
      expect(keyA.kid).not.toBe(keyB.kid);
      clock.advance(MINUTE_MS + 1_000);
      const listing = await a.oauth.signingKeys.list();
      expect(listing.filter((key) => key.status === 'active')).toHaveLength(1);
      expect(listing.filter((key) => key.status === 'published')).toHaveLength(1);
      expect((await a.oauth.signingKeys.signingKey()).kid).toBe(
        (await b.oauth.signingKeys.signingKey()).kid,
      );
    } finally {
      await a.close();
      await b.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});
