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
