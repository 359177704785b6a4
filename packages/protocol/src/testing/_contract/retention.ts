import { describe, expect, it } from 'vitest';

import { MAX_OWNERSHIP_KEYS } from '../../domain/blob-ownership.ts';
import type { StateStore, SweepItem } from '../../ports.ts';
import {
  accept,
  after,
  countOf,
  createOrg,
  DAY_MS,
  defined,
  FAILED_RESULT,
  HOUR_MS,
  inParallel,
  leaseNext,
  MINUTE_MS,
  newDocument,
  newUpload,
  processDocument,
  REJECTED_RESULT,
  SECOND_MS,
  T0,
} from './fixtures.ts';
import type { ContractContext } from './fixtures.ts';

const GRACE_MS = 5 * MINUTE_MS;
const NO_LIMIT = 1_000;

/** Sweep items of one kind at `at`. */
async function sweepable(
  store: StateStore,
  kind: SweepItem['kind'],
  at: Date,
  graceMs = GRACE_MS,
): Promise<SweepItem[]> {
  return (await store.listSweepable(at, graceMs, NO_LIMIT)).filter((item) => item.kind === kind);
}

/** Downloads, DELETE, and the sweeps of intake bytes, outputs and uploads. */
export function describeRetention(context: ContractContext): void {
  describe('recordDownload', () => {
    it('records the first download only, within the organisation', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      const first = after(T0, MINUTE_MS);
      expect(await store.recordDownload('org_b', 'doc_1', first)).toBeUndefined();
      expect((await store.getDocument('org_a', 'doc_1'))?.firstDownloadAt).toBeNull();
      const recorded = await store.recordDownload('org_a', 'doc_1', first);
      expect(recorded?.firstDownloadAt).toEqual(first);
      expect(await store.getDocument('org_a', 'doc_1')).toEqual(recorded);
      const again = await store.recordDownload('org_a', 'doc_1', after(first, MINUTE_MS));
      expect(again?.firstDownloadAt).toEqual(first);
      expect(await store.recordDownload('org_a', 'doc_missing', first)).toBeUndefined();
    });
  });

  describe('deleteDocumentFile', () => {
    it('finds only the organisation’s own documents', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await createOrg(store, 'org_b', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      expect(await store.deleteDocumentFile('org_b', 'doc_1', T0)).toEqual({ kind: 'not_found' });
      expect(await store.deleteDocumentFile('org_a', 'doc_missing', T0)).toEqual({
        kind: 'not_found',
      });
      expect((await store.getDocument('org_a', 'doc_1'))?.deletedAt).toBeNull();
    });

    it('refuses while the document is in flight', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      const pending = await accept(store, newDocument('org_a', 'doc_1'));
      expect(await store.deleteDocumentFile('org_a', 'doc_1', T0)).toEqual({
        kind: 'in_flight',
        document: pending,
      });
      const processing = await leaseNext(store, 'worker-1', T0);
      expect(await store.deleteDocumentFile('org_a', 'doc_1', T0)).toEqual({
        kind: 'in_flight',
        document: processing,
      });
    });

    it('deletes a completed file once; repeating is nothing to delete', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      const at = after(T0, HOUR_MS);
      const deleted = await store.deleteDocumentFile('org_a', 'doc_1', at);
      expect(deleted).toMatchObject({
        kind: 'deleted',
        blobKey: 'outputs/doc_1',
        document: { id: 'doc_1', status: 'completed', deletedAt: at, outputRemovedAt: at },
      });
      const stored = defined(await store.getDocument('org_a', 'doc_1'));
      expect(stored).toMatchObject({ status: 'completed', deletedAt: at, outputRemovedAt: at });
      expect(stored.output?.blobKey).toBe('outputs/doc_1');

      const again = await store.deleteDocumentFile('org_a', 'doc_1', after(at, HOUR_MS));
      expect(again).toEqual({ kind: 'nothing_to_delete', document: stored });
      // Nothing left for the output sweeps.
      expect(await sweepable(store, 'expired-output', after(T0, 2 * DAY_MS))).toEqual([]);
    });

    it('has nothing to delete for rejected and failed documents', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_r'), REJECTED_RESULT, T0);
      await processDocument(store, newDocument('org_a', 'doc_f'), FAILED_RESULT, after(T0, 1));
      for (const id of ['doc_r', 'doc_f']) {
        const result = await store.deleteDocumentFile('org_a', id, after(T0, HOUR_MS));
        expect(result.kind).toBe('nothing_to_delete');
        expect((await store.getDocument('org_a', id))?.deletedAt).toBeNull();
      }
    });

    it('has nothing to delete once the 24 h expiry removed the output (deletedAt stays null)', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      const expiry = after(T0, DAY_MS);
      for (const item of await sweepable(store, 'expired-output', expiry)) {
        await store.markSwept(item, expiry);
      }
      const result = await store.deleteDocumentFile('org_a', 'doc_1', after(expiry, HOUR_MS));
      expect(result.kind).toBe('nothing_to_delete');
      expect(await store.getDocument('org_a', 'doc_1')).toMatchObject({
        deletedAt: null,
        outputRemovedAt: expiry,
      });
    });

    it('hands the file to exactly one of concurrent deletes', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      const stores = await context.contenders();
      const results = await inParallel(stores, 10, (contender, index) =>
        contender.deleteDocumentFile('org_a', 'doc_1', after(T0, index * SECOND_MS)),
      );
      const kinds = results.map((result) => result.kind);
      expect(countOf(kinds, 'deleted')).toBe(1);
      expect(countOf(kinds, 'nothing_to_delete')).toBe(9);
    });
  });

  describe('listSweepable and markSwept', () => {
    it('lists nothing in an empty store', async () => {
      expect(await context.store().listSweepable(T0, GRACE_MS, NO_LIMIT)).toEqual([]);
    });

    it('sweeps the intake bytes of every ended document, never of one in flight', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_c'), 'completed', T0);
      await processDocument(store, newDocument('org_a', 'doc_r'), REJECTED_RESULT, after(T0, 1));
      await processDocument(store, newDocument('org_a', 'doc_f'), FAILED_RESULT, after(T0, 2));
      await accept(store, newDocument('org_a', 'doc_pending'), after(T0, 3));
      await accept(store, newDocument('org_a', 'doc_processing'), after(T0, 2));
      await leaseNext(store, 'worker-1', after(T0, 3));

      const at = after(T0, SECOND_MS);
      const items = await sweepable(store, 'intake', at);
      expect(items.map((item) => item.id).sort()).toEqual(['doc_c', 'doc_f', 'doc_r']);
      for (const item of items) expect(item.blobKey).toBe(`intake/${item.id}`);

      for (const item of items) await store.markSwept(item, at);
      expect(await sweepable(store, 'intake', at)).toEqual([]);
      for (const id of ['doc_c', 'doc_r', 'doc_f']) {
        expect((await store.getDocument('org_a', id))?.intakeKey).toBeNull();
      }
      expect((await store.getDocument('org_a', 'doc_pending'))?.intakeKey).toBe(
        'intake/doc_pending',
      );
    });

    it('does not list intake bytes already cleared', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      await store.clearIntake('doc_1');
      expect(await sweepable(store, 'intake', T0)).toEqual([]);
    });

    it('sweeps an output 24 h after completion without marking it deleted', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      expect(await sweepable(store, 'expired-output', after(T0, DAY_MS - 1))).toEqual([]);

      const at = after(T0, DAY_MS);
      const items = await sweepable(store, 'expired-output', at);
      expect(items).toEqual([{ kind: 'expired-output', id: 'doc_1', blobKey: 'outputs/doc_1' }]);
      await store.markSwept(defined(items[0]), at);
      expect(await store.getDocument('org_a', 'doc_1')).toMatchObject({
        status: 'completed',
        outputRemovedAt: at,
        deletedAt: null,
      });
      expect(await sweepable(store, 'expired-output', after(at, DAY_MS))).toEqual([]);
    });

    it('sweeps a delete-after-download output once the grace after its first download ends', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(
        store,
        newDocument('org_a', 'doc_1', { deleteAfterDownload: true }),
        'completed',
        T0,
      );
      expect(await sweepable(store, 'downloaded-output', after(T0, HOUR_MS))).toEqual([]);

      const downloaded = after(T0, MINUTE_MS);
      await store.recordDownload('org_a', 'doc_1', downloaded);
      expect(await sweepable(store, 'downloaded-output', after(downloaded, GRACE_MS - 1))).toEqual(
        [],
      );

      const at = after(downloaded, GRACE_MS);
      const items = await sweepable(store, 'downloaded-output', at);
      expect(items).toEqual([{ kind: 'downloaded-output', id: 'doc_1', blobKey: 'outputs/doc_1' }]);
      await store.markSwept(defined(items[0]), at);
      expect(await store.getDocument('org_a', 'doc_1')).toMatchObject({
        outputRemovedAt: at,
        deletedAt: at,
      });
      expect(await store.listSweepable(after(at, 2 * DAY_MS), GRACE_MS, NO_LIMIT)).toEqual([
        { kind: 'intake', id: 'doc_1', blobKey: 'intake/doc_1' },
      ]);
      expect((await store.deleteDocumentFile('org_a', 'doc_1', after(at, HOUR_MS))).kind).toBe(
        'nothing_to_delete',
      );
    });

    it('uses the grace it is given', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(
        store,
        newDocument('org_a', 'doc_1', { deleteAfterDownload: true }),
        'completed',
        T0,
      );
      await store.recordDownload('org_a', 'doc_1', T0);
      const at = after(T0, 10 * SECOND_MS);
      expect(await sweepable(store, 'downloaded-output', at, 11 * SECOND_MS)).toEqual([]);
      expect(await sweepable(store, 'downloaded-output', at, 10 * SECOND_MS)).toHaveLength(1);
    });

    it('keeps a downloaded output without delete-after-download until its 24 h expiry', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      await store.recordDownload('org_a', 'doc_1', after(T0, MINUTE_MS));
      expect(await sweepable(store, 'downloaded-output', after(T0, HOUR_MS))).toEqual([]);
      expect(await sweepable(store, 'expired-output', after(T0, HOUR_MS))).toEqual([]);
    });

    it('lists a document due under both output rules once, as downloaded', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(
        store,
        newDocument('org_a', 'doc_1', { deleteAfterDownload: true }),
        'completed',
        T0,
      );
      await store.recordDownload('org_a', 'doc_1', after(T0, MINUTE_MS));
      const all = await store.listSweepable(after(T0, 2 * DAY_MS), GRACE_MS, NO_LIMIT);
      expect(all.filter((item) => item.kind !== 'intake')).toEqual([
        { kind: 'downloaded-output', id: 'doc_1', blobKey: 'outputs/doc_1' },
      ]);
    });

    it('sweeps a delete-after-download output never downloaded at its 24 h expiry', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(
        store,
        newDocument('org_a', 'doc_1', { deleteAfterDownload: true }),
        'completed',
        T0,
      );
      expect(await sweepable(store, 'expired-output', after(T0, DAY_MS))).toHaveLength(1);
    });

    it('sweeps uploads never submitted once their window is over', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await store.createUpload(newUpload('org_a', 'upl_empty'));
      await store.createUpload(newUpload('org_a', 'upl_full'));
      await store.markUploaded('upl_full', 1_000, after(T0, MINUTE_MS));
      await store.createUpload(newUpload('org_a', 'upl_used'));
      await store.markUploaded('upl_used', 1_000, after(T0, MINUTE_MS));
      await accept(store, newDocument('org_a', 'doc_1', { uploadId: 'upl_used' }));
      await store.createUpload(newUpload('org_a', 'upl_later', after(T0, HOUR_MS)));

      expect(await sweepable(store, 'expired-upload', after(T0, DAY_MS - 1))).toEqual([]);
      const at = after(T0, DAY_MS);
      const items = await sweepable(store, 'expired-upload', at);
      expect(items.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { kind: 'expired-upload', id: 'upl_empty', blobKey: 'uploads/upl_empty' },
        { kind: 'expired-upload', id: 'upl_full', blobKey: 'uploads/upl_full' },
      ]);
      for (const item of items) await store.markSwept(item, at);
      expect(await sweepable(store, 'expired-upload', at)).toEqual([]);
      expect(await sweepable(store, 'expired-upload', after(T0, 2 * DAY_MS))).toEqual([
        { kind: 'expired-upload', id: 'upl_later', blobKey: 'uploads/upl_later' },
      ]);
      // A swept upload stays unsubmittable.
      expect(
        await store.acceptDocument(newDocument('org_a', 'doc_2', { uploadId: 'upl_full' }), at),
      ).toEqual({ kind: 'upload_not_found' });
    });

    it('respects the limit across kinds and lists the rest next time', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'internal');
      for (let index = 0; index < 4; index += 1) {
        await processDocument(
          store,
          newDocument('org_a', `doc_${index}`),
          'completed',
          after(T0, index * SECOND_MS),
        );
      }
      await store.createUpload(newUpload('org_a', 'upl_1'));
      const at = after(T0, 2 * DAY_MS);
      // 4 intakes, 4 expired outputs, 1 upload.
      expect(await store.listSweepable(at, GRACE_MS, NO_LIMIT)).toHaveLength(9);
      expect(await store.listSweepable(at, GRACE_MS, 0)).toEqual([]);
      const seen = new Set<string>();
      for (let round = 0; round < 3; round += 1) {
        const batch = await store.listSweepable(at, GRACE_MS, 3);
        expect(batch).toHaveLength(3);
        for (const item of batch) {
          seen.add(`${item.kind}:${item.id}`);
          await store.markSwept(item, at);
        }
      }
      expect(seen.size).toBe(9);
      expect(await store.listSweepable(at, GRACE_MS, 3)).toEqual([]);
    });

    it('marks a swept item once (repeating changes nothing)', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'starter');
      await processDocument(store, newDocument('org_a', 'doc_1'), 'completed', T0);
      const at = after(T0, DAY_MS);
      const item = defined((await sweepable(store, 'expired-output', at))[0]);
      await store.markSwept(item, at);
      await store.markSwept(item, after(at, HOUR_MS));
      expect((await store.getDocument('org_a', 'doc_1'))?.outputRemovedAt).toEqual(at);
    });
  });

  describe('ownedBlobKeys', () => {
    it('names the blobs that live documents and uploads still own, in the order asked', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await accept(store, newDocument('org_a', 'doc_leased'));
      await processDocument(store, newDocument('org_a', 'doc_done'), 'completed', T0);
      await processDocument(store, newDocument('org_a', 'doc_rejected'), REJECTED_RESULT, T0);
      await accept(store, newDocument('org_a', 'doc_queued'), after(T0, SECOND_MS));
      // The oldest pending one is leased: one in flight of each kind.
      const leased = await leaseNext(store, 'worker-1', after(T0, 2 * SECOND_MS));
      expect(leased.id).toBe('doc_leased');
      await store.createUpload(newUpload('org_a', 'upl_waiting'));
      await store.createUpload(newUpload('org_a', 'upl_swept'));
      const keys = [
        'uploads/upl_swept',
        'intake/doc_leased',
        'output/doc_leased',
        'intake/doc_queued',
        'output/doc_queued',
        'intake/doc_done',
        // `processDocument` finishes with the output key `outputs/<id>`.
        'outputs/doc_done',
        'output/doc_done',
        'intake/doc_rejected',
        'output/doc_rejected',
        'uploads/upl_waiting',
        'intake/doc_never_accepted',
        'output/doc_never_accepted',
        'uploads/upl_never_created',
      ];
      await store.markSwept(
        { kind: 'expired-upload', id: 'upl_swept', blobKey: 'uploads/upl_swept' },
        T0,
      );
      expect(await store.ownedBlobKeys(keys)).toEqual([
        'intake/doc_leased',
        'output/doc_leased',
        'intake/doc_queued',
        'output/doc_queued',
        'intake/doc_done',
        'outputs/doc_done',
        'intake/doc_rejected',
        'uploads/upl_waiting',
      ]);

      // Intakes deleted and outputs removed are nobody's any more.
      await store.clearIntake('doc_done');
      await store.markSwept(
        { kind: 'intake', id: 'doc_rejected', blobKey: 'intake/doc_rejected' },
        T0,
      );
      const expired = after(T0, DAY_MS);
      const item = defined((await sweepable(store, 'expired-output', expired))[0]);
      await store.markSwept(item, expired);
      expect(
        await store.ownedBlobKeys(['intake/doc_done', 'outputs/doc_done', 'intake/doc_rejected']),
      ).toEqual([]);
      expect(await store.ownedBlobKeys([])).toEqual([]);
    });

    it('hands a submitted upload’s bytes to its document', async () => {
      const store = context.store();
      await createOrg(store, 'org_a', 'growth');
      await store.createUpload(newUpload('org_a', 'upl_1'));
      await store.markUploaded('upl_1', 10, T0);
      await accept(store, newDocument('org_a', 'doc_1', { lane: 'reference', uploadId: 'upl_1' }));
      expect(await store.ownedBlobKeys(['uploads/upl_1'])).toEqual(['uploads/upl_1']);
      await leaseNext(store, 'worker-1', T0);
      await store.finishDocument('doc_1', 'worker-1', REJECTED_RESULT, after(T0, SECOND_MS));
      await store.clearIntake('doc_1');
      expect(await store.ownedBlobKeys(['uploads/upl_1'])).toEqual([]);
    });

    it('refuses to be asked about more than MAX_OWNERSHIP_KEYS keys at once', async () => {
      const store = context.store();
      const keys = Array.from({ length: MAX_OWNERSHIP_KEYS + 1 }, (_, index) => `intake/d${index}`);
      await expect(store.ownedBlobKeys(keys)).rejects.toThrow(TypeError);
      expect(await store.ownedBlobKeys(keys.slice(1))).toEqual([]);
    });
  });
}
