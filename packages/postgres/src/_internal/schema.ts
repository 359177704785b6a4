import type { PoolClient } from 'pg';

/** One step of the schema; applied once, in `version` order, inside the migration transaction. */
interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/*
 * Conventions: times are timestamptz (UTC instants, microsecond precision, so every millisecond
 * the domain gives survives); money, sizes and counts that may pass 2^31 are bigint (read back as
 * numbers, see `_internal/pool.ts`); JSON values are jsonb; stored response bodies are bytea.
 * Every hot query has an index, named after the query it serves (the EXPLAIN test checks them).
 */
const MIGRATION_1_INITIAL = `
CREATE TABLE organisations (
  id                       text        NOT NULL PRIMARY KEY,
  name                     text        NOT NULL,
  status                   text        NOT NULL CHECK (status IN ('active', 'suspended')),
  plan                     text,
  plan_type                text        CHECK (plan_type IN ('tier', 'payg', 'internal')),
  monthly_allowance        bigint      NOT NULL,
  rate_limit_per_minute    bigint      NOT NULL,
  max_file_size_bytes      bigint      NOT NULL,
  max_upload_size_bytes    bigint      NOT NULL,
  price_per_document_pence bigint,
  credit_balance_pence     bigint      NOT NULL,
  period_start             timestamptz NOT NULL,
  period_end               timestamptz NOT NULL,
  period_used_submissions  bigint      NOT NULL,
  policy                   jsonb       NOT NULL,
  created_at               timestamptz NOT NULL,
  CHECK ((plan IS NULL) = (plan_type IS NULL))
);
CREATE INDEX organisations_listing ON organisations (created_at, id);

CREATE TABLE api_keys (
  id              text        NOT NULL PRIMARY KEY,
  organisation_id text        NOT NULL REFERENCES organisations (id),
  name            text        NOT NULL,
  display_prefix  text        NOT NULL,
  hash            text        NOT NULL,
  created_at      timestamptz NOT NULL,
  revoked_at      timestamptz
);
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_organisation ON api_keys (organisation_id, created_at);

CREATE TABLE documents (
  id                    text        NOT NULL PRIMARY KEY,
  organisation_id       text        NOT NULL REFERENCES organisations (id),
  status                text        NOT NULL
                          CHECK (status IN ('pending', 'processing', 'completed', 'rejected', 'failed')),
  lane                  text        NOT NULL CHECK (lane IN ('multipart', 'raw', 'reference')),
  file_name             text        NOT NULL,
  size_bytes            bigint      NOT NULL,
  delete_after_download boolean     NOT NULL,
  status_style_202      boolean     NOT NULL,
  intake_key            text,
  submitted_at          timestamptz NOT NULL,
  started_at            timestamptz,
  completed_at          timestamptz,
  output_blob_key       text,
  output_file_name      text,
  output_format         text,
  output_media_type     text,
  output_converted      boolean,
  output_size_bytes     bigint,
  output_findings       jsonb,
  reason                text,
  threat_names          jsonb       NOT NULL,
  detail                text,
  reason_detail         text,
  download_expires_at   timestamptz,
  first_download_at     timestamptz,
  deleted_at            timestamptz,
  output_removed_at     timestamptz,
  charged_pence         bigint      NOT NULL,
  counted_in_allowance  boolean     NOT NULL,
  attempts              integer     NOT NULL,
  lease_owner           text,
  lease_expires_at      timestamptz,
  CHECK (status <> 'completed' OR output_blob_key IS NOT NULL)
);
-- The queue: the oldest pending document first (leaseDocument).
CREATE INDEX documents_queue ON documents (submitted_at, id) WHERE status = 'pending';
-- Lapsed leases (recoverLapsedLeases).
CREATE INDEX documents_leases ON documents (lease_expires_at) WHERE status = 'processing';
-- Sweeps: intake bytes of ended documents, outputs still on storage.
CREATE INDEX documents_intake_sweep ON documents (completed_at, id)
  WHERE intake_key IS NOT NULL AND status IN ('completed', 'rejected', 'failed');
CREATE INDEX documents_output_sweep ON documents (download_expires_at, id)
  WHERE status = 'completed' AND output_removed_at IS NULL;
CREATE INDEX documents_downloaded_sweep ON documents (first_download_at, id)
  WHERE status = 'completed' AND output_removed_at IS NULL AND delete_after_download
    AND first_download_at IS NOT NULL;

CREATE TABLE uploads (
  id              text        NOT NULL PRIMARY KEY,
  organisation_id text        NOT NULL REFERENCES organisations (id),
  file_name       text        NOT NULL,
  blob_key        text        NOT NULL,
  created_at      timestamptz NOT NULL,
  put_expires_at  timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  max_size_bytes  bigint      NOT NULL,
  uploaded_at     timestamptz,
  size_bytes      bigint,
  submitted_at    timestamptz,
  document_id     text        REFERENCES documents (id),
  -- The sweeper removed the staged bytes of an upload that was never submitted.
  blob_removed_at timestamptz
);
CREATE INDEX uploads_expiry_sweep ON uploads (expires_at, id)
  WHERE submitted_at IS NULL AND blob_removed_at IS NULL;

-- Counters are not money: an unlogged table skips the WAL (a crash empties it, which forgets at
-- most a minute of counts), so every API request's hit costs one in-memory upsert.
CREATE UNLOGGED TABLE rate_limits (
  bucket       text        NOT NULL,
  window_start timestamptz NOT NULL,
  count        bigint      NOT NULL,
  PRIMARY KEY (bucket, window_start)
);
CREATE INDEX rate_limits_window ON rate_limits (window_start);

CREATE TABLE idempotency_keys (
  organisation_id  text        NOT NULL REFERENCES organisations (id),
  key              text        NOT NULL,
  endpoint         text        NOT NULL,
  request_hash     text        NOT NULL,
  state            text        NOT NULL CHECK (state IN ('in_flight', 'completed')),
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  response_status  integer,
  response_headers jsonb,
  response_body    bytea,
  PRIMARY KEY (organisation_id, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE oauth_clients (
  id              text        NOT NULL PRIMARY KEY,
  -- NULL: an operator client, belonging to no customer organisation.
  organisation_id text        REFERENCES organisations (id),
  name            text        NOT NULL,
  scopes          jsonb       NOT NULL,
  secret_hashes   jsonb       NOT NULL,
  created_at      timestamptz NOT NULL,
  revoked_at      timestamptz
);
CREATE INDEX oauth_clients_organisation ON oauth_clients (organisation_id, created_at);

CREATE TABLE signing_keys (
  kid          text        NOT NULL PRIMARY KEY,
  algorithm    text        NOT NULL CHECK (algorithm IN ('ES256', 'RS256', 'EdDSA')),
  public_jwk   text        NOT NULL,
  private_jwk  text        NOT NULL,
  created_at   timestamptz NOT NULL,
  active_from  timestamptz,
  active_until timestamptz,
  retired_at   timestamptz
);
`;

/**
 * Retries with back-off: a document whose lease lapsed waits until `retry_not_before` before it
 * is leased again. The queue index carries the column so the lease query filters without reading
 * the table; waiting documents stay in it (they are pending) and are stepped over.
 */
const MIGRATION_2_RETRY_BACKOFF = `
ALTER TABLE documents ADD COLUMN retry_not_before timestamptz;
DROP INDEX documents_queue;
-- The queue: the oldest pending document whose time has come (leaseDocument).
CREATE INDEX documents_queue ON documents (submitted_at, id) INCLUDE (retry_not_before)
  WHERE status = 'pending';
`;

/**
 * A claim on an Idempotency-Key belongs to a live request (README "Idempotency"): its owner (the
 * request's token and its process's identity), its lease, and the document or upload it created,
 * recorded in that resource's own transaction. Claims of older versions have no lease, so they
 * are free at once: no key stays "in flight" across the upgrade.
 */
const MIGRATION_3_LIVE_IDEMPOTENCY_CLAIMS = `
ALTER TABLE idempotency_keys
  ADD COLUMN owner text,
  ADD COLUMN owner_process text,
  ADD COLUMN held_until timestamptz,
  ADD COLUMN resource_id text;
`;

/**
 * The orphan sweep asks which listed blobs a row still names (ownedBlobKeys): each key column
 * gets an index, so the question costs a few index scans however many documents there are.
 */
const MIGRATION_4_BLOB_OWNERSHIP = `
CREATE INDEX documents_intake_key ON documents (intake_key) WHERE intake_key IS NOT NULL;
CREATE INDEX documents_output_key ON documents (output_blob_key) WHERE output_blob_key IS NOT NULL;
CREATE INDEX uploads_blob_key ON uploads (blob_key);
`;

/** Every migration, oldest first. Append only: never edit one that has shipped. */
const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial schema', sql: MIGRATION_1_INITIAL },
  { version: 2, name: 'retry back-off', sql: MIGRATION_2_RETRY_BACKOFF },
  { version: 3, name: 'live idempotency claims', sql: MIGRATION_3_LIVE_IDEMPOTENCY_CLAIMS },
  { version: 4, name: 'blob ownership indexes', sql: MIGRATION_4_BLOB_OWNERSHIP },
];

/** The newest schema version this package knows. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS.at(-1)?.version ?? 0;

/**
 * Applies the migrations the schema has not seen, in one transaction holding a transaction-level
 * advisory lock keyed on the schema's name: nodes starting at once queue on the lock, and the
 * second finds the work done. The lock is released by the commit (or rollback), never leaked.
 * @returns the versions applied by this call (empty when the schema was up to date).
 * @throws when the schema was migrated by a newer version of this package.
 */
export async function migrate(client: PoolClient, schema: string): Promise<number[]> {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('disarm migrate ' || $1))`, [schema]);
    // `schema` is a plain lower-case identifier (checked by the store's options).
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version    integer     NOT NULL PRIMARY KEY,
        name       text        NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    const applied = new Set(rows.map((row) => row.version));
    const newest = Math.max(0, ...applied);
    if (newest > LATEST_SCHEMA_VERSION) {
      throw new Error(
        `the database has schema version ${newest}, newer than this @disarm/postgres knows (${LATEST_SCHEMA_VERSION})`,
      );
    }
    const done: number[] = [];
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      done.push(migration.version);
    }
    await client.query('COMMIT');
    return done;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
