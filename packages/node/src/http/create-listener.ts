import type { IncomingMessage, ServerResponse } from 'node:http';

import { sendInternalError } from './_problem.ts';
import { sendResponse } from './send-response.ts';
import { convertRequest } from './to-request.ts';
import type { ErrorReporter, FetchHandler } from './types.ts';

/** Options of {@link createListener}. */
export interface ListenerOptions {
  /**
   * Origin the request URLs are built on. Default: the address the connection arrived at
   * (`http://<local address>:<local port>`). Never taken from the `Host` header.
   */
  readonly baseUrl?: string | URL;
  /**
   * Receives what a handler threw; the client only ever sees a detail-free 500.
   * @default writes the error to stderr
   */
  readonly onError?: ErrorReporter;
  /**
   * Hands requests without a body to the handler as a lightweight `Request` that makes the
   * platform one only when a member beyond `method`, `url`, `headers`, `signal` and `body` is
   * used: about 15 µs of CPU and its garbage saved per request. Such a request cannot be given
   * to `new Request()` or `fetch()` as their input; turn this on only for a handler that never
   * does that (the APIs of `@disarm/protocol` never do).
   * @default false
   */
  readonly lightRequests?: boolean;
}

/** A `node:http` request listener. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => void;

const defaultOnError: ErrorReporter = (error, { method, path }) => {
  process.stderr.write(`disarm: ${method} ${path} failed: ${String(error)}\n`);
};

/**
 * Turns a fetch handler into a `node:http` request listener: converts the request
 * ({@link toRequest}), awaits the handler, writes its response ({@link sendResponse}). It only
 * converts: authentication, statuses and limits are the handler's. If the handler throws, the
 * client gets a detail-free `500 application/problem+json` and the error goes to `onError`.
 *
 * After the response, whatever part of the request body the handler left unread is discarded
 * off the wire, so an early answer (401, 413) does not leave a keep-alive connection stuck.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * const server = createServer(createListener((request) => api.fetch(request)));
 * ```
 */
export function createListener(handler: FetchHandler, options: ListenerOptions = {}): NodeListener {
  const onError = options.onError ?? defaultOnError;
  return (req, res) => {
    void handle(req, res, handler, options.baseUrl, onError, options.lightRequests === true);
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  handler: FetchHandler,
  baseUrl: string | URL | undefined,
  onError: ErrorReporter,
  light: boolean,
): Promise<void> {
  const method = req.method ?? 'GET';
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  let converted: ReturnType<typeof convertRequest> | undefined;
  try {
    converted = convertRequest(req, baseUrl ?? localOrigin(req), res, light);
    const body = converted.body;
    if (body) {
      res.once('finish', () => {
        body.discard();
      });
    }
    const response = await handler(converted.request);
    await sendResponse(res, response, method);
  } catch (error) {
    try {
      onError(error, { method, path });
    } finally {
      converted?.body?.discard();
      sendInternalError(res);
    }
  }
}

/** `http://<address>:<port>` of the socket's local end, IPv6 in brackets. */
function localOrigin(req: IncomingMessage): string {
  const address = req.socket.localAddress ?? '127.0.0.1';
  const host = address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${req.socket.localPort ?? 80}`;
}
