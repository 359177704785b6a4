import type { Database } from 'better-sqlite3';

/** One step of the schema; applied once, in `version` order, inside one transaction. */
interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Run before `sql`: one row `{ notice }` per thing the migration changes that an operator must hear of. */
  readonly notices?: string;
}

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** Hears each notice of an applied migration (what it changed that an operator must know). */
  readonly onNotice?: (notice: string) => void;
  /** Stop after this version (tests build old schemas with it). @default the newest */
  readonly upTo?: number;
}

/*
 * Conventions: times are INTEGER milliseconds since the epoch (UTC); booleans are INTEGER 0/1;
 * JSON values (policy, findings, threat names, scopes, secret hashes, headers) are TEXT; stored
 * response bodies are BLOB. Tables are STRICT so a wrongly typed value is an error, not a
 * silent coercion.
 */
const MIGRATION_1_INITIAL = `
CREATE TABLE organisations (
  id                       TEXT    NOT NULL PRIMARY KEY,
  name                     TEXT    NOT NULL,
  status                   TEXT    NOT NULL CHECK (status IN ('active', 'suspended')),
  plan                     TEXT,
  plan_type                TEXT    CHECK (plan_type IN ('tier', 'payg', 'internal')),
  monthly_allowance        INTEGER NOT NULL,
  rate_limit_per_minute    INTEGER NOT NULL,
  max_file_size_bytes      INTEGER NOT NULL,
  max_upload_size_bytes    INTEGER NOT NULL,
  price_per_document_pence INTEGER,
  credit_balance_pence     INTEGER NOT NULL,
  period_start             INTEGER NOT NULL,
  period_end               INTEGER NOT NULL,
  period_used_submissions  INTEGER NOT NULL,
  policy                   TEXT    NOT NULL,
  created_at               INTEGER NOT NULL,
  CHECK ((plan IS NULL) = (plan_type IS NULL))
) STRICT;

CREATE TABLE api_keys (
  id              TEXT    NOT NULL PRIMARY KEY,
  organisation_id TEXT    NOT NULL REFERENCES organisations (id),
  name            TEXT    NOT NULL,
  display_prefix  TEXT    NOT NULL,
  hash            TEXT    NOT NULL,
  created_at      INTEGER NOT NULL,
  revoked_at      INTEGER
) STRICT;
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_organisation ON api_keys (organisation_id, created_at);

CREATE TABLE documents (
  id                    TEXT    NOT NULL PRIMARY KEY,
  organisation_id       TEXT    NOT NULL REFERENCES organisations (id),
  status                TEXT    NOT NULL
                          CHECK (status IN ('pending', 'processing', 'completed', 'rejected', 'failed')),
  lane                  TEXT    NOT NULL CHECK (lane IN ('multipart', 'raw', 'reference')),
  file_name             TEXT    NOT NULL,
  size_bytes            INTEGER NOT NULL,
  delete_after_download INTEGER NOT NULL CHECK (delete_after_download IN (0, 1)),
  status_style_202      INTEGER NOT NULL CHECK (status_style_202 IN (0, 1)),
  intake_key            TEXT,
  submitted_at          INTEGER NOT NULL,
  started_at            INTEGER,
  completed_at          INTEGER,
  output_blob_key       TEXT,
  output_file_name      TEXT,
  output_format         TEXT,
  output_media_type     TEXT,
  output_converted      INTEGER CHECK (output_converted IN (0, 1)),
  output_size_bytes     INTEGER,
  output_findings       TEXT,
  reason                TEXT,
  threat_names          TEXT    NOT NULL,
  detail                TEXT,
  download_expires_at   INTEGER,
  first_download_at     INTEGER,
  deleted_at            INTEGER,
  output_removed_at     INTEGER,
  charged_pence         INTEGER NOT NULL,
  counted_in_allowance  INTEGER NOT NULL CHECK (counted_in_allowance IN (0, 1)),
  attempts              INTEGER NOT NULL,
  lease_owner           TEXT,
  lease_expires_at      INTEGER,
  CHECK (status <> 'completed' OR output_blob_key IS NOT NULL)
) STRICT;
-- The queue: the oldest pending document first.
CREATE INDEX documents_queue ON documents (status, submitted_at, id);
-- Tenant reads.
CREATE INDEX documents_organisation ON documents (organisation_id, submitted_at);
-- Lapsed leases.
CREATE INDEX documents_leases ON documents (lease_expires_at) WHERE status = 'processing';
-- Sweeps: intake bytes of ended documents, outputs still on storage.
CREATE INDEX documents_intake_sweep ON documents (completed_at)
  WHERE intake_key IS NOT NULL AND status IN ('completed', 'rejected', 'failed');
CREATE INDEX documents_output_sweep ON documents (download_expires_at)
  WHERE status = 'completed' AND output_removed_at IS NULL;
CREATE INDEX documents_downloaded_sweep ON documents (first_download_at)
  WHERE status = 'completed' AND output_removed_at IS NULL AND delete_after_download = 1
    AND first_download_at IS NOT NULL;

CREATE TABLE uploads (
  id              TEXT    NOT NULL PRIMARY KEY,
  organisation_id TEXT    NOT NULL REFERENCES organisations (id),
  file_name       TEXT    NOT NULL,
  blob_key        TEXT    NOT NULL,
  created_at      INTEGER NOT NULL,
  put_expires_at  INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL,
  max_size_bytes  INTEGER NOT NULL,
  uploaded_at     INTEGER,
  size_bytes      INTEGER,
  submitted_at    INTEGER,
  document_id     TEXT    REFERENCES documents (id),
  -- The sweeper removed the staged bytes of an upload that was never submitted.
  blob_removed_at INTEGER
) STRICT;
CREATE INDEX uploads_organisation ON uploads (organisation_id, created_at);
CREATE INDEX uploads_expiry_sweep ON uploads (expires_at)
  WHERE submitted_at IS NULL AND blob_removed_at IS NULL;

CREATE TABLE rate_limits (
  bucket       TEXT    NOT NULL,
  window_start INTEGER NOT NULL,
  count        INTEGER NOT NULL,
  PRIMARY KEY (bucket, window_start)
) STRICT, WITHOUT ROWID;
CREATE INDEX rate_limits_window ON rate_limits (window_start);

CREATE TABLE idempotency_keys (
  organisation_id  TEXT    NOT NULL REFERENCES organisations (id),
  key              TEXT    NOT NULL,
  endpoint         TEXT    NOT NULL,
  request_hash     TEXT    NOT NULL,
  state            TEXT    NOT NULL CHECK (state IN ('in_flight', 'completed')),
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  response_status  INTEGER,
  response_headers TEXT,
  response_body    BLOB,
  PRIMARY KEY (organisation_id, key)
) STRICT;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE TABLE oauth_clients (
  id              TEXT    NOT NULL PRIMARY KEY,
  organisation_id TEXT    NOT NULL REFERENCES organisations (id),
  name            TEXT    NOT NULL,
  scopes          TEXT    NOT NULL,
  secret_hashes   TEXT    NOT NULL,
  created_at      INTEGER NOT NULL,
  revoked_at      INTEGER
) STRICT;
CREATE INDEX oauth_clients_organisation ON oauth_clients (organisation_id, created_at);

CREATE TABLE signing_keys (
  kid          TEXT    NOT NULL PRIMARY KEY,
  algorithm    TEXT    NOT NULL CHECK (algorithm IN ('ES256', 'RS256', 'EdDSA')),
  public_jwk   TEXT    NOT NULL,
  private_jwk  TEXT    NOT NULL,
  created_at   INTEGER NOT NULL,
  active_until INTEGER,
  retired_at   INTEGER
) STRICT;
`;

/** Signing keys published before they sign (staged rotation); NULL: signs from creation. */
const MIGRATION_2_SIGNING_KEY_ACTIVE_FROM = `
ALTER TABLE signing_keys ADD COLUMN active_from INTEGER;
`;

/*
 * Platform administration (cdr.admin) belongs to operator clients, which belong to no customer
 * organisation: organisation_id becomes nullable (SQLite needs the table rebuilt for that), a
 * customer client loses cdr.admin, and one left with no scope is revoked (it could do nothing).
 */
const OAUTH_CLIENT_HOLDS_ADMIN = `EXISTS (SELECT 1 FROM json_each(c.scopes) WHERE value = 'cdr.admin')`;
const OAUTH_CLIENT_ONLY_ADMIN = `NOT EXISTS (SELECT 1 FROM json_each(c.scopes) WHERE value <> 'cdr.admin')`;
const MIGRATION_3_NOTICES = `
SELECT 'OAuth client ' || c.id || ' (' || c.name || ') of organisation ' || c.organisation_id ||
       ' lost scope cdr.admin: platform administration is for operator credentials only' ||
       CASE WHEN ${OAUTH_CLIENT_ONLY_ADMIN} AND c.revoked_at IS NULL
            THEN '; it held no other scope and is now revoked' ELSE '' END AS notice
FROM oauth_clients c
WHERE ${OAUTH_CLIENT_HOLDS_ADMIN}
ORDER BY c.created_at, c.id
`;
const MIGRATION_3_OPERATOR_CLIENTS = `
CREATE TABLE oauth_clients_v3 (
  id              TEXT    NOT NULL PRIMARY KEY,
  organisation_id TEXT    REFERENCES organisations (id),
  name            TEXT    NOT NULL,
  scopes          TEXT    NOT NULL,
  secret_hashes   TEXT    NOT NULL,
  created_at      INTEGER NOT NULL,
  revoked_at      INTEGER
) STRICT;
INSERT INTO oauth_clients_v3 (id, organisation_id, name, scopes, secret_hashes, created_at, revoked_at)
SELECT c.id, c.organisation_id, c.name,
       (SELECT json_group_array(value) FROM json_each(c.scopes) WHERE value <> 'cdr.admin'),
       c.secret_hashes, c.created_at,
       CASE WHEN c.revoked_at IS NULL AND ${OAUTH_CLIENT_ONLY_ADMIN}
            THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
            ELSE c.revoked_at END
FROM oauth_clients c;
DROP TABLE oauth_clients;
ALTER TABLE oauth_clients_v3 RENAME TO oauth_clients;
CREATE INDEX oauth_clients_organisation ON oauth_clients (organisation_id, created_at);
`;

/**
 * The rate-limit counters moved to a file of their own (`openCounters`), so charges and
 * documents keep `synchronous = FULL` while counters do not. The minute being counted at upgrade
 * starts again from zero.
 */
const MIGRATION_4_RATE_LIMITS_MOVED = `
DROP TABLE rate_limits;
`;

/**
 * The caller-safe sentence of a rejection or failure (the envelope's `reasonDetail`). Documents
 * ended before it show the generic sentence of their reason.
 */
const MIGRATION_5_REASON_DETAIL = `
ALTER TABLE documents ADD COLUMN reason_detail TEXT;
`;

/**
 * A revision on every document row, moved by every update (whatever statement or process makes
 * it), so a process can tell with a one-column read that a document it read before is
 * unchanged. The WHEN keeps the trigger's own update from firing it again.
 */
const MIGRATION_6_DOCUMENT_REVISION = `
ALTER TABLE documents ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER documents_revision AFTER UPDATE ON documents
  WHEN NEW.revision = OLD.revision
  BEGIN
    UPDATE documents SET revision = OLD.revision + 1 WHERE id = NEW.id;
  END;
`;

/**
 * Retries with back-off: a document whose lease lapsed waits until `retry_not_before` before it
 * is leased again. The queue index carries the column so waiting documents are stepped over
 * without reading their rows.
 */
const MIGRATION_7_RETRY_BACKOFF = `
ALTER TABLE documents ADD COLUMN retry_not_before INTEGER;
DROP INDEX documents_queue;
CREATE INDEX documents_queue ON documents (status, submitted_at, id, retry_not_before);
`;

/**
 * A claim on an Idempotency-Key belongs to a live request (README "Idempotency"): its owner (the
 * request's token and its process's identity), its lease, and the document or upload it created,
 * recorded in that resource's own transaction. Claims of older versions have no lease, so they
 * are free at once: no key stays "in flight" across the upgrade.
 */
const MIGRATION_8_LIVE_IDEMPOTENCY_CLAIMS = `
ALTER TABLE idempotency_keys ADD COLUMN owner TEXT;
ALTER TABLE idempotency_keys ADD COLUMN owner_process TEXT;
ALTER TABLE idempotency_keys ADD COLUMN held_until INTEGER;
ALTER TABLE idempotency_keys ADD COLUMN resource_id TEXT;
`;

/**
 * The orphan sweep asks which listed blobs a row still names (`ownedBlobKeys`): each key column
 * gets an index, so the question costs a few seeks however many documents there are.
 */
const MIGRATION_9_BLOB_OWNERSHIP = `
CREATE INDEX documents_intake_key ON documents (intake_key) WHERE intake_key IS NOT NULL;
CREATE INDEX documents_output_key ON documents (output_blob_key) WHERE output_blob_key IS NOT NULL;
CREATE INDEX uploads_blob_key ON uploads (blob_key);
`;

/** Every migration, oldest first. Append only: never edit one that has shipped. */
const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: 'initial schema', sql: MIGRATION_1_INITIAL },
  { version: 2, name: 'signing key active_from', sql: MIGRATION_2_SIGNING_KEY_ACTIVE_FROM },
  {
    version: 3,
    name: 'operator OAuth clients; cdr.admin off customer clients',
    sql: MIGRATION_3_OPERATOR_CLIENTS,
    notices: MIGRATION_3_NOTICES,
  },
  { version: 4, name: 'rate limits in the counters file', sql: MIGRATION_4_RATE_LIMITS_MOVED },
  { version: 5, name: 'document reason detail', sql: MIGRATION_5_REASON_DETAIL },
  { version: 6, name: 'document revision', sql: MIGRATION_6_DOCUMENT_REVISION },
  { version: 7, name: 'retry back-off', sql: MIGRATION_7_RETRY_BACKOFF },
  { version: 8, name: 'live idempotency claims', sql: MIGRATION_8_LIVE_IDEMPOTENCY_CLAIMS },
  { version: 9, name: 'blob ownership indexes', sql: MIGRATION_9_BLOB_OWNERSHIP },
];

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER NOT NULL PRIMARY KEY,
  name       TEXT    NOT NULL,
  applied_at INTEGER NOT NULL
) STRICT`;

/**
 * Applies the migrations `db` has not seen, in one `BEGIN IMMEDIATE` transaction so two processes
 * opening the same new file do not both apply them.
 * @returns the versions applied by this call (empty when the schema was up to date).
 * @throws when the file was migrated by a newer version of this package.
 */
export function migrate(db: Database, options: MigrateOptions = {}): number[] {
  const run = db.transaction((): { done: number[]; notices: string[] } => {
    db.exec(CREATE_MIGRATIONS_TABLE);
    const applied = new Set(
      db
        .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
        .all()
        .map((row) => row.version),
    );
    const latest = MIGRATIONS.at(-1)?.version ?? 0;
    const newest = Math.max(0, ...applied);
    if (newest > latest) {
      throw new Error(
        `the database has schema version ${newest}, newer than this @disarm/sqlite knows (${latest})`,
      );
    }
    const record = db.prepare<[number, string, number]>(
      'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
    );
    const done: number[] = [];
    const notices: string[] = [];
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      if (options.upTo !== undefined && migration.version > options.upTo) break;
      if (migration.notices !== undefined) {
        for (const row of db.prepare<[], { notice: string }>(migration.notices).all()) {
          notices.push(`schema migration ${migration.version}: ${row.notice}`);
        }
      }
      db.exec(migration.sql);
      // Audit only; the store otherwise takes every time from its caller.
      record.run(migration.version, migration.name, Date.now());
      done.push(migration.version);
    }
    return { done, notices };
  });
  const { done, notices } = run.immediate();
  // Told once the changes are committed, never for a rolled-back attempt.
  for (const notice of notices) options.onNotice?.(notice);
  return done;
}
