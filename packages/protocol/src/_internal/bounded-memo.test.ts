import { describe, expect, it } from 'vitest';

import { boundedMemo } from './bounded-memo.ts';

describe('boundedMemo', () => {
  it('computes once per input, keeps at most `capacity`, and drops the least recently used', async () => {
    const calls: string[] = [];
    const memo = boundedMemo(2, (input) => {
      calls.push(input);
      return Promise.resolve(input.toUpperCase());
    });
    expect(await memo('a')).toBe('A');
    expect(await memo('b')).toBe('B');
    expect(await memo('a')).toBe('A');
    // `b` is now the least recently used, so `c` evicts it.
    expect(await memo('c')).toBe('C');
    expect(await memo('a')).toBe('A');
    expect(await memo('b')).toBe('B');
    expect(calls).toEqual(['a', 'b', 'c', 'b']);
  });

  it('does not remember a failure', async () => {
    let fail = true;
    const memo = boundedMemo(4, (input) =>
      fail ? Promise.reject(new Error('boom')) : Promise.resolve(input),
    );
    await expect(memo('x')).rejects.toThrow('boom');
    fail = false;
    expect(await memo('x')).toBe('x');
  });

  it('throws TypeError on a capacity that is not a positive integer', () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) {
      expect(() => boundedMemo(capacity, (input) => Promise.resolve(input))).toThrow(TypeError);
    }
  });
});
