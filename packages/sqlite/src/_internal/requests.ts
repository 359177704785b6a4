import { isLive } from '@disarm/protocol';
import type { IdempotencyClaim } from '@disarm/protocol';
import type { Database } from 'better-sqlite3';

import { toIdempotencyRecord, toMillis } from './rows.ts';
import type { IdempotencyRow } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/** Idempotency records (the rate-limit counters are in `counters.ts`). */
export type RequestOps = Pick<
  SyncStateStore,
  | 'claimIdempotencyKey'
  | 'completeIdempotencyKey'
  | 'releaseIdempotencyKey'
  | 'purgeIdempotencyKeys'
>;

/** Creates the request-level operations over `db`. */
export function createRequestOps(db: Database): RequestOps {
  const selectKey = db.prepare<[string, string], IdempotencyRow>(
    'SELECT * FROM idempotency_keys WHERE organisation_id = ? AND key = ?',
  );
  const deleteKey = db.prepare<[string, string]>(
    'DELETE FROM idempotency_keys WHERE organisation_id = ? AND key = ?',
  );
  const insertKey = db.prepare<[string, string, string, string, number, number]>(
    `INSERT INTO idempotency_keys (organisation_id, key, endpoint, request_hash, state, created_at,
                                   expires_at)
     VALUES (?, ?, ?, ?, 'in_flight', ?, ?)`,
  );
  const completeKey = db.prepare<[number, string, Uint8Array, string, string, string]>(
    `UPDATE idempotency_keys
     SET state = 'completed', response_status = ?, response_headers = ?, response_body = ?,
         request_hash = ?
     WHERE organisation_id = ? AND key = ? AND state = 'in_flight'`,
  );
  const releaseKey = db.prepare<[string, string]>(
    `DELETE FROM idempotency_keys
     WHERE organisation_id = ? AND key = ? AND state = 'in_flight'`,
  );
  const purgeKeys = db.prepare<[number]>('DELETE FROM idempotency_keys WHERE expires_at <= ?');

  const claim = db.transaction<RequestOps['claimIdempotencyKey']>((record): IdempotencyClaim => {
    // The port passes no clock here: the claim's own creation time is "now".
    const nowMs = toMillis(record.createdAt);
    const existing = selectKey.get(record.organisationId, record.key);
    if (existing !== undefined) {
      // README "Idempotency": once the replay window is over, the key is free again.
      if (isLive(new Date(existing.expires_at), record.createdAt)) {
        return { kind: 'existing', record: toIdempotencyRecord(existing) };
      }
      deleteKey.run(record.organisationId, record.key);
    }
    insertKey.run(
      record.organisationId,
      record.key,
      record.endpoint,
      record.requestHash,
      nowMs,
      toMillis(record.expiresAt),
    );
    return { kind: 'claimed' };
  });

  return {
    claimIdempotencyKey: (record) => claim.immediate(record),
    completeIdempotencyKey(organisationId, key, response, requestHash) {
      completeKey.run(
        response.status,
        JSON.stringify(response.headers),
        response.body,
        requestHash,
        organisationId,
        key,
      );
    },
    releaseIdempotencyKey(organisationId, key) {
      releaseKey.run(organisationId, key);
    },
    purgeIdempotencyKeys(at) {
      return purgeKeys.run(toMillis(at)).changes;
    },
  };
}
