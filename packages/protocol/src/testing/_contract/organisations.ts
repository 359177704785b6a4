import { describe, expect, it } from 'vitest';

import { PLANS } from '../../domain/plans.ts';
import type { PlanName } from '../../domain/plans.ts';
import {
  accept,
  after,
  createOrg,
  defined,
  FEB_START,
  inParallel,
  JAN_START,
  JUN_START,
  MAR_START,
  MAY_START,
  newDocument,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

const PLAN_NAMES = Object.keys(PLANS) as PlanName[];

/** Organisations: provisioning, terms, billing periods, patches. */
export function describeOrganisations(context: ContractContext): void {
  describe('organisations', () => {
    it.each(PLAN_NAMES)('createOrganisation copies the terms of plan %s', async (plan) => {
      const store = context.store();
      const terms = PLANS[plan];
      const created = await createOrg(store, 'org_a', plan);
      const expected = {
        id: 'org_a',
        name: 'Organisation org_a',
        status: 'active',
        plan,
        planType: terms.type,
        monthlyAllowance: terms.monthlyAllowance,
        rateLimitPerMinute: terms.rateLimitPerMinute,
        maxFileSizeBytes: terms.maxFileSizeBytes,
        maxUploadSizeBytes: terms.maxUploadSizeBytes,
        pricePerDocumentPence: terms.pricePerDocumentPence,
        creditBalancePence: 0,
        periodStart: JAN_START,
        periodEnd: FEB_START,
        periodUsedSubmissions: 0,
        policy: {},
        createdAt: T0,
      };
      expect(created).toEqual(expected);
      expect(await store.getOrganisation('org_a', T0)).toEqual(expected);
    });

    it('applies term overrides, opening credit and policy', async () => {
      const store = context.store();
      const created = await createOrg(store, 'org_a', 'volume', {
        terms: { monthlyAllowance: 7, rateLimitPerMinute: 900, maxUploadSizeBytes: 123 },
        creditBalancePence: 500,
        policy: { 'vba-macro': 'reject' },
      });
      expect(created).toMatchObject({
        plan: 'volume',
        planType: 'tier',
        monthlyAllowance: 7,
        rateLimitPerMinute: 900,
        maxUploadSizeBytes: 123,
        maxFileSizeBytes: PLANS.volume.maxFileSizeBytes,
        pricePerDocumentPence: null,
        creditBalancePence: 500,
        policy: { 'vba-macro': 'reject' },
      });
      expect(await store.getOrganisation('org_a', T0)).toEqual(created);

      const payg = await createOrg(store, 'org_b', 'payg', {
        terms: { pricePerDocumentPence: 25 },
      });
      expect(payg.pricePerDocumentPence).toBe(25);
    });

    it('creates an organisation without a plan as not provisioned', async () => {
      const store = context.store();
      const created = await createOrg(store, 'org_a', null);
      expect(created).toMatchObject({
        id: 'org_a',
        status: 'active',
        plan: null,
        planType: null,
        monthlyAllowance: 0,
        pricePerDocumentPence: null,
        creditBalancePence: 0,
        periodStart: JAN_START,
        periodEnd: FEB_START,
        periodUsedSubmissions: 0,
      });
      expect(await store.getOrganisation('org_a', T0)).toEqual(created);
    });

    it('refuses a second organisation with the same id', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await expect(createOrg(store, 'org_a', 'growth')).rejects.toThrow();
      expect((await store.getOrganisation('org_a', T0))?.plan).toBe('starter');
    });

    it('returns undefined for an unknown organisation', async () => {
      const store = context.store();
      expect(await store.getOrganisation('org_missing', T0)).toBeUndefined();
      expect(
        await store.updateOrganisation('org_missing', { name: 'x', creditDeltaPence: 5 }, T0),
      ).toBeUndefined();
      expect(await store.listOrganisations(T0)).toEqual([]);
    });

    it('bills by calendar month in UTC, periodEnd exclusive', async () => {
      const store = context.store();
      const lastMs = await createOrg(store, 'org_a', 'starter', {}, after(FEB_START, -1));
      expect(lastMs.periodStart).toEqual(JAN_START);
      expect(lastMs.periodEnd).toEqual(FEB_START);
      const first = await createOrg(store, 'org_b', 'starter', {}, FEB_START);
      expect(first.periodStart).toEqual(FEB_START);
      expect(first.periodEnd).toEqual(MAR_START);
      const december = await createOrg(
        store,
        'org_c',
        'starter',
        {},
        new Date('2024-12-31T23:59:59.999Z'),
      );
      expect(december.periodStart).toEqual(new Date('2024-12-01T00:00:00.000Z'));
      expect(december.periodEnd).toEqual(JAN_START);
      const leap = await createOrg(store, 'org_d', 'starter', {}, new Date('2024-02-29T12:00Z'));
      expect(leap.periodStart).toEqual(new Date('2024-02-01T00:00:00.000Z'));
      expect(leap.periodEnd).toEqual(new Date('2024-03-01T00:00:00.000Z'));
    });

    it('rolls the period forward on reads at or after periodEnd and resets usage', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      for (const id of ['doc_1', 'doc_2', 'doc_3']) await accept(store, newDocument('org_a', id));

      const lastJanuaryMs = defined(await store.getOrganisation('org_a', after(FEB_START, -1)));
      expect(lastJanuaryMs).toMatchObject({
        periodStart: JAN_START,
        periodEnd: FEB_START,
        periodUsedSubmissions: 3,
      });

      const february = defined(await store.getOrganisation('org_a', FEB_START));
      expect(february).toMatchObject({
        periodStart: FEB_START,
        periodEnd: MAR_START,
        periodUsedSubmissions: 0,
      });

      // Several months at once.
      const may = defined(await store.getOrganisation('org_a', new Date('2025-05-20T08:00Z')));
      expect(may).toMatchObject({
        periodStart: MAY_START,
        periodEnd: JUN_START,
        periodUsedSubmissions: 0,
      });
      expect(may.createdAt).toEqual(T0);
    });

    it('returns the rolled-over view from every method that takes a time', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: 2 } });
      await accept(store, newDocument('org_a', 'doc_1'));
      await accept(store, newDocument('org_a', 'doc_2'));
      const exhausted = await store.acceptDocument(newDocument('org_a', 'doc_3'), T0);
      expect(exhausted.kind).toBe('quota_exceeded');

      const march = new Date('2025-03-03T00:00Z');
      const listed = await store.listOrganisations(march);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ periodStart: MAR_START, periodUsedSubmissions: 0 });

      expect(await store.checkCanSubmit('org_a', march)).toBeUndefined();

      const updated = defined(await store.updateOrganisation('org_a', { name: 'Renamed' }, march));
      expect(updated).toMatchObject({
        name: 'Renamed',
        periodStart: MAR_START,
        periodUsedSubmissions: 0,
      });

      const accepted = await store.acceptDocument(newDocument('org_a', 'doc_4'), march);
      expect(accepted.kind).toBe('accepted');
      if (accepted.kind === 'accepted') {
        expect(accepted.organisation).toMatchObject({
          periodStart: MAR_START,
          periodEnd: new Date('2025-04-01T00:00Z'),
          periodUsedSubmissions: 1,
        });
      }
      // A later read in the same period sees the new period's usage, not January's.
      expect((await store.getOrganisation('org_a', march))?.periodUsedSubmissions).toBe(1);
    });

    it('rolls over a refused organisation too (quota_exceeded carries the current period)', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter', { terms: { monthlyAllowance: 0 } });
      const refused = await store.acceptDocument(newDocument('org_a', 'doc_1'), FEB_START);
      expect(refused.kind).toBe('quota_exceeded');
      if (refused.kind === 'quota_exceeded') {
        expect(refused.organisation.periodStart).toEqual(FEB_START);
        expect(refused.organisation.periodEnd).toEqual(MAR_START);
      }
    });

    it('lists every organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_b', 'payg');
      await createOrg(store, 'org_a', null);
      await createOrg(store, 'org_c', 'internal');
      const listed = await store.listOrganisations(T0);
      expect(listed.map((organisation) => organisation.id).sort()).toEqual([
        'org_a',
        'org_b',
        'org_c',
      ]);
      expect(listed.find((organisation) => organisation.id === 'org_b')).toEqual(
        await store.getOrganisation('org_b', T0),
      );
    });

    describe('updateOrganisation', () => {
      it('changes only the given fields', async () => {
        const store = context.store();
        const created = await createOrg(store, 'org_a', 'growth', {
          creditBalancePence: 100,
          policy: { 'pdf-javascript': 'reject' },
        });
        expect(await store.updateOrganisation('org_a', {}, T0)).toEqual(created);
        const renamed = await store.updateOrganisation('org_a', { name: 'Acme' }, T0);
        expect(renamed).toEqual({ ...created, name: 'Acme' });
        expect(await store.getOrganisation('org_a', T0)).toEqual(renamed);
      });

      it('suspends and reactivates', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'starter');
        const suspended = await store.updateOrganisation('org_a', { status: 'suspended' }, T0);
        expect(suspended?.status).toBe('suspended');
        expect((await store.getOrganisation('org_a', T0))?.status).toBe('suspended');
        const active = await store.updateOrganisation('org_a', { status: 'active' }, T0);
        expect(active?.status).toBe('active');
      });

      it('re-provisions on a new plan: terms reset to the plan, then the given terms apply', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'volume', {
          terms: { monthlyAllowance: 1, rateLimitPerMinute: 2, maxUploadSizeBytes: 3 },
          creditBalancePence: 40,
        });
        const growth = defined(
          await store.updateOrganisation(
            'org_a',
            { plan: 'growth', terms: { rateLimitPerMinute: 999 } },
            T0,
          ),
        );
        expect(growth).toMatchObject({
          plan: 'growth',
          planType: 'tier',
          monthlyAllowance: PLANS.growth.monthlyAllowance,
          rateLimitPerMinute: 999,
          maxUploadSizeBytes: PLANS.growth.maxUploadSizeBytes,
          maxFileSizeBytes: PLANS.growth.maxFileSizeBytes,
          pricePerDocumentPence: null,
          creditBalancePence: 40,
        });

        const payg = defined(await store.updateOrganisation('org_a', { plan: 'payg' }, T0));
        expect(payg).toMatchObject({
          plan: 'payg',
          planType: 'payg',
          monthlyAllowance: PLANS.payg.monthlyAllowance,
          rateLimitPerMinute: PLANS.payg.rateLimitPerMinute,
          maxUploadSizeBytes: PLANS.payg.maxUploadSizeBytes,
          pricePerDocumentPence: PLANS.payg.pricePerDocumentPence,
        });
        expect(await store.getOrganisation('org_a', T0)).toEqual(payg);
      });

      it('provisions an organisation that had no plan', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', null);
        const provisioned = await store.updateOrganisation('org_a', { plan: 'internal' }, T0);
        expect(provisioned).toMatchObject({ plan: 'internal', planType: 'internal' });
        expect(await store.checkCanSubmit('org_a', T0)).toBeUndefined();
      });

      it('applies terms without a plan change on top of the current terms', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'volume', { terms: { monthlyAllowance: 5 } });
        const updated = defined(
          await store.updateOrganisation('org_a', { terms: { rateLimitPerMinute: 77 } }, T0),
        );
        expect(updated).toMatchObject({
          plan: 'volume',
          monthlyAllowance: 5,
          rateLimitPerMinute: 77,
          maxUploadSizeBytes: PLANS.volume.maxUploadSizeBytes,
        });
      });

      it('adds creditDeltaPence (and takes a negative one)', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'payg', { creditBalancePence: 100 });
        expect(
          (await store.updateOrganisation('org_a', { creditDeltaPence: 250 }, T0))
            ?.creditBalancePence,
        ).toBe(350);
        expect(
          (await store.updateOrganisation('org_a', { creditDeltaPence: -50 }, T0))
            ?.creditBalancePence,
        ).toBe(300);
        expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(300);
      });

      it('replaces the policy', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'starter', { policy: { 'vba-macro': 'reject' } });
        const updated = await store.updateOrganisation(
          'org_a',
          { policy: { 'pdf-javascript': 'reject', 'image-metadata': 'strip' } },
          T0,
        );
        expect(updated?.policy).toEqual({ 'pdf-javascript': 'reject', 'image-metadata': 'strip' });
        expect((await store.getOrganisation('org_a', T0))?.policy).toEqual(updated?.policy);
      });

      it('loses no credit top-up under concurrent updates', async () => {
        const store = context.store();
        await createOrg(store, 'org_a', 'payg');
        const stores = await context.contenders();
        await inParallel(stores, 40, (contender) =>
          contender.updateOrganisation('org_a', { creditDeltaPence: 5 }, T0),
        );
        expect((await store.getOrganisation('org_a', T0))?.creditBalancePence).toBe(200);
      });
    });
  });
}
