import { Agent, request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { bufferedResponse, ClientClosedRequestError } from '@disarm/protocol';
import { afterEach, describe, expect, it } from 'vitest';

import { listen } from '../src/index.ts';
import type { FetchHandler, RunningServer } from '../src/index.ts';

const MIB_BYTES = 1024 * 1024;

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

let server: RunningServer | undefined;
let errors: unknown[] = [];

afterEach(async () => {
  await server?.close({ graceMs: 100 });
  server = undefined;
  errors = [];
});

async function serve(handler: FetchHandler, lightRequests = false): Promise<RunningServer> {
  server = await listen(handler, {
    port: 0,
    lightRequests,
    onError: (error) => {
      errors.push(error);
    },
  });
  return server;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly rawHeaders: string[];
  readonly body: string;
}

/** One request with node's own client, so the test controls every byte. */
function call(
  url: string,
  options: {
    method?: string;
    path?: string;
    headers?: Record<string, string | string[]>;
    body?: string | Buffer;
    agent?: Agent;
  } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: options.headers ?? {},
        ...(options.agent ? { agent: options.agent } : {}),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            body,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Resolves with whatever the next call of the returned callback gets. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

describe('toRequest() through listen()', () => {
  it('builds the URL on the base origin, never on the Host header or the request target', async () => {
    const seen: string[] = [];
    const { url } = await serve((request) => {
      seen.push(request.url);
      return new Response('ok');
    });
    await call(url, { path: '/v1/x?y=1', headers: { Host: 'evil.example' } });
    await call(url, { path: '//evil.example/path' });
    await call(url, { path: 'http://evil.example/abs?q=2' });
    expect(seen).toEqual([`${url}/v1/x?y=1`, `${url}//evil.example/path`, `${url}/abs?q=2`]);
  });

  it('copies repeated request headers and gives GET no body, POST a streaming one', async () => {
    const seen: { multi: string | null; hasBody: boolean; text: string; method: string }[] = [];
    const { url } = await serve(async (request) => {
      seen.push({
        multi: request.headers.get('x-multi'),
        hasBody: request.body !== null,
        text: await request.text(),
        method: request.method,
      });
      return new Response(null, { status: 204 });
    });
    await call(url, { headers: { 'X-Multi': ['a', 'b'] } });
    await call(url, { method: 'POST', body: 'payload' });
    await call(url, {
      method: 'POST',
      headers: { 'Transfer-Encoding': 'chunked' },
      body: 'chunked',
    });
    await call(url, { method: 'POST', headers: { 'Content-Length': '0' } });
    expect(seen).toEqual([
      { multi: 'a, b', hasBody: false, text: '', method: 'GET' },
      { multi: null, hasBody: true, text: 'payload', method: 'POST' },
      { multi: null, hasBody: true, text: 'chunked', method: 'POST' },
      { multi: null, hasBody: false, text: '', method: 'POST' },
    ]);
  });

  it('streams a 50 MB upload with back-pressure: the socket runs at most a little ahead', async () => {
    const totalBytes = 50 * MIB_BYTES;
    let socket: Socket | undefined;
    let consumed = 0;
    let maxAhead = 0;
    let maxGrowth = 0;
    collectGarbage();
    const baseline = process.memoryUsage().arrayBuffers;
    const running = await serve(async (request) => {
      const reader = request.body!.getReader();
      let nextSample = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        consumed += value.byteLength;
        maxAhead = Math.max(maxAhead, (socket?.bytesRead ?? 0) - consumed);
        if (consumed >= nextSample) {
          nextSample += 5 * MIB_BYTES;
          collectGarbage();
          maxGrowth = Math.max(maxGrowth, process.memoryUsage().arrayBuffers - baseline);
        }
        // A consumer slower than the client: without back-pressure the server would buffer.
        await new Promise((resolve) => setImmediate(resolve));
      }
      return Response.json({ consumed });
    });
    running.server.once('connection', (connection: Socket) => (socket = connection));

    const answer = await new Promise<Answer>((resolve, reject) => {
      const target = new URL(running.url);
      const req = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: '/upload',
          headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': totalBytes },
        },
        (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => (body += chunk.toString()));
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: [], body });
          });
        },
      );
      req.on('error', reject);
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const write = (): void => {
        while (sent < totalBytes) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ consumed: totalBytes });
    // Socket buffers plus the stream's 64 KiB read-ahead, never the body.
    expect(maxAhead).toBeLessThan(4 * MIB_BYTES);
    expect(maxGrowth).toBeLessThan(16 * MIB_BYTES);
  });

  it('aborts request.signal when the client disconnects while the handler works', async () => {
    const started = deferred<undefined>();
    const aborted = deferred<unknown>();
    const { url } = await serve(async (request) => {
      started.resolve(undefined);
      await new Promise((resolve) => {
        request.signal.addEventListener('abort', resolve, { once: true });
      });
      aborted.resolve(request.signal.reason);
      return new Response('too late');
    });
    const target = new URL(url);
    const req = httpRequest({ host: target.hostname, port: target.port, path: '/wait' });
    req.on('error', () => undefined);
    req.end();
    await started.promise;
    req.destroy();
    expect(await aborted.promise).toMatchObject({ name: 'AbortError' });
    expect(errors).toEqual([]);
  });

  it('gives a bodiless request whose signal is first asked for after the disconnect an aborted signal, and its clones follow it', async () => {
    const started = deferred<undefined>();
    const disconnected = deferred<undefined>();
    const seen = deferred<{ aborted: boolean; clone: boolean; isRequest: boolean }>();
    const { url } = await serve(async (request) => {
      started.resolve(undefined);
      await disconnected.promise;
      // Give node a turn to notice the closed socket before the signal is first made.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const clone = request.clone();
      seen.resolve({
        aborted: request.signal.aborted,
        clone: clone.signal.aborted,
        isRequest: request instanceof Request,
      });
      return new Response('too late');
    });
    const target = new URL(url);
    const req = httpRequest({ host: target.hostname, port: target.port, path: '/late' });
    req.on('error', () => undefined);
    req.end();
    await started.promise;
    req.destroy();
    disconnected.resolve(undefined);
    expect(await seen.promise).toEqual({ aborted: true, clone: true, isRequest: true });
  });

  it('with lightRequests, hands a bodiless request that reads like a platform one', async () => {
    const seen = deferred<Record<string, unknown>>();
    const { url } = await serve(async (request) => {
      const clone = request.clone();
      seen.resolve({
        isRequest: request instanceof Request,
        method: request.method,
        url: request.url,
        accept: request.headers.get('accept'),
        repeated: request.headers.get('x-twice'),
        body: request.body,
        text: await request.text(),
        cloneUrl: clone.url,
        cloneAccept: clone.headers.get('accept'),
        mode: request.mode,
        aborted: request.signal.aborted,
      });
      return new Response('ok');
    }, true);
    const got = await call(url, {
      path: '/v1/a/../b?x=1',
      headers: { Accept: 'application/json', 'X-Twice': ['1', '2'] },
    });
    expect(got.status).toBe(200);
    expect(await seen.promise).toEqual({
      isRequest: true,
      method: 'GET',
      url: `${url}/v1/b?x=1`,
      accept: 'application/json',
      repeated: '1, 2',
      body: null,
      text: '',
      cloneUrl: `${url}/v1/b?x=1`,
      cloneAccept: 'application/json',
      mode: 'cors',
      aborted: false,
    });
  });

  it('with lightRequests, aborts the signal of a bodiless request when the client goes away', async () => {
    const started = deferred<undefined>();
    const aborted = deferred<unknown>();
    const { url } = await serve(async (request) => {
      started.resolve(undefined);
      await new Promise((resolve) => {
        request.signal.addEventListener('abort', resolve, { once: true });
      });
      aborted.resolve(request.signal.reason);
      return new Response('too late');
    }, true);
    const target = new URL(url);
    const req = httpRequest({ host: target.hostname, port: target.port, path: '/wait' });
    req.on('error', () => undefined);
    req.end();
    await started.promise;
    req.destroy();
    expect(await aborted.promise).toMatchObject({ name: 'AbortError' });
  });

  it('errors the body stream when the client disconnects mid-upload', async () => {
    const failure = deferred<unknown>();
    const firstChunk = deferred<undefined>();
    let signalAtFailure: { aborted: boolean; reason: unknown } | undefined;
    const { url } = await serve(async (request) => {
      const reader = request.body!.getReader();
      try {
        for (;;) {
          const { done } = await reader.read();
          if (done) break;
          firstChunk.resolve(undefined);
        }
        failure.resolve('completed');
      } catch (error) {
        signalAtFailure = { aborted: request.signal.aborted, reason: request.signal.reason };
        failure.resolve(error);
      }
      return new Response('x');
    });
    const target = new URL(url);
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      method: 'PUT',
      headers: { 'Content-Length': String(10 * MIB_BYTES) },
    });
    req.on('error', () => undefined);
    req.write(Buffer.alloc(256 * 1024));
    await firstChunk.promise;
    req.destroy();
    // The failure says it was the client, and the signal had already aborted with it.
    const error = await failure.promise;
    expect(error).toBeInstanceOf(ClientClosedRequestError);
    expect(['closed_mid_body', 'reset']).toContain((error as ClientClosedRequestError).disconnect);
    expect(signalAtFailure).toEqual({ aborted: true, reason: error });
    expect(errors).toEqual([]);
  });

  it('tells a request cut off by the request timeout from a client that left', async () => {
    const failure = deferred<unknown>();
    server = await listen(
      async (request) => {
        try {
          await request.arrayBuffer();
          failure.resolve('completed');
        } catch (error) {
          failure.resolve(error);
        }
        return new Response('x');
      },
      { port: 0, requestTimeoutMs: 200 },
    );
    const target = new URL(server.url);
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      method: 'PUT',
      headers: { 'Content-Length': '1000' },
    });
    req.on('error', () => undefined);
    req.write(Buffer.alloc(10));
    const error = await failure.promise;
    req.destroy();
    expect(error).toBeInstanceOf(ClientClosedRequestError);
    expect((error as ClientClosedRequestError).disconnect).toBe('timed_out');
  });
});

describe('sendResponse() through listen()', () => {
  it('sends every Set-Cookie as its own header line', async () => {
    const { url } = await serve(() => {
      const headers = new Headers({ 'Content-Type': 'text/plain', 'X-Other': 'o' });
      headers.append('Set-Cookie', 'a=1; Path=/; HttpOnly');
      headers.append('Set-Cookie', 'b=2, with comma; Path=/');
      return new Response('cookies', { status: 201, headers });
    });
    const answer = await call(url);
    expect(answer.status).toBe(201);
    expect(answer.headers['set-cookie']).toEqual([
      'a=1; Path=/; HttpOnly',
      'b=2, with comma; Path=/',
    ]);
    expect(answer.headers['x-other']).toBe('o');
    expect(answer.body).toBe('cookies');
  });

  it('answers HEAD with the headers only and cancels the body unread', async () => {
    const cancelled = deferred<boolean>();
    const { url } = await serve(
      () =>
        new Response(
          new ReadableStream({
            pull(controller) {
              controller.enqueue(new TextEncoder().encode('body'));
            },
            cancel() {
              cancelled.resolve(true);
            },
          }),
          { headers: { 'Content-Length': '4', 'Content-Type': 'text/plain' } },
        ),
    );
    const answer = await call(url, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-length']).toBe('4');
    expect(answer.body).toBe('');
    expect(await cancelled.promise).toBe(true);
  });

  it('writes a buffered response in one piece with its Content-Length, and HEAD without it', async () => {
    const { url } = await serve(() =>
      bufferedResponse('{"ok":true}', {
        status: 201,
        headers: { 'Content-Type': 'application/json' },
      }),
    );
    const got = await call(url);
    expect(got).toMatchObject({
      status: 201,
      body: '{"ok":true}',
      headers: { 'content-type': 'application/json', 'content-length': '11' },
    });
    expect(got.headers['transfer-encoding']).toBeUndefined();
    const head = await call(url, { method: 'HEAD' });
    expect(head).toMatchObject({ status: 201, body: '', headers: { 'content-length': '11' } });
  });

  it('streams with back-pressure and cancels the body when the client goes away', async () => {
    let pulled = 0;
    const cancelled = deferred<undefined>();
    const { url } = await serve(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulled += 64 * 1024;
              controller.enqueue(new Uint8Array(64 * 1024));
            },
            cancel() {
              cancelled.resolve(undefined);
            },
          }),
        ),
    );
    const target = new URL(url);
    const response = await new Promise<IncomingMessage>((resolve) => {
      httpRequest({ host: target.hostname, port: target.port }, resolve).end();
    });
    response.pause();
    // The client reads nothing: the server must stall once the socket buffers are full.
    let last = -1;
    while (pulled !== last) {
      last = pulled;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pulled).toBeLessThan(16 * MIB_BYTES);
    response.destroy();
    await cancelled.promise;
  });

  it('answers a detail-free 500 problem when the handler throws, and reports the error', async () => {
    const { url } = await serve(() => {
      throw new Error('secret database password in a message');
    });
    const answer = await call(url, { path: '/boom?token=abc' });
    expect(answer.status).toBe(500);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      code: 'InternalError',
    });
    expect(answer.body).not.toContain('secret');
    expect(errors).toEqual([new Error('secret database password in a message')]);
  });

  it('answers 500 when the body fails before its first byte, and cuts the connection after', async () => {
    const { url } = await serve((request) => {
      const late = new URL(request.url).pathname === '/late';
      let sent = 0;
      return new Response(
        new ReadableStream({
          pull(controller) {
            // Two chunks: the adapter holds one back (to send a one-chunk body with its length),
            // so the first is on the wire once the second arrives.
            if (late && sent < 2) {
              sent += 1;
              controller.enqueue(new TextEncoder().encode('partial'));
              return;
            }
            controller.error(new Error('disk gone'));
          },
        }),
        { headers: { 'Content-Type': 'text/plain' } },
      );
    });
    const early = await call(url, { path: '/early' });
    expect(early.status).toBe(500);
    expect(early.headers['content-type']).toBe('application/problem+json');
    await expect(call(url, { path: '/late' })).rejects.toThrow();
  });

  it('answers 500 for a header node cannot send', async () => {
    const { url } = await serve(() => new Response('x', { headers: { 'X-Bad': 'a\u0001b' } }));
    const answer = await call(url);
    expect(answer.status).toBe(500);
    expect(errors).toHaveLength(1);
  });

  it('discards an unread body after an early answer and keeps the connection usable', async () => {
    const running = await serve(async (request) => {
      if (new URL(request.url).pathname !== '/big') return new Response('next');
      // Read a little, then stop: the rest of the body backs up and the socket is paused.
      const reader = request.body!.getReader();
      for (let read = 0; read < 256 * 1024;) read += (await reader.read()).value?.byteLength ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return new Response('too large', { status: 413 });
    });
    const { url } = running;
    let connections = 0;
    running.server.on('connection', () => (connections += 1));
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await call(url, {
        method: 'POST',
        path: '/big',
        body: Buffer.alloc(8 * MIB_BYTES),
        agent,
      });
      expect(refused.status).toBe(413);
      const next = await call(url, { path: '/next', agent });
      expect(next).toMatchObject({ status: 200, body: 'next' });
      expect(connections).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});

describe('listen()', () => {
  it('refuses an oversized header block with node’s 431', async () => {
    const { url } = await serve(() => new Response('never'));
    const answer = await call(url, { headers: { 'X-Huge': 'x'.repeat(20 * 1024) } });
    expect(answer.status).toBe(431);
  });

  it('closes: lets a request in flight run into the grace, then aborts it', async () => {
    const started = deferred<undefined>();
    const aborted = deferred<undefined>();
    const running = await listen(
      async (request) => {
        started.resolve(undefined);
        await new Promise((resolve) => {
          request.signal.addEventListener('abort', resolve, { once: true });
        });
        aborted.resolve(undefined);
        return new Response('late');
      },
      { port: 0 },
    );
    const pending = call(running.url).catch((error: unknown) => error);
    await started.promise;
    await running.close({ graceMs: 50 });
    await aborted.promise;
    expect(await pending).toBeInstanceOf(Error);
    await expect(call(running.url)).rejects.toThrow();
  });

  it('fails to start on a port in use', async () => {
    const first = await serve(() => new Response('x'));
    await expect(listen(() => new Response('y'), { port: first.port })).rejects.toThrow(
      /EADDRINUSE/,
    );
  });
});
