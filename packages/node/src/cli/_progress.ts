/** Width of the bar between the brackets, in characters. */
const BAR_WIDTH_CHARS = 30;
/** Carriage return, then erase the whole line (ECMA-48 EL 2). */
const CLEAR_LINE = '\r\x1b[2K';

/** A one-line progress bar on a terminal; drawing is skipped when disabled. */
export interface Progress {
  /** Writes `line` to `out` without tearing the bar, and counts one more file done. */
  advance(out: { write(text: string): unknown }, line: string): void;
  /** Erases the bar for good. */
  finish(): void;
}

/** `[#####.........] 12/40 files` */
export function renderProgress(done: number, total: number): string {
  const filled = total === 0 ? BAR_WIDTH_CHARS : Math.floor((done / total) * BAR_WIDTH_CHARS);
  return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH_CHARS - filled)}] ${done}/${total} files`;
}

/** A bar over `total` files on `stream`, or a silent one when `enabled` is false. */
export function createProgress(
  stream: { write(text: string): unknown },
  total: number,
  enabled: boolean,
): Progress {
  let done = 0;
  let shown = false;
  const draw = (): void => {
    if (!enabled) return;
    stream.write(`\r${renderProgress(done, total)}`);
    shown = true;
  };
  const erase = (): void => {
    if (!shown) return;
    stream.write(CLEAR_LINE);
    shown = false;
  };
  draw();
  return {
    advance(out, line) {
      erase();
      out.write(line);
      done += 1;
      draw();
    },
    finish() {
      erase();
    },
  };
}
