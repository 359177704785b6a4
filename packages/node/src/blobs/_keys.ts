import { join, relative, resolve, sep } from 'node:path';

/** Longest blob key accepted, in characters. */
export const MAX_KEY_CHARS = 512;
/** Most `/`-separated segments in a key. */
export const MAX_KEY_SEGMENTS = 8;
/**
 * One key segment: letters, digits, `_`, `-` and `.`, not starting with `.` — so `.`, `..` and
 * hidden names (the store's own temporary files) can never be named by a key.
 */
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

/** True when `key` is a key the local blob store accepts (see {@link keyToPath}). */
export function isBlobKey(key: unknown): key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_CHARS) return false;
  const segments = key.split('/');
  return segments.length <= MAX_KEY_SEGMENTS && segments.every((segment) => SEGMENT.test(segment));
}

/** @throws {TypeError} unless `key` is a blob key (see {@link isBlobKey}). */
export function assertBlobKey(key: unknown): asserts key is string {
  if (!isBlobKey(key)) {
    throw new TypeError(`invalid blob key ${JSON.stringify(String(key)).slice(0, 80)}`);
  }
}

/**
 * The file of `key` under `root`. Keys are made by the service (`output/<id>`,
 * `uploads/<org>/<id>`), never by a client, so anything else is a bug: a `TypeError`, not a
 * missing blob.
 * @throws {TypeError} for a key with other characters, empty or dot segments, or too long.
 */
export function keyToPath(root: string, key: unknown): string {
  assertBlobKey(key);
  const path = join(root, ...key.split('/'));
  // Belt and braces: the pattern already rules out every way out of `root`.
  const inside = relative(root, resolve(path));
  if (inside === '' || inside.startsWith('..') || inside.startsWith(sep)) {
    throw new TypeError('blob key escapes the store directory');
  }
  return path;
}
