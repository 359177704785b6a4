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
