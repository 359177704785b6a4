import { mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  LINK_SECRET_BYTES,
  loadLinkSecret,
  loadTokenSigningKek,
  TOKEN_SIGNING_KEK_BYTES,
} from './_secrets.ts';

describe('loadLinkSecret()', () => {
  it('makes a private secret once and reads the same one afterwards, also under concurrent starts', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'disarm-secret-'));
    const [first, second] = await Promise.all([loadLinkSecret(dataDir), loadLinkSecret(dataDir)]);
    expect(first).toHaveLength(LINK_SECRET_BYTES);
    expect(second).toEqual(first);
    expect(await loadLinkSecret(dataDir)).toEqual(first);
    const path = join(dataDir, 'secrets', 'link-signing.key');
    expect(new Uint8Array(await readFile(path))).toEqual(first);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('refuses a secret file that is too short', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'disarm-secret-'));
    await mkdir(join(dataDir, 'secrets'));
    await writeFile(join(dataDir, 'secrets', 'link-signing.key'), 'short');
    await expect(loadLinkSecret(dataDir)).rejects.toThrow(/5 bytes/);
  });
});

describe('loadTokenSigningKek()', () => {
  it('makes a private 32-byte key once, apart from the link secret', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'disarm-secret-'));
    const [first, second] = await Promise.all([
      loadTokenSigningKek(dataDir),
      loadTokenSigningKek(dataDir),
    ]);
    expect(first).toHaveLength(TOKEN_SIGNING_KEK_BYTES);
    expect(second).toEqual(first);
    expect(await loadLinkSecret(dataDir)).not.toEqual(first);
    const path = join(dataDir, 'secrets', 'token-signing.kek');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('refuses a key file of the wrong length', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'disarm-secret-'));
    await mkdir(join(dataDir, 'secrets'));
    await writeFile(join(dataDir, 'secrets', 'token-signing.kek'), new Uint8Array(33));
    await expect(loadTokenSigningKek(dataDir)).rejects.toThrow(/33 bytes/);
  });
});
