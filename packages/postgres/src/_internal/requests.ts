import type { StateStore } from '@disarm/protocol';
import type { Pool } from 'pg';

import { inTransaction, query } from './pool.ts';
import { checkedDate, toIdempotencyRecord } from './rows.ts';
import type { IdempotencyRow } from './rows.ts';

/** Rate-limit counters and idempotency records. */
export type RequestOps = Pick<
  StateStore,
  | 'hitRateLimit'
  | 'claimIdempotencyKey'
  | 'completeIdempotencyKey'
  | 'releaseIdempotencyKey'
  | 'purgeIdempotencyKeys'
>;

/**
 * Counters of windows that started this long before a hit are purged. Windows are one minute;
 * ten keeps every window a clock-skewed node could still be counting.
 */
const RATE_WINDOW_RETENTION_MS = 10 * 60 * 1000;

/** How often one store purges old counter windows (at most once per this interval of hits). */
const RATE_PURGE_INTERVAL_MS = 60 * 1000;

/** Creates the request-level operations over `pool`. */
export function createRequestOps(pool: Pool): RequestOps {
  let lastPurgeMs = -Infinity;
  return {
    async hitRateLimit(bucket, windowStart, at) {
      checkedDate(windowStart);
      const atMs = checkedDate(at).getTime();
      if (atMs - lastPurgeMs >= RATE_PURGE_INTERVAL_MS) {
        lastPurgeMs = atMs;
        await query(
          pool,
          'DELETE FROM rate_limits WHERE window_start < $1',
          [new Date(atMs - RATE_WINDOW_RETENTION_MS)],
          true,
        );
      }
      // One upsert: the row lock orders concurrent hits from every node, so each gets its own
      // count. Not repeated after a lost answer (that hit may have counted).
      const { rows } = await query<{ count: number }>(
        pool,
        `INSERT INTO rate_limits (bucket, window_start, count) VALUES ($1, $2, 1)
         ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limits.count + 1
         RETURNING count`,
        [bucket, windowStart],
        false,
      );
      const row = rows[0];
      if (row === undefined) throw new Error('rate-limit counter was not returned');
      return row.count;
    },

    claimIdempotencyKey(record) {
      // The port passes no clock here: the claim's own creation time is "now".
      const now = checkedDate(record.createdAt);
      checkedDate(record.expiresAt);
      return inTransaction(pool, async (client) => {
        // README "Idempotency": once the replay window is over, the key is free again.
        await client.query(
          'DELETE FROM idempotency_keys WHERE organisation_id = $1 AND key = $2 AND expires_at <= $3',
          [record.organisationId, record.key, now],
        );
        // ON CONFLICT waits for a concurrent claim of the same key to commit, then yields to it.
        const inserted = await client.query(
          `INSERT INTO idempotency_keys (organisation_id, key, endpoint, request_hash, state,
                                         created_at, expires_at)
           VALUES ($1, $2, $3, $4, 'in_flight', $5, $6)
           ON CONFLICT (organisation_id, key) DO NOTHING`,
          [
            record.organisationId,
            record.key,
            record.endpoint,
            record.requestHash,
            now,
            record.expiresAt,
          ],
        );
        if (inserted.rowCount === 1) return { kind: 'claimed' as const };
        const { rows } = await client.query<IdempotencyRow>(
          'SELECT * FROM idempotency_keys WHERE organisation_id = $1 AND key = $2',
          [record.organisationId, record.key],
        );
        const row = rows[0];
        if (row === undefined) throw new Error('idempotency record vanished while claiming');
        return { kind: 'existing' as const, record: toIdempotencyRecord(row) };
      });
    },

    async completeIdempotencyKey(organisationId, key, response, requestHash) {
      await query(
        pool,
        `UPDATE idempotency_keys
         SET state = 'completed', response_status = $1, response_headers = $2, response_body = $3,
             request_hash = $4
         WHERE organisation_id = $5 AND key = $6 AND state = 'in_flight'`,
        [
          response.status,
          JSON.stringify(response.headers),
          Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength),
          requestHash,
          organisationId,
          key,
        ],
        true,
      );
    },

    async releaseIdempotencyKey(organisationId, key) {
      await query(
        pool,
        `DELETE FROM idempotency_keys
         WHERE organisation_id = $1 AND key = $2 AND state = 'in_flight'`,
        [organisationId, key],
        true,
      );
    },

    async purgeIdempotencyKeys(at) {
      const { rowCount } = await query(
        pool,
        'DELETE FROM idempotency_keys WHERE expires_at <= $1',
        [checkedDate(at)],
        false,
      );
      return rowCount ?? 0;
    },
  };
}
