/**
 * Exit status of `disarm` commands, stable for scripts. 64 is `EX_USAGE` from sysexits(3).
 */
export const EXIT_CODES = {
  /** Every file was cleaned. */
  cleaned: 0,
  /** At least one file was rejected and none failed. */
  rejected: 1,
  /** At least one file failed, or disarm itself did. */
  failed: 2,
  /** Bad or missing option or argument, no input, an unreadable input path, colliding copies. */
  usage: 64,
  /** Interrupted (Ctrl-C): 128 + SIGINT. */
  interrupted: 130,
} as const;

/** One of {@link EXIT_CODES}. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** A mistake in how the command was called; reported on stderr with {@link EXIT_CODES.usage}. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
