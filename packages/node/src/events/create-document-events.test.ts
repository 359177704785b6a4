import { describe, expect, it } from 'vitest';

import { createDocumentEvents } from './create-document-events.ts';

/** Whether `promise` has settled by the time queued microtasks ran. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('createDocumentEvents()', () => {
  it('wakes the waiters of one document when it finishes, and only them', async () => {
    const events = createDocumentEvents();
    const signal = new AbortController().signal;
    const first = events.waitForFinish('doc_1', signal);
    const second = events.waitForFinish('doc_1', signal);
    const other = events.waitForFinish('doc_2', signal);
    events.finished('doc_1');
    expect(await isSettled(first)).toBe(true);
    expect(await isSettled(second)).toBe(true);
    expect(await isSettled(other)).toBe(false);
    // A finish nobody waits for is simply dropped.
    events.finished('doc_3');
  });

  it('resolves a waiter when its signal aborts, before or during the wait', async () => {
    const events = createDocumentEvents();
    const controller = new AbortController();
    const waiting = events.waitForFinish('doc_1', controller.signal);
    const queued = events.waitForQueued(controller.signal);
    expect(await isSettled(waiting)).toBe(false);
    controller.abort();
    expect(await isSettled(waiting)).toBe(true);
    expect(await isSettled(queued)).toBe(true);
    expect(await isSettled(events.waitForQueued(controller.signal))).toBe(true);
    // The aborted waiters are gone: a later event does not reach them twice.
    events.finished('doc_1');
    events.queued('doc_1');
  });

  it('wakes every queue waiter on the next queued document', async () => {
    const events = createDocumentEvents();
    const signal = new AbortController().signal;
    const waiters = [events.waitForQueued(signal), events.waitForQueued(signal)];
    events.queued('doc_1');
    for (const waiter of waiters) expect(await isSettled(waiter)).toBe(true);
    const later = events.waitForQueued(signal);
    expect(await isSettled(later)).toBe(false);
    events.queued('doc_2');
    expect(await isSettled(later)).toBe(true);
  });
});
