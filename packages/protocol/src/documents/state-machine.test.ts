import { describe, expect, it } from 'vitest';

import type { DocumentStatus } from '../domain/types.ts';
import { assertTransition, canTransition, isInFlight, isTerminal } from './state-machine.ts';

const ALL: DocumentStatus[] = ['pending', 'processing', 'completed', 'rejected', 'failed'];

describe('the document state machine', () => {
  it('lets terminal statuses never change', () => {
    for (const from of ['completed', 'rejected', 'failed'] as const) {
      for (const to of ALL) expect(canTransition(from, to)).toBe(false);
      expect(isTerminal(from)).toBe(true);
    }
  });

  it('ends processing in any terminal status, and requeues a lapsed lease', () => {
    for (const to of ['completed', 'rejected', 'failed', 'pending'] as const) {
      expect(canTransition('processing', to)).toBe(true);
    }
    expect(canTransition('pending', 'processing')).toBe(true);
    expect(canTransition('pending', 'completed')).toBe(false);
    expect(isInFlight('pending') && isInFlight('processing')).toBe(true);
  });

  it('throws on an illegal transition', () => {
    expect(() => {
      assertTransition('completed', 'pending');
    }).toThrow(/illegal/);
  });
});
