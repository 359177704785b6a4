import type { Command } from 'commander';

import { ADMIN_EXIT_CODES } from './admin/_common.ts';
import { registerClientCommands } from './admin/client-commands.ts';
import { registerKeyCommands } from './admin/key-commands.ts';
import { registerOrgCommands } from './admin/org-commands.ts';
import { registerSigningKeyCommands } from './admin/signing-key-commands.ts';
import type { CliContext } from './context.ts';

/**
 * Adds `disarm admin` to `program`: organisations, API keys, OAuth clients and token signing
 * keys, straight against the state store of `--database` or `--data-dir` (the server may be
 * running). One module per resource under `admin/`.
 */
export function registerAdminCommand(program: Command, context: CliContext): void {
  const admin = program
    .command('admin')
    .summary('manage organisations, API keys, OAuth clients and signing keys')
    .description(
      'Manage organisations, API keys, OAuth clients and token signing keys directly in the ' +
        'state store of --database (DISARM_DATABASE_URL: postgres://… or sqlite:<path>), by ' +
        'default the SQLite file of --data-dir (DISARM_DATA_DIR). Every command takes --json ' +
        'for one JSON object on stdout.',
    )
    .addHelpText(
      'after',
      `
Exit status:
  ${ADMIN_EXIT_CODES.ok}   done
  ${ADMIN_EXIT_CODES.refused}   the organisation, key or client does not exist, or the change was refused
  ${ADMIN_EXIT_CODES.usage}  usage error

Examples:
  $ disarm admin org create --name "Acme" --plan starter
  $ disarm admin org list --database postgres://disarm@db.internal/disarm
  $ disarm admin key create --org org_… --name zapier
  $ disarm admin client create --org org_… --name billing --scope cdr.api --json
  $ disarm admin client rotate --org org_… --client cli_…
  $ disarm admin signing-key rotate
  $ disarm admin org update --org org_… --credit-pence-delta 5000 --policy vba-macro=reject
`,
    );
  registerOrgCommands(admin, context);
  registerKeyCommands(admin, context);
  registerClientCommands(admin, context);
  registerSigningKeyCommands(admin, context);
  // Each resource's line in `disarm admin --help` lists the subcommands it registered, so the
  // overview cannot leave one out.
  for (const resource of admin.commands) {
    const actions = resource.commands.map((command) => command.name());
    resource.summary(`${resource.summary()}: ${actions.join(', ')}`);
  }
}
