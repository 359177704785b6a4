import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { createListener } from './create-listener.ts';
import type { ErrorReporter, FetchHandler } from './types.ts';

/** Node's default, stated: a larger header block gets node's own 431 and the socket is closed. */
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
/** Time to receive the whole request, body included (node's default). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
/** Time to receive the request line and headers: a slow-headers client is cut off here. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 20_000;
/** How long an idle keep-alive connection stays open for the next request. */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * A socket with no traffic in either direction this long is closed. Above the 45 s sync wait,
 * during which a response is legitimately silent.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;
/** How long {@link RunningServer.close} lets in-flight requests finish before cutting them. */
export const DEFAULT_CLOSE_GRACE_MS = 10_000;
/** How often node checks the request and headers timeouts (its default, 30 s, makes them coarse). */
const TIMEOUT_CHECK_INTERVAL_MS = 2_000;

/** Options of {@link listen}. */
export interface ListenOptions {
  /** TCP port; `0` picks a free one (read it from {@link RunningServer.port}). @default 0 */
  readonly port?: number;
  /**
   * Address to bind. Binding beyond loopback exposes the server to the network.
   * @default '127.0.0.1'
   */
  readonly hostname?: string;
  /** Origin request URLs are built on (see {@link ListenerOptions.baseUrl}). Default: the bound address. */
  readonly baseUrl?: string;
  /** @default {@link DEFAULT_REQUEST_TIMEOUT_MS} */
  readonly requestTimeoutMs?: number;
  /** @default {@link DEFAULT_HEADERS_TIMEOUT_MS} */
  readonly headersTimeoutMs?: number;
  /** @default {@link DEFAULT_KEEP_ALIVE_TIMEOUT_MS} */
  readonly keepAliveTimeoutMs?: number;
  /** @default {@link DEFAULT_IDLE_TIMEOUT_MS} */
  readonly idleTimeoutMs?: number;
  /** @default {@link DEFAULT_MAX_HEADER_BYTES} */
  readonly maxHeaderBytes?: number;
  /** Receives handler errors (see {@link ListenerOptions.onError}). */
  readonly onError?: ErrorReporter;
  /** See {@link ListenerOptions.lightRequests}. @default false */
  readonly lightRequests?: boolean;
}

/** A listening server; see {@link listen}. */
export interface RunningServer {
  /** `http://<host>:<port>` of the bound address, e.g. `http://127.0.0.1:41873`. */
  readonly url: string;
  /** The bound port (the real one when `0` was asked for). */
  readonly port: number;
  /** The underlying `node:http` server. */
  readonly server: Server;
  /**
   * Stops accepting connections, closes idle ones, lets requests in flight finish for up to
   * `graceMs` and then cuts the rest (their `request.signal` aborts). Resolves when every
   * connection is closed. Calling it again returns the same promise.
   */
  close(options?: { readonly graceMs?: number }): Promise<void>;
}

/**
 * Serves a fetch handler over HTTP/1.1 on `node:http` with hardened timeouts.
 *
 * @example
 * ```ts
 * const server = await listen((request) => api.fetch(request), { port: 8080 });
 * console.log(`listening on ${server.url}`);
 * process.once('SIGTERM', () => void server.close());
 * ```
 * @throws {Error} (rejected) when the address cannot be bound (`EADDRINUSE`, `EACCES`).
 */
export async function listen(
  handler: FetchHandler,
  options: ListenOptions = {},
): Promise<RunningServer> {
  const hostname = options.hostname ?? '127.0.0.1';
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  let closing = false;
  const listener = createListener(handler, {
    ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
    ...(options.onError !== undefined ? { onError: options.onError } : {}),
    ...(options.lightRequests !== undefined ? { lightRequests: options.lightRequests } : {}),
  });
  const server = createServer(
    {
      maxHeaderSize: options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES,
      requestTimeout,
      // Node requires headersTimeout <= requestTimeout.
      headersTimeout: Math.min(
        options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS,
        requestTimeout,
      ),
      keepAliveTimeout: options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    (req, res) => {
      // A connection kept alive across close() must not carry more requests.
      if (closing) res.setHeader('Connection', 'close');
      listener(req, res);
    },
  );
  server.setTimeout(options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, hostname, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    server,
    close({ graceMs = DEFAULT_CLOSE_GRACE_MS } = {}) {
      closing = true;
      closed ??= new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.closeAllConnections();
        }, graceMs);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
      return closed;
    },
  };
}
