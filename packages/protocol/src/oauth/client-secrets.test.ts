import { describe, expect, it } from 'vitest';

import { cryptoRandom } from '../domain/ids.ts';
import {
  CLIENT_SECRET_PREFIX,
  constantTimeEqual,
  generateClientSecret,
  hashClientSecret,
  verifyClientSecret,
} from './client-secrets.ts';

describe('client secrets', () => {
  it('are a recognisable prefix and 43 random characters, stored as SHA-256 hex', async () => {
    const { secret, hash } = await generateClientSecret(cryptoRandom);
    expect(secret).toMatch(/^dsm_secret_[0-9a-z]{43}$/);
    expect(secret.startsWith(CLIENT_SECRET_PREFIX)).toBe(true);
    expect(hash).toBe(await hashClientSecret(secret));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('never repeat', async () => {
    const made = await Promise.all(
      Array.from({ length: 200 }, () => generateClientSecret(cryptoRandom)),
    );
    expect(new Set(made.map((item) => item.secret)).size).toBe(200);
  });

  it('match any live hash, and nothing when there is none', async () => {
    const a = await generateClientSecret(cryptoRandom);
    const b = await generateClientSecret(cryptoRandom);
    expect(await verifyClientSecret(a.secret, [a.hash])).toBe(true);
    expect(await verifyClientSecret(a.secret, [b.hash, a.hash])).toBe(true);
    expect(await verifyClientSecret(b.secret, [a.hash])).toBe(false);
    expect(await verifyClientSecret(a.secret, [])).toBe(false);
    // A hash is not a secret: presenting the stored hash does not authenticate.
    expect(await verifyClientSecret(a.hash, [a.hash])).toBe(false);
    expect(await verifyClientSecret('', ['0'.repeat(64)])).toBe(false);
  });

  it('compare strings of any length without throwing', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abd')).toBe(false);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', '')).toBe(true);
  });
});
