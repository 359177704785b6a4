import { join, relative, resolve, sep } from 'node:path';

import { assertBlobKey } from '@disarm/protocol';

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
