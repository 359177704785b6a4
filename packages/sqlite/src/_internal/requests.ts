import { claimHeldUntil, decideClaim, holdsClaim, releaseOf } from '@disarm/protocol';
import type {
  IdempotencyClaim,
  IdempotencyCompletion,
  IdempotencyHold,
  IdempotencyRecord,
} from '@disarm/protocol';
import type { Database } from 'better-sqlite3';

import { checkedDate, toIdempotencyRecord, toMillis } from './rows.ts';
import type { IdempotencyRow } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/** Idempotency records (the rate-limit counters are in `counters.ts`). */
export type RequestOps = Pick<
  SyncStateStore,
  | 'claimIdempotencyKey'
  | 'renewIdempotencyKey'
  | 'completeIdempotencyKey'
  | 'releaseIdempotencyKey'
  | 'purgeIdempotencyKeys'
>;

/**
 * The claim rows as other operations' transactions use them: `acceptDocument` and
 * `createUpload` record what they created on the claim they ran under.
 */
export interface ClaimRows {
  /** The record of `(organisationId, key)`, or `undefined`; inside the caller's transaction. */
  read(organisationId: string, key: string): IdempotencyRecord | undefined;
  /**
   * True when `claim.owner` still holds the claim and has created nothing under it
   * (`holdsClaim`); call before creating anything.
   */
  holds(claim: IdempotencyHold): boolean;
  /** Records `resourceId` and the request's fingerprint on the claim `claim.owner` holds. */
  recordResource(claim: IdempotencyCompletion, resourceId: string): void;
}

/** Creates the claim rows over `db`. */
export function createClaimRows(db: Database): ClaimRows {
  const selectKey = db.prepare<[string, string], IdempotencyRow>(
    'SELECT * FROM idempotency_keys WHERE organisation_id = ? AND key = ?',
  );
  const recordResource = db.prepare<[string, string, string, string, string]>(
    `UPDATE idempotency_keys SET resource_id = ?, request_hash = ?
     WHERE organisation_id = ? AND key = ? AND owner = ? AND state = 'in_flight'
       AND resource_id IS NULL`,
  );
  const read = (organisationId: string, key: string): IdempotencyRecord | undefined => {
    const row = selectKey.get(organisationId, key);
    return row === undefined ? undefined : toIdempotencyRecord(row);
  };
  return {
    read,
    holds: (claim) => holdsClaim(read(claim.organisationId, claim.key), claim.owner),
    recordResource(claim, resourceId) {
      const changed = recordResource.run(
        resourceId,
        claim.requestHash,
        claim.organisationId,
        claim.key,
        claim.owner,
      ).changes;
      // The caller checked `holds` in the same transaction: anything else is a bug.
      if (changed !== 1) throw new Error('the idempotency claim changed inside its transaction');
    },
  };
}

/** Creates the request-level operations over `db`. */
export function createRequestOps(db: Database, claims: ClaimRows): RequestOps {
  const deleteKey = db.prepare<[string, string]>(
    'DELETE FROM idempotency_keys WHERE organisation_id = ? AND key = ?',
  );
  const insertKey = db.prepare<
    [string, string, string, string, number, number, string, string, number]
  >(
    `INSERT INTO idempotency_keys (organisation_id, key, endpoint, request_hash, state, created_at,
                                   expires_at, owner, owner_process, held_until)
     VALUES (?, ?, ?, ?, 'in_flight', ?, ?, ?, ?, ?)`,
  );
  // Inside the claim's transaction, which read the row: the owner compared is the one it saw.
  const takeOver = db.prepare<[string, string, number, string, string, string | null]>(
    `UPDATE idempotency_keys SET owner = ?, owner_process = ?, held_until = ?
     WHERE organisation_id = ? AND key = ? AND owner IS ? AND state = 'in_flight'`,
  );
  const renewKey = db.prepare<[number, string, string, string]>(
    `UPDATE idempotency_keys SET held_until = ?
     WHERE organisation_id = ? AND key = ? AND owner = ? AND state = 'in_flight'`,
  );
  const completeKey = db.prepare<[number, string, Uint8Array, string, string, string, string]>(
    `UPDATE idempotency_keys
     SET state = 'completed', response_status = ?, response_headers = ?, response_body = ?,
         request_hash = ?, held_until = NULL
     WHERE organisation_id = ? AND key = ? AND owner = ? AND state = 'in_flight'`,
  );
  const endLease = db.prepare<[string, string, string]>(
    `UPDATE idempotency_keys SET held_until = NULL
     WHERE organisation_id = ? AND key = ? AND owner = ? AND state = 'in_flight'`,
  );
  const purgeKeys = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE expires_at <= ?');

  const claim = db.transaction<RequestOps['claimIdempotencyKey']>((request): IdempotencyClaim => {
    checkedDate(request.at);
    const existing = claims.read(request.organisationId, request.key);
    const decision = decideClaim(existing, request);
    const { record } = decision;
    switch (decision.kind) {
      case 'existing':
        return { kind: 'existing', record };
      case 'claim':
        if (existing !== undefined) deleteKey.run(request.organisationId, request.key);
        insertKey.run(
          record.organisationId,
          record.key,
          record.endpoint,
          record.requestHash,
          toMillis(record.createdAt),
          toMillis(record.expiresAt),
          request.owner,
          request.ownerProcess,
          toMillis(claimHeldUntil(request.at)),
        );
        break;
      case 'take-over':
        takeOver.run(
          request.owner,
          request.ownerProcess,
          toMillis(claimHeldUntil(request.at)),
          request.organisationId,
          request.key,
          existing?.owner ?? null,
        );
        break;
    }
    const stored = claims.read(request.organisationId, request.key);
    if (stored === undefined) throw new Error('idempotency record vanished while claiming');
    return { kind: 'claimed', record: stored };
  });

  const release = db.transaction<RequestOps['releaseIdempotencyKey']>((hold) => {
    switch (releaseOf(claims.read(hold.organisationId, hold.key), hold.owner)) {
      case 'delete':
        deleteKey.run(hold.organisationId, hold.key);
        return;
      case 'end-lease':
        endLease.run(hold.organisationId, hold.key, hold.owner);
        return;
      case 'keep':
        return;
    }
  });

  return {
    claimIdempotencyKey: (request) => claim.immediate(request),
    renewIdempotencyKey(hold, at) {
      const heldUntil = toMillis(claimHeldUntil(checkedDate(at)));
      return renewKey.run(heldUntil, hold.organisationId, hold.key, hold.owner).changes === 1;
    },
    completeIdempotencyKey(hold, response, requestHash) {
      return (
        completeKey.run(
          response.status,
          JSON.stringify(response.headers),
          response.body,
          requestHash,
          hold.organisationId,
          hold.key,
          hold.owner,
        ).changes === 1
      );
    },
    releaseIdempotencyKey(hold) {
      release.immediate(hold);
    },
    purgeIdempotencyKeys(at) {
      return purgeKeys.run(toMillis(at)).changes;
    },
  };
}
