import { cryptoRandom, newId } from '@disarm/protocol';
import type { OAuthClientRecord, StateStore } from '@disarm/protocol';
import { generateClientSecret, OAUTH_SCOPES, toClientView } from '@disarm/protocol/oauth';
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';

import type { CliContext } from '../context.ts';
import { adminAction, RefusedError, withAdminOptions } from './_common.ts';

interface CreateFlags {
  readonly org: string;
  readonly name: string;
  readonly scope?: readonly string[];
}

interface ListFlags {
  readonly org: string;
}

interface ClientFlags {
  readonly org: string;
  readonly client: string;
}

/** Name of a client created without `--name`. */
const DEFAULT_CLIENT_NAME = 'default';

/** Adds `disarm admin client create|list|rotate|drop-previous|revoke` under `admin`. */
export function registerClientCommands(admin: Command, context: CliContext): void {
  const client = admin
    .command('client')
    .summary('OAuth clients: create, list, rotate a secret, revoke');

  const create = withAdminOptions(
    client
      .command('create')
      .summary('create an OAuth client; prints its id and secret, once')
      .requiredOption('--org <id>', 'organisation id')
      .option(
        '--name <name>',
        'what the client is for, shown in listings',
        parseName,
        DEFAULT_CLIENT_NAME,
      )
      .option(
        '--scope <scope>',
        `a scope it may ask for (${OAUTH_SCOPES.join(', ')}); repeat for more (default: cdr.api). ` +
          'cdr.admin runs the whole platform',
        parseScope,
      ),
  );
  create.action(
    adminAction<CreateFlags>(create, context, async ({ store, flags, now, print }) => {
      await assertOrganisation(store, flags.org, now);
      const wanted = new Set(flags.scope ?? ['cdr.api']);
      const made = await generateClientSecret(cryptoRandom);
      const record: OAuthClientRecord = {
        id: newId('cli', cryptoRandom),
        organisationId: flags.org,
        name: flags.name,
        scopes: OAUTH_SCOPES.filter((scope) => wanted.has(scope)),
        secretHashes: [made.hash],
        createdAt: now,
        revokedAt: null,
      };
      await store.createOAuthClient(record);
      print(
        { ...toClientView(record), clientSecret: made.secret },
        () => `${record.id}\n${made.secret}`,
      );
    }),
  );

  const list = withAdminOptions(
    client
      .command('list')
      .summary("list an organisation's clients (never the secrets)")
      .requiredOption('--org <id>', 'organisation id'),
  );
  list.action(
    adminAction<ListFlags>(list, context, async ({ store, flags, now, print }) => {
      await assertOrganisation(store, flags.org, now);
      const clients = await store.listOAuthClients(flags.org);
      print({ clients: clients.map(toClientView) }, () =>
        clients.length === 0
          ? '(no clients)'
          : clients
              .map((item) =>
                [
                  item.id,
                  item.revokedAt === null ? 'active ' : 'revoked',
                  item.scopes.join(',').padEnd(17),
                  item.secretHashes.length > 1 ? 'rotating' : '        ',
                  item.name,
                ].join('  '),
              )
              .join('\n'),
      );
    }),
  );

  const rotate = withAdminOptions(
    client
      .command('rotate')
      .summary('give a client a new secret, printed once; the previous one keeps working')
      .requiredOption('--org <id>', 'organisation id')
      .requiredOption('--client <id>', 'client id (cli_…), as client list shows'),
  );
  rotate.action(
    adminAction<ClientFlags>(rotate, context, async ({ store, flags, print }) => {
      const record = await loadClient(store, flags);
      if (record.revokedAt !== null) throw new RefusedError(`client ${record.id} is revoked`);
      const made = await generateClientSecret(cryptoRandom);
      const updated = await store.updateOAuthClient(flags.org, record.id, {
        kind: 'rotate-secret',
        secretHash: made.hash,
      });
      if (!updated)
        throw new RefusedError(`no client ${flags.client} in organisation ${flags.org}`);
      print({ ...toClientView(updated), clientSecret: made.secret }, () => made.secret);
    }),
  );

  const dropPrevious = withAdminOptions(
    client
      .command('drop-previous')
      .summary("end a rotation: the client's previous secret stops working now")
      .requiredOption('--org <id>', 'organisation id')
      .requiredOption('--client <id>', 'client id (cli_…)'),
  );
  dropPrevious.action(
    adminAction<ClientFlags>(dropPrevious, context, async ({ store, flags, print }) => {
      const record = await loadClient(store, flags);
      const updated =
        record.secretHashes.length > 1
          ? await store.updateOAuthClient(flags.org, record.id, { kind: 'drop-previous-secret' })
          : record;
      if (!updated)
        throw new RefusedError(`no client ${flags.client} in organisation ${flags.org}`);
      print(toClientView(updated), () => `${updated.id} has one secret`);
    }),
  );

  const revoke = withAdminOptions(
    client
      .command('revoke')
      .summary('revoke a client: no new tokens, and its tokens stop working at once')
      .requiredOption('--org <id>', 'organisation id')
      .requiredOption('--client <id>', 'client id (cli_…)'),
  );
  revoke.action(
    adminAction<ClientFlags>(revoke, context, async ({ store, flags, now, print }) => {
      const record = await loadClient(store, flags);
      const updated =
        record.revokedAt === null
          ? await store.updateOAuthClient(flags.org, record.id, { kind: 'revoke', at: now })
          : record;
      if (!updated)
        throw new RefusedError(`no client ${flags.client} in organisation ${flags.org}`);
      print(toClientView(updated), () => `${updated.id} revoked`);
    }),
  );
}

async function assertOrganisation(store: StateStore, id: string, now: Date): Promise<void> {
  if (!(await store.getOrganisation(id, now))) throw new RefusedError(`no organisation ${id}`);
}

async function loadClient(store: StateStore, flags: ClientFlags): Promise<OAuthClientRecord> {
  const record = await store.getOAuthClient(flags.client);
  // Another organisation's client is as absent as an unknown one.
  if (record?.organisationId !== flags.org) {
    throw new RefusedError(`no client ${flags.client} in organisation ${flags.org}`);
  }
  return record;
}

/** Commander parser: a display name of 1 to 200 characters. */
function parseName(value: string): string {
  const name = value.trim();
  if (name.length === 0 || name.length > 200) {
    throw new InvalidArgumentError('expected 1 to 200 characters');
  }
  return name;
}

/** Commander parser for repeatable `--scope`. */
function parseScope(value: string, previous: readonly string[] | undefined): string[] {
  if (!OAUTH_SCOPES.includes(value)) {
    throw new InvalidArgumentError(`expected one of ${OAUTH_SCOPES.join(', ')}`);
  }
  return [...new Set([...(previous ?? []), value])];
}
