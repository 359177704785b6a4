import Database from 'better-sqlite3';

import { toMillis } from './rows.ts';
import type { SyncStateStore } from './sync.ts';

/**
 * Counters of windows that started this long before a hit are purged. Windows are one minute;
 * ten keeps every window a clock-skewed process could still be counting.
 */
const RATE_WINDOW_RETENTION_MS = 10 * 60 * 1000;

/** The counters file's schema; `IF NOT EXISTS` because it holds nothing worth migrating. */
const COUNTERS_SCHEMA = `
CREATE TABLE IF NOT EXISTS rate_limits (
  bucket       TEXT    NOT NULL,
  window_start INTEGER NOT NULL,
  count        INTEGER NOT NULL,
  PRIMARY KEY (bucket, window_start)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rate_limits_window ON rate_limits (window_start);
`;

/** The rate-limit counters, in their own database file and connection. */
export interface Counters {
  readonly hitRateLimit: SyncStateStore['hitRateLimit'];
  close(): void;
}

/**
 * Opens the rate-limit counters at `path` (created when absent).
 *
 * Why a file of their own: every API request hits a counter, and counters are not money. The
 * counters file runs WAL with `synchronous = NORMAL`: a commit is atomic and isolated (every
 * process on the file still counts each hit exactly once, under the same `BEGIN IMMEDIATE` lock)
 * but is not flushed to disk before it returns, so a power cut may forget the last moments of
 * counts. The state file keeps `synchronous = FULL` for charges, documents and keys, and its
 * commits never queue behind a counter.
 */
export function openCounters(path: string, busyTimeoutMs: number): Counters {
  const db = new Database(path, { timeout: busyTimeoutMs });
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.transaction(() => db.exec(COUNTERS_SCHEMA)).immediate();
  } catch (error) {
    db.close();
    throw error;
  }
  const hit = db.prepare<[string, number], { count: number }>(
    `INSERT INTO rate_limits (bucket, window_start, count) VALUES (?, ?, 1)
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = count + 1
     RETURNING count`,
  );
  const purgeWindows = db.prepare<[number]>('DELETE FROM rate_limits WHERE window_start < ?');
  const hitOnce = db.transaction((bucket: string, windowStart: number, atMs: number): number => {
    purgeWindows.run(atMs - RATE_WINDOW_RETENTION_MS);
    const row = hit.get(bucket, windowStart);
    if (row === undefined) throw new Error('rate-limit counter was not returned');
    return row.count;
  });
  return {
    hitRateLimit: (bucket, windowStart, at) =>
      hitOnce.immediate(bucket, toMillis(windowStart), toMillis(at)),
    close() {
      if (db.open) db.close();
    },
  };
}
