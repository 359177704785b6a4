import { describe, expect, it } from 'vitest';

import {
  RETRY_BACKOFF_BASE_MS,
  RETRY_BACKOFF_FACTOR,
  RETRY_BACKOFF_MAX_MS,
  retryBackoffMs,
} from '../../domain/processing.ts';
import type { DocumentRecord } from '../../domain/types.ts';
import {
  accept,
  after,
  completedResult,
  countOf,
  createOrg,
  DAY_MS,
  defined,
  FAILED_RESULT,
  FEB_START,
  HOUR_MS,
  inParallel,
  JAN_START,
  leaseNext,
  MINUTE_MS,
  newDocument,
  PAYG_PRICE_PENCE,
  REJECTED_RESULT,
  SECOND_MS,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

const PRICE = PAYG_PRICE_PENCE;
const LEASE_MS = MINUTE_MS;

/** The queue: leases, renewals, endings with their refunds, recovery of lapsed leases. */
export function describeQueue(context: ContractContext): void {
  describe('leaseDocument', () => {
    it('returns undefined when nothing is pending', async () => {
      expect(await context.store().leaseDocument('worker-1', T0, LEASE_MS)).toBeUndefined();
    });

    it('leases the oldest pending document: processing, started, one attempt', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'), after(T0, 2 * SECOND_MS));
      await accept(store, newDocument('org_a', 'doc_2'), after(T0, SECOND_MS));
      const at = after(T0, MINUTE_MS);
      const leased = await leaseNext(store, 'worker-1', at);
      expect(leased).toMatchObject({
        id: 'doc_2',
        status: 'processing',
        startedAt: at,
        attempts: 1,
        completedAt: null,
      });
      expect(await store.getDocument('org_a', 'doc_2')).toEqual(leased);
      expect((await leaseNext(store, 'worker-1', at)).id).toBe('doc_1');
      expect(await store.leaseDocument('worker-1', at, LEASE_MS)).toBeUndefined();
    });

    it('breaks submission-time ties by id', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      for (const id of ['doc_c', 'doc_a', 'doc_b']) await accept(store, newDocument('org_a', id));
      const order: string[] = [];
      for (let index = 0; index < 3; index += 1) {
        order.push((await leaseNext(store, 'worker-1', T0)).id);
      }
      expect(order).toEqual(['doc_a', 'doc_b', 'doc_c']);
    });

    it('takes pending documents of every organisation, never terminal ones', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'), T0);
      const first = await leaseNext(store, 'worker-1', T0);
      await store.finishDocument(first.id, 'worker-1', REJECTED_RESULT, after(T0, SECOND_MS));
      await accept(store, newDocument('org_b', 'doc_2'), after(T0, 2 * SECOND_MS));
      expect((await leaseNext(store, 'worker-2', after(T0, 3 * SECOND_MS))).id).toBe('doc_2');
      expect(await store.leaseDocument('worker-2', after(T0, HOUR_MS), LEASE_MS)).toBeUndefined();
    });

    it('never hands one document to two workers', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'internal');
      for (let index = 0; index < 10; index += 1) {
        await accept(store, newDocument('org_a', `doc_${index}`), after(T0, index));
      }
      const stores = await context.contenders();
      const leased = await inParallel(stores, 16, (contender, index) =>
        contender.leaseDocument(`worker-${index}`, after(T0, SECOND_MS), LEASE_MS),
      );
      const ids = leased.flatMap((document) => (document === undefined ? [] : [document.id]));
      expect(ids).toHaveLength(10);
      expect(new Set(ids).size).toBe(10);
      expect(countOf(leased, undefined)).toBe(6);
    });
  });

  describe('renewLease', () => {
    it('extends a lease its owner still holds', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0, LEASE_MS);
      expect(await store.renewLease('doc_1', 'worker-1', after(T0, 50 * SECOND_MS), LEASE_MS)).toBe(
        true,
      );
      // The renewed lease runs to T0 + 110 s: past the first expiry the owner still holds it.
      const late = after(T0, 100 * SECOND_MS);
      expect(await store.recoverLapsedLeases(late, 3)).toEqual([]);
      expect((await store.getDocument('org_a', 'doc_1'))?.status).toBe('processing');
      const finished = await store.finishDocument(
        'doc_1',
        'worker-1',
        completedResult('doc_1'),
        late,
      );
      expect(finished?.status).toBe('completed');
    });

    it('refuses another owner, a lapsed lease, a document not processing and an unknown id', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await accept(store, newDocument('org_a', 'doc_2'), after(T0, 1));
      expect(await store.renewLease('doc_1', 'worker-1', T0, LEASE_MS)).toBe(false);
      await leaseNext(store, 'worker-1', T0, LEASE_MS);
      expect(await store.renewLease('doc_1', 'worker-2', T0, LEASE_MS)).toBe(false);
      // At the expiry instant the lease has lapsed.
      expect(await store.renewLease('doc_1', 'worker-1', after(T0, LEASE_MS), LEASE_MS)).toBe(
        false,
      );
      expect(await store.renewLease('doc_missing', 'worker-1', T0, LEASE_MS)).toBe(false);
    });
  });

  describe('finishDocument', () => {
    it('completes: output, completion time, download expiry 24 h later', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      const at = after(T0, 30 * SECOND_MS);
      const finished = defined(
        await store.finishDocument('doc_1', 'worker-1', completedResult('doc_1'), at),
      );
      expect(finished).toMatchObject({
        status: 'completed',
        completedAt: at,
        downloadExpiresAt: after(at, DAY_MS),
        output: {
          blobKey: 'outputs/doc_1',
          fileName: 'report.pdf',
          format: 'pdf',
          mediaType: 'application/pdf',
          converted: false,
          sizeBytes: 999,
          findings: [
            // Where they were found is stored with them, nested member paths included.
            {
              kind: 'pdf-javascript',
              count: 2,
              locations: [
                { member: ['bundle.zip', 'docs/report.pdf'], page: 2, count: 1 },
                { member: ['bundle.zip', 'docs/report.pdf'], count: 1 },
              ],
            },
            { kind: 'document-metadata', count: 1 },
          ],
        },
        reason: null,
        threatNames: [],
        detail: null,
        reasonDetail: null,
        deletedAt: null,
        outputRemovedAt: null,
        attempts: 1,
        startedAt: T0,
        intakeKey: 'intake/doc_1',
      });
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(finished);
      expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(1);
    });

    it('keeps a converted output’s format', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1', { fileName: 'page.html' }));
      await leaseNext(store, 'worker-1', T0);
      const finished = await store.finishDocument(
        'doc_1',
        'worker-1',
        { ...completedResult('doc_1'), fileName: 'page.pdf', converted: true, findings: [] },
        T0,
      );
      expect(finished?.output).toMatchObject({
        fileName: 'page.pdf',
        converted: true,
        findings: [],
      });
    });

    it('rejects: reason, threat names and detail; the charge stays', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      const at = after(T0, SECOND_MS);
      const finished = defined(
        await store.finishDocument('doc_1', 'worker-1', REJECTED_RESULT, at),
      );
      expect(finished).toMatchObject({
        status: 'rejected',
        reason: 'threat_detected',
        threatNames: ['EICAR-Test-File', 'Other.Threat'],
        detail: 'signature match',
        // The engine's sentence, made a sentence for the caller.
        reasonDetail: 'Signature match.',
        completedAt: at,
        output: null,
        downloadExpiresAt: null,
        chargedPence: PRICE,
      });
      expect(await store.getOrganisation('org_a', at)).toMatchObject({
        creditBalancePence: 100 - PRICE,
        periodUsedSubmissions: 1,
      });
    });

    it('fails and refunds pay-as-you-go credit in the same step', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      const at = after(T0, SECOND_MS);
      const finished = defined(await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, at));
      expect(finished).toMatchObject({
        status: 'failed',
        reason: 'timeout',
        detail: 'processing took longer than the budget',
        // A failure never shows its internal detail, only its reason's fixed sentence.
        reasonDetail: expect.stringMatching(
          /^Processing did not finish within the time budget/,
        ) as unknown,
        completedAt: at,
        chargedPence: 0,
        countedInAllowance: false,
        output: null,
      });
      expect(await store.getOrganisation('org_a', at)).toMatchObject({
        creditBalancePence: 100,
        periodUsedSubmissions: 0,
      });
    });

    it('fails and gives back the allowance unit used this period', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: 1 } });
      await accept(store, newDocument('org_a', 'doc_1'));
      expect((await store.checkCanSubmit('org_a', T0))?.kind).toBe('quota_exceeded');
      await leaseNext(store, 'worker-1', T0);
      const finished = await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0);
      expect(finished).toMatchObject({ status: 'failed', countedInAllowance: false });
      expect((await store.getOrganisation('org_a', T0))?.periodUsedSubmissions).toBe(0);
      expect(await store.checkCanSubmit('org_a', T0)).toBeUndefined();
    });

    it('gives back no allowance for a document counted in a past period', async () => {
      const store = context.store();
      const lastJanuaryMinute = after(FEB_START, -MINUTE_MS);
      await createOrg(store, 'org_a', 'starter', {}, JAN_START);
      await accept(store, newDocument('org_a', 'doc_old'), lastJanuaryMinute);
      await leaseNext(store, 'worker-1', lastJanuaryMinute, HOUR_MS);
      // February: a new document uses February's allowance.
      await accept(store, newDocument('org_a', 'doc_new'), after(FEB_START, MINUTE_MS));
      const at = after(FEB_START, 2 * MINUTE_MS);
      const finished = await store.finishDocument('doc_old', 'worker-1', FAILED_RESULT, at);
      expect(finished).toMatchObject({ status: 'failed', countedInAllowance: false });
      expect(await store.getOrganisation('org_a', at)).toMatchObject({
        periodStart: FEB_START,
        periodUsedSubmissions: 1,
      });
    });

    it('fails an internal document without moving money', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'internal', { creditBalancePence: 3 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(3);
    });

    it('refunds the amount charged even after a price change', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await store.updateOrganisation('org_a', { terms: { pricePerDocumentPence: 50 } }, T0);
      await leaseNext(store, 'worker-1', T0);
      await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(100);
    });

    it('ends nothing without the lease: wrong owner, lapsed, not leased, unknown', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_pending'));
      await accept(store, newDocument('org_a', 'doc_1'), after(T0, -SECOND_MS));
      const leased = await leaseNext(store, 'worker-1', T0, LEASE_MS);
      expect(leased.id).toBe('doc_1');

      expect(
        await store.finishDocument('doc_1', 'worker-2', completedResult('doc_1'), T0),
      ).toBeUndefined();
      expect(
        await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, after(T0, LEASE_MS)),
      ).toBeUndefined();
      expect(
        await store.finishDocument('doc_pending', 'worker-1', FAILED_RESULT, T0),
      ).toBeUndefined();
      expect(
        await store.finishDocument('doc_missing', 'worker-1', FAILED_RESULT, T0),
      ).toBeUndefined();
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(leased);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(100 - 2 * PRICE);
    });

    it('ends a document once and refunds it once', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      const first = defined(await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0));
      expect(await store.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0)).toBeUndefined();
      expect(
        await store.finishDocument('doc_1', 'worker-1', completedResult('doc_1'), T0),
      ).toBeUndefined();
      expect(await store.recoverLapsedLeases(after(T0, DAY_MS), 1)).toEqual([]);
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(first);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(100);
    });

    it('lets exactly one of concurrent endings win', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0);
      const stores = await context.contenders();
      const results = await inParallel(stores, 12, (contender) =>
        contender.finishDocument('doc_1', 'worker-1', FAILED_RESULT, T0),
      );
      expect(results.filter((result) => result !== undefined)).toHaveLength(1);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(100);
    });
  });

  describe('recoverLapsedLeases', () => {
    it('requeues a lapsed document, which is leased again as a new attempt', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await leaseNext(store, 'worker-1', T0, LEASE_MS);

      expect(await store.recoverLapsedLeases(after(T0, LEASE_MS - 1), 3)).toEqual([]);
      expect((await store.getDocument('org_a', 'doc_1'))?.status).toBe('processing');

      expect(await store.recoverLapsedLeases(after(T0, LEASE_MS), 3)).toEqual([]);
      expect(await store.getDocument('org_a', 'doc_1')).toMatchObject({
        status: 'pending',
        attempts: 1,
        startedAt: T0,
      });
      // The first worker lost it.
      const later = after(T0, 2 * LEASE_MS);
      expect(await store.renewLease('doc_1', 'worker-1', later, LEASE_MS)).toBe(false);
      expect(
        await store.finishDocument('doc_1', 'worker-1', completedResult('doc_1'), later),
      ).toBeUndefined();

      const again = await leaseNext(store, 'worker-2', later, LEASE_MS);
      expect(again).toMatchObject({ id: 'doc_1', attempts: 2, startedAt: T0 });
      expect(
        await store.finishDocument('doc_1', 'worker-1', completedResult('doc_1'), later),
      ).toBeUndefined();
      const done = await store.finishDocument('doc_1', 'worker-2', completedResult('doc_1'), later);
      expect(done?.status).toBe('completed');
    });

    it('holds a requeued document back for its back-off, growing with each lapse', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await accept(store, newDocument('org_a', 'doc_2'), after(T0, 1));
      let at = T0;
      for (const [attempt, backoffMs] of [
        [1, RETRY_BACKOFF_BASE_MS],
        [2, RETRY_BACKOFF_BASE_MS * RETRY_BACKOFF_FACTOR],
      ] as const) {
        expect(await leaseNext(store, `worker-${attempt}`, at, LEASE_MS)).toMatchObject({
          id: 'doc_1',
          attempts: attempt,
        });
        at = after(at, LEASE_MS);
        expect(await store.recoverLapsedLeases(at, 3)).toEqual([]);
        // Waiting, doc_1 lets the document behind it through and is not leased a moment early.
        const waiting = after(at, backoffMs - 1);
        const behind = await store.leaseDocument('worker-x', waiting, DAY_MS);
        expect(behind?.id).toBe(attempt === 1 ? 'doc_2' : undefined);
        expect(await store.leaseDocument('worker-x', waiting, LEASE_MS)).toBeUndefined();
        expect((await store.getDocument('org_a', 'doc_1'))?.status).toBe('pending');
        at = after(at, backoffMs);
      }
      expect(await leaseNext(store, 'worker-3', at, LEASE_MS)).toMatchObject({
        id: 'doc_1',
        attempts: 3,
      });
    });

    it('fails a document out of attempts with internal_error and refunds it', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      await accept(store, newDocument('org_a', 'doc_1'));
      let at = T0;
      for (let attempt = 1; attempt <= 2; attempt += 1) {
        if (attempt > 1) at = after(at, retryBackoffMs(attempt - 1));
        await leaseNext(store, `worker-${attempt}`, at, LEASE_MS);
        at = after(at, LEASE_MS);
        const failed = await store.recoverLapsedLeases(at, 2);
        if (attempt === 1) expect(failed).toEqual([]);
        else {
          expect(failed).toHaveLength(1);
          expect(failed[0]).toMatchObject({
            id: 'doc_1',
            status: 'failed',
            reason: 'internal_error',
            completedAt: at,
            attempts: 2,
            chargedPence: 0,
          });
          expect(await store.getDocument('org_a', 'doc_1')).toEqual(failed[0]);
        }
      }
      expect(await store.getOrganisation('org_a', at)).toMatchObject({
        creditBalancePence: 100,
        periodUsedSubmissions: 0,
      });
      // The dead-letter end is final: no back-off brings it back.
      const farLater = after(at, RETRY_BACKOFF_MAX_MS + DAY_MS);
      expect(await store.leaseDocument('worker-3', farLater, LEASE_MS)).toBeUndefined();
    });

    it('leaves pending documents and live leases alone', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'), after(T0, -1));
      await accept(store, newDocument('org_a', 'doc_2'));
      await accept(store, newDocument('org_a', 'doc_3'), after(T0, 1));
      await leaseNext(store, 'worker-1', T0, LEASE_MS);
      await leaseNext(store, 'worker-2', T0, 10 * LEASE_MS);
      const at = after(T0, 2 * LEASE_MS);
      expect(await store.recoverLapsedLeases(at, 1)).toHaveLength(1);
      expect((await store.getDocument('org_a', 'doc_1'))?.status).toBe('failed');
      expect((await store.getDocument('org_a', 'doc_2'))?.status).toBe('processing');
      expect((await store.getDocument('org_a', 'doc_3'))?.status).toBe('pending');
    });

    it('fails and refunds each lapsed document once under concurrent recovery', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
      for (let index = 0; index < 4; index += 1) {
        await accept(store, newDocument('org_a', `doc_${index}`), after(T0, index));
        await leaseNext(store, 'worker-1', T0, LEASE_MS);
      }
      const stores = await context.contenders();
      const results = await inParallel(stores, 8, (contender) =>
        contender.recoverLapsedLeases(after(T0, LEASE_MS), 1),
      );
      const failedIds = results.flat().map((document: DocumentRecord) => document.id);
      expect(failedIds.sort()).toEqual(['doc_0', 'doc_1', 'doc_2', 'doc_3']);
      expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(100);
    });
  });

  describe('clearIntake', () => {
    it('forgets the intake key', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'));
      await store.clearIntake('doc_1');
      expect((await store.getDocument('org_a', 'doc_1'))?.intakeKey).toBeNull();
      await store.clearIntake('doc_missing');
    });
  });

  describe('queueStats', () => {
    it('counts pending and processing documents of every organisation and dates the oldest wait', async () => {
      const store = context.store();
      expect(await store.queueStats()).toEqual({
        pending: 0,
        processing: 0,
        oldestPendingSubmittedAt: null,
      });
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await accept(store, newDocument('org_a', 'doc_1'), after(T0, SECOND_MS));
      await accept(store, newDocument('org_b', 'doc_2'), after(T0, 2 * SECOND_MS));
      await accept(store, newDocument('org_a', 'doc_3'), after(T0, 3 * SECOND_MS));
      await accept(store, newDocument('org_b', 'doc_4'), after(T0, 4 * SECOND_MS));
      // doc_1 and doc_2 are leased; doc_1 then ends, so only doc_2 runs.
      const at = after(T0, MINUTE_MS);
      await leaseNext(store, 'worker-1', at);
      await leaseNext(store, 'worker-1', at);
      await store.finishDocument('doc_1', 'worker-1', completedResult('doc_1'), at);
      expect(await store.queueStats()).toEqual({
        pending: 2,
        processing: 1,
        oldestPendingSubmittedAt: after(T0, 3 * SECOND_MS),
      });
    });
  });
}
