import type { IncomingMessage, ServerResponse } from 'node:http';

import { CLIENT_DISCONNECT } from '@disarm/protocol';

import { toBodyStream } from './_body.ts';
import type { BodyStream } from './_body.ts';
import { Disconnect } from './_disconnect.ts';

/** undici's `RequestInit` with the streaming-body member the DOM typings lack. */
type StreamingRequestInit = RequestInit & { duplex?: 'half' };

/** A converted request and the handle on its body the listener needs after the response. */
export interface ConvertedRequest {
  readonly request: Request;
  /** `undefined` when the request has no body. */
  readonly body: BodyStream | undefined;
}

/**
 * Converts a `node:http` request into a WHATWG `Request`.
 *
 * - The URL is `baseUrl`'s origin plus the request target's path and query — never the `Host`
 *   header, which the client controls. An absolute-form or `//`-prefixed target cannot change
 *   the origin.
 * - Headers are copied from `rawHeaders`, so repeated headers all arrive (node's `headers` object
 *   drops some duplicates).
 * - The body is a web `ReadableStream` (`duplex: 'half'`) read from the socket with
 *   back-pressure; it is `null` for GET, HEAD and requests without `Content-Length` or
 *   `Transfer-Encoding` (RFC 9112 §6.3).
 * - `request.signal` aborts when the client goes away before the response is complete (with
 *   `res`), or before the request body is complete (without it).
 *
 * @example
 * ```ts
 * http.createServer(async (req, res) => {
 *   const request = toRequest(req, 'http://localhost:8080', res);
 *   await sendResponse(res, await api.fetch(request));
 * });
 * ```
 * @throws {TypeError} when a header cannot be represented in `Headers`.
 */
export function toRequest(
  req: IncomingMessage,
  baseUrl: string | URL,
  res?: ServerResponse,
): Request {
  return convertRequest(req, baseUrl, res).request;
}

/** {@link toRequest}, also returning the body handle (for the listener's clean-up). */
export function convertRequest(
  req: IncomingMessage,
  baseUrl: string | URL,
  res: ServerResponse | undefined,
  light = false,
): ConvertedRequest {
  const origin =
    typeof baseUrl === 'string' && ORIGIN.test(baseUrl) ? baseUrl : new URL(baseUrl).origin;
  const url = new URL(`${origin}${toOriginForm(req.url ?? '/')}`);
  const method = req.method ?? 'GET';

  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let index = 0; index + 1 < raw.length; index += 2) {
    headers.append(raw[index] ?? '', raw[index + 1] ?? '');
  }

  const disconnect = new Disconnect();
  if (res) {
    res.once('close', () => {
      if (!res.writableFinished) disconnect.leave(req);
    });
  } else {
    req.once('close', () => {
      if (!req.complete) disconnect.leave(req);
    });
  }

  // The body fails with the same reason the signal aborts with, and only after it has aborted:
  // whoever reads the body can tell that the client left.
  const body = hasBody(req, method) ? toBodyStream(req, () => disconnect.leave(req)) : undefined;
  if (!body) {
    const request = light
      ? (new LightRequest(url.href, method, headers, disconnect) as unknown as Request)
      : new BodilessRequest(url, { method, headers }, disconnect);
    return { request, body };
  }
  const init: StreamingRequestInit = {
    method,
    headers,
    signal: disconnect.signal,
    body: body.stream,
    duplex: 'half',
  };
  return { request: new Request(url, init), body };
}

/** A bare origin (`http://host:port`, no path): used as it is, without parsing it again. */
const ORIGIN = /^https?:\/\/[^/?#@\s]+$/i;

/**
 * A request without a body whose `signal` is the client's {@link Disconnect}, made on first use.
 * (A request with a body follows the signal from the start: whatever reads the body may copy
 * the request, and a copy follows only the signal given at construction.)
 */
/**
 * A bodiless request that makes the platform `Request` only when a member beyond `method`,
 * `url`, `headers`, `signal`, `body` and `bodyUsed` is used. An undici `Request` costs some
 * 15 µs of CPU and garbage per request, a third of a status read. It is a `Request` to readers
 * (`instanceof`, every member), but not to the platform's own constructor: `new Request(it)` and
 * `fetch(it)` do not accept it, which is why it is opt-in ({@link ListenerOptions.lightRequests}).
 */
class LightRequest {
  readonly #url: string;
  readonly #method: string;
  readonly #headers: Headers;
  readonly #disconnect: Disconnect;
  #platform: Request | undefined;
  readonly body = null;

  constructor(url: string, method: string, headers: Headers, disconnect: Disconnect) {
    this.#url = url;
    this.#method = method;
    this.#headers = headers;
    this.#disconnect = disconnect;
  }

  #real(): Request {
    this.#platform ??= new BodilessRequest(
      this.#url,
      { method: this.#method, headers: this.#headers },
      this.#disconnect,
    );
    return this.#platform;
  }

  get method(): string {
    return this.#method;
  }
  get url(): string {
    return this.#url;
  }
  get headers(): Headers {
    return this.#platform?.headers ?? this.#headers;
  }
  get signal(): AbortSignal {
    return this.#disconnect.signal;
  }
  [CLIENT_DISCONNECT](): unknown {
    return this.#disconnect.reason;
  }
  get bodyUsed(): boolean {
    return this.#platform?.bodyUsed ?? false;
  }
  get cache(): RequestCache {
    return this.#real().cache;
  }
  get credentials(): RequestCredentials {
    return this.#real().credentials;
  }
  get destination(): RequestDestination {
    return this.#real().destination;
  }
  get integrity(): string {
    return this.#real().integrity;
  }
  get keepalive(): boolean {
    return this.#real().keepalive;
  }
  get mode(): RequestMode {
    return this.#real().mode;
  }
  get redirect(): RequestRedirect {
    return this.#real().redirect;
  }
  get referrer(): string {
    return this.#real().referrer;
  }
  get referrerPolicy(): ReferrerPolicy {
    return this.#real().referrerPolicy;
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#real().arrayBuffer();
  }
  blob(): Promise<Blob> {
    return this.#real().blob();
  }
  formData(): Promise<FormData> {
    return this.#real().formData();
  }
  json(): Promise<unknown> {
    return this.#real().json();
  }
  text(): Promise<string> {
    return this.#real().text();
  }
  clone(): Request {
    return this.#real().clone();
  }
}
Object.setPrototypeOf(LightRequest.prototype, Request.prototype);

class BodilessRequest extends Request {
  readonly #disconnect: Disconnect;

  constructor(url: URL | string, init: RequestInit, disconnect: Disconnect) {
    super(url, init);
    this.#disconnect = disconnect;
  }

  override get signal(): AbortSignal {
    return this.#disconnect.signal;
  }

  [CLIENT_DISCONNECT](): unknown {
    return this.#disconnect.reason;
  }
}

/**
 * The path and query of a request target. Origin-form (`/path?q`) is kept as is; absolute-form
 * (`http://host/path`, RFC 9112 §3.2.2) keeps only its path and query; anything else (`*`) is
 * rooted at `/`.
 */
function toOriginForm(target: string): string {
  if (target.startsWith('/')) return target;
  if (/^https?:\/\//i.test(target)) {
    try {
      const absolute = new URL(target);
      return `${absolute.pathname}${absolute.search}`;
    } catch {
      return `/${target}`;
    }
  }
  return `/${target}`;
}

function hasBody(req: IncomingMessage, method: string): boolean {
  if (method === 'GET' || method === 'HEAD') return false;
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}
