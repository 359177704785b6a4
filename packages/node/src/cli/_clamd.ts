/** `--clamd` and `--clamd-fail-open`, shared by `disarm serve` and `disarm clean`. */
import { Option } from 'commander';
import type { Command } from 'commander';

import type { ClamdConfig } from '../pool/types.ts';
import { parseSwitchEnv, UsageError } from './_exit-codes.ts';
import { parseClamdAddress } from './_parse.ts';
import type { ClamdAddress } from './_parse.ts';

/** The two flags as commander parses them. */
export interface ClamdFlags {
  readonly clamd?: ClamdAddress;
  readonly clamdFailOpen?: true;
}

/** Adds `--clamd <socket|host:port>` (env `DISARM_CLAMD`) and `--clamd-fail-open` to `command`. */
export function addClamdOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--clamd <socket|host:port>',
        "also scan with ClamAV's clamd, at a Unix socket path or host:port; a file it cannot scan fails",
      )
        .env('DISARM_CLAMD')
        .argParser(parseClamdAddress),
    )
    .addOption(
      new Option(
        '--clamd-fail-open',
        `when clamd cannot answer, let files through unscanned (a warning on stderr) instead of failing them (env: ${CLAMD_FAIL_OPEN_ENV}=1)`,
      ),
    );
}

/** Environment variable that turns on `--clamd-fail-open`. */
export const CLAMD_FAIL_OPEN_ENV = 'DISARM_CLAMD_FAIL_OPEN';

/**
 * The clamd that `--clamd` and `--clamd-fail-open` describe, with {@link CLAMD_FAIL_OPEN_ENV}
 * (`1` or `true`) standing for the second. Any other value but `0`, `false` or empty is a usage
 * error, so that a misspelt "off" never lets files through unscanned.
 * @throws {UsageError} for such a value, or fail-open without a clamd.
 */
export function clamdConfigOf(
  flags: ClamdFlags,
  env: NodeJS.ProcessEnv = process.env,
): ClamdConfig | undefined {
  const address = flags.clamd;
  const failOpen = flags.clamdFailOpen === true || parseSwitchEnv(CLAMD_FAIL_OPEN_ENV, env);
  if (address === undefined) {
    if (failOpen) throw new UsageError('--clamd-fail-open needs --clamd');
    return undefined;
  }
  return failOpen ? { ...address, failOpen } : address;
}
