import {
  assertOwnershipKeys,
  decideAcceptance,
  deletionOf,
  documentIdsNamedBy,
  endDocument,
  isLive,
  lapsedLeaseOutcome,
  ownedBlobKeys,
  refundFailure,
  submitRefusal,
} from '@disarm/protocol';
import type { DocumentRecord, DocumentResult, StateStore, SweepItem } from '@disarm/protocol';
import type { Pool, PoolClient } from 'pg';

import type { OrganisationRows } from './organisations.ts';
import { inTransaction, query } from './pool.ts';
import { holdsClaimForUpdate, recordClaimResource } from './requests.ts';
import { checkedDate, checkedDateOrNull, toDocument, toUpload } from './rows.ts';
import type { DocumentRow, UploadRow } from './rows.ts';

/** Documents, the queue, uploads and retention sweeps. */
export type DocumentOps = Pick<
  StateStore,
  | 'acceptDocument'
  | 'checkCanSubmit'
  | 'getDocument'
  | 'recordDownload'
  | 'deleteDocumentFile'
  | 'leaseDocument'
  | 'renewLease'
  | 'finishDocument'
  | 'recoverLapsedLeases'
  | 'clearIntake'
  | 'queueStats'
  | 'createUpload'
  | 'getUpload'
  | 'getUploadById'
  | 'markUploaded'
  | 'listSweepable'
  | 'markSwept'
  | 'ownedBlobKeys'
>;

/** Lapsed leases handled per {@link DocumentOps.recoverLapsedLeases} call; the rest next call. */
const MAX_RECOVERED_PER_CALL = 500;

/** A row of the sweep queries. */
interface SweepRow {
  readonly id: string;
  readonly blob_key: string;
}

const INSERT_DOCUMENT = `
INSERT INTO documents (
  id, organisation_id, status, lane, file_name, size_bytes, delete_after_download,
  status_style_202, intake_key, submitted_at, threat_names, charged_pence, counted_in_allowance,
  attempts
) VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, '[]', $10, $11, 0)`;

// The queue's one hot write: the oldest pending document whose back-off is over and no other
// worker holds. SKIP LOCKED lets workers on every host lease side by side without queueing on
// each other's row locks.
const LEASE_DOCUMENT = `
UPDATE documents
SET status = 'processing', started_at = COALESCE(started_at, $1), attempts = attempts + 1,
    lease_owner = $2, lease_expires_at = $3, retry_not_before = NULL
WHERE id = (
  SELECT id FROM documents
  WHERE status = 'pending' AND (retry_not_before IS NULL OR retry_not_before <= $1)
  ORDER BY submitted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED
) AND status = 'pending'
RETURNING *`;

const END_DOCUMENT = `
UPDATE documents SET
  status = $2, completed_at = $3, output_blob_key = $4, output_file_name = $5, output_format = $6,
  output_media_type = $7, output_converted = $8, output_size_bytes = $9, output_findings = $10,
  reason = $11, threat_names = $12, detail = $13, reason_detail = $14, download_expires_at = $15,
  lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 RETURNING *`;

/** Creates the document operations over `pool`. */
export function createDocumentOps(pool: Pool, organisations: OrganisationRows): DocumentOps {
  /** Ends `row` as `result`, refunding a failure; in the caller's transaction. */
  async function end(
    client: PoolClient,
    row: DocumentRow,
    result: DocumentResult,
    at: Date,
  ): Promise<DocumentRecord> {
    const document = endDocument(toDocument(row), result, at);
    const output = document.output;
    const ended = await client.query<DocumentRow>(END_DOCUMENT, [
      row.id,
      document.status,
      at,
      output?.blobKey ?? null,
      output?.fileName ?? null,
      output?.format ?? null,
      output?.mediaType ?? null,
      output?.converted ?? null,
      output?.sizeBytes ?? null,
      output === null ? null : JSON.stringify(output.findings),
      document.reason,
      JSON.stringify(document.threatNames),
      document.detail,
      document.reasonDetail,
      checkedDateOrNull(document.downloadExpiresAt),
    ]);
    const endedRow = ended.rows[0];
    if (endedRow === undefined) throw new Error(`document ${row.id} vanished while ending`);
    if (document.status !== 'failed') return toDocument(endedRow);
    const organisation = await organisations.readForUpdate(client, row.organisation_id, at);
    if (organisation === undefined) return toDocument(endedRow);
    const refunded = refundFailure(document, organisation);
    await organisations.write(client, refunded.organisation);
    const cleared = await client.query<DocumentRow>(
      `UPDATE documents SET charged_pence = 0, counted_in_allowance = false
       WHERE id = $1 RETURNING *`,
      [row.id],
    );
    return toDocument(cleared.rows[0] ?? endedRow);
  }

  return {
    acceptDocument(input, at) {
      checkedDate(at);
      return inTransaction(
        pool,
        async (client) => {
          // The claim first (the lock order of every transaction that takes both): a claim a
          // retry took over is no longer this submission's, so nothing is created or charged.
          if (
            input.idempotency !== undefined &&
            !(await holdsClaimForUpdate(client, input.idempotency))
          ) {
            return { kind: 'claim_lost' as const };
          }
          const organisation = await organisations.readForUpdate(client, input.organisationId, at);
          let upload: UploadRow | undefined;
          if (input.uploadId !== undefined && organisation !== undefined) {
            const found = await client.query<UploadRow>(
              'SELECT * FROM uploads WHERE organisation_id = $1 AND id = $2 FOR UPDATE',
              [input.organisationId, input.uploadId],
            );
            upload = found.rows[0];
          }
          const decision = decideAcceptance({
            document: input,
            organisation,
            upload: upload === undefined ? undefined : toUpload(upload),
            at,
          });
          if (decision.kind !== 'accept') return decision;
          const document = decision.document;
          await client.query(INSERT_DOCUMENT, [
            document.id,
            document.organisationId,
            document.lane,
            document.fileName,
            document.sizeBytes,
            document.deleteAfterDownload,
            document.statusStyle202,
            document.intakeKey,
            at,
            document.chargedPence,
            document.countedInAllowance,
          ]);
          await organisations.write(client, decision.organisation);
          if (decision.upload !== null) {
            await client.query(
              `UPDATE uploads SET submitted_at = $1, document_id = $2
               WHERE id = $3 AND submitted_at IS NULL`,
              [at, document.id, decision.upload.id],
            );
          }
          if (input.idempotency !== undefined) {
            await recordClaimResource(client, input.idempotency, document.id);
          }
          const stored = await client.query<DocumentRow>('SELECT * FROM documents WHERE id = $1', [
            document.id,
          ]);
          const row = stored.rows[0];
          if (row === undefined) throw new Error(`document ${document.id} was not stored`);
          return {
            kind: 'accepted' as const,
            document: toDocument(row),
            organisation: decision.organisation,
          };
        },
        {
          // COMMIT's answer was lost: the document's id tells whether it (and its charge) landed.
          recover: async (client) => {
            const stored = await client.query<DocumentRow>(
              'SELECT * FROM documents WHERE id = $1 AND organisation_id = $2',
              [input.id, input.organisationId],
            );
            const row = stored.rows[0];
            if (row === undefined) return undefined;
            const organisation = await organisations.readIn(client, input.organisationId, at);
            if (organisation === undefined) return undefined;
            return { kind: 'accepted' as const, document: toDocument(row), organisation };
          },
        },
      );
    },

    async checkCanSubmit(organisationId, at) {
      checkedDate(at);
      return submitRefusal(await organisations.read(organisationId, at));
    },

    async getDocument(organisationId, id) {
      const { rows } = await query<DocumentRow>(
        pool,
        'SELECT * FROM documents WHERE id = $1 AND organisation_id = $2',
        [id, organisationId],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toDocument(row);
    },

    async recordDownload(organisationId, id, at) {
      const { rows } = await query<DocumentRow>(
        pool,
        `UPDATE documents SET first_download_at = COALESCE(first_download_at, $1)
         WHERE id = $2 AND organisation_id = $3 RETURNING *`,
        [checkedDate(at), id, organisationId],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toDocument(row);
    },

    deleteDocumentFile(organisationId, id, at) {
      checkedDate(at);
      return inTransaction(pool, async (client) => {
        const { rows } = await client.query<DocumentRow>(
          'SELECT * FROM documents WHERE id = $1 AND organisation_id = $2 FOR UPDATE',
          [id, organisationId],
        );
        const row = rows[0];
        if (row === undefined) return { kind: 'not_found' as const };
        const document = toDocument(row);
        const deletion = deletionOf(document);
        if (deletion !== 'delete') return { kind: deletion, document };
        const deleted = await client.query<DocumentRow>(
          'UPDATE documents SET deleted_at = $1, output_removed_at = $1 WHERE id = $2 RETURNING *',
          [at, id],
        );
        return {
          kind: 'deleted' as const,
          document: toDocument(deleted.rows[0] ?? row),
          blobKey: row.output_blob_key,
        };
      });
    },

    async leaseDocument(owner, at, leaseMs) {
      const { rows } = await query<DocumentRow>(
        pool,
        LEASE_DOCUMENT,
        [checkedDate(at), owner, new Date(at.getTime() + leaseMs)],
        // A lease whose answer was lost lapses and is recovered: never taken twice.
        false,
      );
      const row = rows[0];
      return row === undefined ? undefined : toDocument(row);
    },

    async renewLease(id, owner, at, leaseMs) {
      // A lease holds while `at` is before its expiry; at the expiry instant it has lapsed.
      const { rowCount } = await query(
        pool,
        `UPDATE documents SET lease_expires_at = $1
         WHERE id = $2 AND status = 'processing' AND lease_owner = $3 AND lease_expires_at > $4`,
        [new Date(checkedDate(at).getTime() + leaseMs), id, owner, at],
        true,
      );
      return rowCount === 1;
    },

    finishDocument(id, owner, result, at) {
      checkedDate(at);
      return inTransaction(
        pool,
        async (client) => {
          const { rows } = await client.query<DocumentRow>(
            'SELECT * FROM documents WHERE id = $1 FOR UPDATE',
            [id],
          );
          const row = rows[0];
          const held =
            row?.status === 'processing' &&
            row.lease_owner === owner &&
            row.lease_expires_at !== null &&
            isLive(row.lease_expires_at, at);
          if (!held) return undefined;
          return end(client, row, result, at);
        },
        {
          // COMMIT's answer was lost: the document ended at exactly `at` with this result if it
          // landed (a lease holder's ending is the only one stamped with its own time).
          recover: async (client) => {
            const { rows } = await client.query<DocumentRow>(
              'SELECT * FROM documents WHERE id = $1',
              [id],
            );
            const row = rows[0];
            const landed =
              row?.status === result.status && row.completed_at?.getTime() === at.getTime();
            return landed ? toDocument(row) : undefined;
          },
        },
      );
    },

    recoverLapsedLeases(at, maxAttempts) {
      checkedDate(at);
      return inTransaction(pool, async (client) => {
        // SKIP LOCKED: two nodes recovering at once share the work; each lapsed document is
        // requeued or failed (and refunded) by exactly one of them.
        const { rows } = await client.query<DocumentRow>(
          `SELECT * FROM documents WHERE status = 'processing' AND lease_expires_at <= $1
           ORDER BY submitted_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [at, MAX_RECOVERED_PER_CALL],
        );
        const failed: DocumentRecord[] = [];
        for (const row of rows) {
          const outcome = lapsedLeaseOutcome(toDocument(row), maxAttempts, at);
          if (outcome.kind === 'retry') {
            await client.query(
              `UPDATE documents SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
                 retry_not_before = $2
               WHERE id = $1`,
              [row.id, outcome.notBefore],
            );
            continue;
          }
          failed.push(await end(client, row, outcome.result, at));
        }
        return failed;
      });
    },

    async clearIntake(id) {
      await query(pool, 'UPDATE documents SET intake_key = NULL WHERE id = $1', [id], true);
    },

    async queueStats() {
      // Both counts ride the partial indexes of the queue and the leases.
      const { rows } = await query<{ pending: number; processing: number; oldest: Date | null }>(
        pool,
        `SELECT (SELECT COUNT(*)::int FROM documents WHERE status = 'pending') AS pending,
                (SELECT COUNT(*)::int FROM documents WHERE status = 'processing') AS processing,
                (SELECT MIN(submitted_at) FROM documents WHERE status = 'pending') AS oldest`,
        [],
        true,
      );
      const row = rows[0];
      return {
        pending: row?.pending ?? 0,
        processing: row?.processing ?? 0,
        oldestPendingSubmittedAt: row?.oldest ?? null,
      };
    },

    createUpload(record, idempotency) {
      const values = [
        record.id,
        record.organisationId,
        record.fileName,
        record.blobKey,
        checkedDate(record.createdAt),
        checkedDate(record.putExpiresAt),
        checkedDate(record.expiresAt),
        record.maxSizeBytes,
        checkedDateOrNull(record.uploadedAt),
        record.sizeBytes,
        checkedDateOrNull(record.submittedAt),
        record.documentId,
      ];
      return inTransaction(
        pool,
        async (client) => {
          if (idempotency !== undefined && !(await holdsClaimForUpdate(client, idempotency))) {
            return false;
          }
          await client.query(
            `INSERT INTO uploads (
               id, organisation_id, file_name, blob_key, created_at, put_expires_at, expires_at,
               max_size_bytes, uploaded_at, size_bytes, submitted_at, document_id
             ) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
            values,
          );
          if (idempotency !== undefined) await recordClaimResource(client, idempotency, record.id);
          return true;
        },
        {
          // COMMIT's answer was lost: the upload's id tells whether it landed.
          recover: async (client) => {
            const { rows } = await client.query('SELECT 1 FROM uploads WHERE id = $1', [record.id]);
            return rows.length === 1 ? true : undefined;
          },
        },
      );
    },

    async getUpload(organisationId, id) {
      const { rows } = await query<UploadRow>(
        pool,
        'SELECT * FROM uploads WHERE id = $1 AND organisation_id = $2',
        [id, organisationId],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toUpload(row);
    },

    async getUploadById(id) {
      const { rows } = await query<UploadRow>(
        pool,
        'SELECT * FROM uploads WHERE id = $1',
        [id],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toUpload(row);
    },

    async markUploaded(id, sizeBytes, at) {
      const { rowCount } = await query(
        pool,
        'UPDATE uploads SET uploaded_at = $1, size_bytes = $2 WHERE id = $3 AND uploaded_at IS NULL',
        [checkedDate(at), sizeBytes, id],
        false,
      );
      return rowCount === 1;
    },

    async listSweepable(at, graceMs, limit) {
      checkedDate(at);
      const graceEnded = new Date(at.getTime() - graceMs);
      const items: SweepItem[] = [];
      const room = (): number => Math.max(0, Math.floor(limit) - items.length);
      const add = async (
        kind: SweepItem['kind'],
        text: string,
        values: readonly unknown[],
      ): Promise<void> => {
        if (room() === 0) return;
        const { rows } = await query<SweepRow>(pool, text, [...values, room()], true);
        for (const row of rows) items.push({ kind, id: row.id, blobKey: row.blob_key });
      };
      await add(
        'intake',
        `SELECT id, intake_key AS blob_key FROM documents
         WHERE intake_key IS NOT NULL AND status IN ('completed', 'rejected', 'failed')
         ORDER BY completed_at, id LIMIT $1`,
        [],
      );
      await add(
        'downloaded-output',
        `SELECT id, output_blob_key AS blob_key FROM documents
         WHERE status = 'completed' AND output_removed_at IS NULL AND delete_after_download
           AND first_download_at IS NOT NULL AND first_download_at <= $1
         ORDER BY first_download_at, id LIMIT $2`,
        [graceEnded],
      );
      // A document due under both rules is swept as downloaded (above), which also sets deletedAt.
      await add(
        'expired-output',
        `SELECT id, output_blob_key AS blob_key FROM documents
         WHERE status = 'completed' AND output_removed_at IS NULL AND download_expires_at <= $1
           AND NOT (delete_after_download AND first_download_at IS NOT NULL
                    AND first_download_at <= $2)
         ORDER BY download_expires_at, id LIMIT $3`,
        [at, graceEnded],
      );
      // Never submitted (a submitted upload's bytes became the document's intake), window over;
      // listed whether or not the PUT was recorded, since bytes may have landed without it.
      await add(
        'expired-upload',
        `SELECT id, blob_key FROM uploads
         WHERE submitted_at IS NULL AND blob_removed_at IS NULL AND expires_at <= $1
         ORDER BY expires_at, id LIMIT $2`,
        [at],
      );
      return items;
    },

    async ownedBlobKeys(keys) {
      assertOwnershipKeys(keys);
      if (keys.length === 0) return [];
      // The documents a key names by their id or by a key column (index scans, OR-ed), then the
      // uploads by their key. A row committed between the two only ever owns a blob younger than
      // the grace, which the sweep does not touch.
      const { rows } = await query<DocumentRow>(
        pool,
        `SELECT * FROM documents
         WHERE id = ANY($1) OR intake_key = ANY($2) OR output_blob_key = ANY($2)`,
        [documentIdsNamedBy(keys), keys],
        true,
      );
      const uploads = await query<{
        blob_key: string;
        submitted_at: Date | null;
        blob_removed_at: Date | null;
      }>(
        pool,
        'SELECT blob_key, submitted_at, blob_removed_at FROM uploads WHERE blob_key = ANY($1)',
        [keys],
        true,
      );
      return ownedBlobKeys(
        keys,
        rows.map((row) => toDocument(row)),
        uploads.rows.map((row) => ({
          blobKey: row.blob_key,
          submittedAt: row.submitted_at,
          blobRemovedAt: row.blob_removed_at,
        })),
      );
    },

    async markSwept(item, at) {
      checkedDate(at);
      switch (item.kind) {
        case 'intake':
          await query(
            pool,
            'UPDATE documents SET intake_key = NULL WHERE id = $1 AND intake_key = $2',
            [item.id, item.blobKey],
            true,
          );
          return;
        case 'expired-output':
          await query(
            pool,
            'UPDATE documents SET output_removed_at = $1 WHERE id = $2 AND output_removed_at IS NULL',
            [at, item.id],
            true,
          );
          return;
        case 'downloaded-output':
          // `getDocument`: deletedAt records removal by DELETE or the delete-after-download sweep.
          await query(
            pool,
            `UPDATE documents SET output_removed_at = $1, deleted_at = COALESCE(deleted_at, $1)
             WHERE id = $2 AND output_removed_at IS NULL`,
            [at, item.id],
            true,
          );
          return;
        case 'expired-upload':
          await query(
            pool,
            'UPDATE uploads SET blob_removed_at = $1 WHERE id = $2 AND blob_removed_at IS NULL',
            [at, item.id],
            true,
          );
          return;
      }
    },
  };
}
