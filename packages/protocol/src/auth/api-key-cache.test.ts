import { describe, expect, it } from 'vitest';

import type { ApiKeyRecord } from '../domain/types.ts';
import { createApiKeyCache } from './api-key-cache.ts';

const RECORD: ApiKeyRecord = {
  id: 'key_1',
  organisationId: 'org_1',
  name: 'ci',
  displayPrefix: 'dsm_live_abc',
  hash: 'h1',
  createdAt: new Date('2026-01-01T00:00:00Z'),
  revokedAt: null,
};

describe('createApiKeyCache()', () => {
  it('answers a key for its time-to-live, then sends the caller back to the store', () => {
    let now = 0;
    const cache = createApiKeyCache(30_000, 8, () => now);
    cache.set('h1', RECORD);
    now = 29_999;
    expect(cache.get('h1')).toBe(RECORD);
    now = 30_000;
    expect(cache.get('h1')).toBeUndefined();
  });

  it('forgets everything on clear() and keeps at most its capacity', () => {
    const cache = createApiKeyCache(30_000, 2, () => 0);
    cache.set('h1', RECORD);
    cache.set('h2', RECORD);
    cache.set('h3', RECORD);
    expect([cache.get('h1'), cache.get('h2'), cache.get('h3')]).toEqual([
      undefined,
      RECORD,
      RECORD,
    ]);
    cache.clear();
    expect(cache.get('h3')).toBeUndefined();
  });
});
