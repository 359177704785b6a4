import type { Command } from 'commander';

import { ADMIN_EXIT_CODES } from './admin/_common.ts';
import { registerKeyCommands } from './admin/key-commands.ts';
import { registerOrgCommands } from './admin/org-commands.ts';
import type { CliContext } from './context.ts';

/**
 * Adds `disarm admin` to `program`: organisations and API keys, straight against the state store
 * of `--data-dir` (the server may be running). One module per resource under `admin/`; OAuth
 * clients register the same way.
 */
export function registerAdminCommand(program: Command, context: CliContext): void {
  const admin = program
    .command('admin')
    .summary('manage organisations and API keys')
    .description(
      'Manage organisations and API keys directly in the state store of --data-dir ' +
        '(DISARM_DATA_DIR). Every command takes --json for one JSON object on stdout.',
    )
    .addHelpText(
      'after',
      `
Exit status:
  ${ADMIN_EXIT_CODES.ok}   done
  ${ADMIN_EXIT_CODES.refused}   the organisation or key does not exist, or the change was refused
  ${ADMIN_EXIT_CODES.usage}  usage error

Examples:
  $ disarm admin org create --name "Acme" --plan starter
  $ disarm admin key create --org org_… --name zapier
  $ disarm admin org update --org org_… --credit-pence-delta 5000 --policy vba-macro=reject
`,
    );
  registerOrgCommands(admin, context);
  registerKeyCommands(admin, context);
}
