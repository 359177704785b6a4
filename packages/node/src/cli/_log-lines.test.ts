import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';

import { describe, expect, it, vi } from 'vitest';

import { batchLogLines, withFallback } from './_log-lines.ts';

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

describe('withFallback()', () => {
  it('writes to stdout while it has a reader, then to stderr, from the line that failed on', async () => {
    const closed = await brokenPipe();
    const fallen: string[] = [];
    const output = withFallback(closed, {
      write: (text: string, callback?: (error?: Error | null) => void) => {
        fallen.push(text);
        callback?.(null);
      },
    });
    output.write('shutting down\n');
    output.write('stopped\n');
    await vi.waitFor(() => {
      expect(fallen).toEqual(['shutting down\n', 'stopped\n']);
    });
    closed.destroy();
  });

  it('gives stderr what a reader that died took with it unread, too', async () => {
    // A reader that never reads: the pipe takes the first line, then the reader dies with it.
    const reader = spawn('sleep', ['30'], { stdio: ['pipe', 'ignore', 'ignore'] });
    const fallen: string[] = [];
    const output = withFallback(reader.stdin, {
      write: (text: string, callback?: (error?: Error | null) => void) => {
        fallen.push(text);
        callback?.(null);
      },
    });
    output.write('shutting down\n');
    // Flushed into the pipe (its callback comes after the line's own).
    await new Promise<void>((resolve) => {
      reader.stdin.write('', () => {
        resolve();
      });
    });
    const exited = new Promise((resolve) => reader.once('exit', resolve));
    reader.kill('SIGKILL');
    await exited;
    output.write('stopped\n');
    await vi.waitFor(() => {
      expect(fallen).toEqual(['shutting down\n', 'stopped\n']);
    });
  });

  it('keeps writing to stdout while it is fine', () => {
    const written: string[] = [];
    const output = withFallback(
      { write: (text: string) => written.push(text) },
      {
        write: () => {
          throw new Error('not used');
        },
      },
    );
    output.write('a\n');
    expect(written).toEqual(['a\n']);
  });
});

/** The write end of a pipe whose reader has exited: every write fails with EPIPE. */
async function brokenPipe(): Promise<Writable> {
  const reader = spawn('true', { stdio: ['pipe', 'ignore', 'ignore'] });
  await new Promise((resolve) => reader.once('exit', resolve));
  return reader.stdin;
}
