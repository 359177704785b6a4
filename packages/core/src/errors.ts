/**
 * Codes of {@link DisarmError}: faults of the engine or of its caller, never properties of a file.
 *
 * - `ERR_TIMEOUT`: the wall-clock budget ran out or the caller's `AbortSignal` fired.
 * - `ERR_NOT_YET_SUPPORTED`: the extension is on the allowlist but its rebuild handler has not
 *   shipped yet; the file is never passed through.
 * - `ERR_INTERNAL`: a fault inside the engine or a codec (a bug, not a bad file).
 * - `ERR_WORKER_CRASHED`: the isolated worker process running the engine died.
 * - `ERR_VERIFY_FAILED`: the verify-before-release step found something in a rebuilt output that
 *   the family's rules forbid (or could not re-read it); the output is never released. The
 *   message names the check.
 */
export type DisarmErrorCode =
  | 'ERR_TIMEOUT'
  | 'ERR_NOT_YET_SUPPORTED'
  | 'ERR_INTERNAL'
  | 'ERR_WORKER_CRASHED'
  | 'ERR_VERIFY_FAILED';

/**
 * The one error family the engine throws. A thrown error is a service fault: the caller reports
 * the document as `failed` (`timeout` for `ERR_TIMEOUT`, `internal_error` otherwise). Everything a
 * file does wrong is a `rejected` {@link Outcome} instead.
 */
export class DisarmError extends Error {
  /** Stable machine-readable code; branch on it, not on the message. */
  readonly code: DisarmErrorCode;

  constructor(code: DisarmErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DisarmError';
    this.code = code;
  }
}

/** True when `value` is a {@link DisarmError}, optionally with the given code. */
export function isDisarmError(value: unknown, code?: DisarmErrorCode): value is DisarmError {
  return value instanceof DisarmError && (code === undefined || value.code === code);
}
