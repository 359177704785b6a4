import type { DocumentEvents } from '@disarm/protocol';

/**
 * {@link DocumentEvents} inside one process: `disarm serve` runs the API, the dispatcher and the
 * sync waiters in the same process, so a notification is a function call. Nothing is kept for
 * an event nobody waits for; waiters also poll the store, so that costs latency, not results.
 *
 * @example
 * ```ts
 * const events = createDocumentEvents();
 * const done = events.waitForFinish('doc_1', AbortSignal.timeout(45_000));
 * events.finished('doc_1'); // `done` resolves
 * ```
 */
export function createDocumentEvents(): DocumentEvents {
  const finishWaiters = new Map<string, Set<() => void>>();
  const queuedWaiters = new Set<() => void>();

  /** Resolves when `register`'s wake-up is called or `signal` aborts; always unregisters. */
  function waitFor(signal: AbortSignal, register: (wake: () => void) => () => void): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let settled = false;
      const settle = (): void => {
        if (settled) return;
        settled = true;
        unregister();
        signal.removeEventListener('abort', settle);
        resolve();
      };
      const unregister = register(settle);
      signal.addEventListener('abort', settle, { once: true });
    });
  }

  return {
    queued() {
      for (const wake of [...queuedWaiters]) wake();
    },
    finished(documentId) {
      const waiters = finishWaiters.get(documentId);
      if (!waiters) return;
      for (const wake of [...waiters]) wake();
    },
    waitForFinish(documentId, signal) {
      return waitFor(signal, (wake) => {
        let waiters = finishWaiters.get(documentId);
        if (!waiters) {
          waiters = new Set();
          finishWaiters.set(documentId, waiters);
        }
        waiters.add(wake);
        return () => {
          waiters.delete(wake);
          if (waiters.size === 0) finishWaiters.delete(documentId);
        };
      });
    },
    waitForQueued(signal) {
      return waitFor(signal, (wake) => {
        queuedWaiters.add(wake);
        return () => {
          queuedWaiters.delete(wake);
        };
      });
    },
  };
}
