/**
 * The executor turns what cannot come back as a verdict into one, and carries on with a fresh
 * process: a native abort is `crash`, no answer within the budget is `hang` (the process is
 * killed), and peak RSS past the bound is `memory`. Failpoints in the child make each happen on
 * purpose.
 */
import { afterAll, describe, expect, it } from 'vitest';

import { Executor, MAX_RSS_GROWTH_BYTES } from '../src/exec/executor.ts';

const executor = new Executor({ scope: 'engine', hangMs: 3_000, failpoints: true });
afterAll(async () => {
  await executor.close();
});

const job = (fileName: string): { kind: 'engine'; fileName: string; bytes: Uint8Array } => ({
  kind: 'engine',
  fileName,
  bytes: new Uint8Array([1]),
});

describe('the fuzz executor', () => {
  it('runs a job and reports its verdict and the blocks it covered', async () => {
    const execution = await executor.run(job('notes.txt'));
    expect(execution.verdict).toEqual({ ok: true, outcome: 'rejected:unsupported_file_type' });
    expect(execution.newBlocks.length).toBeGreaterThan(0);
  });

  it('reports a native crash, then runs the next job in a new process', async () => {
    const starts = executor.starts;
    const crash = await executor.run(job('failpoint-crash'));
    expect(crash.verdict).toMatchObject({ ok: false, kind: 'crash' });
    expect(crash.verdict.ok ? '' : crash.verdict.message).toMatch(/SIGABRT/);
    expect((await executor.run(job('a.png'))).verdict).toMatchObject({ ok: true });
    expect(executor.starts).toBe(starts + 1);
  });

  it('kills a process that does not answer within the budget and reports a hang', async () => {
    const hang = await executor.run(job('failpoint-hang'));
    expect(hang.verdict).toMatchObject({ ok: false, kind: 'hang' });
    expect((await executor.run(job('a.png'))).verdict).toMatchObject({ ok: true });
  });

  it('reports an input that raises the peak RSS past the bound', async () => {
    const memory = await executor.run(job('failpoint-memory'));
    expect(memory.verdict).toMatchObject({ ok: false, kind: 'memory' });
    expect(memory.rssGrowthBytes).toBeGreaterThan(MAX_RSS_GROWTH_BYTES);
    expect((await executor.run(job('a.png'))).verdict).toMatchObject({ ok: true });
  });
});
