import { describe, expect, it } from 'vitest';

import type { StateStore } from '../../ports.ts';
import { IDEMPOTENCY_LEASE_MS } from '../../domain/idempotency.ts';
import {
  accept,
  after,
  claimKey,
  countOf,
  createOrg,
  DAY_MS,
  defined,
  expectAccepted,
  inParallel,
  MINUTE_MS,
  newDocument,
  newUpload,
  PAYG_PRICE_PENCE,
  SECOND_MS,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

const UPLOAD_BYTES = 200 * 1024 * 1024;

/** Creates `id` for `organisationId` and records its PUT of {@link UPLOAD_BYTES}. */
async function uploaded(
  store: StateStore,
  organisationId: string,
  id: string,
  sizeBytes = UPLOAD_BYTES,
): Promise<void> {
  await store.createUpload(newUpload(organisationId, id));
  expect(await store.markUploaded(id, sizeBytes, after(T0, MINUTE_MS))).toBe(true);
}

/** acceptDocument, checkCanSubmit, getDocument and the upload records. */
export function describeSubmissions(context: ContractContext): void {
  describe('acceptDocument', () => {
    it('creates a pending document and uses one unit of a tier allowance', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { creditBalancePence: 70 });
      const input = newDocument('org_a', 'doc_1', {
        lane: 'raw',
        fileName: 'letter.docx',
        sizeBytes: 4_321,
        deleteAfterDownload: true,
        statusStyle202: true,
      });
      const result = expectAccepted(await store.acceptDocument(input, T0));
      const expected = {
        id: 'doc_1',
        organisationId: 'org_a',
        status: 'pending',
        lane: 'raw',
        fileName: 'letter.docx',
        sizeBytes: 4_321,
        deleteAfterDownload: true,
        statusStyle202: true,
        intakeKey: 'intake/doc_1',
        submittedAt: T0,
        startedAt: null,
        completedAt: null,
        output: null,
        reason: null,
        threatNames: [],
        detail: null,
        reasonDetail: null,
        downloadExpiresAt: null,
        firstDownloadAt: null,
        deletedAt: null,
        outputRemovedAt: null,
        chargedPence: 0,
        countedInAllowance: true,
        attempts: 0,
      };
      expect(result.document).toEqual(expected);
      expect(result.organisation).toMatchObject({
        periodUsedSubmissions: 1,
        creditBalancePence: 70,
      });
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(expected);
      expect(await store.getOrganisation('org_a', T0)).toEqual(result.organisation);
    });

    it('charges pay-as-you-go credit and records the charge on the document', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 25 });
      const price = PAYG_PRICE_PENCE;
      const first = expectAccepted(await store.acceptDocument(newDocument('org_a', 'doc_1'), T0));
      expect(first.document).toMatchObject({ chargedPence: price, countedInAllowance: false });
      expect(first.organisation).toMatchObject({
        creditBalancePence: 25 - price,
        periodUsedSubmissions: 1,
      });
      const second = expectAccepted(await store.acceptDocument(newDocument('org_a', 'doc_2'), T0));
      expect(second.organisation.creditBalancePence).toBe(25 - 2 * price);

      const refused = await store.acceptDocument(newDocument('org_a', 'doc_3'), T0);
      expect(refused).toMatchObject({
        kind: 'insufficient_credit',
        balancePence: 25 - 2 * price,
        pricePence: price,
        organisation: { id: 'org_a', creditBalancePence: 25 - 2 * price },
      });
      expect(await store.getDocument('org_a', 'doc_3')).toBeUndefined();
      expect(await store.getOrganisation('org_a', T0)).toMatchObject({
        creditBalancePence: 25 - 2 * price,
        periodUsedSubmissions: 2,
      });
    });

    it('accepts pay-as-you-go with exactly the price left, using the organisation’s own price', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', {
        creditBalancePence: 40,
        terms: { pricePerDocumentPence: 40 },
      });
      const result = expectAccepted(await store.acceptDocument(newDocument('org_a', 'doc_1'), T0));
      expect(result.document.chargedPence).toBe(40);
      expect(result.organisation.creditBalancePence).toBe(0);
    });

    it('meters internal organisations without charging', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'internal', { creditBalancePence: 5 });
      const result = expectAccepted(await store.acceptDocument(newDocument('org_a', 'doc_1'), T0));
      expect(result.document).toMatchObject({ chargedPence: 0, countedInAllowance: false });
      expect(result.organisation).toMatchObject({
        creditBalancePence: 5,
        periodUsedSubmissions: 1,
      });
    });

    it('refuses once the tier allowance is used up', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: 2 } });
      await accept(store, newDocument('org_a', 'doc_1'));
      await accept(store, newDocument('org_a', 'doc_2'));
      const refused = await store.acceptDocument(newDocument('org_a', 'doc_3'), T0);
      expect(refused).toMatchObject({
        kind: 'quota_exceeded',
        organisation: { id: 'org_a', periodUsedSubmissions: 2, monthlyAllowance: 2 },
      });
      expect(await store.getDocument('org_a', 'doc_3')).toBeUndefined();
      expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(2);
    });

    it('refuses unknown and unprovisioned organisations first', async () => {
      const store = context.store();
      expect(await store.acceptDocument(newDocument('org_missing', 'doc_1'), T0)).toEqual({
        kind: 'not_provisioned',
      });
      // Not provisioned wins over suspended.
      await createOrg(store, 'org_a', null);
      await store.updateOrganisation('org_a', { status: 'suspended' }, T0);
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_1', { uploadId: 'upl_x' }), T0),
      ).toEqual({ kind: 'not_provisioned' });
      expect(await store.getDocument('org_a', 'doc_1')).toBeUndefined();
    });

    it('refuses a suspended organisation before looking at the upload or the meter', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 0 });
      await store.updateOrganisation('org_a', { status: 'suspended' }, T0);
      expect(await store.acceptDocument(newDocument('org_a', 'doc_1'), T0)).toEqual({
        kind: 'suspended',
      });
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_2', { uploadId: 'upl_x' }), T0),
      ).toEqual({ kind: 'suspended' });
    });

    it('checks the upload before the allowance and the credit', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: 0 } });
      await createOrg(store, 'org_b', 'payg', { creditBalancePence: 0 });
      await store.createUpload(newUpload('org_b', 'upl_1'));
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_1', { uploadId: 'upl_missing' }), T0),
      ).toEqual({ kind: 'upload_not_found' });
      expect(
        await store.acceptDocument(newDocument('org_b', 'doc_2', { uploadId: 'upl_1' }), T0),
      ).toEqual({ kind: 'upload_not_uploaded' });
    });

    describe('by reference', () => {
      it('consumes the upload: intake is the upload’s bytes, the upload records the document', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'growth');
        await uploaded(store, 'org_a', 'upl_1');
        const at = after(T0, 5 * MINUTE_MS);
        const result = expectAccepted(
          await store.acceptDocument(
            newDocument('org_a', 'doc_1', {
              lane: 'reference',
              uploadId: 'upl_1',
              fileName: 'ignored-by-reference.pdf',
              sizeBytes: UPLOAD_BYTES,
              intakeKey: 'ignored-by-reference',
            }),
            at,
          ),
        );
        expect(result.document).toMatchObject({
          id: 'doc_1',
          lane: 'reference',
          status: 'pending',
          intakeKey: 'uploads/upl_1',
          fileName: 'big.pdf',
          sizeBytes: UPLOAD_BYTES,
          submittedAt: at,
          countedInAllowance: true,
        });
        expect(result.organisation.periodUsedSubmissions).toBe(1);
        expect(await store.getUpload('org_a', 'upl_1')).toMatchObject({
          submittedAt: at,
          documentId: 'doc_1',
          uploadedAt: after(T0, MINUTE_MS),
          sizeBytes: UPLOAD_BYTES,
        });
      });

      it('refuses a second submission of one upload', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'growth');
        await uploaded(store, 'org_a', 'upl_1');
        await accept(store, newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }));
        expect(
          await store.acceptDocument(newDocument('org_a', 'doc_2', { uploadId: 'upl_1' }), T0),
        ).toEqual({ kind: 'upload_already_submitted' });
        expect(await store.getDocument('org_a', 'doc_2')).toBeUndefined();
        expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(1);
        expect((await store.getUpload('org_a', 'upl_1'))?.documentId).toBe('doc_1');
      });

      it('treats unknown, foreign and expired uploads as not found', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'growth');
        await createOrg(store, 'org_b', 'growth');
        await uploaded(store, 'org_b', 'upl_foreign');
        await uploaded(store, 'org_a', 'upl_1');
        const refused = { kind: 'upload_not_found' };
        expect(
          await store.acceptDocument(newDocument('org_a', 'doc_1', { uploadId: 'upl_none' }), T0),
        ).toEqual(refused);
        expect(
          await store.acceptDocument(
            newDocument('org_a', 'doc_1', { uploadId: 'upl_foreign' }),
            T0,
          ),
        ).toEqual(refused);
        // Submittable until expiresAt, exclusive.
        expect(
          await store.acceptDocument(
            newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }),
            after(T0, DAY_MS),
          ),
        ).toEqual(refused);
        expect((await store.getUpload('org_b', 'upl_foreign'))?.submittedAt).toBeNull();
        await accept(
          store,
          newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }),
          after(T0, DAY_MS - 1),
        );
      });

      it('refuses an upload whose bytes never arrived', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'growth');
        await store.createUpload(newUpload('org_a', 'upl_1'));
        expect(
          await store.acceptDocument(newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }), T0),
        ).toEqual({ kind: 'upload_not_uploaded' });
        expect((await store.getUpload('org_a', 'upl_1'))?.submittedAt).toBeNull();
      });

      it('refuses an upload over the organisation’s upload ceiling', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'starter', { terms: { maxUploadSizeBytes: 1_000 } });
        await uploaded(store, 'org_a', 'upl_big', 1_001);
        await uploaded(store, 'org_a', 'upl_fits', 1_000);
        expect(
          await store.acceptDocument(newDocument('org_a', 'doc_1', { uploadId: 'upl_big' }), T0),
        ).toEqual({ kind: 'upload_too_large', maxSizeBytes: 1_000 });
        expect((await store.getUpload('org_a', 'upl_big'))?.submittedAt).toBeNull();
        expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(0);
        await accept(store, newDocument('org_a', 'doc_2', { uploadId: 'upl_fits' }));
      });

      it('leaves the upload unconsumed when the meter refuses', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'payg', { creditBalancePence: 0 });
        await uploaded(store, 'org_a', 'upl_1');
        const refused = await store.acceptDocument(
          newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }),
          T0,
        );
        expect(refused.kind).toBe('insufficient_credit');
        expect((await store.getUpload('org_a', 'upl_1'))?.submittedAt).toBeNull();
        await store.updateOrganisation('org_a', { creditDeltaPence: 100 }, T0);
        await accept(store, newDocument('org_a', 'doc_1', { uploadId: 'upl_1' }));
      });
    });

    describe('under contention', () => {
      it('spends credit for exactly k documents and never goes below zero', async () => {
        const store = context.store();
        const price = PAYG_PRICE_PENCE;
        const k = 7;
        await createOrg(store, 'org_a', 'payg', { creditBalancePence: k * price });
        const stores = await context.contenders();
        const results = await inParallel(stores, 30, (contender, index) =>
          contender.acceptDocument(newDocument('org_a', `doc_${index}`), T0),
        );
        const kinds = results.map((result) => result.kind);
        expect(countOf(kinds, 'accepted')).toBe(k);
        expect(countOf(kinds, 'insufficient_credit')).toBe(30 - k);
        expect(await store.getOrganisation('org_a', T0)).toMatchObject({
          creditBalancePence: 0,
          periodUsedSubmissions: k,
        });
      });

      it('uses a tier allowance for exactly k documents', async () => {
        const store = context.store();
        const k = 9;
        await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: k } });
        const stores = await context.contenders();
        const results = await inParallel(stores, 30, (contender, index) =>
          contender.acceptDocument(newDocument('org_a', `doc_${index}`), T0),
        );
        const kinds = results.map((result) => result.kind);
        expect(countOf(kinds, 'accepted')).toBe(k);
        expect(countOf(kinds, 'quota_exceeded')).toBe(30 - k);
        expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(k);
      });

      it('accepts one upload exactly once', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'payg', { creditBalancePence: 1_000 });
        await uploaded(store, 'org_a', 'upl_1');
        const stores = await context.contenders();
        const results = await inParallel(stores, 12, (contender, index) =>
          contender.acceptDocument(
            newDocument('org_a', `doc_${index}`, { uploadId: 'upl_1', lane: 'reference' }),
            T0,
          ),
        );
        const kinds = results.map((result) => result.kind);
        expect(countOf(kinds, 'accepted')).toBe(1);
        expect(countOf(kinds, 'upload_already_submitted')).toBe(11);
        const winner = expectAccepted(defined(results.find((r) => r.kind === 'accepted')));
        expect((await store.getUpload('org_a', 'upl_1'))?.documentId).toBe(winner.document.id);
        expect(await store.getOrganisation('org_a', T0)).toMatchObject({
          creditBalancePence: 1_000 - PAYG_PRICE_PENCE,
          periodUsedSubmissions: 1,
        });
      });
    });
  });

  describe('acceptDocument under an Idempotency-Key', () => {
    it('records the document and the fingerprint on the claim, in the same transaction', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      const claim = await claimKey(store, 'org_a', 'k1', 'first');
      await accept(store, newDocument('org_a', 'doc_1', { idempotency: claim }));
      // The first request died before answering: a retry after the lease takes the key over and
      // learns which document its first request created, and with what request.
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS);
      const retry = await store.claimIdempotencyKey({
        organisationId: 'org_a',
        key: 'k1',
        endpoint: 'POST /v1/documents',
        owner: 'retry',
        ownerProcess: 'process-2',
        at: lapsed,
      });
      expect(retry).toMatchObject({
        kind: 'claimed',
        record: { resourceId: 'doc_1', requestHash: 'hash-of-first', owner: 'retry' },
      });
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(
        100 - PAYG_PRICE_PENCE,
      );
    });

    it('creates and charges nothing once a retry has taken the claim over', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      const first = await claimKey(store, 'org_a', 'k1', 'first');
      await claimKey(store, 'org_a', 'k1', 'retry', { at: after(T0, IDEMPOTENCY_LEASE_MS) });
      const at = after(T0, IDEMPOTENCY_LEASE_MS + SECOND_MS);
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_1', { idempotency: first }), at),
      ).toEqual({ kind: 'claim_lost' });
      expect(await store.getDocument('org_a', 'doc_1')).toBeUndefined();
      expect(await store.getOrganisation('org_a', at)).toMatchObject({
        creditBalancePence: 100,
        periodUsedSubmissions: 0,
      });
    });

    it('accepts once per claim: a second document under the same claim, or none, is refused', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = await claimKey(store, 'org_a', 'k1', 'first');
      await accept(store, newDocument('org_a', 'doc_1', { idempotency: claim }));
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_2', { idempotency: claim }), T0),
      ).toEqual({ kind: 'claim_lost' });
      const unclaimed = { ...claim, key: 'never-claimed' };
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_3', { idempotency: unclaimed }), T0),
      ).toEqual({ kind: 'claim_lost' });
      expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(1);
    });

    it('leaves the claim without a document when the meter refuses', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 0 });
      const claim = await claimKey(store, 'org_a', 'k1', 'first');
      expect(
        (await store.acceptDocument(newDocument('org_a', 'doc_1', { idempotency: claim }), T0))
          .kind,
      ).toBe('insufficient_credit');
      await store.releaseIdempotencyKey(claim);
      await claimKey(store, 'org_a', 'k1', 'corrected', { at: after(T0, SECOND_MS) });
    });

    it('ends the lease of a released claim that holds a document: the next retry answers for it at once', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const claim = await claimKey(store, 'org_a', 'k1', 'first');
      await accept(store, newDocument('org_a', 'doc_1', { idempotency: claim }));
      await store.releaseIdempotencyKey(claim);
      const retry = await store.claimIdempotencyKey({
        organisationId: 'org_a',
        key: 'k1',
        endpoint: 'POST /v1/documents',
        owner: 'retry',
        ownerProcess: 'process-1',
        at: after(T0, SECOND_MS),
      });
      expect(retry).toMatchObject({ kind: 'claimed', record: { resourceId: 'doc_1' } });
    });

    it('under contention, a take-over and the first request’s acceptance exclude each other', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 1_000 });
      const stores = await context.contenders();
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS);
      for (let round = 0; round < 6; round += 1) {
        const key = `k${round}`;
        const first = await claimKey(store, 'org_a', key, `first-${round}`);
        const [accepted, retry] = await Promise.all([
          defined(stores[round % stores.length]).acceptDocument(
            newDocument('org_a', `doc_${round}`, { idempotency: first }),
            lapsed,
          ),
          defined(stores[(round + 1) % stores.length]).claimIdempotencyKey({
            organisationId: 'org_a',
            key,
            endpoint: 'POST /v1/documents',
            owner: `retry-${round}`,
            ownerProcess: 'process-2',
            at: lapsed,
          }),
        ]);
        expect(retry.kind).toBe('claimed');
        // Either the document exists and the retry learnt it, or neither happened.
        const learnt = retry.record.resourceId;
        if (accepted.kind === 'accepted') expect(learnt).toBe(`doc_${round}`);
        else {
          expect(accepted.kind).toBe('claim_lost');
          expect(learnt).toBeNull();
          expect(await store.getDocument('org_a', `doc_${round}`)).toBeUndefined();
        }
      }
    });
  });

  describe('checkCanSubmit', () => {
    it('allows an organisation that could submit, without charging', async () => {
      const store = context.store();
      const tier = await createOrg(store, 'org_a', 'starter');
      const payg = await createOrg(store, 'org_b', 'payg', { creditBalancePence: 10 });
      const internal = await createOrg(store, 'org_c', 'internal');
      for (const organisation of [tier, payg, internal]) {
        expect(await store.checkCanSubmit(organisation.id, T0)).toBeUndefined();
        expect(await store.getOrganisation(organisation.id, T0)).toEqual(organisation);
      }
    });

    it('gives the same refusals as acceptDocument, in the same order', async () => {
      const store = context.store();
      expect(await store.checkCanSubmit('org_missing', T0)).toEqual({ kind: 'not_provisioned' });
      await createOrg(store, 'org_none', null);
      expect(await store.checkCanSubmit('org_none', T0)).toEqual({ kind: 'not_provisioned' });

      await createOrg(store, 'org_susp', 'payg');
      await store.updateOrganisation('org_susp', { status: 'suspended' }, T0);
      expect(await store.checkCanSubmit('org_susp', T0)).toEqual({ kind: 'suspended' });

      const tier = await createOrg(store, 'org_tier', 'starter', {
        terms: { monthlyAllowance: 0 },
      });
      expect(await store.checkCanSubmit('org_tier', T0)).toEqual({
        kind: 'quota_exceeded',
        organisation: tier,
      });

      const payg = await createOrg(store, 'org_payg', 'payg', { creditBalancePence: 9 });
      expect(await store.checkCanSubmit('org_payg', T0)).toEqual({
        kind: 'insufficient_credit',
        organisation: payg,
        balancePence: 9,
        pricePence: PAYG_PRICE_PENCE,
      });
    });
  });

  describe('getDocument', () => {
    it('finds a document only under its own organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      const document = await accept(store, newDocument('org_a', 'doc_1'));
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(document);
      expect(await store.getDocument('org_b', 'doc_1')).toBeUndefined();
      expect(await store.getDocument('org_a', 'doc_missing')).toBeUndefined();
    });
  });

  describe('uploads', () => {
    it('creates an upload and reads it, scoped and by id', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await createOrg(store, 'org_b', 'growth');
      const upload = newUpload('org_a', 'upl_1');
      await store.createUpload(upload);
      expect(await store.getUpload('org_a', 'upl_1')).toEqual(upload);
      expect(await store.getUpload('org_b', 'upl_1')).toBeUndefined();
      expect(await store.getUpload('org_a', 'upl_missing')).toBeUndefined();
      expect(await store.getUploadById('upl_1')).toEqual(upload);
      expect(await store.getUploadById('upl_missing')).toBeUndefined();
    });

    it('records the PUT once', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await store.createUpload(newUpload('org_a', 'upl_1'));
      const at = after(T0, 10 * MINUTE_MS);
      expect(await store.markUploaded('upl_1', 5_000, at)).toBe(true);
      expect(await store.getUploadById('upl_1')).toMatchObject({
        uploadedAt: at,
        sizeBytes: 5_000,
      });
      expect(await store.markUploaded('upl_1', 6_000, after(at, MINUTE_MS))).toBe(false);
      expect(await store.getUploadById('upl_1')).toMatchObject({
        uploadedAt: at,
        sizeBytes: 5_000,
      });
      expect(await store.markUploaded('upl_missing', 1, at)).toBe(false);
    });

    it('creates an upload under an Idempotency-Key only while the claim is the request’s', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      const endpoint = 'POST /v1/uploads';
      const claim = await claimKey(store, 'org_a', 'k1', 'first', { endpoint });
      expect(await store.createUpload(newUpload('org_a', 'upl_1'), claim)).toBe(true);
      const lapsed = after(T0, IDEMPOTENCY_LEASE_MS);
      const retry = await store.claimIdempotencyKey({
        organisationId: 'org_a',
        key: 'k1',
        endpoint,
        owner: 'retry',
        ownerProcess: 'process-2',
        at: lapsed,
      });
      expect(retry).toMatchObject({
        kind: 'claimed',
        record: { resourceId: 'upl_1', requestHash: 'hash-of-first' },
      });
      // The first request's claim is gone: a second upload under it is not created.
      expect(await store.createUpload(newUpload('org_a', 'upl_2'), claim)).toBe(false);
      expect(await store.getUpload('org_a', 'upl_2')).toBeUndefined();
    });

    it('records concurrent PUTs of one upload once', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await store.createUpload(newUpload('org_a', 'upl_1'));
      const stores = await context.contenders();
      const results = await inParallel(stores, 10, (contender, index) =>
        contender.markUploaded('upl_1', 100 + index, T0),
      );
      expect(countOf(results, true)).toBe(1);
      const winner = results.indexOf(true);
      expect((await store.getUploadById('upl_1'))?.sizeBytes).toBe(100 + winner);
    });
  });
}
