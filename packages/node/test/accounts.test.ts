/**
 * Accounts, money and abuse controls against a real `disarm serve` (loopback): the meter, the
 * usage headers, rate limits and idempotency — and the books checked after concurrent bursts.
 * Every response is validated against the served OpenAPI document.
 */
import { buildImage } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createClient, multipart } from './conformance/_harness.ts';
import type { Client, ConformanceTarget, Envelope, Problem } from './conformance/_harness.ts';
import { loopbackTarget } from './conformance/_targets.ts';

const MINUTE_MS = 60_000;

describe('accounts, money and abuse controls (real server)', () => {
  let target: ConformanceTarget;
  let client: Client;
  let png: Uint8Array<ArrayBuffer>;

  beforeAll(async () => {
    // No processing: the books are about acceptance, and documents stay put for inspection.
    target = await loopbackTarget({ processing: false });
    client = await createClient(target);
    png = new Uint8Array(await buildImage('png', { width: 8, height: 8 }));
  });

  afterAll(async () => {
    await target.stop();
  });

  const submit = (
    key: string,
    headers: Record<string, string> = {},
    name = 'a.png',
  ): Promise<Response> =>
    client.api('/v1/documents', {
      method: 'POST',
      headers: { 'X-Api-Key': key, ...headers },
      body: multipart({ name, bytes: png }),
    });

  const createUpload = (key: string, headers: Record<string, string> = {}): Promise<Response> =>
    client.api('/v1/uploads', {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({ fileName: 'big.pdf' }),
    });

  async function account(key: string): Promise<Record<string, number | string | null>> {
    return (await (
      await client.api('/v1/account', { headers: { 'X-Api-Key': key } })
    ).json()) as Record<string, number | string | null>;
  }

  describe('the meter', () => {
    it('charges pay-as-you-go credit per accepted document, with the post-charge balance in the header', async () => {
      const org = await client.newOrganisation({
        plan: 'payg',
        creditPence: 25,
        terms: { pricePerDocumentPence: 10 },
      });
      const first = await submit(org.key);
      expect(first.status).toBe(202);
      expect(first.headers.get('X-CDR-Credit-Balance-Pence')).toBe('15');
      expect(first.headers.get('X-CDR-Usage-Used')).toBeNull();
      expect((await submit(org.key)).headers.get('X-CDR-Credit-Balance-Pence')).toBe('5');
      const refused = await submit(org.key);
      expect(refused.status).toBe(402);
      expect(refused.headers.get('X-CDR-Credit-Balance-Pence')).toBe('5');
      expect(await refused.json()).toMatchObject({
        code: 'InsufficientCredit',
        balancePence: 5,
        pricePerDocumentPence: 10,
      });
      expect(await account(org.key)).toMatchObject({
        creditBalancePence: 5,
        periodUsedSubmissions: 2,
      });
    });

    it('uses the tier allowance, reports it in the usage headers, and resets at the period end', async () => {
      const org = await client.newOrganisation({ plan: 'starter', terms: { monthlyAllowance: 2 } });
      const first = await submit(org.key);
      expect([
        first.headers.get('X-CDR-Usage-Used'),
        first.headers.get('X-CDR-Usage-Allowance'),
        first.headers.get('X-CDR-Usage-Remaining'),
      ]).toEqual(['1', '2', '1']);
      expect((await submit(org.key)).headers.get('X-CDR-Usage-Remaining')).toBe('0');
      const refused = await submit(org.key);
      expect(refused.status).toBe(429);
      const problem = (await refused.json()) as Problem;
      expect(problem.code).toBe('QuotaExceeded');
      const periodEnd = Date.parse(String(problem.periodEnd));
      const retryAfter = Number(refused.headers.get('Retry-After'));
      const snapshot = await account(org.key);
      expect(snapshot).toMatchObject({ periodUsedSubmissions: 2, periodRemainingSubmissions: 0 });
      expect(periodEnd).toBe(Date.parse(String(snapshot.periodEnd)));
      expect(retryAfter).toBeGreaterThan(0);
      // The allowance comes back when the period rolls over.
      await target.advanceClock(retryAfter * 1000 + 1000);
      const renewed = await submit(org.key);
      expect(renewed.status).toBe(202);
      expect(renewed.headers.get('X-CDR-Usage-Used')).toBe('1');
      expect(Date.parse(String((await account(org.key)).periodStart))).toBe(periodEnd);
    });

    it('refuses uploads up front when the account could not submit, and bills nothing until submit', async () => {
      const broke = await client.newOrganisation({ plan: 'payg', creditPence: 0 });
      expect((await createUpload(broke.key)).status).toBe(402);
      const suspended = await client.newOrganisation({ plan: 'growth' });
      await client.admin('PATCH', `/v1/admin/organisations/${suspended.id}`, {
        status: 'suspended',
      });
      expect((await createUpload(suspended.key)).status).toBe(403);
      const quota = await client.newOrganisation({
        plan: 'starter',
        terms: { monthlyAllowance: 1 },
      });
      expect((await submit(quota.key)).status).toBe(202);
      expect(((await (await createUpload(quota.key)).json()) as Problem).code).toBe(
        'QuotaExceeded',
      );
      const payg = await client.newOrganisation({
        plan: 'payg',
        creditPence: 10,
        terms: { pricePerDocumentPence: 10 },
      });
      const upload = await createUpload(payg.key);
      expect(upload.status).toBe(201);
      expect(upload.headers.get('X-CDR-Credit-Balance-Pence')).toBe('10');
      expect(await account(payg.key)).toMatchObject({
        creditBalancePence: 10,
        periodUsedSubmissions: 0,
      });
    });
  });

  describe('proof under contention', () => {
    it('N parallel submissions against credit for k documents accept exactly k and leave the balance at zero', async () => {
      const k = 7;
      const org = await client.newOrganisation({
        plan: 'payg',
        creditPence: k * 3,
        terms: { pricePerDocumentPence: 3, rateLimitPerMinute: 1000 },
      });
      const responses = await Promise.all(Array.from({ length: 25 }, () => submit(org.key)));
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 202)).toHaveLength(k);
      expect(statuses.filter((status) => status === 402)).toHaveLength(25 - k);
      const balances = responses
        .filter((response) => response.status === 202)
        .map((response) => Number(response.headers.get('X-CDR-Credit-Balance-Pence')))
        .sort((a, b) => a - b);
      expect(balances).toEqual(Array.from({ length: k }, (_, i) => i * 3));
      expect(await account(org.key)).toMatchObject({
        creditBalancePence: 0,
        periodUsedSubmissions: k,
      });
    });

    it('parallel retries of one idempotency key produce one document', async () => {
      const org = await client.newOrganisation({
        plan: 'internal',
        terms: { rateLimitPerMinute: 1000 },
      });
      const send = (): Promise<Response> =>
        client.api('/v1/documents?filename=same.png', {
          method: 'POST',
          headers: {
            'X-Api-Key': org.key,
            'Content-Type': 'application/octet-stream',
            'Idempotency-Key': 'order-42',
          },
          body: png,
        });
      const burst = await Promise.all(Array.from({ length: 10 }, send));
      const later = await Promise.all(Array.from({ length: 5 }, send));
      for (const response of [...burst, ...later]) expect([202, 409]).toContain(response.status);
      const accepted = [...burst, ...later].filter((response) => response.status === 202);
      const ids = new Set(
        await Promise.all(
          accepted.map(async (response) => ((await response.json()) as Envelope).id),
        ),
      );
      expect(ids.size).toBe(1);
      expect(
        later.every(
          (response) =>
            response.status === 202 && response.headers.get('Idempotency-Replayed') === 'true',
        ),
      ).toBe(true);
      expect(await account(org.key)).toMatchObject({ periodUsedSubmissions: 1 });
    });

    it('a burst over the rate limit gets exactly the allowed number through in the window', async () => {
      const org = await client.newOrganisation({
        plan: 'starter',
        terms: { rateLimitPerMinute: 5 },
      });
      const responses = await Promise.all(Array.from({ length: 12 }, () => createUpload(org.key)));
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 201)).toHaveLength(5);
      const limited = responses.filter((response) => response.status === 429);
      expect(limited).toHaveLength(7);
      for (const response of limited) {
        expect(((await response.json()) as Problem).code).toBe('RateLimited');
        expect(Number(response.headers.get('Retry-After'))).toBeGreaterThan(0);
        expect(response.headers.get('RateLimit')).toMatch(/r=0/);
      }
      expect(responses[0]?.headers.get('RateLimit-Policy')).toBe('"submissions";q=5;w=60');
      // Submissions and uploads share the budget; status reads have their own, ten times larger.
      expect((await submit(org.key)).status).toBe(429);
      const reads = await Promise.all(
        Array.from({ length: 50 }, () =>
          client.api('/v1/account', { headers: { 'X-Api-Key': org.key } }),
        ),
      );
      expect(reads.every((response) => response.status === 200)).toBe(true);
      expect((await client.api('/v1/account', { headers: { 'X-Api-Key': org.key } })).status).toBe(
        429,
      );
      await target.advanceClock(MINUTE_MS);
      expect((await createUpload(org.key)).status).toBe(201);
    });

    it('a new per-minute limit set through the admin API counts from the next request', async () => {
      const org = await client.newOrganisation({
        plan: 'starter',
        terms: { rateLimitPerMinute: 2 },
      });
      expect((await createUpload(org.key)).status).toBe(201);
      expect((await createUpload(org.key)).status).toBe(201);
      expect((await createUpload(org.key)).status).toBe(429);
      const patched = await client.admin('PATCH', `/v1/admin/organisations/${org.id}`, {
        terms: { rateLimitPerMinute: 4 },
      });
      expect(patched.status).toBe(200);
      // Three hits so far in this window; the fourth is within the new limit, the fifth is not.
      const fourth = await createUpload(org.key);
      expect(fourth.status).toBe(201);
      expect(fourth.headers.get('RateLimit-Policy')).toBe('"submissions";q=4;w=60');
      expect((await createUpload(org.key)).status).toBe(429);
    });

    it('a revoked key is refused at once, on every request after the revocation', async () => {
      const org = await client.newOrganisation({ plan: 'internal' });
      expect((await client.api('/v1/account', { headers: { 'X-Api-Key': org.key } })).status).toBe(
        200,
      );
      const keys = (await (
        await client.admin('GET', `/v1/admin/organisations/${org.id}/keys`)
      ).json()) as { keys: { id: string }[] };
      await client.admin(
        'DELETE',
        `/v1/admin/organisations/${org.id}/keys/${keys.keys[0]?.id ?? ''}`,
      );
      expect((await client.api('/v1/account', { headers: { 'X-Api-Key': org.key } })).status).toBe(
        401,
      );
      expect((await submit(org.key)).status).toBe(401);
    });
  });

  describe('idempotency', () => {
    const rawSubmit = (
      key: string,
      idempotencyKey: string,
      body: Uint8Array<ArrayBuffer>,
      path = '/v1/documents?filename=a.png',
    ): Promise<Response> =>
      client.api(path, {
        method: 'POST',
        headers: {
          'X-Api-Key': key,
          'Content-Type': 'application/octet-stream',
          'Idempotency-Key': idempotencyKey,
        },
        body,
      });

    it('replays the first response byte for byte, never processing or billing twice', async () => {
      const org = await client.newOrganisation({
        plan: 'payg',
        creditPence: 100,
        terms: { pricePerDocumentPence: 10 },
      });
      const first = await rawSubmit(org.key, 'k-1', png);
      expect(first.status).toBe(202);
      const firstBody = await first.text();
      const retry = await rawSubmit(org.key, 'k-1', png);
      expect(retry.status).toBe(202);
      expect(retry.headers.get('Idempotency-Replayed')).toBe('true');
      expect(await retry.text()).toBe(firstBody);
      expect(retry.headers.get('Location')).toBe(first.headers.get('Location'));
      expect(retry.headers.get('X-CDR-Credit-Balance-Pence')).toBe('90');
      expect(first.headers.get('Idempotency-Replayed')).toBeNull();
      expect(await account(org.key)).toMatchObject({
        creditBalancePence: 90,
        periodUsedSubmissions: 1,
      });
    });

    it('refuses the same key with a different body (422) and on another endpoint (422)', async () => {
      const org = await client.newOrganisation({ plan: 'internal' });
      expect((await rawSubmit(org.key, 'k-2', png)).status).toBe(202);
      const other = new Uint8Array([...png, 0]);
      const changed = await rawSubmit(org.key, 'k-2', other);
      expect(((await changed.json()) as Problem).code).toBe('IdempotencyKeyReused');
      expect(changed.status).toBe(422);
      const elsewhere = await createUpload(org.key, { 'Idempotency-Key': 'k-2' });
      expect(elsewhere.status).toBe(422);
      expect(((await elsewhere.json()) as Problem).code).toBe('IdempotencyKeyEndpointMismatch');
    });

    it('does not keep refusals that happened before any work, so a corrected retry goes through', async () => {
      const org = await client.newOrganisation({
        plan: 'payg',
        creditPence: 0,
        terms: { pricePerDocumentPence: 10 },
      });
      expect((await rawSubmit(org.key, 'k-3', png)).status).toBe(402);
      await client.admin('PATCH', `/v1/admin/organisations/${org.id}`, { creditDeltaPence: 10 });
      expect((await rawSubmit(org.key, 'k-3', png)).status).toBe(202);
      const invalid = await rawSubmit(org.key, 'k-4', png, '/v1/documents?filename=a.txt');
      expect(invalid.status).toBe(400);
      await client.admin('PATCH', `/v1/admin/organisations/${org.id}`, { creditDeltaPence: 10 });
      expect((await rawSubmit(org.key, 'k-4', png)).status).toBe(202);
    });

    it('scopes keys to the organisation and bounds them at 200 characters', async () => {
      const a = await client.newOrganisation({ plan: 'internal' });
      const b = await client.newOrganisation({ plan: 'internal' });
      const fromA = (await (await rawSubmit(a.key, 'shared', png)).json()) as Envelope;
      const fromB = (await (await rawSubmit(b.key, 'shared', png)).json()) as Envelope;
      expect(fromA.id).not.toBe(fromB.id);
      expect((await rawSubmit(a.key, 'x'.repeat(201), png)).status).toBe(400);
      expect((await rawSubmit(a.key, 'x'.repeat(200), png)).status).toBe(202);
    });

    it('answers a concurrent duplicate with 409 while the first is still running', async () => {
      const org = await client.newOrganisation({ plan: 'internal' });
      const slow = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(png.subarray(0, 10));
          // Held open long enough that the duplicate surely overlaps it, however slow the host.
          await new Promise((resolve) => setTimeout(resolve, 2_000));
          controller.enqueue(png.subarray(10));
          controller.close();
        },
      });
      const first = client.api('/v1/documents?filename=a.png', {
        method: 'POST',
        headers: {
          'X-Api-Key': org.key,
          'Content-Type': 'application/octet-stream',
          'Content-Length': String(png.length),
          'Idempotency-Key': 'k-5',
        },
        body: slow,
        duplex: 'half',
      } as RequestInit);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const duplicate = await rawSubmit(org.key, 'k-5', png);
      const firstResponse = await first;
      // Whichever claimed the key first is processed; the other meets it in flight.
      const [winner, loser] = [firstResponse, duplicate].sort((a, b) => a.status - b.status);
      expect([winner?.status, loser?.status]).toEqual([202, 409]);
      expect(((await loser?.json()) as Problem).code).toBe('IdempotencyKeyInFlight');
    });
  });

  describe('content policy per organisation', () => {
    it('is set through the admin API and a rejection by policy is billed', async () => {
      const active = await loopbackTarget({ processing: true });
      try {
        const activeClient = await createClient(active);
        const org = await activeClient.newOrganisation({
          plan: 'payg',
          creditPence: 10,
          terms: { pricePerDocumentPence: 10 },
        });
        await activeClient.admin('PATCH', `/v1/admin/organisations/${org.id}`, {
          policy: { 'image-metadata': 'reject' },
        });
        const exif = new Uint8Array(await buildImage('jpeg', { exif: { Artist: 'x' } }));
        const response = await activeClient.api('/v1/documents?wait=true', {
          method: 'POST',
          headers: { 'X-Api-Key': org.key },
          body: multipart({ name: 'photo.jpg', bytes: exif }),
        });
        expect(await response.json()).toMatchObject({
          status: 'rejected',
          reason: 'policy_violation',
        });
        const snapshot = (await (
          await activeClient.api('/v1/account', { headers: { 'X-Api-Key': org.key } })
        ).json()) as Record<string, number>;
        expect(snapshot).toMatchObject({ creditBalancePence: 0, periodUsedSubmissions: 1 });
      } finally {
        await active.stop();
      }
    });
  });
});
