import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';

import { Option } from 'commander';
import type { Command } from 'commander';

import { ADMIN_EXIT_CODES, databaseOf } from './admin/_common.ts';
import type { CliContext } from './context.ts';
import { DEFAULT_DATA_DIR } from './serve.ts';
import { DATABASE_URL_ENV, describeDatabase, openStateStore } from '../state/open-state.ts';

/** Flags of `disarm migrate`. */
interface MigrateFlags {
  readonly dataDir: string;
  readonly database?: string;
  readonly json?: true;
}

/**
 * Adds `disarm migrate` to `program`: applies the schema migrations the state store has not
 * seen, and says which. `disarm serve` migrates on start as well; running this first (a release
 * step, an init container) lets API and worker nodes start on a current schema. Several runs at
 * once migrate once: PostgreSQL takes an advisory lock, SQLite an exclusive transaction.
 */
export function registerMigrateCommand(program: Command, context: CliContext): void {
  const command = program
    .command('migrate')
    .summary('bring the state store schema up to date')
    .description(
      'Apply the schema migrations the state store of --database (or of --data-dir) has not ' +
        'seen. Safe to run while the service runs and from several hosts at once: each ' +
        'migration is applied once, under a lock.',
    )
    .addOption(
      new Option('--data-dir <dir>', 'folder of the service state (as for disarm serve)')
        .env('DISARM_DATA_DIR')
        .default(DEFAULT_DATA_DIR),
    )
    .addOption(
      new Option(
        '--database <url>',
        'postgres://user@host:port/database or sqlite:<path> (default: sqlite:<data-dir>/disarm.sqlite)',
      ).env(DATABASE_URL_ENV),
    )
    .option('--json', 'print one JSON object on stdout instead of text')
    .addHelpText(
      'after',
      `
Examples:
  $ disarm migrate --database postgres://disarm@db.internal:5432/disarm
  $ DISARM_DATABASE_URL=postgres://disarm@db.internal/disarm disarm migrate --json
`,
    )
    .action(async () => {
      const flags = command.opts<MigrateFlags>();
      const database = databaseOf(command, flags);
      if (database.kind === 'sqlite') {
        await mkdir(resolve(flags.dataDir), { recursive: true, mode: 0o700 });
      }
      const described = describeDatabase(database);
      let applied: number[];
      try {
        const opened = await openStateStore(database, {
          migrate: false,
          onMigrationNotice: (notice) => context.stderr.write(`disarm migrate: ${notice}\n`),
        });
        try {
          applied = await opened.migrate();
        } finally {
          await opened.store.close();
        }
      } catch (error) {
        context.stderr.write(
          `disarm migrate: ${described}: ${error instanceof Error ? error.message : String(error)}\n`,
        );
        context.exitCode = ADMIN_EXIT_CODES.refused;
        return;
      }
      context.stdout.write(
        flags.json === true
          ? `${JSON.stringify({ database: described, applied })}\n`
          : applied.length === 0
            ? `${described}: the schema is up to date\n`
            : `${described}: applied migration${applied.length === 1 ? '' : 's'} ${applied.join(', ')}\n`,
      );
      context.exitCode = ADMIN_EXIT_CODES.ok;
    });
}
