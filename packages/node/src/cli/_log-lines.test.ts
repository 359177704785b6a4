import { setImmediate as nextTurn } from 'node:timers/promises';

import { describe, expect, it } from 'vitest';

import { batchLogLines } from './_log-lines.ts';

describe('batchLogLines()', () => {
  it('writes the lines of one turn together, in order, at the end of the turn', async () => {
    const writes: string[] = [];
    const lines = batchLogLines({ write: (text: string) => writes.push(text) });
    lines.write('a\n');
    lines.write('b\n');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual(['a\nb\n']);
    lines.write('c\n');
    await nextTurn();
    expect(writes).toEqual(['a\nb\n', 'c\n']);
  });

  it('writes what is waiting at once on flush(), and nothing twice', async () => {
    const writes: string[] = [];
    const lines = batchLogLines({ write: (text: string) => writes.push(text) });
    lines.write('last words\n');
    lines.flush();
    expect(writes).toEqual(['last words\n']);
    await nextTurn();
    expect(writes).toEqual(['last words\n']);
  });
});
