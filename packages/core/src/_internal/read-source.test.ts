import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { disarm } from '../disarm.ts';
import type { DisarmSource } from '../disarm.ts';

/** What a caller in plain JavaScript can pass, past the types. */
function untyped(source: unknown): DisarmSource {
  return source as DisarmSource;
}

describe('disarm() sources that cannot be read', () => {
  it('throws a clear TypeError for a source with no content', async () => {
    await expect(disarm(untyped({ fileName: 'a.png' }))).rejects.toThrow(
      new TypeError('source needs its content: one of bytes, path or stream'),
    );
  });

  it('refuses a string as bytes with a TypeError', async () => {
    await expect(disarm(untyped({ fileName: 'a.png', bytes: '\x89PNG' }))).rejects.toThrow(
      new TypeError('source.bytes must be a Uint8Array (or Buffer), not string'),
    );
  });

  it('reports a missing path precisely (a TypeError carrying the ENOENT), not ERR_INTERNAL', async () => {
    const path = join(await mkdtemp(join(tmpdir(), 'disarm-source-')), 'missing.png');
    const failure = await disarm({ fileName: 'missing.png', path }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as TypeError).message).toBe(`source.path: no such file: ${path}`);
    expect(((failure as TypeError).cause as NodeJS.ErrnoException).code).toBe('ENOENT');
  });
});
