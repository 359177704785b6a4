import { describe, expect, it } from 'vitest';

import { DecodeGate, forEachLimited } from './concurrency.ts';

const tick = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

describe('forEachLimited', () => {
  it('runs every item with never more than the limit at once', async () => {
    let running = 0;
    let most = 0;
    const done: number[] = [];
    await forEachLimited([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      running += 1;
      most = Math.max(most, running);
      await tick();
      running -= 1;
      done.push(item);
    });
    expect(most).toBe(3);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('fails with the first failure and starts nothing after it', async () => {
    const started: number[] = [];
    const run = forEachLimited([1, 2, 3, 4, 5, 6], 2, async (item) => {
      started.push(item);
      await tick();
      if (item === 2) throw new Error('two failed');
    });
    await expect(run).rejects.toThrow('two failed');
    await tick();
    await tick();
    expect(started).toEqual([1, 2, 3]);
  });
});

describe('DecodeGate', () => {
  it('lets decodes run side by side while their estimates fit, and queues the rest in order', async () => {
    const gate = new DecodeGate(100);
    const order: string[] = [];
    const releaseA = await gate.acquire(60);
    const releaseB = await gate.acquire(40);
    const c = gate.acquire(30).then((release) => {
      order.push('c');
      return release;
    });
    const d = gate.acquire(10).then((release) => {
      order.push('d');
      return release;
    });
    await tick();
    // Full: c waits, and d waits behind it although it would fit once anything is released.
    expect(order).toEqual([]);
    releaseB();
    await tick();
    expect(order).toEqual(['c', 'd']);
    releaseA();
    (await c)();
    (await d)();
    // An estimate past the ceiling (refused earlier by the handler) runs alone, never forever queued.
    const alone = await gate.acquire(500);
    const next = gate.acquire(1).then(() => order.push('next'));
    await tick();
    expect(order).toEqual(['c', 'd']);
    alone();
    alone();
    await next;
    expect(order).toEqual(['c', 'd', 'next']);
  });
});
