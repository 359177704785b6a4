/** A sink of log lines that writes them once per turn of the event loop. */
export interface LogLines {
  readonly write: (line: string) => void;
  /** Writes whatever is waiting, now. */
  readonly flush: () => void;
}

/**
 * Collects log lines and hands them to `target` together at the end of the event loop's turn
 * (and on `flush()`), so a server answering thousands of requests a
 * second makes one write per turn instead of one per request line. Lines keep their order.
 */
export function batchLogLines(target: { write(text: string): unknown }): LogLines {
  let waiting: string[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (waiting.length === 0) return;
    const text = waiting.length === 1 ? (waiting[0] ?? '') : waiting.join('');
    waiting = [];
    target.write(text);
  };
  return {
    write(line) {
      waiting.push(line);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

/** An output stream as the log needs it: `process.stdout`, or anything that takes text. */
export interface LogOutput {
  write(text: string, callback?: (error?: Error | null) => void): unknown;
  on?(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * `primary` (the log's stdout) until its reader is gone, then `fallback` (stderr). Piped into
 * another program (`disarm serve | tee log`), stdout breaks when that program ends first: a
 * Ctrl-C reaches the whole process group, and the reader usually dies before the service has
 * logged its shutdown. A write then fails (`EPIPE`), which would otherwise crash the process
 * mid-shutdown; here the failed line, and every later one, goes to `fallback` instead, and a
 * broken `fallback` drops them. Lines keep their order.
 */
export function withFallback(primary: LogOutput, fallback: LogOutput): LogOutput {
  let broken = false;
  // Without a listener, the stream's `error` event (EPIPE) would be an uncaught exception.
  primary.on?.('error', () => {
    broken = true;
  });
  fallback.on?.('error', () => undefined);
  const toFallback = (text: string): void => {
    fallback.write(text, () => undefined);
  };
  return {
    write(text) {
      if (broken) {
        toFallback(text);
        return;
      }
      primary.write(text, (error) => {
        if (error === undefined || error === null) return;
        broken = true;
        toFallback(text);
      });
    },
  };
}
