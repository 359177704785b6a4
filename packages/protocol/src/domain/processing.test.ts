import { describe, expect, it } from 'vitest';

import {
  lapsedLeaseOutcome,
  RETRY_BACKOFF_BASE_MS,
  RETRY_BACKOFF_FACTOR,
  RETRY_BACKOFF_MAX_MS,
  retryBackoffMs,
} from './processing.ts';
import type { DocumentRecord } from './types.ts';

describe('retryBackoffMs', () => {
  it('waits the base after the first lapse and grows by the factor with each further one', () => {
    expect(retryBackoffMs(1)).toBe(RETRY_BACKOFF_BASE_MS);
    expect(retryBackoffMs(2)).toBe(RETRY_BACKOFF_BASE_MS * RETRY_BACKOFF_FACTOR);
    expect(retryBackoffMs(3)).toBe(RETRY_BACKOFF_BASE_MS * RETRY_BACKOFF_FACTOR ** 2);
  });

  it('never waits longer than the cap, however many attempts lapsed', () => {
    expect(retryBackoffMs(6)).toBe(RETRY_BACKOFF_MAX_MS);
    expect(retryBackoffMs(1_000)).toBe(RETRY_BACKOFF_MAX_MS);
  });
});

describe('lapsedLeaseOutcome', () => {
  const at = new Date('2025-01-15T10:00:00.000Z');
  const lapsed = { status: 'processing', attempts: 2 } as DocumentRecord;

  it('retries before the last attempt, leasable once the back-off from `at` is over', () => {
    expect(lapsedLeaseOutcome(lapsed, 3, at)).toEqual({
      kind: 'retry',
      notBefore: new Date(at.getTime() + retryBackoffMs(2)),
    });
  });

  it('dead-letters the last attempt as failed internal_error', () => {
    expect(lapsedLeaseOutcome(lapsed, 2, at)).toMatchObject({
      kind: 'fail',
      result: { status: 'failed', reason: 'internal_error' },
    });
  });
});
