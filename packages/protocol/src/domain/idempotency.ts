import type { IdempotencyClaimRequest, IdempotencyRecord } from '../ports.ts';
import { isLive } from './processing.ts';

/*
 * When an Idempotency-Key belongs to a live request (README "Idempotency"), once for every
 * store: a store reads the key's row inside its transaction, asks these functions, and writes
 * their answer. A claim records its owner (one request, in one process) and a lease the request
 * renews while it runs; a claim whose lease lapsed, or whose owning process is known to be gone,
 * is free, so a crash never leaves a key "in flight" for longer than a live request could hold it.
 */

/** How long a key replays its first response (README "Idempotency"). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * How long a claim holds without renewal: past it, a retry takes the key over. Long enough that
 * a busy event loop or a slow store round trip never loses a live request its key.
 */
export const IDEMPOTENCY_LEASE_MS = 30_000;
/** How often a running request renews its claim: three renewals per lease, so one lost renewal costs nothing. */
export const IDEMPOTENCY_RENEW_INTERVAL_MS = 10_000;

/** What a store does with a claim, decided by {@link decideClaim}. */
export type ClaimDecision =
  /** No record, or one past its replay window: (re)write the key as this new claim. */
  | { readonly kind: 'claim'; readonly record: IdempotencyRecord }
  /**
   * An in-flight record whose holder is gone: the same row with this request as its holder
   * (the first request's document or upload, and its fingerprint, stay on it).
   */
  | { readonly kind: 'take-over'; readonly record: IdempotencyRecord }
  /** A record this request must answer from: replay, 409 while held, 422 on another endpoint. */
  | { readonly kind: 'existing'; readonly record: IdempotencyRecord };

/** The end of the lease of a claim taken or renewed at `at`. */
export function claimHeldUntil(at: Date): Date {
  return new Date(at.getTime() + IDEMPOTENCY_LEASE_MS);
}

/**
 * True while an in-flight `record` belongs to a live request at `at`: its lease has not lapsed.
 * Records written before claims had leases (no `heldUntil`) are held by nobody.
 */
export function isClaimHeld(record: IdempotencyRecord, at: Date): boolean {
  return record.state === 'in_flight' && record.heldUntil !== null && isLive(record.heldUntil, at);
}

/**
 * What a claim of `request.key` does, given the key's current record (`undefined`: none). A new
 * claim once the replay window is over; a take-over of an in-flight claim on the same endpoint
 * whose lease lapsed, or whose owner is `request.replacing` (the caller found its process gone);
 * otherwise the existing record.
 */
export function decideClaim(
  existing: IdempotencyRecord | undefined,
  request: IdempotencyClaimRequest,
): ClaimDecision {
  const { at } = request;
  const holder = {
    owner: request.owner,
    ownerProcess: request.ownerProcess,
    heldUntil: claimHeldUntil(at),
  };
  // README "Idempotency": once the replay window is over, the key is free again.
  if (existing === undefined || !isLive(existing.expiresAt, at)) {
    return {
      kind: 'claim',
      record: {
        organisationId: request.organisationId,
        key: request.key,
        endpoint: request.endpoint,
        // Known once the body has been read: recorded with the document, or with the response.
        requestHash: '',
        state: 'in_flight',
        createdAt: at,
        expiresAt: new Date(at.getTime() + IDEMPOTENCY_WINDOW_MS),
        response: null,
        resourceId: null,
        ...holder,
      },
    };
  }
  const ownerGone =
    request.replacing !== undefined &&
    existing.owner !== null &&
    existing.owner === request.replacing;
  if (
    existing.state === 'in_flight' &&
    existing.endpoint === request.endpoint &&
    (!isClaimHeld(existing, at) || ownerGone)
  ) {
    return { kind: 'take-over', record: { ...existing, ...holder } };
  }
  return { kind: 'existing', record: existing };
}

/**
 * True when the request `owner` still holds `record` and has created nothing under it yet, so a
 * document (or upload) it creates may be recorded on the key in the same transaction. A claim
 * taken over by a retry is no longer the first request's: its document is not created, nothing
 * is charged.
 */
export function holdsClaim(record: IdempotencyRecord | undefined, owner: string): boolean {
  return record?.state === 'in_flight' && record.owner === owner && record.resourceId === null;
}

/**
 * What releasing `record` on behalf of `owner` does (the request ended without a response to
 * keep): a claim that created nothing is removed, so a corrected retry starts afresh; a claim
 * whose document or upload exists stays, with its lease ended, so the next retry answers for
 * that resource at once; a completed record, or one another request holds, is kept as it is.
 */
export function releaseOf(
  record: IdempotencyRecord | undefined,
  owner: string,
): 'delete' | 'end-lease' | 'keep' {
  if (record?.state !== 'in_flight' || record.owner !== owner) return 'keep';
  return record.resourceId === null ? 'delete' : 'end-lease';
}
