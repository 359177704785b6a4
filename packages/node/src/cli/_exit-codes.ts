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

/**
 * A switch set in the environment: `1` or `true` turns it on; `0`, `false`, empty or unset leave
 * it off. Anything else is a usage error, so that a misspelt "off" (`no`, `off`, `False`) never
 * turns on a switch that weakens the service (fail-open scanning, admin rights for an outside
 * issuer, a movable clock).
 * @throws {UsageError} naming the variable.
 */
export function parseSwitchEnv(name: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[name];
  if (value === undefined || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new UsageError(`${name} must be 1, true, 0 or false`);
}
