import type { Database } from 'better-sqlite3';

import { patchOrganisation, provisionOrganisation, rollBillingPeriod } from '@disarm/protocol';
import type { Organisation } from '@disarm/protocol';

import {
  checkedDate,
  fromOrganisation,
  toApiKey,
  toMillis,
  toMillisOrNull,
  toOAuthClient,
  toOrganisation,
  toSigningKey,
} from './rows.ts';
import type { ApiKeyRow, OAuthClientRow, OrganisationRow, SigningKeyRow } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/** Organisations, API keys, OAuth clients and signing keys. */
export type AccountOps = Pick<
  SyncStateStore,
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
  read(id: string, at: Date): Organisation | undefined;
  /**
   * The organisation as seen at `at`, with a rolled period written back. Call inside a write
   * transaction only.
   */
  readForUpdate(id: string, at: Date): Organisation | undefined;
  /** Writes `organisation` as it is (inside the write transaction that read it). */
  write(organisation: Organisation): void;
}

/** The organisation row helpers shared by the document operations. */
export function createOrganisationRows(db: Database): OrganisationRows {
  const select = db.prepare<[string], OrganisationRow>('SELECT * FROM organisations WHERE id = ?');
  const update = db.prepare<[OrganisationRow]>(
    `UPDATE organisations SET
       name = @name, status = @status, plan = @plan, plan_type = @plan_type,
       monthly_allowance = @monthly_allowance, rate_limit_per_minute = @rate_limit_per_minute,
       max_file_size_bytes = @max_file_size_bytes, max_upload_size_bytes = @max_upload_size_bytes,
       price_per_document_pence = @price_per_document_pence,
       credit_balance_pence = @credit_balance_pence, period_start = @period_start,
       period_end = @period_end, period_used_submissions = @period_used_submissions,
       policy = @policy
     WHERE id = @id`,
  );
  const write = (organisation: Organisation): void => {
    update.run(fromOrganisation(organisation));
  };
  return {
    read(id, at) {
      const row = select.get(id);
      return row === undefined ? undefined : rollBillingPeriod(toOrganisation(row), at);
    },
    readForUpdate(id, at) {
      const row = select.get(id);
      if (row === undefined) return undefined;
      const stored = toOrganisation(row);
      const rolled = rollBillingPeriod(stored, at);
      if (rolled !== stored) write(rolled);
      return rolled;
    },
    write,
  };
}

/** Creates the account operations over `db`. */
export function createAccountOps(db: Database, organisations: OrganisationRows): AccountOps {
  const insertOrganisation = db.prepare<[OrganisationRow]>(
    `INSERT INTO organisations (
       id, name, status, plan, plan_type, monthly_allowance, rate_limit_per_minute,
       max_file_size_bytes, max_upload_size_bytes, price_per_document_pence, credit_balance_pence,
       period_start, period_end, period_used_submissions, policy, created_at
     ) VALUES (
       @id, @name, @status, @plan, @plan_type, @monthly_allowance, @rate_limit_per_minute,
       @max_file_size_bytes, @max_upload_size_bytes, @price_per_document_pence,
       @credit_balance_pence, @period_start, @period_end, @period_used_submissions, @policy,
       @created_at
     )`,
  );
  const selectOrganisationIds = db.prepare<[], { id: string }>(
    'SELECT id FROM organisations ORDER BY created_at, id',
  );
  const insertApiKey = db.prepare<[ApiKeyRow]>(
    `INSERT INTO api_keys (id, organisation_id, name, display_prefix, hash, created_at, revoked_at)
     VALUES (@id, @organisation_id, @name, @display_prefix, @hash, @created_at, @revoked_at)`,
  );
  const selectApiKeyByHash = db.prepare<[string], ApiKeyRow>(
    'SELECT * FROM api_keys WHERE hash = ?',
  );
  const selectApiKeys = db.prepare<[string], ApiKeyRow>(
    'SELECT * FROM api_keys WHERE organisation_id = ? ORDER BY created_at DESC, id DESC',
  );
  // Revoking twice keeps the first time: the key stopped working then.
  const revokeApiKey = db.prepare<[number, string, string], ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?)
     WHERE organisation_id = ? AND id = ? RETURNING *`,
  );

  const insertOAuthClient = db.prepare<[OAuthClientRow]>(
    `INSERT INTO oauth_clients (id, organisation_id, name, scopes, secret_hashes, created_at,
                                revoked_at)
     VALUES (@id, @organisation_id, @name, @scopes, @secret_hashes, @created_at, @revoked_at)`,
  );
  const selectOAuthClient = db.prepare<[string], OAuthClientRow>(
    'SELECT * FROM oauth_clients WHERE id = ?',
  );
  // `IS`, not `=`: a NULL organisation selects the operator clients.
  const selectOAuthClients = db.prepare<[string | null], OAuthClientRow>(
    'SELECT * FROM oauth_clients WHERE organisation_id IS ? ORDER BY created_at DESC, id DESC',
  );
  // One statement per change, so the new secret list is derived from the row as it is now
  // (two rotations at once leave both handed-out secrets live, the older one as previous).
  const rotateOAuthClientSecret = db.prepare<
    [{ secret_hash: string; organisation_id: string | null; id: string }],
    OAuthClientRow
  >(
    `UPDATE oauth_clients
     SET secret_hashes = CASE WHEN json_array_length(secret_hashes) = 0 THEN json_array(@secret_hash)
                              ELSE json_array(@secret_hash, json_extract(secret_hashes, '$[0]')) END
     WHERE organisation_id IS @organisation_id AND id = @id RETURNING *`,
  );
  const dropPreviousOAuthClientSecret = db.prepare<[string | null, string], OAuthClientRow>(
    `UPDATE oauth_clients
     SET secret_hashes = CASE WHEN json_array_length(secret_hashes) > 1
                              THEN json_array(json_extract(secret_hashes, '$[0]'))
                              ELSE secret_hashes END
     WHERE organisation_id IS ? AND id = ? RETURNING *`,
  );
  const revokeOAuthClient = db.prepare<[number, string | null, string], OAuthClientRow>(
    `UPDATE oauth_clients SET revoked_at = COALESCE(revoked_at, ?)
     WHERE organisation_id IS ? AND id = ? RETURNING *`,
  );

  const upsertSigningKey = db.prepare<[SigningKeyRow]>(
    `INSERT INTO signing_keys (kid, algorithm, public_jwk, private_jwk, created_at, active_from,
                               active_until, retired_at)
     VALUES (@kid, @algorithm, @public_jwk, @private_jwk, @created_at, @active_from, @active_until,
             @retired_at)
     ON CONFLICT (kid) DO UPDATE SET
       algorithm = excluded.algorithm, public_jwk = excluded.public_jwk,
       private_jwk = excluded.private_jwk, created_at = excluded.created_at,
       active_from = excluded.active_from, active_until = excluded.active_until,
       retired_at = excluded.retired_at`,
  );
  const selectSigningKeys = db.prepare<[], SigningKeyRow>(
    'SELECT * FROM signing_keys ORDER BY created_at DESC, kid DESC',
  );

  const updateOrganisation = db.transaction<AccountOps['updateOrganisation']>((id, patch, at) => {
    const organisation = organisations.readForUpdate(id, checkedDate(at));
    if (organisation === undefined) return undefined;
    const next = patchOrganisation(organisation, patch);
    organisations.write(next);
    return next;
  });

  return {
    createOrganisation(input, at) {
      const organisation = provisionOrganisation(input, checkedDate(at));
      insertOrganisation.run(fromOrganisation(organisation));
      return organisation;
    },
    getOrganisation(id, at) {
      return organisations.read(id, checkedDate(at));
    },
    listOrganisations(at) {
      const checked = checkedDate(at);
      // One read transaction, so the list is one consistent snapshot.
      return db.transaction(() =>
        selectOrganisationIds.all().flatMap(({ id }) => {
          const organisation = organisations.read(id, checked);
          return organisation === undefined ? [] : [organisation];
        }),
      )();
    },
    updateOrganisation: (id, patch, at) => updateOrganisation.immediate(id, patch, at),

    createApiKey(record) {
      insertApiKey.run({
        id: record.id,
        organisation_id: record.organisationId,
        name: record.name,
        display_prefix: record.displayPrefix,
        hash: record.hash,
        created_at: toMillis(record.createdAt),
        revoked_at: toMillisOrNull(record.revokedAt),
      });
    },
    findApiKeyByHash(hash) {
      const row = selectApiKeyByHash.get(hash);
      return row === undefined ? undefined : toApiKey(row);
    },
    listApiKeys(organisationId) {
      return selectApiKeys.all(organisationId).map(toApiKey);
    },
    revokeApiKey(organisationId, keyId, at) {
      const row = revokeApiKey.get(toMillis(at), organisationId, keyId);
      return row === undefined ? undefined : toApiKey(row);
    },

    createOAuthClient(record) {
      insertOAuthClient.run({
        id: record.id,
        organisation_id: record.organisationId,
        name: record.name,
        scopes: JSON.stringify(record.scopes),
        secret_hashes: JSON.stringify(record.secretHashes),
        created_at: toMillis(record.createdAt),
        revoked_at: toMillisOrNull(record.revokedAt),
      });
    },
    getOAuthClient(id) {
      const row = selectOAuthClient.get(id);
      return row === undefined ? undefined : toOAuthClient(row);
    },
    listOAuthClients(organisationId) {
      return selectOAuthClients.all(organisationId).map(toOAuthClient);
    },
    updateOAuthClient(organisationId, id, change) {
      let row: OAuthClientRow | undefined;
      switch (change.kind) {
        case 'rotate-secret':
          row = rotateOAuthClientSecret.get({
            secret_hash: change.secretHash,
            organisation_id: organisationId,
            id,
          });
          break;
        case 'drop-previous-secret':
          row = dropPreviousOAuthClientSecret.get(organisationId, id);
          break;
        case 'revoke':
          row = revokeOAuthClient.get(toMillis(change.at), organisationId, id);
          break;
      }
      return row === undefined ? undefined : toOAuthClient(row);
    },

    listSigningKeys() {
      return selectSigningKeys.all().map(toSigningKey);
    },
    saveSigningKey(record) {
      upsertSigningKey.run({
        kid: record.kid,
        algorithm: record.algorithm,
        public_jwk: record.publicJwk,
        private_jwk: record.privateJwk,
        created_at: toMillis(record.createdAt),
        active_from: toMillisOrNull(record.activeFrom),
        active_until: toMillisOrNull(record.activeUntil),
        retired_at: toMillisOrNull(record.retiredAt),
      });
    },
  };
}
