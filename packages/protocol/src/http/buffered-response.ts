/**
 * Responses whose whole body is known when they are made (every JSON, problem and HTML answer of
 * the API), without the cost of a platform `Response` per request.
 *
 * Why: a WHATWG `Response` in Node 20 (undici) costs about 10 µs to construct and as much again
 * to read back through its `ReadableStream`; at the API's request rates that is a large share of
 * a status read. A buffered response is a `Response` to every reader (`instanceof Response`, the
 * same members), holding its status, headers and bytes as plain values; a platform `Response` is
 * made from them only when something asks for the body as a stream or a promise (a test's
 * `json()`, `clone()`). A server adapter that knows the convention ({@link bufferedBodyOf}) writes
 * the bytes straight to the socket.
 */

const encoder = new TextEncoder();
/** The slot a server adapter reads through {@link bufferedBodyOf}; a registered symbol, so two
 * copies of this package still recognise each other's responses. */
const BUFFERED_BODY = Symbol.for('@disarm/protocol.bufferedBody');

/** What {@link bufferedResponse} takes: a status and headers, as for `new Response`. */
export interface BufferedResponseInit {
  readonly status?: number;
  readonly headers?: HeadersInit;
}

class BufferedResponse {
  readonly #status: number;
  readonly #headers: Headers;
  readonly #body: Uint8Array<ArrayBuffer> | null;
  #platform: Response | undefined;
  readonly statusText = '';
  readonly type: ResponseType = 'default';
  readonly url = '';
  readonly redirected = false;

  constructor(body: Uint8Array<ArrayBuffer> | null, status: number, headers: Headers) {
    this.#body = body;
    this.#status = status;
    this.#headers = headers;
  }

  /** The platform response, made once, on the first use of the body. */
  #materialise(): Response {
    // The platform copies the headers; from here on its own (mutable) Headers are the ones used.
    this.#platform ??= new Response(this.#body, { status: this.#status, headers: this.#headers });
    return this.#platform;
  }

  get status(): number {
    return this.#status;
  }
  get ok(): boolean {
    return this.#status >= 200 && this.#status <= 299;
  }
  get headers(): Headers {
    return this.#platform?.headers ?? this.#headers;
  }
  get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
    return this.#materialise().body;
  }
  get bodyUsed(): boolean {
    return this.#platform?.bodyUsed ?? false;
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return this.#materialise().arrayBuffer();
  }
  blob(): Promise<Blob> {
    return this.#materialise().blob();
  }
  formData(): Promise<FormData> {
    return this.#materialise().formData();
  }
  json(): Promise<unknown> {
    return this.#materialise().json();
  }
  text(): Promise<string> {
    return this.#materialise().text();
  }
  clone(): Response {
    return this.#materialise().clone();
  }

  /** The bytes, while nothing has turned them into a stream (`undefined` once something has). */
  [BUFFERED_BODY](): Uint8Array | null | undefined {
    return this.#platform === undefined ? this.#body : undefined;
  }
}
// `instanceof Response` holds, and every member a reader uses is one of the above.
Object.setPrototypeOf(BufferedResponse.prototype, Response.prototype);

/**
 * A `Response` with `body` (a string is UTF-8 encoded; `null` for none), `status` (default 200)
 * and `headers`. The one way the API makes a response whose body is complete when it is made.
 *
 * @example
 * ```ts
 * return bufferedResponse(JSON.stringify(envelope), { status: 202, headers: { 'Content-Type': 'application/json' } });
 * ```
 */
export function bufferedResponse(
  body: string | Uint8Array<ArrayBuffer> | null,
  init: BufferedResponseInit = {},
): Response {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const status = init.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new RangeError(`bufferedResponse: status ${status} is not 200 to 599`);
  }
  const headers = init.headers instanceof Headers ? init.headers : new Headers(init.headers);
  // Same defaults as the platform: a string body is text unless the caller says otherwise.
  if (typeof body === 'string' && !headers.has('Content-Type')) {
    headers.set('Content-Type', 'text/plain;charset=UTF-8');
  }
  const response = new BufferedResponse(bytes, status, headers);
  return response as unknown as Response;
}

/**
 * For a server adapter: the complete body of a response made by {@link bufferedResponse} (`null`
 * when it has none), so it can be written in one piece; `undefined` for any other response, or
 * once its body has been turned into a stream (then read `response.body` as usual).
 */
export function bufferedBodyOf(response: Response): Uint8Array | null | undefined {
  const slot = (response as unknown as Partial<Record<typeof BUFFERED_BODY, unknown>>)[
    BUFFERED_BODY
  ];
  if (typeof slot !== 'function') return undefined;
  return (slot as () => Uint8Array | null | undefined).call(response);
}
