#!/usr/bin/env node
/** The `disarm` command. */
import { EXIT_CODES } from './cli/_exit-codes.ts';
import { runCli } from './cli/program.ts';

try {
  process.exitCode = await runCli(process.argv);
} catch (error) {
  // A bug, not a verdict on any file: report it without pretending to be a rejection.
  process.stderr.write(
    `disarm: internal error: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exitCode = EXIT_CODES.failed;
}
