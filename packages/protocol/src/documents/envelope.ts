import type { Finding, FindingKind, FindingLocation } from '@disarm/core';

import type { DocumentRecord } from '../domain/types.ts';
import type { ApiContext } from '../http/context.ts';
import { fallbackReasonDetail } from './reason-detail.ts';
import { isInFlight } from './state-machine.ts';

/** The document envelope (`getDocument`, README "Submitting"): camelCase, null fields omitted. */
export interface DocumentEnvelope {
  readonly id: string;
  readonly status: DocumentRecord['status'];
  readonly statusUrl: string;
  readonly outcome?: 'cleaned';
  readonly modifications?: readonly ('rebuilt' | 'converted')[];
  readonly outputFormat?: string;
  /** Completed only: what the rebuild removed, by kind, with where (`[]` when nothing). */
  readonly findings?: readonly EnvelopeFinding[];
  readonly reason?: string;
  /** One sentence on why (what was found, which member, which limit); present with `reason`. */
  readonly reasonDetail?: string;
  readonly threatNames?: readonly string[];
  readonly submittedAt: string;
  readonly completedAt?: string;
  readonly downloadUrl?: string;
  readonly downloadExpiresAt?: string;
  readonly pollAfterSeconds?: number;
  readonly helpUrl?: string;
  readonly deleteAfterDownload?: true;
  readonly deletedAt?: string;
}

/** One finding in the envelope: `locations` is always there, empty when none is known. */
export interface EnvelopeFinding {
  readonly kind: FindingKind;
  readonly count: number;
  readonly locations: readonly FindingLocation[];
}

/**
 * A stored finding as the envelope shows it: only the members the API documents, and
 * `locations: []` for findings recorded without any (documents completed before locations were).
 */
export function toEnvelopeFinding(finding: Finding): EnvelopeFinding {
  return {
    kind: finding.kind,
    count: finding.count,
    locations: (finding.locations ?? []).map(({ member, part, sheet, page, count }) => ({
      ...(member !== undefined && { member }),
      ...(part !== undefined && { part }),
      ...(sheet !== undefined && { sheet }),
      ...(page !== undefined && { page }),
      count,
    })),
  };
}

/** Where to poll a document; carries the `statusStyle=202` opt-in when the submission used it. */
export function statusUrlOf(api: ApiContext, document: DocumentRecord): string {
  const url = `${api.settings.publicBaseUrl}/v1/documents/${encodeURIComponent(document.id)}`;
  return document.statusStyle202 ? `${url}?statusStyle=202` : url;
}

/** True while the cleaned file can be fetched (completed, not deleted, not past 24 h). */
export function isDownloadable(document: DocumentRecord, now: Date): boolean {
  return (
    document.status === 'completed' &&
    document.output !== null &&
    document.deletedAt === null &&
    document.outputRemovedAt === null &&
    document.downloadExpiresAt !== null &&
    now.getTime() < document.downloadExpiresAt.getTime()
  );
}

/** Builds the envelope of `document` as of `now`. */
export async function toEnvelope(
  api: ApiContext,
  document: DocumentRecord,
  now: Date,
): Promise<DocumentEnvelope> {
  const terminalNotCompleted = document.status === 'rejected' || document.status === 'failed';
  const output = document.output;
  let downloadUrl: string | undefined;
  // `getDocument`: never a downloadUrl with deleteAfterDownload — that file goes through the route.
  if (!document.deleteAfterDownload && output && isDownloadable(document, now)) {
    downloadUrl = await api.blobs.signedDownloadUrl(output.blobKey, {
      expiresAt: document.downloadExpiresAt ?? now,
      fileName: output.fileName,
      contentType: output.mediaType,
    });
  }
  return {
    id: document.id,
    status: document.status,
    statusUrl: statusUrlOf(api, document),
    ...(document.status === 'completed' && output
      ? {
          outcome: 'cleaned' as const,
          modifications: output.converted
            ? (['rebuilt', 'converted'] as const)
            : (['rebuilt'] as const),
          ...(output.converted ? { outputFormat: output.format } : {}),
          findings: output.findings.map(toEnvelopeFinding),
        }
      : {}),
    ...(terminalNotCompleted && document.reason !== null
      ? {
          reason: document.reason,
          reasonDetail: document.reasonDetail ?? fallbackReasonDetail(document.reason),
        }
      : {}),
    ...(document.status === 'rejected' && document.reason === 'threat_detected'
      ? { threatNames: document.threatNames }
      : {}),
    submittedAt: document.submittedAt.toISOString(),
    ...(document.completedAt ? { completedAt: document.completedAt.toISOString() } : {}),
    ...(downloadUrl !== undefined ? { downloadUrl } : {}),
    ...(document.status === 'completed' && document.downloadExpiresAt
      ? { downloadExpiresAt: document.downloadExpiresAt.toISOString() }
      : {}),
    ...(isInFlight(document.status) ? { pollAfterSeconds: api.settings.pollAfterSeconds } : {}),
    ...(terminalNotCompleted ? { helpUrl: api.settings.helpUrl } : {}),
    ...(document.deleteAfterDownload ? { deleteAfterDownload: true as const } : {}),
    ...(document.deletedAt ? { deletedAt: document.deletedAt.toISOString() } : {}),
  };
}
