import { describe, expect, it } from 'vitest';

import { cryptoRandom } from '../domain/ids.ts';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-keys.ts';

describe('API keys', () => {
  it('are a fixed prefix with a live marker and a 43-character body', async () => {
    const { key, hash, displayPrefix } = await generateApiKey(cryptoRandom);
    expect(key).toMatch(/^dsm_live_[0-9a-z]{43}$/);
    expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(hash).toBe(await hashApiKey(key));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(key.startsWith(displayPrefix)).toBe(true);
    expect(displayPrefix.length).toBeLessThan(key.length / 2);
  });

  it('carry a checksum that rejects typos and look-alikes', async () => {
    const { key } = await generateApiKey(cryptoRandom);
    expect(isWellFormedApiKey(key)).toBe(true);
    const last = key.at(-1) === 'a' ? 'b' : 'a';
    expect(isWellFormedApiKey(key.slice(0, -1) + last)).toBe(false);
    const flipped = key.slice(0, 12) + (key[12] === 'x' ? 'y' : 'x') + key.slice(13);
    expect(isWellFormedApiKey(flipped)).toBe(false);
    expect(isWellFormedApiKey(`${key}0`)).toBe(false);
    expect(isWellFormedApiKey(key.replace('dsm_live_', 'dsm_test_'))).toBe(false);
  });

  it('never repeat', async () => {
    const keys = await Promise.all(Array.from({ length: 200 }, () => generateApiKey(cryptoRandom)));
    expect(new Set(keys.map((k) => k.key)).size).toBe(200);
  });
});
