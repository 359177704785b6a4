import { Command, CommanderError } from 'commander';

import packageJson from '../../package.json' with { type: 'json' };
import { EXIT_CODES } from './_exit-codes.ts';
import { registerAdminCommand } from './admin.ts';
import { registerCleanCommand } from './clean.ts';
import type { CliContext } from './context.ts';
import { registerDoctorCommand } from './doctor.ts';
import { registerMigrateCommand } from './migrate.ts';
import { registerServeCommand } from './serve.ts';

/**
 * The `disarm` program: one sibling module per subcommand (`clean`, `serve`, `migrate`, `admin`, `doctor`).
 */
function createProgram(context: CliContext): Command {
  const program = new Command('disarm')
    .description('Content Disarm and Reconstruction: rebuild untrusted documents into safe copies.')
    .version(packageJson.version, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .helpCommand(false)
    // Commander would call process.exit(); we map its outcomes to our exit codes instead.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => context.stdout.write(text),
      writeErr: (text) => context.stderr.write(text),
    })
    .showHelpAfterError('(add --help for usage)');
  registerCleanCommand(program, context);
  registerServeCommand(program, context);
  registerMigrateCommand(program, context);
  registerAdminCommand(program, context);
  registerDoctorCommand(program, context);
  return program;
}

/**
 * Runs the CLI on `argv` (as `process.argv`: node, script, then arguments) and returns the exit
 * status, without exiting: usage errors are 64, help and version are 0.
 */
export async function runCli(
  argv: readonly string[],
  io: Omit<CliContext, 'exitCode'> = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const context: CliContext = { ...io, exitCode: EXIT_CODES.cleaned };
  try {
    await createProgram(context).parseAsync(argv);
    return context.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_CODES.usage;
    throw error;
  }
}
