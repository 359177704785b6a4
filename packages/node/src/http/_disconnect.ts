import type { IncomingMessage } from 'node:http';

import { ClientClosedRequestError } from '@disarm/protocol';
import type { ClientDisconnect } from '@disarm/protocol';

/**
 * The client going away, as an `AbortSignal` made only when someone asks for it. Most requests
 * never look at their signal, and a `Request` that follows a signal costs undici about 25 µs
 * (an `AbortController` and a listener per request): most of what a status read may cost.
 * Whether (and how) the client left is also readable without a signal ({@link reason}).
 */
export class Disconnect {
  #controller: AbortController | undefined;
  #reason: ClientClosedRequestError | undefined;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Why the client left, once it has. */
  get reason(): ClientClosedRequestError | undefined {
    return this.#reason;
  }

  /** Records that the client left (the first cause wins) and aborts the signal with it. */
  leave(req: IncomingMessage): ClientClosedRequestError {
    if (this.#reason === undefined) {
      this.#reason = toClientClosedError(req);
      this.#controller?.abort(this.#reason);
    }
    return this.#reason;
  }
}

/**
 * What the connection says about a client that left before its answer. Node destroys the socket
 * with the cause (`socket.errored`) before it closes the request: a reset is `ECONNRESET`, a
 * malformed body one of llhttp's `HPE_*` parse errors, an end of stream in the middle of a body
 * `HPE_INVALID_EOF_STATE`, node's request timeout `ERR_HTTP_REQUEST_TIMEOUT`; a plain close
 * leaves no error.
 */
function toClientClosedError(req: IncomingMessage): ClientClosedRequestError {
  const cause: unknown = (req.socket as { errored?: unknown } | null)?.errored ?? undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  let disconnect: ClientDisconnect;
  if (code === 'ECONNRESET' || code === 'EPIPE') disconnect = 'reset';
  else if (code === 'ERR_HTTP_REQUEST_TIMEOUT') disconnect = 'timed_out';
  else if (typeof code === 'string' && code.startsWith('HPE_') && code !== 'HPE_INVALID_EOF_STATE')
    disconnect = 'bad_framing';
  else disconnect = req.complete ? 'closed_before_response' : 'closed_mid_body';
  return new ClientClosedRequestError(disconnect, cause === undefined ? undefined : { cause });
}
