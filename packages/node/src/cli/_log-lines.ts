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
 * What a pipe holds unread before a write blocks (Linux's default pipe capacity, pipe(7)): the
 * most a reader that dies can take with it unread.
 */
const PIPE_CAPACITY_BYTES = 64 * 1024;

/**
 * `primary` (the log's stdout) until its reader is gone, then `fallback` (stderr). Piped into
 * another program (`disarm serve | tee log`), stdout breaks when that program ends first: a
 * Ctrl-C reaches the whole process group, and the reader usually dies before the service has
 * logged its shutdown. A write then fails (`EPIPE`), which would otherwise crash the process
 * mid-shutdown; here the line goes to `fallback` instead, and so does every later one. The lines
 * written just before, which the pipe may have taken but the dead reader never read (up to the
 * pipe's capacity), are written to `fallback` first: a line may then show twice, never not at
 * all. A broken `fallback` drops them. Lines keep their order.
 */
export function withFallback(primary: LogOutput, fallback: LogOutput): LogOutput {
  let broken = false;
  /** Lines written to `primary` lately, which the reader may not have read; newest last. */
  let recent: { readonly seq: number; readonly text: string }[] = [];
  let recentBytes = 0;
  let nextSeq = 0;
  /** Lines up to this one were given to `fallback` when `primary` broke. */
  let replayedUpTo = -1;
  const toFallback = (text: string): void => {
    fallback.write(text, () => undefined);
  };
  const breakDown = (): void => {
    if (broken) return;
    broken = true;
    for (const line of recent) toFallback(line.text);
    replayedUpTo = nextSeq - 1;
    recent = [];
  };
  // Without a listener, the stream's `error` event (EPIPE) would be an uncaught exception.
  primary.on?.('error', breakDown);
  fallback.on?.('error', () => undefined);
  return {
    write(text) {
      if (broken) {
        toFallback(text);
        return;
      }
      const seq = nextSeq++;
      recent.push({ seq, text });
      recentBytes += text.length;
      while (recentBytes > PIPE_CAPACITY_BYTES && recent.length > 1) {
        recentBytes -= recent.shift()?.text.length ?? 0;
      }
      primary.write(text, (error) => {
        if (error === undefined || error === null) return;
        breakDown();
        // Written after the lines replayed at the break: this one is still to go.
        if (seq > replayedUpTo) toFallback(text);
      });
    },
  };
}
