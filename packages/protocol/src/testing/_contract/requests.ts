import { describe, expect, it } from 'vitest';

import { IDEMPOTENCY_LEASE_MS } from '../../domain/idempotency.ts';
import type {
  IdempotencyClaim,
  IdempotencyClaimRequest,
  IdempotencyHold,
  IdempotencyRecord,
  StoredResponse,
} from '../../ports.ts';
import {
  after,
  countOf,
  createOrg,
  DAY_MS,
  HOUR_MS,
  inParallel,
  MINUTE_MS,
  SECOND_MS,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

/** A claim of `key` by the request `owner` (in the process `process-1`) at `at`. */
function claimOf(
  organisationId: string,
  key: string,
  at: Date = T0,
  extra: Partial<IdempotencyClaimRequest> = {},
): IdempotencyClaimRequest {
  return {
    organisationId,
    key,
    endpoint: 'POST /v1/documents',
    owner: `owner-of-${key}`,
    ownerProcess: 'process-1',
    at,
    ...extra,
  };
}

/** The record a fresh claim of `request` stores. */
function freshRecord(request: IdempotencyClaimRequest): IdempotencyRecord {
  return {
    organisationId: request.organisationId,
    key: request.key,
    endpoint: request.endpoint,
    requestHash: '',
    state: 'in_flight',
    createdAt: request.at,
    expiresAt: after(request.at, DAY_MS),
    response: null,
    owner: request.owner,
    ownerProcess: request.ownerProcess,
    heldUntil: after(request.at, IDEMPOTENCY_LEASE_MS),
    resourceId: null,
  };
}

/** The hold of `request`'s owner. */
function holdOf(request: IdempotencyClaimRequest): IdempotencyHold {
  return { organisationId: request.organisationId, key: request.key, owner: request.owner };
}

/** Narrows a claim to `claimed`, failing the test otherwise. */
function expectClaimed(claim: IdempotencyClaim): IdempotencyRecord {
  expect(claim.kind).toBe('claimed');
  if (claim.kind !== 'claimed') throw new Error(`expected claimed, got ${claim.kind}`);
  return claim.record;
}

/** Narrows a claim to `existing`, failing the test otherwise. */
function expectExisting(claim: IdempotencyClaim): IdempotencyRecord {
  expect(claim.kind).toBe('existing');
  if (claim.kind !== 'existing') throw new Error(`expected existing, got ${claim.kind}`);
  return claim.record;
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
    it('claims a fresh key and returns the held record to a second claim', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      expect(await store.claimIdempotencyKey(claim)).toEqual({
        kind: 'claimed',
        record: freshRecord(claim),
      });
      const second = await store.claimIdempotencyKey(
        claimOf('org_a', 'key-1', after(T0, SECOND_MS), {
          endpoint: 'POST /v1/uploads',
          owner: 'another-request',
        }),
      );
      expect(second).toEqual({ kind: 'existing', record: freshRecord(claim) });
    });

    it('stores the response and replays it byte for byte', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      const response = storedResponse();
      expect(await store.completeIdempotencyKey(holdOf(claim), response, 'hash-final')).toBe(true);
      const replay = expectExisting(
        await store.claimIdempotencyKey(
          claimOf('org_a', 'key-1', after(T0, HOUR_MS), { owner: 'retry' }),
        ),
      );
      expect(replay).toMatchObject({
        ...freshRecord(claim),
        state: 'completed',
        requestHash: 'hash-final',
        // Answered: nobody holds it any more.
        heldUntil: null,
        response: expect.anything() as unknown,
      });
      const stored = replay.response;
      expect(stored?.status).toBe(202);
      expect(stored?.headers).toEqual(response.headers);
      expect(stored?.body).toBeInstanceOf(Uint8Array);
      expect(Array.from(stored?.body ?? [])).toEqual([0x7b, 0x00, 0xff, 0x0a, 0xc3, 0x28, 0x7d]);
    });

    it('stores an empty body', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      await store.completeIdempotencyKey(
        holdOf(claim),
        { status: 204, headers: [], body: new Uint8Array(0) },
        'hash-final',
      );
      const replay = expectExisting(await store.claimIdempotencyKey(claimOf('org_a', 'key-1')));
      expect(replay.response).toMatchObject({ status: 204, headers: [] });
      expect(replay.response?.body.byteLength).toBe(0);
    });

    it('releases a claim that created nothing, so a corrected retry can claim it', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      await store.releaseIdempotencyKey(holdOf(claim));
      const retry = claimOf('org_a', 'key-1', T0, { owner: 'retry' });
      expect(await store.claimIdempotencyKey(retry)).toEqual({
        kind: 'claimed',
        record: freshRecord(retry),
      });
      await store.releaseIdempotencyKey({
        organisationId: 'org_a',
        key: 'key-missing',
        owner: 'x',
      });
    });

    it('never releases a completed record', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      await store.completeIdempotencyKey(holdOf(claim), storedResponse(), 'hash-final');
      await store.releaseIdempotencyKey(holdOf(claim));
      const again = expectExisting(
        await store.claimIdempotencyKey(claimOf('org_a', 'key-1', T0, { owner: 'retry' })),
      );
      expect(again.state).toBe('completed');
    });

    it('keeps keys per organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      const a = claimOf('org_a', 'shared', T0, { owner: 'request-a' });
      const b = claimOf('org_b', 'shared', T0, { owner: 'request-b' });
      expectClaimed(await store.claimIdempotencyKey(a));
      expectClaimed(await store.claimIdempotencyKey(b));
      // The owner of one organisation's claim can do nothing to the other's.
      expect(
        await store.completeIdempotencyKey(
          { ...holdOf(b), organisationId: 'org_a' },
          storedResponse(),
          'h',
        ),
      ).toBe(false);
      await store.completeIdempotencyKey(holdOf(a), storedResponse(), 'hash-final');
      await store.releaseIdempotencyKey({ ...holdOf(b), organisationId: 'org_a' });
      expect(
        expectExisting(await store.claimIdempotencyKey(claimOf('org_b', 'shared'))),
      ).toMatchObject({ organisationId: 'org_b', state: 'in_flight', response: null });
      await store.releaseIdempotencyKey(holdOf(b));
      expect(
        expectExisting(await store.claimIdempotencyKey(claimOf('org_a', 'shared'))).state,
      ).toBe('completed');
    });

    it('treats an expired record as absent: a new claim replaces it', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(claim);
      await store.completeIdempotencyKey(holdOf(claim), storedResponse(), 'hash-final');
      expect(
        (await store.claimIdempotencyKey(claimOf('org_a', 'key-1', after(T0, DAY_MS - 1)))).kind,
      ).toBe('existing');

      const renewed = claimOf('org_a', 'key-1', after(T0, DAY_MS), {
        endpoint: 'POST /v1/uploads',
        owner: 'next-day',
      });
      expect(await store.claimIdempotencyKey(renewed)).toEqual({
        kind: 'claimed',
        record: freshRecord(renewed),
      });
      expect(await store.claimIdempotencyKey(claimOf('org_a', 'key-1', after(T0, DAY_MS)))).toEqual(
        { kind: 'existing', record: freshRecord(renewed) },
      );
    });

    it('purges expired records and counts them', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'old-1'));
      const old2 = claimOf('org_a', 'old-2', after(T0, MINUTE_MS));
      await store.claimIdempotencyKey(old2);
      await store.completeIdempotencyKey(holdOf(old2), storedResponse(), 'hash-final');
      await store.claimIdempotencyKey(claimOf('org_a', 'young', after(T0, HOUR_MS)));

      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS - 1))).toBe(0);
      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS + MINUTE_MS))).toBe(2);
      expect(await store.purgeIdempotencyKeys(after(T0, DAY_MS + MINUTE_MS))).toBe(0);
      // Gone: claimable again even before the old expiry would have mattered.
      expect((await store.claimIdempotencyKey(claimOf('org_a', 'old-1'))).kind).toBe('claimed');
      expect(
        (await store.claimIdempotencyKey(claimOf('org_a', 'young', after(T0, HOUR_MS)))).kind,
      ).toBe('existing');
    });

    it('gives a key to exactly one of concurrent claims', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const stores = await context.contenders();
      const claims = await inParallel(stores, 20, (contender, index) =>
        contender.claimIdempotencyKey(claimOf('org_a', 'key-1', T0, { owner: `request-${index}` })),
      );
      const kinds = claims.map((claim) => claim.kind);
      expect(countOf(kinds, 'claimed')).toBe(1);
      expect(countOf(kinds, 'existing')).toBe(19);
      const winner = kinds.indexOf('claimed');
      for (const claim of claims) expect(claim.record.owner).toBe(`request-${winner}`);
    });
  });

  describe('idempotency claims of live requests', () => {
    it('holds a claim while its lease runs and frees it when the lease lapses', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const first = claimOf('org_a', 'key-1', T0, { owner: 'first' });
      await store.claimIdempotencyKey(first);
      const justBefore = after(T0, IDEMPOTENCY_LEASE_MS - 1);
      expect(
        (await store.claimIdempotencyKey(claimOf('org_a', 'key-1', justBefore, { owner: 'r1' })))
          .kind,
      ).toBe('existing');
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS);
      const retry = claimOf('org_a', 'key-1', lapsed, {
        owner: 'retry',
        ownerProcess: 'process-2',
      });
      expect(expectClaimed(await store.claimIdempotencyKey(retry))).toEqual({
        ...freshRecord(first),
        owner: 'retry',
        ownerProcess: 'process-2',
        heldUntil: after(lapsed, IDEMPOTENCY_LEASE_MS),
      });
      // The first request lost it: it can neither renew, complete nor release it.
      expect(await store.renewIdempotencyKey(holdOf(first), lapsed)).toBe(false);
      expect(await store.completeIdempotencyKey(holdOf(first), storedResponse(), 'h')).toBe(false);
      await store.releaseIdempotencyKey(holdOf(first));
      expect(
        expectExisting(await store.claimIdempotencyKey(claimOf('org_a', 'key-1', lapsed))),
      ).toMatchObject({ owner: 'retry', state: 'in_flight' });
      expect(await store.completeIdempotencyKey(holdOf(retry), storedResponse(), 'h')).toBe(true);
    });

    it('keeps a renewed claim held past its first lease', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const first = claimOf('org_a', 'key-1');
      await store.claimIdempotencyKey(first);
      const renewedAt = after(T0, IDEMPOTENCY_LEASE_MS - SECOND_MS);
      expect(await store.renewIdempotencyKey(holdOf(first), renewedAt)).toBe(true);
      const later = after(T0, IDEMPOTENCY_LEASE_MS + SECOND_MS);
      expect(
        expectExisting(
          await store.claimIdempotencyKey(claimOf('org_a', 'key-1', later, { owner: 'retry' })),
        ),
      ).toMatchObject({ owner: first.owner, heldUntil: after(renewedAt, IDEMPOTENCY_LEASE_MS) });
      expect(
        await store.renewIdempotencyKey({ ...holdOf(first), owner: 'someone-else' }, later),
      ).toBe(false);
      expect(await store.renewIdempotencyKey({ ...holdOf(first), key: 'key-missing' }, later)).toBe(
        false,
      );
    });

    it('takes over a claim whose owner the caller found gone, even while its lease runs', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const first = claimOf('org_a', 'key-1', T0, { owner: 'first' });
      await store.claimIdempotencyKey(first);
      const at = after(T0, SECOND_MS);
      // A stale name (another owner) takes nothing over.
      expect(
        (
          await store.claimIdempotencyKey(
            claimOf('org_a', 'key-1', at, { owner: 'r1', replacing: 'somebody-else' }),
          )
        ).kind,
      ).toBe('existing');
      const retry = claimOf('org_a', 'key-1', at, { owner: 'retry', replacing: 'first' });
      expect(expectClaimed(await store.claimIdempotencyKey(retry))).toMatchObject({
        owner: 'retry',
        heldUntil: after(at, IDEMPOTENCY_LEASE_MS),
        createdAt: T0,
      });
      // Naming the gone owner again does not take the key from the live retry.
      expect(
        (
          await store.claimIdempotencyKey(
            claimOf('org_a', 'key-1', at, { owner: 'r2', replacing: 'first' }),
          )
        ).kind,
      ).toBe('existing');
    });

    it('never takes over a completed record or a claim on another endpoint', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const done = claimOf('org_a', 'done');
      await store.claimIdempotencyKey(done);
      await store.completeIdempotencyKey(holdOf(done), storedResponse(), 'h');
      const uploads = claimOf('org_a', 'uploads', T0, { endpoint: 'POST /v1/uploads' });
      await store.claimIdempotencyKey(uploads);
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS + MINUTE_MS);
      expect(
        expectExisting(
          await store.claimIdempotencyKey(
            claimOf('org_a', 'done', lapsed, { owner: 'retry', replacing: done.owner }),
          ),
        ).state,
      ).toBe('completed');
      expect(
        expectExisting(
          await store.claimIdempotencyKey(claimOf('org_a', 'uploads', lapsed, { owner: 'retry' })),
        ).endpoint,
      ).toBe('POST /v1/uploads');
    });

    it('gives a lapsed claim to exactly one of concurrent retries', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await store.claimIdempotencyKey(claimOf('org_a', 'key-1'));
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS);
      const stores = await context.contenders();
      const claims = await inParallel(stores, 16, (contender, index) =>
        contender.claimIdempotencyKey(
          claimOf('org_a', 'key-1', lapsed, { owner: `retry-${index}` }),
        ),
      );
      const kinds = claims.map((claim) => claim.kind);
      expect(countOf(kinds, 'claimed')).toBe(1);
      const winner = kinds.indexOf('claimed');
      for (const claim of claims) expect(claim.record.owner).toBe(`retry-${winner}`);
    });
  });
}
