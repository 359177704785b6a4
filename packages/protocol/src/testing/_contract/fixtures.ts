import { expect } from 'vitest';

import { PLANS } from '../../domain/plans.ts';
import type { PlanName } from '../../domain/plans.ts';
import type { DocumentRecord, Organisation, UploadRecord } from '../../domain/types.ts';
import type {
  AcceptResult,
  DocumentResult,
  IdempotencyCompletion,
  NewDocument,
  NewOrganisation,
  StateStore,
} from '../../ports.ts';

/** What each section of the suite gets: the store of the running test and its peers. */
export interface ContractContext {
  /** The store under test; fresh and empty for every test. */
  store(): StateStore;
  /**
   * The store plus, when the implementation can open one, a second instance over the same data
   * (another connection, standing in for another process). Peers are closed after the test.
   */
  contenders(): Promise<StateStore[]>;
}

export const SECOND_MS = 1_000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The suite's fixed clock: every test runs in January 2025 unless it moves on explicitly. */
export const T0 = new Date('2025-01-15T10:00:00.000Z');
export const JAN_START = new Date('2025-01-01T00:00:00.000Z');
export const FEB_START = new Date('2025-02-01T00:00:00.000Z');
export const MAR_START = new Date('2025-03-01T00:00:00.000Z');
export const MAY_START = new Date('2025-05-01T00:00:00.000Z');
export const JUN_START = new Date('2025-06-01T00:00:00.000Z');

/** The pay-as-you-go price; NaN (failing every sum) if the plan ever loses its price. */
export const PAYG_PRICE_PENCE: number = PLANS.payg.pricePerDocumentPence ?? Number.NaN;

/** `base` moved by `ms`. */
export function after(base: Date, ms: number): Date {
  return new Date(base.getTime() + ms);
}

/** Creates an organisation on `plan` at {@link T0} (or `at`). */
export function createOrg(
  store: StateStore,
  id: string,
  plan: PlanName | null,
  extra: Partial<Omit<NewOrganisation, 'id' | 'plan'>> = {},
  at: Date = T0,
): Promise<Organisation> {
  return store.createOrganisation({ name: `Organisation ${id}`, ...extra, id, plan }, at);
}

/** A multipart submission of `id` for `organisationId`. */
export function newDocument(
  organisationId: string,
  id: string,
  extra: Partial<Omit<NewDocument, 'id' | 'organisationId'>> = {},
): NewDocument {
  return {
    lane: 'multipart',
    fileName: 'report.pdf',
    sizeBytes: 1_234,
    intakeKey: `intake/${id}`,
    deleteAfterDownload: false,
    statusStyle202: false,
    ...extra,
    id,
    organisationId,
  };
}

/** A staged upload created at `at` (PUT link 60 minutes, submittable 24 hours). */
export function newUpload(
  organisationId: string,
  id: string,
  at: Date = T0,
  extra: Partial<Omit<UploadRecord, 'id' | 'organisationId'>> = {},
): UploadRecord {
  return {
    fileName: 'big.pdf',
    blobKey: `uploads/${id}`,
    createdAt: at,
    putExpiresAt: after(at, HOUR_MS),
    expiresAt: after(at, DAY_MS),
    maxSizeBytes: 450 * 1024 * 1024,
    uploadedAt: null,
    sizeBytes: null,
    submittedAt: null,
    documentId: null,
    ...extra,
    id,
    organisationId,
  };
}

/** Narrows an accept result to `accepted`, failing the test otherwise. */
export function expectAccepted(result: AcceptResult): Extract<AcceptResult, { kind: 'accepted' }> {
  expect(result.kind).toBe('accepted');
  if (result.kind !== 'accepted') throw new Error(`expected accepted, got ${result.kind}`);
  return result;
}

/** Accepts `input` at `at`, failing the test when it is refused; returns the document. */
export async function accept(
  store: StateStore,
  input: NewDocument,
  at: Date = T0,
): Promise<DocumentRecord> {
  return expectAccepted(await store.acceptDocument(input, at)).document;
}

/** Fails the test when `value` is undefined; returns it narrowed. */
export function defined<T>(value: T | undefined, what = 'value'): T {
  expect(value, what).toBeDefined();
  if (value === undefined) throw new Error(`expected ${what} to be defined`);
  return value;
}

/** Leases the next document for `owner`, failing the test when the queue is empty. */
export async function leaseNext(
  store: StateStore,
  owner: string,
  at: Date,
  leaseMs = MINUTE_MS,
): Promise<DocumentRecord> {
  return defined(await store.leaseDocument(owner, at, leaseMs), 'leased document');
}

/** A cleaned result whose output key is `outputs/<id>`. */
export function completedResult(id: string): Extract<DocumentResult, { status: 'completed' }> {
  return {
    status: 'completed',
    blobKey: `outputs/${id}`,
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
  };
}

/** A threat rejection. */
export const REJECTED_RESULT: DocumentResult = {
  status: 'rejected',
  reason: 'threat_detected',
  threatNames: ['EICAR-Test-File', 'Other.Threat'],
  detail: 'signature match',
};

/** A service fault. */
export const FAILED_RESULT: DocumentResult = {
  status: 'failed',
  reason: 'timeout',
  detail: 'processing took longer than the budget',
};

/**
 * Accepts, leases and finishes one document as `result` at `at` (leased one second earlier).
 * The queue must hold no other pending document.
 */
export async function processDocument(
  store: StateStore,
  input: NewDocument,
  result: DocumentResult | 'completed',
  at: Date,
): Promise<DocumentRecord> {
  await accept(store, input, after(at, -2 * SECOND_MS));
  const leased = await leaseNext(store, 'worker-setup', after(at, -SECOND_MS));
  expect(leased.id).toBe(input.id);
  const outcome = result === 'completed' ? completedResult(input.id) : result;
  return defined(await store.finishDocument(input.id, 'worker-setup', outcome, at), 'finished');
}

/** Calls `work(store, i)` `count` times at once, spreading the calls over `stores`. */
export function inParallel<T>(
  stores: readonly StateStore[],
  count: number,
  work: (store: StateStore, index: number) => Promise<T>,
): Promise<T[]> {
  return Promise.all(
    Array.from({ length: count }, (_, index) => {
      const store = stores[index % stores.length];
      if (store === undefined) throw new Error('no store to run on');
      return work(store, index);
    }),
  );
}

/** How many entries of `values` equal `value`. */
export function countOf<T>(values: readonly T[], value: T): number {
  return values.filter((entry) => entry === value).length;
}

/**
 * Claims `key` of `organisationId` for the request `owner` at `at` on `endpoint`, failing the
 * test when it is not claimed; returns the claim as a submission records it (fingerprint
 * `hash-of-<owner>`).
 */
export async function claimKey(
  store: StateStore,
  organisationId: string,
  key: string,
  owner: string,
  { at = T0, endpoint = 'POST /v1/documents' }: { at?: Date; endpoint?: string } = {},
): Promise<IdempotencyCompletion> {
  const claim = await store.claimIdempotencyKey({
    organisationId,
    key,
    endpoint,
    owner,
    ownerProcess: 'process-1',
    at,
  });
  expect(claim.kind, `claim of ${key} by ${owner}`).toBe('claimed');
  return { organisationId, key, owner, requestHash: `hash-of-${owner}` };
}
