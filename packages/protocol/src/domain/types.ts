import type { Finding, Policy, RejectionReason } from '@disarm/core';

import type { PlanName, PlanType } from './plans.ts';

/** An organisation: the tenant every document, upload and key belongs to. */
export interface Organisation {
  readonly id: string;
  readonly name: string;
  readonly status: 'active' | 'suspended';
  /** `null` until the organisation is provisioned with a plan (then `NotProvisioned`). */
  readonly plan: PlanName | null;
  readonly planType: PlanType | null;
  readonly monthlyAllowance: number;
  readonly rateLimitPerMinute: number;
  readonly maxFileSizeBytes: number;
  readonly maxUploadSizeBytes: number;
  readonly pricePerDocumentPence: number | null;
  readonly creditBalancePence: number;
  /** Current billing period, UTC; `periodEnd` is exclusive. */
  readonly periodStart: Date;
  readonly periodEnd: Date;
  /** Billable documents accepted in the current period. */
  readonly periodUsedSubmissions: number;
  /** Content policy: per finding kind, strip (default) or reject. */
  readonly policy: Policy;
  readonly createdAt: Date;
}

/** An API key as stored: never the key itself, only its hash. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly organisationId: string;
  readonly name: string;
  /** The first characters of the key, shown in listings so a key can be recognised. */
  readonly displayPrefix: string;
  /** Hex SHA-256 of the whole key. */
  readonly hash: string;
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
}

/** Document statuses; `pending` and `processing` are in flight, the others terminal. */
export type DocumentStatus = 'pending' | 'processing' | 'completed' | 'rejected' | 'failed';

/** Why a document failed: the service's fault, credited back. */
export type FailureReason = 'timeout' | 'internal_error';

/** How a document was submitted. */
export type Lane = 'multipart' | 'raw' | 'reference';

/** A document as stored. */
export interface DocumentRecord {
  readonly id: string;
  readonly organisationId: string;
  readonly status: DocumentStatus;
  readonly lane: Lane;
  /** Name the file was submitted under. */
  readonly fileName: string;
  readonly sizeBytes: number;
  readonly deleteAfterDownload: boolean;
  /** The submission opted into the 202-while-pending polling contract. */
  readonly statusStyle202: boolean;
  /** Blob key of the submitted bytes; `null` once they are deleted (as soon as processing ends). */
  readonly intakeKey: string | null;
  readonly submittedAt: Date;
  readonly startedAt: Date | null;
  readonly completedAt: Date | null;
  /** Set when completed. */
  readonly output: DocumentOutput | null;
  /** Set when rejected or failed. */
  readonly reason: RejectionReason | FailureReason | null;
  readonly threatNames: readonly string[];
  /** Human detail of a rejection or failure, for logs and operators (not part of the envelope). */
  readonly detail: string | null;
  /**
   * The envelope's `reasonDetail`: the caller-safe sentence of a rejection or failure (see
   * `toReasonDetail`); `null` while in flight, when completed, and on documents stored before
   * the field existed.
   */
  readonly reasonDetail: string | null;
  readonly downloadExpiresAt: Date | null;
  /** First call to the download route (starts the delete-after-download grace clock). */
  readonly firstDownloadAt: Date | null;
  readonly deletedAt: Date | null;
  /** When the cleaned file's bytes were removed (by DELETE, the grace sweep or 24 h expiry). */
  readonly outputRemovedAt: Date | null;
  /** Pence charged to credit for this document (pay-as-you-go), refunded when it fails. */
  readonly chargedPence: number;
  /** Whether the document used one unit of the tier allowance. */
  readonly countedInAllowance: boolean;
  /** Processing attempts so far (a crash or restart requeues an attempt). */
  readonly attempts: number;
}

/** The cleaned file of a completed document. */
export interface DocumentOutput {
  readonly blobKey: string;
  readonly fileName: string;
  /** Extension of the returned format. */
  readonly format: string;
  readonly mediaType: string;
  readonly converted: boolean;
  readonly sizeBytes: number;
  readonly findings: readonly Finding[];
}

/** A staged upload (large-file lane). */
export interface UploadRecord {
  readonly id: string;
  readonly organisationId: string;
  readonly fileName: string;
  readonly blobKey: string;
  readonly createdAt: Date;
  /** The PUT link stops working (60 minutes). */
  readonly putExpiresAt: Date;
  /** The upload stops being submittable (24 hours). */
  readonly expiresAt: Date;
  /** Ceiling the storage enforces on the PUT. */
  readonly maxSizeBytes: number;
  readonly uploadedAt: Date | null;
  readonly sizeBytes: number | null;
  readonly submittedAt: Date | null;
  readonly documentId: string | null;
}
