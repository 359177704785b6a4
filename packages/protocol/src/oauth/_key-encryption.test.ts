import { describe, expect, it } from 'vitest';

import { cryptoRandom } from '../domain/ids.ts';
import { createKeyEncryption } from './_key-encryption.ts';

const key = (): Uint8Array => cryptoRandom.bytes(32);

describe('key encryption (AES-256-GCM)', () => {
  it('opens what it sealed, with a fresh IV each time', async () => {
    const sealing = createKeyEncryption(key(), cryptoRandom);
    const a = await sealing.seal('{"d":"secret"}', 'kid-1');
    const b = await sealing.seal('{"d":"secret"}', 'kid-1');
    expect(a).not.toBe(b);
    expect(a).not.toContain('secret');
    expect(await sealing.open(a, 'kid-1')).toBe('{"d":"secret"}');
  });

  it('refuses another kid, another key, and any altered byte', async () => {
    const kek = key();
    const sealing = createKeyEncryption(kek, cryptoRandom);
    const sealed = await sealing.seal('plaintext', 'kid-1');
    await expect(sealing.open(sealed, 'kid-2')).rejects.toThrow();
    await expect(createKeyEncryption(key(), cryptoRandom).open(sealed, 'kid-1')).rejects.toThrow(
      /another key-encryption key/,
    );
    const parts = sealed.split('.');
    const ciphertext = parts[3] ?? '';
    const flipped = `${ciphertext.startsWith('A') ? 'B' : 'A'}${ciphertext.slice(1)}`;
    await expect(
      sealing.open([parts[0], parts[1], parts[2], flipped].join('.'), 'kid-1'),
    ).rejects.toThrow();
    await expect(sealing.open('v2.x.y.z', 'kid-1')).rejects.toThrow(/format/);
    await expect(sealing.open('', 'kid-1')).rejects.toThrow(/format/);
  });
});
