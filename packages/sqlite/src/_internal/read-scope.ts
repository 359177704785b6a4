import type { Database } from 'better-sqlite3';

/** How the store's operations share read transactions; see {@link createReadScope}. */
export interface ReadScope {
  /** Wraps a read-only operation: it joins the read transaction of the current turn. */
  reading<A extends unknown[], R>(work: (...args: A) => R): (...args: A) => R;
  /** Wraps any other operation: the current turn's read transaction ends before it runs. */
  writing<A extends unknown[], R>(work: (...args: A) => R): (...args: A) => R;
  /** Ends the current read transaction, if any (before closing the connection). */
  end(): void;
}

/**
 * Reads made in one turn of the event loop share one read transaction, begun at the first read
 * and committed at the end of the turn (or before the next write on this connection).
 *
 * Why: in WAL mode every statement outside a transaction begins and ends a read transaction of
 * its own, taking and releasing a lock in the shared-memory index: about two thirds of what a
 * point read costs. A busy server answers many requests per turn; they now pay for one. What a
 * read sees is unchanged in kind: the committed state as of the start of the turn (every
 * process's commits up to then, and this connection's own), one consistent snapshot for the
 * turn. A write always starts from a fresh transaction (`BEGIN IMMEDIATE` as before), never by
 * upgrading the shared snapshot, so no write is refused with a stale-snapshot error.
 */
export function createReadScope(db: Database): ReadScope {
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  let open = false;

  const end = (): void => {
    if (!open) return;
    open = false;
    // A statement may have ended the transaction already (an error inside a read rolls it back).
    if (db.open && db.inTransaction) commit.run();
  };
  const enter = (): void => {
    if (open || db.inTransaction || !db.open) return;
    begin.run();
    open = true;
    setImmediate(end);
  };

  return {
    reading(work) {
      return (...args) => {
        enter();
        return work(...args);
      };
    },
    writing(work) {
      return (...args) => {
        end();
        return work(...args);
      };
    },
    end,
  };
}
