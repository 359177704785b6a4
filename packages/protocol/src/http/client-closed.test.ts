import { describe, expect, it } from 'vitest';

import { createDisarmApi } from '../api.ts';
import type { RequestSample } from '../config.ts';
import type { BlobStore, DocumentEvents, StateStore } from '../ports.ts';
import {
  CLIENT_DISCONNECT,
  ClientClosedRequestError,
  clientClosedStatus,
  clientDisconnectOf,
} from './client-closed.ts';

const refuse = (): never => {
  throw new Error('not used here');
};

/** The API over ports it never reaches: the tests only ask for a path no route matches. */
function apiObserved(): {
  fetch: (request: Request) => Promise<Response>;
  samples: RequestSample[];
  lines: { level: string; object: Record<string, unknown>; message: string | undefined }[];
} {
  const samples: RequestSample[] = [];
  const lines: { level: string; object: Record<string, unknown>; message: string | undefined }[] =
    [];
  const api = createDisarmApi(
    {
      store: {} as StateStore,
      blobs: {
        put: refuse,
        get: refuse,
        stat: refuse,
        delete: refuse,
        signedDownloadUrl: refuse,
        signedUploadUrl: refuse,
        list: refuse,
      } satisfies BlobStore,
      events: {
        queued: () => undefined,
        finished: () => undefined,
        waitForFinish: () => Promise.resolve(),
        waitForQueued: () => Promise.resolve(),
      } satisfies DocumentEvents,
      clock: { now: () => new Date('2026-01-01T00:00:00Z') },
      observer: { request: (sample) => samples.push(sample), accepted: () => undefined },
      logger: {
        info: (object, message) => lines.push({ level: 'info', object, message }),
        warn: (object, message) => lines.push({ level: 'warn', object, message }),
        error: (object, message) => lines.push({ level: 'error', object, message }),
      },
    },
    { publicBaseUrl: 'https://cdr.example.com' },
  );
  return { fetch: (request) => api.fetch(request), samples, lines };
}

function requestGone(reason: unknown): Request {
  const controller = new AbortController();
  controller.abort(reason);
  return new Request('https://cdr.example.com/no/such/route', { signal: controller.signal });
}

describe('clientDisconnectOf()', () => {
  it('reads how the client left from the signal, or from the adapter’s probe without one', () => {
    expect(clientDisconnectOf(new Request('https://x/'))).toBeUndefined();
    expect(clientDisconnectOf(requestGone(new ClientClosedRequestError('reset')))).toBe('reset');
    // An adapter that only aborts the signal: gone, no more said.
    expect(clientDisconnectOf(requestGone(new DOMException('gone', 'AbortError')))).toBe(
      'disconnected',
    );
    const probed = new Request('https://x/');
    const connection: { reason?: unknown } = {};
    Object.defineProperty(probed, CLIENT_DISCONNECT, { value: () => connection.reason });
    expect(clientDisconnectOf(probed)).toBeUndefined();
    connection.reason = new ClientClosedRequestError('bad_framing');
    expect(clientDisconnectOf(probed)).toBe('bad_framing');
  });

  it('is named AbortError, as an aborted fetch, and counts as 499 unless the request timed out', () => {
    expect(new ClientClosedRequestError('closed_mid_body')).toMatchObject({ name: 'AbortError' });
    expect(clientClosedStatus('closed_mid_body')).toBe(499);
    expect(clientClosedStatus('reset')).toBe(499);
    expect(clientClosedStatus('timed_out')).toBe(408);
  });
});

describe('the API for a client that left', () => {
  it('records 499 with how it left, logged at info, never as a failure', async () => {
    const { fetch, samples, lines } = apiObserved();
    const response = await fetch(requestGone(new ClientClosedRequestError('reset')));
    expect(response.status).toBe(499);
    expect(response.headers.get('X-Request-Id')).toMatch(/^req_/);
    expect(samples).toMatchObject([{ status: 499 }]);
    expect(lines).toMatchObject([
      {
        level: 'info',
        message: 'client closed the request',
        object: { disconnect: 'reset', path: '/no/such/route' },
      },
    ]);
  });

  it('records node’s request timeout as 408', async () => {
    const { fetch, samples } = apiObserved();
    expect((await fetch(requestGone(new ClientClosedRequestError('timed_out')))).status).toBe(408);
    expect(samples).toMatchObject([{ status: 408 }]);
  });
});
