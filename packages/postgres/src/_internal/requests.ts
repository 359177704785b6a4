import { claimHeldUntil, decideClaim, holdsClaim, releaseOf } from '@disarm/protocol';
import type {
  IdempotencyCompletion,
  IdempotencyHold,
  IdempotencyRecord,
  StateStore,
} from '@disarm/protocol';
import type { Pool, PoolClient } from 'pg';

import { inTransaction, query } from './pool.ts';
import { checkedDate, toIdempotencyRecord } from './rows.ts';
import type { IdempotencyRow } from './rows.ts';

/** Rate-limit counters and idempotency records. */
export type RequestOps = Pick<
  StateStore,
  | 'hitRateLimit'
  | 'claimIdempotencyKey'
  | 'renewIdempotencyKey'
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

/** Rounds of a claim: a concurrent first claim of the key makes the insert yield once. */
const CLAIM_ROUNDS = 3;

/** The record of `(organisationId, key)`, locked for the caller's transaction, or `undefined`. */
export async function readClaimForUpdate(
  client: PoolClient,
  organisationId: string,
  key: string,
): Promise<IdempotencyRecord | undefined> {
  const { rows } = await client.query<IdempotencyRow>(
    'SELECT * FROM idempotency_keys WHERE organisation_id = $1 AND key = $2 FOR UPDATE',
    [organisationId, key],
  );
  const row = rows[0];
  return row === undefined ? undefined : toIdempotencyRecord(row);
}

/**
 * True when `claim.owner` still holds its claim and has created nothing under it
 * (`holdsClaim`); the row stays locked for the caller's transaction, which creates the resource
 * and then calls {@link recordClaimResource}.
 */
export async function holdsClaimForUpdate(
  client: PoolClient,
  claim: IdempotencyHold,
): Promise<boolean> {
  return holdsClaim(await readClaimForUpdate(client, claim.organisationId, claim.key), claim.owner);
}

/** Records `resourceId` and the request's fingerprint on the claim the caller holds (and locked). */
export async function recordClaimResource(
  client: PoolClient,
  claim: IdempotencyCompletion,
  resourceId: string,
): Promise<void> {
  const { rowCount } = await client.query(
    `UPDATE idempotency_keys SET resource_id = $1, request_hash = $2
     WHERE organisation_id = $3 AND key = $4 AND owner = $5 AND state = 'in_flight'
       AND resource_id IS NULL`,
    [resourceId, claim.requestHash, claim.organisationId, claim.key, claim.owner],
  );
  // Checked under the same lock (holdsClaimForUpdate): anything else is a bug.
  if (rowCount !== 1) throw new Error('the idempotency claim changed inside its transaction');
}

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

    claimIdempotencyKey(request) {
      const at = checkedDate(request.at);
      return inTransaction(pool, async (client) => {
        for (let attempt = 0; attempt < CLAIM_ROUNDS; attempt += 1) {
          const existing = await readClaimForUpdate(client, request.organisationId, request.key);
          const decision = decideClaim(existing, request);
          const { record } = decision;
          if (decision.kind === 'existing') return { kind: 'existing' as const, record };
          const heldUntil = claimHeldUntil(at);
          if (decision.kind === 'take-over') {
            // The row is locked: the owner compared is the one just read.
            await client.query(
              `UPDATE idempotency_keys SET owner = $1, owner_process = $2, held_until = $3
               WHERE organisation_id = $4 AND key = $5 AND owner IS NOT DISTINCT FROM $6
                 AND state = 'in_flight'`,
              [
                request.owner,
                request.ownerProcess,
                heldUntil,
                request.organisationId,
                request.key,
                existing?.owner ?? null,
              ],
            );
          } else {
            if (existing !== undefined) {
              await client.query(
                'DELETE FROM idempotency_keys WHERE organisation_id = $1 AND key = $2',
                [request.organisationId, request.key],
              );
            }
            // ON CONFLICT waits for a concurrent claim of the same key to commit, then yields;
            // the next round reads (and locks) what it wrote.
            const inserted = await client.query(
              `INSERT INTO idempotency_keys (organisation_id, key, endpoint, request_hash, state,
                                             created_at, expires_at, owner, owner_process,
                                             held_until)
               VALUES ($1, $2, $3, $4, 'in_flight', $5, $6, $7, $8, $9)
               ON CONFLICT (organisation_id, key) DO NOTHING`,
              [
                record.organisationId,
                record.key,
                record.endpoint,
                record.requestHash,
                record.createdAt,
                record.expiresAt,
                request.owner,
                request.ownerProcess,
                heldUntil,
              ],
            );
            if (inserted.rowCount !== 1) continue;
          }
          const stored = await readClaimForUpdate(client, request.organisationId, request.key);
          if (stored === undefined) throw new Error('idempotency record vanished while claiming');
          return { kind: 'claimed' as const, record: stored };
        }
        throw new Error('the idempotency key kept changing while it was claimed');
      });
    },

    async renewIdempotencyKey(hold, at) {
      const { rowCount } = await query(
        pool,
        `UPDATE idempotency_keys SET held_until = $1
         WHERE organisation_id = $2 AND key = $3 AND owner = $4 AND state = 'in_flight'`,
        [claimHeldUntil(checkedDate(at)), hold.organisationId, hold.key, hold.owner],
        true,
      );
      return rowCount === 1;
    },

    async completeIdempotencyKey(hold, response, requestHash) {
      const { rowCount } = await query(
        pool,
        `UPDATE idempotency_keys
         SET state = 'completed', response_status = $1, response_headers = $2, response_body = $3,
             request_hash = $4, held_until = NULL
         WHERE organisation_id = $5 AND key = $6 AND owner = $7 AND state = 'in_flight'`,
        [
          response.status,
          JSON.stringify(response.headers),
          Buffer.from(response.body.buffer, response.body.byteOffset, response.body.byteLength),
          requestHash,
          hold.organisationId,
          hold.key,
          hold.owner,
        ],
        true,
      );
      return rowCount === 1;
    },

    releaseIdempotencyKey(hold) {
      return inTransaction(pool, async (client) => {
        const record = await readClaimForUpdate(client, hold.organisationId, hold.key);
        switch (releaseOf(record, hold.owner)) {
          case 'delete':
            await client.query(
              'DELETE FROM idempotency_keys WHERE organisation_id = $1 AND key = $2',
              [hold.organisationId, hold.key],
            );
            return;
          case 'end-lease':
            await client.query(
              `UPDATE idempotency_keys SET held_until = NULL
               WHERE organisation_id = $1 AND key = $2`,
              [hold.organisationId, hold.key],
            );
            return;
          case 'keep':
            return;
        }
      });
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
