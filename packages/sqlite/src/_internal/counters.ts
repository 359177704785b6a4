import type { StateStore } from '@disarm/protocol';
import Database from 'better-sqlite3';

import { toMillis } from './rows.ts';

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

/** Pause between attempts of {@link untilUnlocked}. */
const LOCKED_RETRY_MS = 5;

/** Runs `step`, again while SQLite says the file is busy or locked, for up to `timeoutMs`. */
function untilUnlocked(timeoutMs: number, step: () => unknown): void {
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      step();
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const busy = code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
      if (!busy || Date.now() >= deadline) throw error;
      // A synchronous pause: opening is synchronous, and this happens once per process.
      Atomics.wait(pause, 0, 0, LOCKED_RETRY_MS);
    }
  }
}

/** The rate-limit counters, in their own database file and connection. */
export interface Counters {
  readonly hitRateLimit: StateStore['hitRateLimit'];
  /** Commits the hits still waiting for their batch, then closes the file. */
  close(): void;
}

/** A hit waiting for the next batch commit. */
interface PendingHit {
  readonly bucket: string;
  readonly windowStart: number;
  readonly atMs: number;
  readonly resolve: (count: number) => void;
  readonly reject: (error: Error) => void;
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
 *
 * Hits are group-committed: those that arrive in one turn of the event loop (every request the
 * server read from its sockets in that turn) are counted in one transaction at the end of the
 * turn, each given its own place in the window's count (a window at 40 that takes three hits
 * answers 41, 42, 43 in arrival order). Nothing is counted twice or skipped, and a process never
 * answers from a count another process could not see; a busy server commits once per turn
 * instead of once per request.
 */
export function openCounters(path: string, busyTimeoutMs: number): Counters {
  const db = new Database(path, { timeout: busyTimeoutMs });
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    // Several processes may make the file at the same moment (their first hits): turning a new
    // file to WAL needs it alone, and SQLite answers "locked" at once rather than waiting.
    untilUnlocked(busyTimeoutMs, () => db.pragma('journal_mode = WAL'));
    db.pragma('synchronous = NORMAL');
    db.transaction(() => db.exec(COUNTERS_SCHEMA)).immediate();
  } catch (error) {
    db.close();
    throw error;
  }
  const add = db.prepare<[string, number, number], { count: number }>(
    `INSERT INTO rate_limits (bucket, window_start, count) VALUES (?, ?, ?)
     ON CONFLICT (bucket, window_start) DO UPDATE SET count = count + excluded.count
     RETURNING count`,
  );
  const purgeWindows = db.prepare<[number]>('DELETE FROM rate_limits WHERE window_start < ?');
  /** Counts `hits` in one transaction; returns each hit's count, in order. */
  const commit = db.transaction((hits: readonly PendingHit[]): number[] => {
    let latestMs = -Infinity;
    const windows = new Map<string, { bucket: string; windowStart: number; hits: number[] }>();
    hits.forEach((hit, index) => {
      latestMs = Math.max(latestMs, hit.atMs);
      const key = `${hit.windowStart}\u0000${hit.bucket}`;
      const window = windows.get(key);
      if (window === undefined) {
        windows.set(key, { bucket: hit.bucket, windowStart: hit.windowStart, hits: [index] });
      } else {
        window.hits.push(index);
      }
    });
    purgeWindows.run(latestMs - RATE_WINDOW_RETENTION_MS);
    const counts = new Array<number>(hits.length);
    for (const window of windows.values()) {
      const row = add.get(window.bucket, window.windowStart, window.hits.length);
      if (row === undefined) throw new Error('rate-limit counter was not returned');
      const first = row.count - window.hits.length + 1;
      window.hits.forEach((index, position) => {
        counts[index] = first + position;
      });
    }
    return counts;
  });

  let pending: PendingHit[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch = pending;
    pending = [];
    if (batch.length === 0) return;
    let counts: number[];
    try {
      counts = commit.immediate(batch);
    } catch (error) {
      const failure = error instanceof Error ? error : new Error(String(error));
      for (const hit of batch) hit.reject(failure);
      return;
    }
    batch.forEach((hit, index) => {
      hit.resolve(counts[index] ?? 0);
    });
  };

  return {
    hitRateLimit(bucket, windowStart, at) {
      // A closed store stays closed: no hit waits for a commit that cannot come.
      if (!db.open) return Promise.reject(new TypeError('The database connection is not open'));
      let windowStartMs: number;
      let atMs: number;
      try {
        windowStartMs = toMillis(windowStart);
        atMs = toMillis(at);
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      return new Promise<number>((resolve, reject) => {
        pending.push({ bucket, windowStart: windowStartMs, atMs, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    close() {
      if (db.open) {
        flush();
        db.close();
      }
    },
  };
}
