import { StorageUnavailableError } from '@disarm/protocol';

/**
 * SQLite result codes (primary, with their extended forms such as `SQLITE_IOERR_WRITE`) that say
 * the database cannot do its work right now, not that the statement is wrong: the disk is full
 * (`SQLITE_FULL`, also a quota), the disk fails (`SQLITE_IOERR`), another process held the lock
 * past the busy timeout (`SQLITE_BUSY`), the file cannot be opened or written (`SQLITE_CANTOPEN`,
 * `SQLITE_READONLY`: a file system remounted read-only after errors). SQLite rolls back the
 * statement or transaction that met them (https://www.sqlite.org/rescode.html), so nothing of
 * the operation was applied and the same request may run again once the cause is gone.
 */
const UNAVAILABLE_CODE = /^SQLITE_(?:FULL|IOERR|BUSY|CANTOPEN|READONLY)(?:_[A-Z]+)?$/;

/**
 * `error` as the store port throws it: {@link StorageUnavailableError} when SQLite could not do
 * its work right now, the error itself otherwise.
 */
export function toStoreError(error: unknown): Error {
  // Opening the counters file on first use wraps SQLite's error (`cannotOpen`) as its cause.
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: unknown };
  const causeCode = (cause as { code?: unknown } | null | undefined)?.code;
  const found = typeof code === 'string' ? code : causeCode;
  if (typeof found === 'string' && UNAVAILABLE_CODE.test(found)) {
    return new StorageUnavailableError('state-store', found, { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}
