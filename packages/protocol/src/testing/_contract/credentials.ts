import { describe, expect, it } from 'vitest';

import type { ApiKeyRecord } from '../../domain/types.ts';
import type { OAuthClientRecord, SigningKeyRecord } from '../../ports.ts';
import { after, createOrg, HOUR_MS, MINUTE_MS, T0 } from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

function apiKey(organisationId: string, id: string, createdAt: Date): ApiKeyRecord {
  return {
    id,
    organisationId,
    name: `key ${id}`,
    displayPrefix: `dsm_live_${id.slice(-4)}`,
    hash: `hash-of-${id}`,
    createdAt,
    revokedAt: null,
  };
}

function oauthClient(organisationId: string, id: string, createdAt: Date): OAuthClientRecord {
  return {
    id,
    organisationId,
    name: `client ${id}`,
    scopes: ['cdr.api', 'cdr.admin'],
    secretHashes: [`secret-of-${id}`],
    createdAt,
    revokedAt: null,
  };
}

function signingKey(kid: string, createdAt: Date): SigningKeyRecord {
  return {
    kid,
    algorithm: 'ES256',
    publicJwk: JSON.stringify({ kty: 'EC', crv: 'P-256', x: kid, y: 'y' }),
    privateJwk: `encrypted:${kid}`,
    createdAt,
    activeFrom: null,
    activeUntil: null,
    retiredAt: null,
  };
}

/** API keys, OAuth clients and signing keys. */
export function describeCredentials(context: ContractContext): void {
  describe('API keys', () => {
    it('creates a key and finds it by hash', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const record = apiKey('org_a', 'key_1', T0);
      await store.createApiKey(record);
      expect(await store.findApiKeyByHash('hash-of-key_1')).toEqual(record);
      expect(await store.findApiKeyByHash('hash-of-nothing')).toBeUndefined();
    });

    it('refuses a second key with the same hash', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.createApiKey(apiKey('org_a', 'key_1', T0));
      await expect(
        store.createApiKey({ ...apiKey('org_a', 'key_2', T0), hash: 'hash-of-key_1' }),
      ).rejects.toThrow();
      expect((await store.findApiKeyByHash('hash-of-key_1'))?.id).toBe('key_1');
    });

    it('lists an organisation’s keys newest first, revoked ones included', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await store.createApiKey(apiKey('org_a', 'key_1', T0));
      await store.createApiKey(apiKey('org_a', 'key_3', after(T0, 2 * MINUTE_MS)));
      await store.createApiKey(apiKey('org_a', 'key_2', after(T0, MINUTE_MS)));
      await store.createApiKey(apiKey('org_b', 'key_9', after(T0, 3 * MINUTE_MS)));
      const revokedAt = after(T0, HOUR_MS);
      await store.revokeApiKey('org_a', 'key_2', revokedAt);

      const listed = await store.listApiKeys('org_a');
      expect(listed.map((key) => key.id)).toEqual(['key_3', 'key_2', 'key_1']);
      expect(listed[1]?.revokedAt).toEqual(revokedAt);
      expect(listed[0]?.revokedAt).toBeNull();
      expect((await store.listApiKeys('org_b')).map((key) => key.id)).toEqual(['key_9']);
      expect(await store.listApiKeys('org_none')).toEqual([]);
    });

    it('revokes within the organisation only, keeping the first revocation time', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await store.createApiKey(apiKey('org_a', 'key_1', T0));

      expect(await store.revokeApiKey('org_b', 'key_1', after(T0, MINUTE_MS))).toBeUndefined();
      expect((await store.findApiKeyByHash('hash-of-key_1'))?.revokedAt).toBeNull();
      expect(await store.revokeApiKey('org_a', 'key_missing', T0)).toBeUndefined();

      const first = after(T0, 2 * MINUTE_MS);
      const revoked = await store.revokeApiKey('org_a', 'key_1', first);
      expect(revoked).toEqual({ ...apiKey('org_a', 'key_1', T0), revokedAt: first });
      const again = await store.revokeApiKey('org_a', 'key_1', after(T0, HOUR_MS));
      expect(again?.revokedAt).toEqual(first);
      expect((await store.findApiKeyByHash('hash-of-key_1'))?.revokedAt).toEqual(first);
    });
  });

  describe('OAuth clients', () => {
    it('creates and reads a client', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const client = oauthClient('org_a', 'cli_1', T0);
      await store.createOAuthClient(client);
      expect(await store.getOAuthClient('cli_1')).toEqual(client);
      expect(await store.getOAuthClient('cli_missing')).toBeUndefined();
    });

    it('lists an organisation’s clients newest first', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await store.createOAuthClient(oauthClient('org_a', 'cli_1', T0));
      await store.createOAuthClient(oauthClient('org_a', 'cli_2', after(T0, MINUTE_MS)));
      await store.createOAuthClient(oauthClient('org_b', 'cli_3', after(T0, 2 * MINUTE_MS)));
      expect((await store.listOAuthClients('org_a')).map((client) => client.id)).toEqual([
        'cli_2',
        'cli_1',
      ]);
      expect(await store.listOAuthClients('org_b')).toEqual([
        oauthClient('org_b', 'cli_3', after(T0, 2 * MINUTE_MS)),
      ]);
    });

    it('rotates secrets, ends overlaps and revokes in one step each, scoped by organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      const client = oauthClient('org_a', 'cli_1', T0);
      await store.createOAuthClient(client);

      expect(
        await store.updateOAuthClient('org_b', 'cli_1', {
          kind: 'rotate-secret',
          secretHash: 'stolen',
        }),
      ).toBeUndefined();
      expect(await store.getOAuthClient('cli_1')).toEqual(client);
      expect(
        await store.updateOAuthClient('org_a', 'cli_missing', { kind: 'drop-previous-secret' }),
      ).toBeUndefined();

      const rotate = (secretHash: string) =>
        store.updateOAuthClient('org_a', 'cli_1', { kind: 'rotate-secret', secretHash });
      expect(await rotate('second')).toEqual({
        ...client,
        secretHashes: ['second', 'secret-of-cli_1'],
      });
      // Two rotations at once: whichever lands last, both secrets handed out stay live.
      await Promise.all([rotate('third'), rotate('fourth')]);
      const live = (await store.getOAuthClient('cli_1'))?.secretHashes ?? [];
      expect([...live].sort()).toEqual(['fourth', 'third']);

      const dropped = await store.updateOAuthClient('org_a', 'cli_1', {
        kind: 'drop-previous-secret',
      });
      const current = live.slice(0, 1);
      expect(dropped?.secretHashes).toEqual(current);
      expect(
        (await store.updateOAuthClient('org_a', 'cli_1', { kind: 'drop-previous-secret' }))
          ?.secretHashes,
      ).toEqual(current);

      const revokedAt = after(T0, HOUR_MS);
      const revoked = await store.updateOAuthClient('org_a', 'cli_1', {
        kind: 'revoke',
        at: revokedAt,
      });
      expect(revoked).toEqual({ ...client, secretHashes: current, revokedAt });
      expect(await store.getOAuthClient('cli_1')).toEqual(revoked);
      // A second revocation keeps the first time.
      expect(
        await store.updateOAuthClient('org_a', 'cli_1', {
          kind: 'revoke',
          at: after(T0, 2 * HOUR_MS),
        }),
      ).toEqual(revoked);
    });
  });

  describe('signing keys', () => {
    it('saves keys and lists them newest first', async () => {
      const store = context.store();
      expect(await store.listSigningKeys()).toEqual([]);
      const older = signingKey('kid_1', T0);
      const newer = { ...signingKey('kid_2', after(T0, HOUR_MS)), algorithm: 'EdDSA' as const };
      await store.saveSigningKey(older);
      await store.saveSigningKey(newer);
      expect(await store.listSigningKeys()).toEqual([newer, older]);
    });

    it('saving a known kid replaces it (rotation and retirement)', async () => {
      const store = context.store();
      const key = signingKey('kid_1', T0);
      await store.saveSigningKey(key);
      const retiring = {
        ...key,
        activeUntil: after(T0, HOUR_MS),
        retiredAt: after(T0, 2 * HOUR_MS),
      };
      await store.saveSigningKey(retiring);
      expect(await store.listSigningKeys()).toEqual([retiring]);
    });

    it('keeps when a staged key starts signing', async () => {
      const store = context.store();
      const upcoming = { ...signingKey('kid_1', T0), activeFrom: after(T0, 5 * MINUTE_MS) };
      await store.saveSigningKey(upcoming);
      expect(await store.listSigningKeys()).toEqual([upcoming]);
    });
  });
}
