import { StorageUnavailableError } from '@disarm/protocol';
import type { Logger } from '@disarm/protocol';
import { describe, expect, it } from 'vitest';

import { createStorageWatch } from './_storage-watch.ts';

function recordingLogger(): Logger & { lines: { level: string; msg: string | undefined }[] } {
  const lines: { level: string; msg: string | undefined; [key: string]: unknown }[] = [];
  const at =
    (level: string) =>
    (object: Record<string, unknown>, msg?: string): void => {
      lines.push({ ...object, level, msg });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A store whose operations fail while `down` says so, as a database or a full disk does. */
function flakyStore(storage: 'state-store' | 'blob-store') {
  const state = { downWrites: false, downReads: false };
  const fail = (): Promise<never> =>
    Promise.reject(
      new StorageUnavailableError(storage, storage === 'state-store' ? 'ECONNREFUSED' : 'ENOSPC'),
    );
  return {
    state,
    store: {
      read: (): Promise<string> => (state.downReads ? fail() : Promise.resolve('read')),
      write: (): Promise<string> => (state.downWrites ? fail() : Promise.resolve('written')),
      broken: (): Promise<never> => Promise.reject(new Error('a bug, not an outage')),
      pathOf: (key: string): string => `/blobs/${key}`,
      directory: '/blobs',
    },
  };
}

describe('createStorageWatch()', () => {
  it('logs one error when a storage goes and one info line when it is back, however many calls fail between', async () => {
    const logger = recordingLogger();
    let now = 1_000;
    const watch = createStorageWatch({ logger, now: () => now });
    const { state, store } = flakyStore('state-store');
    const watched = watch.watch('state-store', store);

    expect(await watched.read()).toBe('read');
    state.downReads = true;
    state.downWrites = true;
    for (let call = 0; call < 5; call += 1) {
      await expect(watched.read()).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(watched.write()).rejects.toBeInstanceOf(StorageUnavailableError);
    }
    expect(watch.state('state-store')).toEqual({
      available: false,
      since: new Date(1_000),
      reason: 'ECONNREFUSED',
    });
    expect(watch.state('blob-store').available).toBe(true);
    now = 31_000;
    state.downReads = false;
    state.downWrites = false;
    expect(await watched.read()).toBe('read');
    expect(await watched.write()).toBe('written');
    expect(watch.state('state-store')).toEqual({ available: true, since: null, reason: null });
    expect(logger.lines).toEqual([
      expect.objectContaining({
        level: 'error',
        msg: 'database unreachable',
        reason: 'ECONNREFUSED',
        operation: 'read',
      }),
      expect.objectContaining({ level: 'info', msg: 'database back', downSeconds: 30 }),
    ]);
  });

  it('takes only a call that had failed as proof of return: a full disk still reads', async () => {
    const logger = recordingLogger();
    const watch = createStorageWatch({ logger });
    const { state, store } = flakyStore('blob-store');
    const watched = watch.watch('blob-store', store);

    state.downWrites = true;
    await expect(watched.write()).rejects.toThrow('the blob store is unavailable: ENOSPC');
    expect(await watched.read()).toBe('read');
    expect(watch.state('blob-store').available).toBe(false);
    state.downWrites = false;
    expect(await watched.write()).toBe('written');
    expect(watch.state('blob-store').available).toBe(true);
    expect(logger.lines.map((line) => line.msg)).toEqual([
      'blob storage unavailable',
      'blob storage back',
    ]);
  });

  it('passes other errors, plain values and synchronous methods through untouched', async () => {
    const logger = recordingLogger();
    const watch = createStorageWatch({ logger });
    const watched = watch.watch('blob-store', flakyStore('blob-store').store);
    await expect(watched.broken()).rejects.toThrow('a bug, not an outage');
    expect(watched.pathOf('output/doc_1')).toBe('/blobs/output/doc_1');
    expect(watched.directory).toBe('/blobs');
    expect(watch.state('blob-store').available).toBe(true);
    expect(logger.lines).toEqual([]);
  });
});
