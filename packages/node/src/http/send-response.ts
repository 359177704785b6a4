import type { ServerResponse } from 'node:http';

import { bufferedBodyOf } from '@disarm/protocol';

/** Statuses that never carry a body (RFC 9110 §6.4.1). */
const BODYLESS_STATUSES = new Set([204, 205, 304]);

/**
 * Writes a WHATWG `Response` to a `node:http` response and resolves once it is sent, or once the
 * client has gone away.
 *
 * - Every header is copied; each `Set-Cookie` stays its own header line.
 * - The body is streamed with back-pressure: the next chunk is read only after the socket took
 *   the last one. When the client disconnects, the body stream is cancelled, so whatever produces
 *   it (a file, a database cursor) is released.
 * - A HEAD request, or a status that has no body, sends the headers (Content-Length included)
 *   and cancels the body unread.
 * - A response made by `bufferedResponse()` of `@disarm/protocol` (every JSON, problem and HTML
 *   answer of the API) is written in one piece with its `Content-Length`, without a stream.
 * - Otherwise a body that arrives as one chunk is sent with its `Content-Length` in one write; a
 *   longer one is streamed (chunked when it has no length).
 * - A body that fails mid-way ends the connection abruptly (the status line is already sent); one
 *   that fails before anything was sent (the first chunk is held until the second arrives)
 *   rejects, so the caller can still answer 500.
 *
 * @param method the request method (default `res.req.method`), to recognise HEAD.
 * @throws {TypeError} (rejected) when a header value is not valid for node, before anything is sent.
 */
export async function sendResponse(
  res: ServerResponse,
  response: Response,
  method: string = res.req.method ?? 'GET',
): Promise<void> {
  const buffered = bufferedBodyOf(response);
  if (buffered !== undefined) {
    const hasBody = buffered !== null && !BODYLESS_STATUSES.has(response.status);
    // One header block, as node's raw list (each Set-Cookie its own line); HEAD is told the
    // length the GET would send.
    const head: string[] = [];
    let length = false;
    for (const [name, value] of response.headers) {
      if (name === 'set-cookie') continue;
      if (name === 'content-length') length = true;
      head.push(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) head.push('set-cookie', cookie);
    if (hasBody && !length) head.push('content-length', String(buffered.byteLength));
    if (response.statusText === '') res.writeHead(response.status, head);
    else res.writeHead(response.status, response.statusText, head);
    await endResponse(res, hasBody && method !== 'HEAD' ? buffered : undefined);
    return;
  }
  const body = response.body;
  try {
    writeHead(res, response);
  } catch (error) {
    await body?.cancel().catch(() => undefined);
    throw error;
  }

  if (!body || method === 'HEAD' || BODYLESS_STATUSES.has(response.status)) {
    await body?.cancel().catch(() => undefined);
    await endResponse(res);
    return;
  }
  await streamBody(res, body);
}

/** Status and every header of `response` onto `res` (nothing is sent yet). */
function writeHead(res: ServerResponse, response: Response): void {
  res.statusCode = response.status;
  if (response.statusText !== '') res.statusMessage = response.statusText;
  for (const [name, value] of response.headers) {
    if (name !== 'set-cookie') res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) res.setHeader('set-cookie', cookies);
}

async function streamBody(res: ServerResponse, body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  const onClose = (): void => {
    if (!res.writableFinished)
      reader.cancel(new Error('the client disconnected')).catch(() => undefined);
  };
  res.once('close', onClose);
  try {
    // One chunk held back: a body that is a single chunk (every JSON answer) goes out with its
    // Content-Length in one write, instead of chunked encoding and a separate terminator.
    let held: Uint8Array | undefined;
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (res.headersSent) {
          res.destroy(error instanceof Error ? error : undefined);
          return;
        }
        throw error;
      }
      if (res.destroyed) return;
      if (chunk.done) {
        if (held !== undefined && !res.headersSent && !res.hasHeader('content-length')) {
          res.setHeader('content-length', held.byteLength);
        }
        await endResponse(res, held);
        return;
      }
      if (held !== undefined && !res.write(held)) await drained(res);
      held = chunk.value;
    }
  } finally {
    res.off('close', onClose);
    reader.releaseLock();
  }
}

/** Resolves on `drain`, or when the response closes (no `drain` will ever come then). */
function drained(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function endResponse(res: ServerResponse, last?: Uint8Array): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('close', done);
      resolve();
    };
    res.once('close', done);
    if (last === undefined) res.end(done);
    else res.end(last, done);
  });
}
