import { assertTransition, isInFlight } from '../documents/state-machine.ts';
import { toReasonDetail } from '../documents/reason-detail.ts';
import type { DocumentResult } from '../ports.ts';
import type { DocumentRecord } from './types.ts';

/*
 * What happens to a document as it is processed and kept, once for every store: a store reads
 * the row inside its transaction, asks these functions what follows, and writes the answer.
 */

/** Download link and cleaned-file retention: 24 hours from completion. */
export const DOWNLOAD_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * `document` ended as `result` at `at`: its output or reason, and the download window of a
 * cleaned file. A `failed` ending is refunded by the caller in the same transaction
 * (`refundFailure`).
 * @throws {Error} when the state table does not allow the ending (a bug, never input).
 */
export function endDocument(
  document: DocumentRecord,
  result: DocumentResult,
  at: Date,
): DocumentRecord {
  assertTransition(document.status, result.status);
  const ended = {
    ...document,
    completedAt: at,
    output: null,
    reason: null,
    threatNames: [],
    detail: null,
    reasonDetail: null,
    downloadExpiresAt: null,
  };
  switch (result.status) {
    case 'completed':
      return {
        ...ended,
        status: 'completed',
        output: {
          blobKey: result.blobKey,
          fileName: result.fileName,
          format: result.format,
          mediaType: result.mediaType,
          converted: result.converted,
          sizeBytes: result.sizeBytes,
          findings: result.findings,
        },
        downloadExpiresAt: new Date(at.getTime() + DOWNLOAD_RETENTION_MS),
      };
    case 'rejected':
      return {
        ...ended,
        status: 'rejected',
        reason: result.reason,
        threatNames: result.threatNames,
        detail: result.detail,
        reasonDetail: toReasonDetail(result),
      };
    case 'failed':
      return {
        ...ended,
        status: 'failed',
        reason: result.reason,
        detail: result.detail,
        reasonDetail: toReasonDetail(result),
      };
  }
}

/** The wait before a document whose lease lapsed once may be leased again. */
export const RETRY_BACKOFF_BASE_MS = 2_000;
/** Each further lapse multiplies the wait by this. */
export const RETRY_BACKOFF_FACTOR = 4;
/** The longest wait between two attempts, however many lapsed. */
export const RETRY_BACKOFF_MAX_MS = 5 * 60 * 1000;

/**
 * The wait before the next attempt of a document whose lease lapsed after `attempts` attempts:
 * exponential, so a document that kills or hangs its worker does not take down the next worker
 * at once, while a worker lost to a redeploy costs its document only seconds.
 */
export function retryBackoffMs(attempts: number): number {
  const lapses = Math.max(1, attempts);
  return Math.min(
    RETRY_BACKOFF_MAX_MS,
    RETRY_BACKOFF_BASE_MS * RETRY_BACKOFF_FACTOR ** (lapses - 1),
  );
}

/**
 * What becomes of a document whose lease lapsed (its worker crashed or stopped) when recovered at
 * `at`: another attempt, leasable from `notBefore` ({@link retryBackoffMs}), or, after
 * `maxAttempts`, the dead-letter end — `failed` as `internal_error`, refunded.
 */
export function lapsedLeaseOutcome(
  document: DocumentRecord,
  maxAttempts: number,
  at: Date,
):
  | { readonly kind: 'retry'; readonly notBefore: Date }
  | { readonly kind: 'fail'; readonly result: DocumentResult } {
  if (document.attempts < maxAttempts) {
    assertTransition(document.status, 'pending');
    return { kind: 'retry', notBefore: new Date(at.getTime() + retryBackoffMs(document.attempts)) };
  }
  return {
    kind: 'fail',
    result: {
      status: 'failed',
      reason: 'internal_error',
      detail: `processing was interrupted ${document.attempts} times (lease lapsed)`,
    },
  };
}

/**
 * What a DELETE of the cleaned file does: refused while the document is in flight; nothing when
 * there is no file left (DELETE is idempotent); otherwise the file is marked deleted.
 */
export function deletionOf(document: DocumentRecord): 'in_flight' | 'nothing_to_delete' | 'delete' {
  if (isInFlight(document.status)) return 'in_flight';
  if (
    document.status !== 'completed' ||
    document.outputRemovedAt !== null ||
    document.deletedAt !== null
  ) {
    return 'nothing_to_delete';
  }
  return 'delete';
}

/**
 * True while a record that lapses at `expiresAt` still counts at `at` (idempotency records,
 * uploads, leases): at the expiry instant it has lapsed.
 */
export function isLive(expiresAt: Date, at: Date): boolean {
  return at.getTime() < expiresAt.getTime();
}
