import { describe, expect, it } from 'vitest';

import type { IdempotencyRecord, StoredResponse } from '../../ports.ts';
import {
  after,
  countOf,
  createOrg,
  DAY_MS,
  HOUR_MS,
  inParallel,
  MINUTE_MS,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

type Claim = Omit<IdempotencyRecord, 'state' | 'response'>;

function claimOf(organisationId: string, key: string, createdAt: Date = T0): Claim {
  return {
    organisationId,
    key,
    endpoint: 'POST /v1/documents',
    requestHash: `sha256-of-${key}`,
    createdAt,
    expiresAt: after(createdAt, DAY_MS),
  };
}

/** A response with awkward bytes and repeated headers, to prove a byte-exact round trip. */
function storedResponse(): StoredResponse {
  const backing = new Uint8Array([9, 9, 0x7b, 0x00, 0xff, 0x0a, 0xc3, 0x28, 0x7d, 9]);
  return {
    status: 202,
    headers: [
      ['content-type', 'application/json'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['x-cdr-usage-used', '1'],
    ],
    // A view into a larger buffer: only its own bytes may be stored.
    body: backing.subarray(2, 9),
  };
}

/** Rate-limit counters and idempotency records. */
export function describeRequests(context: ContractContext): void {
  describe('hitRateLimit', () => {
    it('counts hits per bucket and window', async () => {
      const store = context.store();
      const window = new Date('2025-01-15T10:00:00.000Z');
      const next = after(window, MINUTE_MS);
      expect(await store.hitRateLimit('org_a:submit', window, T0)).toBe(1);
      expect(await store.hitRateLimit('org_a:submit', window, after(T0, 1))).toBe(2);
      expect(await store.hitRateLimit('org_a:read', window, after(T0, 2))).toBe(1);
      expect(await store.hitRateLimit('org_b:submit', window, after(T0, 3))).toBe(1);
      expect(await store.hitRateLimit('org_a:submit', next, next)).toBe(1);
      expect(await store.hitRateLimit('org_a:submit', window, after(T0, 4))).toBe(3);
    });

    it('counts 50 concurrent hits as 1..50, each once', async () => {
      const store = context.store();
      const stores = await context.contenders();
      const counts = await inParallel(stores, 50, (contender) =>
        contender.hitRateLimit('org_a:submit', T0, T0),
      );
      expect([...counts].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 50 }, (_, index) => index + 1),
      );
      expect(await store.hitRateLimit('org_a:submit', T0, T0)).toBe(51);
    });
  });

  describe('idempotency keys', () => {
    it('claims a fresh key and returns the in-flight record to a second claim', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      expect(await store.claimIdempotencyKey(claim)).toEqual({ kind: 'claimed' });
      const second = await store.claimIdempotencyKey({
        ...claimOf('org_a', 'key-1', after(T0, MINUTE_MS)),
        endpoint: 'POST /v1/uploads',
        requestHash: 'another-request',
      });
      expect(second).toEqual({
        kind: 'existing',
        record: { ...claim, state: 'in_flight', response: null },
      });
    });

    it('stores the response and replays it byte for byte', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      const response = storedResponse();
      await store.completeIdempotencyKey('org_a', 'key-1', response, 'hash-final');
      const replay = await store.claimIdempotencyKey(claimOf('org_a', 'key-1', after(T0, HOUR_MS)));
      expect(replay.kind).toBe('existing');
      if (replay.kind !== 'existing') return;
      expect(replay.record).toMatchObject({
        ...claim,
        state: 'completed',
        requestHash: 'hash-final',
      });
      const stored = replay.record.response;
      expect(stored?.status).toBe(202);
      expect(stored?.headers).toEqual(response.headers);
      expect(stored?.body).toBeInstanceOf(Uint8Array);
      expect(Array.from(stored?.body ?? [])).toEqual([0x7b, 0x00, 0xff, 0x0a, 0xc3, 0x28, 0x7d]);
    });

    it('stores an empty body', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      await store.completeIdempotencyKey(
        'org_a',
        'key-1',
        { status: 204, headers: [], body: new Uint8Array(0) },
        'hash-final',
      );
      const replay = await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      expect(replay.kind === 'existing' ? replay.record.response : undefined).toMatchObject({
        status: 204,
        headers: [],
      });
      expect(replay.kind === 'existing' ? replay.record.response?.body.byteLength : undefined).toBe(
        0,
      );
    });

    it('releases an in-flight claim so a corrected retry can claim it', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      await store.releaseIdempotencyKey('org_a', 'key-1');
      expect(await store.claimIdempotencyKey(claimOf('org_a', 'key-1'))).toEqual({
        kind: 'claimed',
      });
      await store.releaseIdempotencyKey('org_a', 'key-missing');
    });

    it('never releases a completed record', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      await store.completeIdempotencyKey('org_a', 'key-1', storedResponse(), 'hash-final');
      await store.releaseIdempotencyKey('org_a', 'key-1');
      const again = await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      expect(again.kind === 'existing' ? again.record.state : again.kind).toBe('completed');
    });

    it('keeps keys per organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      expect((await store.claimIdempotencyKey(claimOf('org_a', 'shared'))).kind).toBe('claimed');
      expect((await store.claimIdempotencyKey(claimOf('org_b', 'shared'))).kind).toBe('claimed');
      await store.completeIdempotencyKey('org_a', 'shared', storedResponse(), 'hash-final');
      await store.releaseIdempotencyKey('org_a', 'shared');
      const b = await store.claimIdempotencyKey(claimOf('org_b', 'shared'));
      expect(b.kind === 'existing' ? b.record : undefined).toMatchObject({
        organisationId: 'org_b',
        state: 'in_flight',
        response: null,
      });
      await store.releaseIdempotencyKey('org_b', 'shared');
      const a = await store.claimIdempotencyKey(claimOf('org_a', 'shared'));
      expect(a.kind === 'existing' ? a.record.state : a.kind).toBe('completed');
    });

    it('treats an expired record as absent: a new claim replaces it', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      await store.completeIdempotencyKey('org_a', 'key-1', storedResponse(), 'hash-final');
      const before = await store.claimIdempotencyKey(
        claimOf('org_a', 'key-1', after(T0, DAY_MS - 1)),
      );
      expect(before.kind).toBe('existing');

      const renewed = {
        ...claimOf('org_a', 'key-1', after(T0, DAY_MS)),
        endpoint: 'POST /v1/uploads',
      };
      expect(await store.claimIdempotencyKey(renewed)).toEqual({ kind: 'claimed' });
      expect(await store.claimIdempotencyKey(claimOf('org_a', 'key-1', after(T0, DAY_MS)))).toEqual(
        { kind: 'existing', record: { ...renewed, state: 'in_flight', response: null } },
      );
    });

    it('purges expired records and counts them', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'old-1'));
      await store.claimIdempotencyKey(claimOf('org_a', 'old-2', after(T0, MINUTE_MS)));
      await store.completeIdempotencyKey('org_a', 'old-2', storedResponse(), 'hash-final');
      await store.claimIdempotencyKey(claimOf('org_a', 'young', after(T0, HOUR_MS)));

      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS - 1))).toBe(0);
      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS + MINUTE_MS))).toBe(2);
      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS + MINUTE_MS))).toBe(0);
      // Gone: claimable again even before the old expiry would have mattered.
      expect((await store.claimIdempotencyKey(claimOf('org_a', 'old-1'))).kind).toBe('claimed');
      expect((await store.claimIdempotencyKey(claimOf('org_a', 'young'))).kind).toBe('existing');
    });

    it('gives a key to exactly one of concurrent claims', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const stores = await context.contenders();
      const claims = await inParallel(stores, 20, (contender, index) =>
        contender.claimIdempotencyKey({
          ...claimOf('org_a', 'key-1'),
          requestHash: `request-${index}`,
        }),
      );
      const kinds = claims.map((claim) => claim.kind);
      expect(countOf(kinds, 'claimed')).toBe(1);
      expect(countOf(kinds, 'existing')).toBe(19);
      const winner = kinds.indexOf('claimed');
      for (const claim of claims) {
        if (claim.kind === 'existing') expect(claim.record.requestHash).toBe(`request-${winner}`);
      }
    });
  });
}
