import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';

import type { ApiKeyRecord, StateStore } from '@disarm/protocol';
import { Option } from 'commander';
import type { Command } from 'commander';

import { EXIT_CODES, UsageError } from '../_exit-codes.ts';
import type { CliContext } from '../context.ts';
import { DEFAULT_DATA_DIR } from '../serve.ts';
import { DATABASE_URL_ENV, openStateStore, parseDatabaseUrl } from '../../state/open-state.ts';
import type { DatabaseLocation } from '../../state/open-state.ts';

/** Exit status of `disarm admin` commands, stable for scripts. */
export const ADMIN_EXIT_CODES = {
  ok: 0,
  /** The organisation or key does not exist, or the change was refused. */
  refused: 1,
  usage: EXIT_CODES.usage,
} as const;

/** Options every admin command has. */
export interface AdminFlags {
  readonly dataDir: string;
  readonly database?: string;
  readonly json?: true;
}

/** A refusal to report on stderr with {@link ADMIN_EXIT_CODES.refused}. */
export class RefusedError extends Error {
  override readonly name = 'RefusedError';
}

/** Adds `--data-dir`, `--database` and `--json` to a leaf command. */
export function withAdminOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--data-dir <dir>', 'folder of the service state (as for disarm serve)')
        .env('DISARM_DATA_DIR')
        .default(DEFAULT_DATA_DIR),
    )
    .addOption(
      new Option(
        '--database <url>',
        'state store of the service: postgres://… or sqlite:<path> (as for disarm serve)',
      ).env(DATABASE_URL_ENV),
    )
    .option('--json', 'print one JSON object on stdout instead of text');
}

/** What an admin action gets: the open store, the clock reading, and output helpers. */
export interface AdminRun<Flags> {
  readonly store: StateStore;
  readonly flags: Flags & AdminFlags;
  readonly now: Date;
  /** Prints `value` as one JSON line with `--json`, else `human()`'s lines. */
  readonly print: (value: unknown, human: () => string) => void;
}

/**
 * Runs `action` against the store of `--data-dir` and maps its outcome to an exit status:
 * {@link RefusedError} is 1, {@link UsageError} is 64. The store is closed in every case.
 */
export function adminAction<Flags>(
  command: Command,
  context: CliContext,
  action: (run: AdminRun<Flags>) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const flags = command.opts<Flags & AdminFlags>();
    const database = databaseOf(command, flags);
    if (database.kind === 'sqlite') {
      await mkdir(resolve(flags.dataDir), { recursive: true, mode: 0o700 });
    }
    const { store } = await openStateStore(database, {
      onMigrationNotice: (notice) => context.stderr.write(`disarm admin: ${notice}\n`),
    });
    try {
      await action({
        store,
        flags,
        now: new Date(),
        print: (value, human) => {
          context.stdout.write(flags.json === true ? `${JSON.stringify(value)}\n` : `${human()}\n`);
        },
      });
      context.exitCode = ADMIN_EXIT_CODES.ok;
    } catch (error) {
      if (error instanceof RefusedError) {
        context.stderr.write(`disarm admin: ${error.message}\n`);
        context.exitCode = ADMIN_EXIT_CODES.refused;
        return;
      }
      if (error instanceof UsageError) {
        command.error(`error: ${error.message}`, { exitCode: ADMIN_EXIT_CODES.usage });
      }
      throw error;
    } finally {
      await store.close();
    }
  };
}

/** The database `--database` (or the data folder's SQLite file) names; a bad URL is a usage error. */
export function databaseOf(
  command: Command,
  flags: { readonly dataDir: string; readonly database?: string },
): DatabaseLocation {
  try {
    return parseDatabaseUrl(flags.database, flags.dataDir);
  } catch (error) {
    return command.error(
      `error: --database: ${error instanceof Error ? error.message : String(error)}`,
      { exitCode: ADMIN_EXIT_CODES.usage },
    );
  }
}

/** An API key as shown: everything but the hash. */
export function toKeyView(record: ApiKeyRecord): Omit<ApiKeyRecord, 'hash'> {
  return {
    id: record.id,
    organisationId: record.organisationId,
    name: record.name,
    displayPrefix: record.displayPrefix,
    createdAt: record.createdAt,
    revokedAt: record.revokedAt,
  };
}
