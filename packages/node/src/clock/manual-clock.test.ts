import { describe, expect, it } from 'vitest';

import { createManualClock } from './manual-clock.ts';
import { systemClock } from './system-clock.ts';

describe('createManualClock()', () => {
  it('stands still until advanced', () => {
    const clock = createManualClock(new Date('2030-01-01T00:00:00Z'));
    expect(clock.now().toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect(clock.advance(24 * 60 * 60 * 1000).toISOString()).toBe('2030-01-02T00:00:00.000Z');
    expect(clock.now().toISOString()).toBe('2030-01-02T00:00:00.000Z');
    expect(clock.advance(0).toISOString()).toBe('2030-01-02T00:00:00.000Z');
  });

  it('hands out copies, so a caller cannot move it by mutating a date', () => {
    const clock = createManualClock(new Date('2030-01-01T00:00:00Z'));
    clock.now().setFullYear(1999);
    expect(clock.now().getUTCFullYear()).toBe(2030);
  });

  it('never runs backwards', () => {
    const clock = createManualClock(new Date(0));
    expect(() => clock.advance(-1)).toThrow(TypeError);
    expect(() => clock.advance(0.5)).toThrow(TypeError);
    expect(() => createManualClock(new Date('not a date'))).toThrow(TypeError);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now().getTime();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
