import type { IdempotencyClaim } from '@disarm/protocol';
import type { Database } from 'better-sqlite3';

import { toIdempotencyRecord, toMillis } from './rows.ts';
import type { IdempotencyRow } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/** Rate-limit counters and idempotency records. */
export type RequestOps = Pick<
  SyncStateStore,
  | 'hitRateLimit'
  | 'claimIdempotencyKey'
  | 'completeIdempotencyKey'
  | 'releaseIdempotencyKey'
  | 'purgeIdempotencyKeys'
>;

/**
 * Counters of windows that started this long before a hit are purged by that hit. Windows are one
 * minute; ten keeps every window a clock-skewed process could still be counting.
 */
const RATE_WINDOW_RETENTION_MS = 10 * 60 * 1000;

/** Creates the request-level operations over `db`. */
export function createRequestOps(db: Database): RequestOps {
  const hit = db.prepare<[string, number], { count: number }>(
    `INSERT INTO rate_limits (bucket, window_start, count) VALUES (?, ?, 1)
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = count + 1
     RETURNING count`,
  );
  const purgeWindows = db.prepare<[number]>('DELETE FROM rate_limits WHERE window_start < ?');

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

  const hitRateLimit = db.transaction<RequestOps['hitRateLimit']>((bucket, windowStart, at) => {
    purgeWindows.run(toMillis(at) - RATE_WINDOW_RETENTION_MS);
    const row = hit.get(bucket, toMillis(windowStart));
    if (row === undefined) throw new Error('rate-limit counter was not returned');
    return row.count;
  });

  const claim = db.transaction<RequestOps['claimIdempotencyKey']>((record): IdempotencyClaim => {
    // The port passes no clock here: the claim's own creation time is "now".
    const nowMs = toMillis(record.createdAt);
    const existing = selectKey.get(record.organisationId, record.key);
    if (existing !== undefined) {
      // Spec "Idempotency": the replay window is over, so the key is free again.
      if (nowMs < existing.expires_at) {
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
    hitRateLimit: (bucket, windowStart, at) => hitRateLimit.immediate(bucket, windowStart, at),
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
