/** Longest blob key accepted, in characters. */
export const MAX_BLOB_KEY_CHARS = 512;
/** Most `/`-separated segments in a blob key. */
export const MAX_BLOB_KEY_SEGMENTS = 8;
/**
 * One key segment: letters, digits, `_`, `-` and `.`, not starting with `.` — so `.`, `..` and
 * hidden names (a folder store's temporary files) can never be named by a key.
 */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/**
 * True when `key` is a blob key every `BlobStore` accepts: at most
 * {@link MAX_BLOB_KEY_CHARS} characters in at most {@link MAX_BLOB_KEY_SEGMENTS} `/`-separated
 * segments of letters, digits, `_`, `-` and `.`, none empty or starting with `.`. Keys are made by
 * the service (`intake/<id>`, `output/<id>`, `uploads/<id>`), never by a client.
 */
export function isBlobKey(key: unknown): key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_BLOB_KEY_CHARS) return false;
  const segments = key.split('/');
  return (
    segments.length <= MAX_BLOB_KEY_SEGMENTS && segments.every((segment) => SEGMENT.test(segment))
  );
}

/**
 * Guard of every `BlobStore` method: a key outside the grammar is a bug in the caller.
 * @throws {TypeError} unless `key` is a blob key (see {@link isBlobKey}).
 */
export function assertBlobKey(key: unknown): asserts key is string {
  if (!isBlobKey(key)) {
    throw new TypeError(`invalid blob key ${JSON.stringify(String(key)).slice(0, 80)}`);
  }
}

/**
 * Guard of `BlobStore.list`: `prefix` is a key prefix ending in `/` (`intake/`, `a/b/`), whose
 * segments follow the key grammar.
 * @throws {TypeError} otherwise.
 */
export function assertBlobKeyPrefix(prefix: unknown): asserts prefix is string {
  if (
    typeof prefix !== 'string' ||
    !prefix.endsWith('/') ||
    !isBlobKey(prefix.slice(0, -1)) ||
    prefix.split('/').length > MAX_BLOB_KEY_SEGMENTS
  ) {
    throw new TypeError(
      `invalid blob key prefix ${JSON.stringify(String(prefix)).slice(0, 80)}: segments ending in /`,
    );
  }
}

/** Longest `startAfter` of a listing: S3's longest object key, in characters. */
const MAX_LIST_CURSOR_CHARS = 1024;

/**
 * Guard of `BlobStore.list`'s options: a valid `modifiedBefore`, a whole `limit` from 1 to
 * `maxLimit`, and a `startAfter` (when given) under `prefix`: a key, or whatever name a bucket
 * listed last (a listing steps over names that are not keys, but continues after them).
 * @throws {TypeError} otherwise.
 */
export function assertBlobListOptions(
  prefix: string,
  options: {
    readonly modifiedBefore: Date;
    readonly limit: number;
    readonly startAfter?: string | undefined;
  },
  maxLimit: number,
): void {
  if (!(options.modifiedBefore instanceof Date) || Number.isNaN(options.modifiedBefore.getTime())) {
    throw new TypeError('modifiedBefore must be a valid Date');
  }
  if (!Number.isSafeInteger(options.limit) || options.limit < 1 || options.limit > maxLimit) {
    throw new TypeError(`limit must be an integer from 1 to ${maxLimit}, got ${options.limit}`);
  }
  const { startAfter } = options;
  if (
    startAfter !== undefined &&
    (typeof startAfter !== 'string' ||
      !startAfter.startsWith(prefix) ||
      startAfter.length > MAX_LIST_CURSOR_CHARS)
  ) {
    throw new TypeError('startAfter must be a name under the prefix');
  }
}
