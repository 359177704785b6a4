import {
  assertOwnershipKeys,
  assertTransition,
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
import type { AcceptResult, DocumentRecord, DocumentResult, SweepItem } from '@disarm/protocol';
import type { Database } from 'better-sqlite3';

import type { OrganisationRows } from './accounts.ts';
import type { ClaimRows } from './requests.ts';
import { checkedDate, toDocument, toFlag, toMillis, toMillisOrNull, toUpload } from './rows.ts';
import type { DocumentRow, UploadRow } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/** Documents, the queue, uploads and retention sweeps. */
export type DocumentOps = Pick<
  SyncStateStore,
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

/** Documents whose last read this connection remembers (a few MB at most). */
const RECENT_DOCUMENTS = 1024;

/** Columns of a new document row (the rest take their initial values in the INSERT). */
interface NewDocumentRow {
  readonly id: string;
  readonly organisation_id: string;
  readonly lane: DocumentRow['lane'];
  readonly file_name: string;
  readonly size_bytes: number;
  readonly delete_after_download: 0 | 1;
  readonly status_style_202: 0 | 1;
  readonly intake_key: string;
  readonly submitted_at: number;
  readonly charged_pence: number;
  readonly counted_in_allowance: 0 | 1;
}

/** Columns an ending writes; the ones a result does not set stay null. */
interface EndingRow {
  readonly id: string;
  readonly status: 'completed' | 'rejected' | 'failed';
  readonly completed_at: number;
  readonly output_blob_key: string | null;
  readonly output_file_name: string | null;
  readonly output_format: string | null;
  readonly output_media_type: string | null;
  readonly output_converted: 0 | 1 | null;
  readonly output_size_bytes: number | null;
  readonly output_findings: string | null;
  readonly reason: DocumentRow['reason'];
  readonly threat_names: string;
  readonly detail: string | null;
  readonly reason_detail: string | null;
  readonly download_expires_at: number | null;
}

/** A row of the sweep queries. */
interface SweepRow {
  readonly id: string;
  readonly blob_key: string;
}

/** What ownership reads of an upload. */
interface UploadBlobRow {
  readonly blob_key: string;
  readonly submitted_at: number | null;
  readonly blob_removed_at: number | null;
}

/** Creates the document operations over `db`. */
export function createDocumentOps(
  db: Database,
  organisations: OrganisationRows,
  claims: ClaimRows,
): DocumentOps {
  const selectDocument = db.prepare<[string], DocumentRow>('SELECT * FROM documents WHERE id = ?');
  const selectOwnDocument = db.prepare<[string, string], DocumentRow>(
    'SELECT * FROM documents WHERE organisation_id = ? AND id = ?',
  );
  const selectOwnRevision = db
    .prepare<[string, string], number>(
      'SELECT revision FROM documents WHERE organisation_id = ? AND id = ?',
    )
    .pluck();
  /**
   * Documents read lately, by id, with the revision they were read at: a poll of an unchanged
   * document reads one column, not the whole row (every update moves the revision; see
   * migration 6). Bounded; the least recently read goes first.
   */
  const recent = new Map<string, { revision: number; record: DocumentRecord }>();
  const insertDocument = db.prepare<[NewDocumentRow]>(
    `INSERT INTO documents (
       id, organisation_id, status, lane, file_name, size_bytes, delete_after_download,
       status_style_202, intake_key, submitted_at, threat_names, charged_pence,
       counted_in_allowance, attempts
     ) VALUES (
       @id, @organisation_id, 'pending', @lane, @file_name, @size_bytes, @delete_after_download,
       @status_style_202, @intake_key, @submitted_at, '[]', @charged_pence,
       @counted_in_allowance, 0
     )`,
  );
  const selectOldestPending = db.prepare<[number], DocumentRow>(
    `SELECT * FROM documents
     WHERE status = 'pending' AND (retry_not_before IS NULL OR retry_not_before <= ?)
     ORDER BY submitted_at, id LIMIT 1`,
  );
  const startLease = db.prepare<[number, string, number, string], DocumentRow>(
    `UPDATE documents
     SET status = 'processing', started_at = COALESCE(started_at, ?), attempts = attempts + 1,
         lease_owner = ?, lease_expires_at = ?, retry_not_before = NULL
     WHERE id = ? AND status = 'pending' RETURNING *`,
  );
  // A lease holds while `at` is before its expiry; at the expiry instant it has lapsed.
  const renewLease = db.prepare<[number, string, string, number]>(
    `UPDATE documents SET lease_expires_at = ?
     WHERE id = ? AND status = 'processing' AND lease_owner = ? AND lease_expires_at > ?`,
  );
  const endRow = db.prepare<[EndingRow], DocumentRow>(
    `UPDATE documents SET
       status = @status, completed_at = @completed_at, output_blob_key = @output_blob_key,
       output_file_name = @output_file_name, output_format = @output_format,
       output_media_type = @output_media_type, output_converted = @output_converted,
       output_size_bytes = @output_size_bytes, output_findings = @output_findings,
       reason = @reason, threat_names = @threat_names, detail = @detail,
       reason_detail = @reason_detail, download_expires_at = @download_expires_at, lease_owner = NULL, lease_expires_at = NULL
     WHERE id = @id RETURNING *`,
  );
  const clearCharge = db.prepare<[string]>(
    'UPDATE documents SET charged_pence = 0, counted_in_allowance = 0 WHERE id = ?',
  );
  const selectLapsed = db.prepare<[number], DocumentRow>(
    `SELECT * FROM documents WHERE status = 'processing' AND lease_expires_at <= ?
     ORDER BY submitted_at, id`,
  );
  const requeue = db.prepare<[number, string]>(
    `UPDATE documents SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
       retry_not_before = ?
     WHERE id = ?`,
  );
  const recordDownload = db.prepare<[number, string, string], DocumentRow>(
    `UPDATE documents SET first_download_at = COALESCE(first_download_at, ?)
     WHERE organisation_id = ? AND id = ? RETURNING *`,
  );
  const markDeleted = db.prepare<[number, number, string], DocumentRow>(
    'UPDATE documents SET deleted_at = ?, output_removed_at = ? WHERE id = ? RETURNING *',
  );
  const clearIntake = db.prepare<[string]>('UPDATE documents SET intake_key = NULL WHERE id = ?');
  // Three seeks of documents_queue (status, submitted_at): no scan, whatever the history.
  const selectQueueStats = db.prepare<
    [],
    { pending: number; processing: number; oldest: number | null }
  >(
    `SELECT (SELECT COUNT(*) FROM documents WHERE status = 'pending') AS pending,
            (SELECT COUNT(*) FROM documents WHERE status = 'processing') AS processing,
            (SELECT MIN(submitted_at) FROM documents WHERE status = 'pending') AS oldest`,
  );

  const insertUpload = db.prepare<[UploadRow]>(
    `INSERT INTO uploads (
       id, organisation_id, file_name, blob_key, created_at, put_expires_at, expires_at,
       max_size_bytes, uploaded_at, size_bytes, submitted_at, document_id, blob_removed_at
     ) VALUES (
       @id, @organisation_id, @file_name, @blob_key, @created_at, @put_expires_at, @expires_at,
       @max_size_bytes, @uploaded_at, @size_bytes, @submitted_at, @document_id, @blob_removed_at
     )`,
  );
  const selectUpload = db.prepare<[string], UploadRow>('SELECT * FROM uploads WHERE id = ?');
  const selectOwnUpload = db.prepare<[string, string], UploadRow>(
    'SELECT * FROM uploads WHERE organisation_id = ? AND id = ?',
  );
  const markUploaded = db.prepare<[number, number, string]>(
    `UPDATE uploads SET uploaded_at = ?, size_bytes = ? WHERE id = ? AND uploaded_at IS NULL`,
  );
  const consumeUpload = db.prepare<[number, string, string]>(
    'UPDATE uploads SET submitted_at = ?, document_id = ? WHERE id = ? AND submitted_at IS NULL',
  );

  const sweepIntake = db.prepare<[number], SweepRow>(
    `SELECT id, intake_key AS blob_key FROM documents
     WHERE intake_key IS NOT NULL AND status IN ('completed', 'rejected', 'failed')
     ORDER BY completed_at, id LIMIT ?`,
  );
  const sweepDownloaded = db.prepare<[number, number, number], SweepRow>(
    `SELECT id, output_blob_key AS blob_key FROM documents
     WHERE status = 'completed' AND output_removed_at IS NULL AND delete_after_download = 1
       AND first_download_at IS NOT NULL AND first_download_at <= ? - ?
     ORDER BY first_download_at, id LIMIT ?`,
  );
  // A document due under both rules is swept as downloaded (above), which also sets deletedAt.
  const sweepExpired = db.prepare<[number, number, number, number], SweepRow>(
    `SELECT id, output_blob_key AS blob_key FROM documents
     WHERE status = 'completed' AND output_removed_at IS NULL AND download_expires_at <= ?
       AND NOT (delete_after_download = 1 AND first_download_at IS NOT NULL
                AND first_download_at <= ? - ?)
     ORDER BY download_expires_at, id LIMIT ?`,
  );
  // Never submitted (a submitted upload's bytes became the document's intake), window over;
  // listed whether or not the PUT was recorded, since bytes may have landed without it.
  const sweepUploads = db.prepare<[number, number], SweepRow>(
    `SELECT id, blob_key FROM uploads
     WHERE submitted_at IS NULL AND blob_removed_at IS NULL AND expires_at <= ?
     ORDER BY expires_at, id LIMIT ?`,
  );
  const sweptIntake = db.prepare<[string, string]>(
    'UPDATE documents SET intake_key = NULL WHERE id = ? AND intake_key = ?',
  );
  const sweptExpiredOutput = db.prepare<[number, string]>(
    'UPDATE documents SET output_removed_at = ? WHERE id = ? AND output_removed_at IS NULL',
  );
  const sweptDownloadedOutput = db.prepare<[number, number, string]>(
    `UPDATE documents SET output_removed_at = ?, deleted_at = COALESCE(deleted_at, ?)
     WHERE id = ? AND output_removed_at IS NULL`,
  );
  const sweptUpload = db.prepare<[number, string]>(
    'UPDATE uploads SET blob_removed_at = ? WHERE id = ? AND blob_removed_at IS NULL',
  );
  // Ownership of listed blobs: each a seek of the key columns' indexes (migration 9).
  const documentsById = db.prepare<[string], DocumentRow>(
    'SELECT * FROM documents WHERE id IN (SELECT value FROM json_each(?))',
  );
  const documentsByIntake = db.prepare<[string], DocumentRow>(
    'SELECT * FROM documents WHERE intake_key IN (SELECT value FROM json_each(?))',
  );
  const documentsByOutput = db.prepare<[string], DocumentRow>(
    'SELECT * FROM documents WHERE output_blob_key IN (SELECT value FROM json_each(?))',
  );
  const uploadsByBlob = db.prepare<[string], UploadBlobRow>(
    `SELECT blob_key, submitted_at, blob_removed_at FROM uploads
     WHERE blob_key IN (SELECT value FROM json_each(?))`,
  );

  /** Ends `row` as `result`, refunding a failure; in the caller's transaction. */
  function end(row: DocumentRow, result: DocumentResult, at: Date): DocumentRow {
    const document = endDocument(toDocument(row), result, at);
    const output = document.output;
    const ended = endRow.get({
      id: row.id,
      status: result.status,
      completed_at: toMillis(at),
      output_blob_key: output?.blobKey ?? null,
      output_file_name: output?.fileName ?? null,
      output_format: output?.format ?? null,
      output_media_type: output?.mediaType ?? null,
      output_converted: output === null ? null : toFlag(output.converted),
      output_size_bytes: output?.sizeBytes ?? null,
      output_findings: output === null ? null : JSON.stringify(output.findings),
      reason: document.reason,
      threat_names: JSON.stringify(document.threatNames),
      detail: document.detail,
      reason_detail: document.reasonDetail,
      download_expires_at: toMillisOrNull(document.downloadExpiresAt),
    });
    if (ended === undefined) throw new Error(`document ${row.id} vanished while ending`);
    if (document.status !== 'failed') return ended;
    const organisation = organisations.readForUpdate(row.organisation_id, at);
    if (organisation === undefined) return ended;
    const refunded = refundFailure(document, organisation);
    organisations.write(refunded.organisation);
    clearCharge.run(row.id);
    return selectDocument.get(row.id) ?? ended;
  }

  const acceptDocument = db.transaction<DocumentOps['acceptDocument']>(
    (input, at): AcceptResult => {
      // A claim a retry took over is no longer this submission's: nothing is created or charged.
      if (input.idempotency !== undefined && !claims.holds(input.idempotency)) {
        return { kind: 'claim_lost' };
      }
      const organisation = organisations.readForUpdate(input.organisationId, checkedDate(at));
      const upload =
        input.uploadId === undefined || organisation === undefined
          ? undefined
          : selectOwnUpload.get(input.organisationId, input.uploadId);
      const decision = decideAcceptance({
        document: input,
        organisation,
        upload: upload === undefined ? undefined : toUpload(upload),
        at,
      });
      if (decision.kind !== 'accept') return decision;

      const document = decision.document;
      insertDocument.run({
        id: document.id,
        organisation_id: document.organisationId,
        lane: document.lane,
        file_name: document.fileName,
        size_bytes: document.sizeBytes,
        delete_after_download: toFlag(document.deleteAfterDownload),
        status_style_202: toFlag(document.statusStyle202),
        intake_key: document.intakeKey,
        submitted_at: toMillis(document.submittedAt),
        charged_pence: document.chargedPence,
        counted_in_allowance: toFlag(document.countedInAllowance),
      });
      organisations.write(decision.organisation);
      if (decision.upload !== null) {
        consumeUpload.run(toMillis(at), document.id, decision.upload.id);
      }
      if (input.idempotency !== undefined) claims.recordResource(input.idempotency, document.id);

      const stored = selectDocument.get(document.id);
      if (stored === undefined) throw new Error(`document ${document.id} was not stored`);
      return {
        kind: 'accepted',
        document: toDocument(stored),
        organisation: decision.organisation,
      };
    },
  );

  const deleteDocumentFile = db.transaction<DocumentOps['deleteDocumentFile']>(
    (organisationId, id, at) => {
      const row = selectOwnDocument.get(organisationId, id);
      if (row === undefined) return { kind: 'not_found' };
      const document = toDocument(row);
      const deletion = deletionOf(document);
      if (deletion !== 'delete') return { kind: deletion, document };
      const atMs = toMillis(at);
      const deleted = markDeleted.get(atMs, atMs, id) ?? row;
      return { kind: 'deleted', document: toDocument(deleted), blobKey: row.output_blob_key };
    },
  );

  const leaseDocument = db.transaction<DocumentOps['leaseDocument']>((owner, at, leaseMs) => {
    const atMs = toMillis(at);
    const next = selectOldestPending.get(atMs);
    if (next === undefined) return undefined;
    assertTransition(next.status, 'processing');
    const leased = startLease.get(atMs, owner, atMs + leaseMs, next.id);
    return leased === undefined ? undefined : toDocument(leased);
  });

  const finishDocument = db.transaction<DocumentOps['finishDocument']>((id, owner, result, at) => {
    const row = selectDocument.get(id);
    const held =
      row?.status === 'processing' &&
      row.lease_owner === owner &&
      row.lease_expires_at !== null &&
      isLive(new Date(row.lease_expires_at), checkedDate(at));
    if (!held) return undefined;
    return toDocument(end(row, result, at));
  });

  const recoverLapsedLeases = db.transaction<DocumentOps['recoverLapsedLeases']>(
    (at, maxAttempts) => {
      const failed: DocumentRecord[] = [];
      for (const row of selectLapsed.all(toMillis(at))) {
        const outcome = lapsedLeaseOutcome(toDocument(row), maxAttempts, at);
        if (outcome.kind === 'retry') {
          requeue.run(toMillis(outcome.notBefore), row.id);
          continue;
        }
        failed.push(toDocument(end(row, outcome.result, at)));
      }
      return failed;
    },
  );

  const createUpload = db.transaction<DocumentOps['createUpload']>((record, idempotency) => {
    if (idempotency !== undefined && !claims.holds(idempotency)) return false;
    insertUpload.run({
      id: record.id,
      organisation_id: record.organisationId,
      file_name: record.fileName,
      blob_key: record.blobKey,
      created_at: toMillis(record.createdAt),
      put_expires_at: toMillis(record.putExpiresAt),
      expires_at: toMillis(record.expiresAt),
      max_size_bytes: record.maxSizeBytes,
      uploaded_at: toMillisOrNull(record.uploadedAt),
      size_bytes: record.sizeBytes,
      submitted_at: toMillisOrNull(record.submittedAt),
      document_id: record.documentId,
      blob_removed_at: null,
    });
    if (idempotency !== undefined) claims.recordResource(idempotency, record.id);
    return true;
  });

  // Run in the store's read scope: the three reads see one snapshot.
  const ownedKeys: DocumentOps['ownedBlobKeys'] = (keys) => {
    assertOwnershipKeys(keys);
    if (keys.length === 0) return [];
    const json = JSON.stringify(keys);
    const documents = new Map<string, DocumentRecord>();
    for (const row of [
      ...documentsById.all(JSON.stringify(documentIdsNamedBy(keys))),
      ...documentsByIntake.all(json),
      ...documentsByOutput.all(json),
    ]) {
      if (!documents.has(row.id)) documents.set(row.id, toDocument(row));
    }
    const uploads = uploadsByBlob.all(json).map((row) => ({
      blobKey: row.blob_key,
      submittedAt: row.submitted_at === null ? null : new Date(row.submitted_at),
      blobRemovedAt: row.blob_removed_at === null ? null : new Date(row.blob_removed_at),
    }));
    return ownedBlobKeys(keys, [...documents.values()], uploads);
  };

  const markUploadedOnce = db.transaction<DocumentOps['markUploaded']>(
    (id, sizeBytes, at) => markUploaded.run(toMillis(at), sizeBytes, id).changes === 1,
  );

  const recordDownloadOnce = db.transaction<DocumentOps['recordDownload']>(
    (organisationId, id, at) => {
      const row = recordDownload.get(toMillis(at), organisationId, id);
      return row === undefined ? undefined : toDocument(row);
    },
  );

  const listSweepable = db.transaction<DocumentOps['listSweepable']>((at, graceMs, limit) => {
    const atMs = toMillis(at);
    const items: SweepItem[] = [];
    const room = (): number => Math.max(0, Math.floor(limit) - items.length);
    const add = (kind: SweepItem['kind'], rows: SweepRow[]): void => {
      for (const row of rows) items.push({ kind, id: row.id, blobKey: row.blob_key });
    };
    if (room() > 0) add('intake', sweepIntake.all(room()));
    if (room() > 0) add('downloaded-output', sweepDownloaded.all(atMs, graceMs, room()));
    if (room() > 0) add('expired-output', sweepExpired.all(atMs, atMs, graceMs, room()));
    if (room() > 0) add('expired-upload', sweepUploads.all(atMs, room()));
    return items;
  });

  return {
    acceptDocument: (input, at) => acceptDocument.immediate(input, at),
    checkCanSubmit(organisationId, at) {
      return submitRefusal(organisations.read(organisationId, checkedDate(at)));
    },
    getDocument(organisationId, id) {
      const revision = selectOwnRevision.get(organisationId, id);
      if (revision === undefined) {
        recent.delete(id);
        return undefined;
      }
      const known = recent.get(id);
      if (known?.revision === revision && known.record.organisationId === organisationId) {
        return known.record;
      }
      const row = selectOwnDocument.get(organisationId, id);
      if (row === undefined) return undefined;
      const record = Object.freeze(toDocument(row));
      recent.delete(id);
      recent.set(id, { revision: row.revision, record });
      if (recent.size > RECENT_DOCUMENTS) {
        const oldest = recent.keys().next();
        if (oldest.done !== true) recent.delete(oldest.value);
      }
      return record;
    },
    recordDownload: (organisationId, id, at) =>
      recordDownloadOnce.immediate(organisationId, id, at),
    deleteDocumentFile: (organisationId, id, at) =>
      deleteDocumentFile.immediate(organisationId, id, at),
    leaseDocument: (owner, at, leaseMs) => leaseDocument.immediate(owner, at, leaseMs),
    renewLease(id, owner, at, leaseMs) {
      const atMs = toMillis(at);
      return renewLease.run(atMs + leaseMs, id, owner, atMs).changes === 1;
    },
    finishDocument: (id, owner, result, at) => finishDocument.immediate(id, owner, result, at),
    recoverLapsedLeases: (at, maxAttempts) => recoverLapsedLeases.immediate(at, maxAttempts),
    clearIntake(id) {
      clearIntake.run(id);
    },
    queueStats() {
      const row = selectQueueStats.get();
      return {
        pending: row?.pending ?? 0,
        processing: row?.processing ?? 0,
        oldestPendingSubmittedAt:
          row?.oldest === null || row?.oldest === undefined ? null : new Date(row.oldest),
      };
    },

    createUpload: (record, idempotency) => createUpload.immediate(record, idempotency),
    getUpload(organisationId, id) {
      const row = selectOwnUpload.get(organisationId, id);
      return row === undefined ? undefined : toUpload(row);
    },
    getUploadById(id) {
      const row = selectUpload.get(id);
      return row === undefined ? undefined : toUpload(row);
    },
    markUploaded: (id, sizeBytes, at) => markUploadedOnce.immediate(id, sizeBytes, at),

    listSweepable: (at, graceMs, limit) => listSweepable(at, graceMs, limit),
    ownedBlobKeys: ownedKeys,
    markSwept(item, at) {
      const atMs = toMillis(at);
      switch (item.kind) {
        case 'intake':
          sweptIntake.run(item.id, item.blobKey);
          return;
        case 'expired-output':
          sweptExpiredOutput.run(atMs, item.id);
          return;
        case 'downloaded-output':
          // `getDocument`: deletedAt records removal by DELETE or the delete-after-download sweep.
          sweptDownloadedOutput.run(atMs, atMs, item.id);
          return;
        case 'expired-upload':
          sweptUpload.run(atMs, item.id);
          return;
      }
    },
  };
}
