import type { IncomingMessage } from 'node:http';

/** Bytes of a request body read ahead of the handler before the socket is paused. */
export const BODY_READ_AHEAD_BYTES = 64 * 1024;

/** A request body as a web stream, and the way to throw away whatever the handler did not read. */
export interface BodyStream {
  readonly stream: ReadableStream<Uint8Array>;
  /**
   * Stops delivering the body and lets node discard the rest off the wire (as it does for a body
   * nobody reads), so a keep-alive connection is not left stuck mid-body.
   */
  discard(): void;
}

/**
 * The body of `req` as a web `ReadableStream` with back-pressure: the socket is paused whenever
 * {@link BODY_READ_AHEAD_BYTES} are queued and resumed only when the consumer pulls, so a large
 * upload is never buffered whole. A client that disconnects mid-body (a close, a reset, a
 * malformed chunked body) errors the stream with what `clientLeft` makes of it.
 */
export function toBodyStream(req: IncomingMessage, clientLeft: () => Error): BodyStream {
  let settled = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const onData = (chunk: Buffer): void => {
    if (settled) return;
    // Parser chunks are fresh slices of one socket read, never a shared pool: no copy needed.
    controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if ((controller.desiredSize ?? 0) <= 0) req.pause();
  };
  const onEnd = (): void => {
    if (settled) return;
    settle();
    controller.close();
  };
  // Node's own error here is a bare `aborted`; what happened is on the socket.
  const onError = (): void => {
    if (settled) return;
    settle();
    controller.error(clientLeft());
  };
  const onClose = (): void => {
    if (!req.complete) onError();
  };
  function settle(): void {
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onError);
    req.off('close', onClose);
  }

  const stream = new ReadableStream<Uint8Array>(
    {
      start(streamController) {
        controller = streamController;
        req.on('data', onData);
        req.on('end', onEnd);
        req.on('error', onError);
        req.on('close', onClose);
        req.pause();
      },
      pull() {
        req.resume();
      },
      cancel() {
        discard();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: BODY_READ_AHEAD_BYTES }),
  );

  function discard(): void {
    if (!settled) {
      settle();
      try {
        controller.error(new Error('the request body was discarded'));
      } catch {
        // Already cancelled by its reader: nothing left to tell it.
      }
    }
    // Flowing with no 'data' listener: node reads the rest and drops it.
    if (!req.complete) req.resume();
  }

  return { stream, discard };
}
