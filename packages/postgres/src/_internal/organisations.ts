import { patchOrganisation, provisionOrganisation, rollBillingPeriod } from '@disarm/protocol';
import type { Organisation, StateStore } from '@disarm/protocol';
import type { Pool, PoolClient } from 'pg';

import { inTransaction, query } from './pool.ts';
import {
  checkedDate,
  checkedDateOrNull,
  ORGANISATION_COLUMNS,
  organisationValues,
  toApiKey,
  toOAuthClient,
  toOrganisation,
  toSigningKey,
} from './rows.ts';
import type { ApiKeyRow, OAuthClientRow, OrganisationRow, SigningKeyRow } from './rows.ts';

/** Organisations, API keys, OAuth clients and signing keys. */
export type AccountOps = Pick<
  StateStore,
  | 'createOrganisation'
  | 'getOrganisation'
  | 'listOrganisations'
  | 'updateOrganisation'
  | 'createApiKey'
  | 'findApiKeyByHash'
  | 'listApiKeys'
  | 'revokeApiKey'
  | 'createOAuthClient'
  | 'getOAuthClient'
  | 'listOAuthClients'
  | 'updateOAuthClient'
  | 'listSigningKeys'
  | 'saveSigningKey'
>;

/** Reads and writes organisations, rolling the billing period forward on every write. */
export interface OrganisationRows {
  /** The organisation as seen at `at` (period rolled, nothing written). */
  read(id: string, at: Date): Promise<Organisation | undefined>;
  /** {@link OrganisationRows.read} on `client`, inside its transaction. */
  readIn(client: PoolClient, id: string, at: Date): Promise<Organisation | undefined>;
  /**
   * The organisation as seen at `at`, its row locked until the transaction ends, with a rolled
   * period written back. Call inside a transaction only.
   */
  readForUpdate(client: PoolClient, id: string, at: Date): Promise<Organisation | undefined>;
  /** Writes `organisation` as it is (inside the transaction that locked it). */
  write(client: PoolClient, organisation: Organisation): Promise<void>;
}

const SELECT_ORGANISATION = 'SELECT * FROM organisations WHERE id = $1';

const INSERT_ORGANISATION = `INSERT INTO organisations (${ORGANISATION_COLUMNS.join(', ')})
VALUES (${ORGANISATION_COLUMNS.map((_, index) => `$${index + 1}`).join(', ')})`;

const UPDATE_ORGANISATION = `UPDATE organisations
SET (${ORGANISATION_COLUMNS.slice(1).join(', ')})
  = (${ORGANISATION_COLUMNS.slice(1)
    .map((_, index) => `$${index + 2}`)
    .join(', ')})
WHERE id = $1`;

/** The organisation helpers shared by the document operations. */
export function createOrganisationRows(pool: Pool): OrganisationRows {
  const write = async (client: PoolClient, organisation: Organisation): Promise<void> => {
    await client.query(UPDATE_ORGANISATION, organisationValues(organisation));
  };
  return {
    async read(id, at) {
      const { rows } = await query<OrganisationRow>(pool, SELECT_ORGANISATION, [id], true);
      const row = rows[0];
      return row === undefined ? undefined : rollBillingPeriod(toOrganisation(row), at);
    },
    async readIn(client, id, at) {
      const { rows } = await client.query<OrganisationRow>(SELECT_ORGANISATION, [id]);
      const row = rows[0];
      return row === undefined ? undefined : rollBillingPeriod(toOrganisation(row), at);
    },
    async readForUpdate(client, id, at) {
      const { rows } = await client.query<OrganisationRow>(
        'SELECT * FROM organisations WHERE id = $1 FOR UPDATE',
        [id],
      );
      const row = rows[0];
      if (row === undefined) return undefined;
      const stored = toOrganisation(row);
      const rolled = rollBillingPeriod(stored, at);
      if (rolled !== stored) await write(client, rolled);
      return rolled;
    },
    write,
  };
}

/** Creates the account operations over `pool`. */
export function createAccountOps(pool: Pool, organisations: OrganisationRows): AccountOps {
  return {
    async createOrganisation(input, at) {
      const organisation = provisionOrganisation(input, checkedDate(at));
      await query(pool, INSERT_ORGANISATION, organisationValues(organisation), false);
      return organisation;
    },
    getOrganisation(id, at) {
      return organisations.read(id, checkedDate(at));
    },
    async listOrganisations(at) {
      checkedDate(at);
      const { rows } = await query<OrganisationRow>(
        pool,
        'SELECT * FROM organisations ORDER BY created_at, id',
        [],
        true,
      );
      return rows.map((row) => rollBillingPeriod(toOrganisation(row), at));
    },
    updateOrganisation(id, patch, at) {
      checkedDate(at);
      return inTransaction(pool, async (client) => {
        const organisation = await organisations.readForUpdate(client, id, at);
        if (organisation === undefined) return undefined;
        const next = patchOrganisation(organisation, patch);
        await organisations.write(client, next);
        return next;
      });
    },

    async createApiKey(record) {
      await query(
        pool,
        `INSERT INTO api_keys (id, organisation_id, name, display_prefix, hash, created_at,
                               revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          record.id,
          record.organisationId,
          record.name,
          record.displayPrefix,
          record.hash,
          checkedDate(record.createdAt),
          checkedDateOrNull(record.revokedAt),
        ],
        false,
      );
    },
    async findApiKeyByHash(hash) {
      const { rows } = await query<ApiKeyRow>(
        pool,
        'SELECT * FROM api_keys WHERE hash = $1',
        [hash],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toApiKey(row);
    },
    async listApiKeys(organisationId) {
      const { rows } = await query<ApiKeyRow>(
        pool,
        'SELECT * FROM api_keys WHERE organisation_id = $1 ORDER BY created_at DESC, id DESC',
        [organisationId],
        true,
      );
      return rows.map(toApiKey);
    },
    async revokeApiKey(organisationId, keyId, at) {
      // Revoking twice keeps the first time: the key stopped working then.
      const { rows } = await query<ApiKeyRow>(
        pool,
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1)
         WHERE organisation_id = $2 AND id = $3 RETURNING *`,
        [checkedDate(at), organisationId, keyId],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toApiKey(row);
    },

    async createOAuthClient(record) {
      await query(
        pool,
        `INSERT INTO oauth_clients (id, organisation_id, name, scopes, secret_hashes, created_at,
                                    revoked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          record.id,
          record.organisationId,
          record.name,
          JSON.stringify(record.scopes),
          JSON.stringify(record.secretHashes),
          checkedDate(record.createdAt),
          checkedDateOrNull(record.revokedAt),
        ],
        false,
      );
    },
    async getOAuthClient(id) {
      const { rows } = await query<OAuthClientRow>(
        pool,
        'SELECT * FROM oauth_clients WHERE id = $1',
        [id],
        true,
      );
      const row = rows[0];
      return row === undefined ? undefined : toOAuthClient(row);
    },
    async listOAuthClients(organisationId) {
      // IS NOT DISTINCT FROM: a NULL organisation selects the operator clients.
      const { rows } = await query<OAuthClientRow>(
        pool,
        `SELECT * FROM oauth_clients WHERE organisation_id IS NOT DISTINCT FROM $1
         ORDER BY created_at DESC, id DESC`,
        [organisationId],
        true,
      );
      return rows.map(toOAuthClient);
    },
    async updateOAuthClient(organisationId, id, change) {
      // One statement per change, so the new secret list is derived from the row as it is when
      // the update takes its lock (two rotations at once keep both handed-out secrets live).
      let text: string;
      let values: unknown[];
      switch (change.kind) {
        case 'rotate-secret':
          text = `UPDATE oauth_clients
            SET secret_hashes = CASE WHEN jsonb_array_length(secret_hashes) = 0
                                     THEN jsonb_build_array($3::text)
                                     ELSE jsonb_build_array($3::text, secret_hashes -> 0) END
            WHERE organisation_id IS NOT DISTINCT FROM $1 AND id = $2 RETURNING *`;
          values = [organisationId, id, change.secretHash];
          break;
        case 'drop-previous-secret':
          text = `UPDATE oauth_clients
            SET secret_hashes = CASE WHEN jsonb_array_length(secret_hashes) > 1
                                     THEN jsonb_build_array(secret_hashes -> 0)
                                     ELSE secret_hashes END
            WHERE organisation_id IS NOT DISTINCT FROM $1 AND id = $2 RETURNING *`;
          values = [organisationId, id];
          break;
        case 'revoke':
          text = `UPDATE oauth_clients SET revoked_at = COALESCE(revoked_at, $3)
            WHERE organisation_id IS NOT DISTINCT FROM $1 AND id = $2 RETURNING *`;
          values = [organisationId, id, checkedDate(change.at)];
          break;
      }
      // A rotation repeated after a lost answer would push the new secret twice: not repeatable.
      const { rows } = await query<OAuthClientRow>(
        pool,
        text,
        values,
        change.kind !== 'rotate-secret',
      );
      const row = rows[0];
      return row === undefined ? undefined : toOAuthClient(row);
    },

    async listSigningKeys() {
      const { rows } = await query<SigningKeyRow>(
        pool,
        'SELECT * FROM signing_keys ORDER BY created_at DESC, kid DESC',
        [],
        true,
      );
      return rows.map(toSigningKey);
    },
    async saveSigningKey(record) {
      await query(
        pool,
        `INSERT INTO signing_keys (kid, algorithm, public_jwk, private_jwk, created_at, active_from,
                                   active_until, retired_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (kid) DO UPDATE SET
           algorithm = excluded.algorithm, public_jwk = excluded.public_jwk,
           private_jwk = excluded.private_jwk, created_at = excluded.created_at,
           active_from = excluded.active_from, active_until = excluded.active_until,
           retired_at = excluded.retired_at`,
        [
          record.kid,
          record.algorithm,
          record.publicJwk,
          record.privateJwk,
          checkedDate(record.createdAt),
          checkedDateOrNull(record.activeFrom),
          checkedDateOrNull(record.activeUntil),
          checkedDateOrNull(record.retiredAt),
        ],
        true,
      );
    },
  };
}
