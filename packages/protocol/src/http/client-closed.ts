/**
 * A client that goes away before its answer is the client's doing, not a fault of the service:
 * it is counted apart from 5xx (nginx's `499 Client Closed Request`) and logged below warning, so
 * a server-error alert never fires for flaky clients. The server adapter sees the connection and
 * says what happened; the API only reads it back from the request.
 */
import { bufferedBodyOf, bufferedResponse } from './buffered-response.ts';

/**
 * How a client left before its answer, as the server adapter saw the connection:
 * - `closed_mid_body`: the connection closed before the whole body arrived (a body shorter than
 *   its `Content-Length`, or an unfinished chunked body);
 * - `bad_framing`: the body's framing was malformed (chunked-encoding garbage), so the connection
 *   had to be closed;
 * - `reset`: the connection was reset (TCP RST), mid-body or while waiting for the answer;
 * - `closed_before_response`: the whole request arrived, then the connection closed before the
 *   answer (during a sync wait, for example);
 * - `timed_out`: the request took longer than the server's request timeout and was cut off;
 * - `disconnected`: the client went away, with no more said (an adapter that only aborts
 *   `request.signal`).
 */
export type ClientDisconnect =
  | 'closed_mid_body'
  | 'bad_framing'
  | 'reset'
  | 'closed_before_response'
  | 'timed_out'
  | 'disconnected';

/** nginx's "client closed request": the request ended because the client went away. */
export const CLIENT_CLOSED_REQUEST_STATUS = 499;
/** RFC 9110 §15.5.9: the server cut a request that took too long to arrive. */
const REQUEST_TIMEOUT_STATUS = 408;

/** What each way of leaving means, for the log line. */
const DESCRIPTIONS: Readonly<Record<ClientDisconnect, string>> = {
  closed_mid_body: 'the client closed the connection before sending the whole body',
  bad_framing:
    'the request body was not validly framed (chunked encoding), so the connection was closed',
  reset: 'the client reset the connection',
  closed_before_response: 'the client closed the connection before the answer was sent',
  timed_out: 'the request took longer than the request timeout to arrive and was cut off',
  disconnected: 'the client went away before the answer was sent',
};

/**
 * The reason a server adapter aborts `request.signal` with, and the error the request body
 * stream fails with, when the client goes away: a body read that fails with it (or whose request
 * signal is aborted) is the client's doing. Its `name` is `AbortError`, as for any aborted fetch.
 */
export class ClientClosedRequestError extends Error {
  override readonly name = 'AbortError';
  /** How the client left. */
  readonly disconnect: ClientDisconnect;

  constructor(disconnect: ClientDisconnect, options?: ErrorOptions) {
    super(DESCRIPTIONS[disconnect], options);
    this.disconnect = disconnect;
  }
}

/**
 * Where a server adapter's own request objects tell whether the client left without making an
 * `AbortSignal` (an `AbortController` per request costs microseconds, a large share of a status
 * read): a method under this registered symbol returning why the client left (the reason
 * `request.signal` aborts with), or `undefined` while it is there. A registered symbol, so two
 * copies of this package still understand each other.
 */
export const CLIENT_DISCONNECT = Symbol.for('@disarm/protocol.clientDisconnect');

/** A request that answers {@link CLIENT_DISCONNECT}. */
export interface ClientDisconnectProbe {
  [CLIENT_DISCONNECT](): unknown;
}

/**
 * How the client of `request` went away, or `undefined` while it is still there: read from the
 * adapter's {@link CLIENT_DISCONNECT} probe when the request has one, else from `request.signal`,
 * which server adapters abort when the client leaves before its answer.
 */
export function clientDisconnectOf(request: Request): ClientDisconnect | undefined {
  const probe = (request as Partial<ClientDisconnectProbe>)[CLIENT_DISCONNECT];
  let reason: unknown;
  if (typeof probe === 'function') {
    reason = probe.call(request);
    if (reason === undefined) return undefined;
  } else {
    if (!request.signal.aborted) return undefined;
    reason = request.signal.reason;
  }
  return reason instanceof ClientClosedRequestError ? reason.disconnect : 'disconnected';
}

/** The status a request that ended this way is counted and logged with (never 5xx). */
export function clientClosedStatus(disconnect: ClientDisconnect): number {
  return disconnect === 'timed_out' ? REQUEST_TIMEOUT_STATUS : CLIENT_CLOSED_REQUEST_STATUS;
}

/** What `disconnect` means, in words for the log. */
export function describeClientDisconnect(disconnect: ClientDisconnect): string {
  return DESCRIPTIONS[disconnect];
}

/**
 * The answer recorded for a request whose client left: no body (nobody reads it), the status of
 * {@link clientClosedStatus}. `response`, the answer the handler had made, is released.
 */
export async function clientClosedResponse(
  response: Response,
  disconnect: ClientDisconnect,
): Promise<Response> {
  if (bufferedBodyOf(response) === undefined && !response.bodyUsed) {
    await response.body?.cancel().catch(() => undefined);
  }
  return bufferedResponse(null, {
    status: clientClosedStatus(disconnect),
    headers: { 'Cache-Control': 'no-store' },
  });
}
