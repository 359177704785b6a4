import { cryptoRandom, newId, SCOPE_ADMIN, SCOPE_API } from '@disarm/protocol';
import type { OAuthClientRecord, StateStore } from '@disarm/protocol';
import { generateClientSecret, OAUTH_SCOPES, toClientView } from '@disarm/protocol/oauth';
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';

import type { CliContext } from '../context.ts';
import { UsageError } from '../_exit-codes.ts';
import { adminAction, RefusedError, withAdminOptions } from './_common.ts';

/** Whose clients a command works on: one organisation's, or (`--operator`) the platform's. */
interface OwnerFlags {
  readonly org?: string;
  readonly operator?: true;
}

interface CreateFlags extends OwnerFlags {
  readonly name: string;
  readonly scope?: readonly string[];
}

interface ClientFlags extends OwnerFlags {
  readonly client: string;
}

/** Name of a client created without `--name`. */
const DEFAULT_CLIENT_NAME = 'default';

/** Adds `disarm admin client create|list|rotate|drop-previous|revoke` under `admin`. */
export function registerClientCommands(admin: Command, context: CliContext): void {
  const client = admin.command('client').summary('OAuth clients');

  const create = withAdminOptions(
    client
      .command('create')
      .summary('create an OAuth client; prints its id and secret, once')
      .option('--org <id>', 'organisation id (its clients may hold cdr.api only)')
      .option('--operator', 'an operator client: belongs to no organisation, holds cdr.admin')
      .option(
        '--name <name>',
        'what the client is for, shown in listings',
        parseName,
        DEFAULT_CLIENT_NAME,
      )
      .option(
        '--scope <scope>',
        `a scope it may ask for (${OAUTH_SCOPES.join(', ')}); default: cdr.api with --org, ` +
          'cdr.admin with --operator. cdr.admin runs the whole platform and is for operator clients only',
        parseScope,
      ),
  );
  create.action(
    adminAction<CreateFlags>(create, context, async ({ store, flags, now, print }) => {
      const owner = ownerOf(flags);
      if (owner !== null) await assertOrganisation(store, owner, now);
      const wanted = new Set(flags.scope ?? [owner === null ? SCOPE_ADMIN : SCOPE_API]);
      if (owner !== null && wanted.has(SCOPE_ADMIN)) {
        throw new RefusedError(
          `${SCOPE_ADMIN} is platform administration and never an organisation's right: ` +
            `a client of ${owner} may hold ${SCOPE_API} only; for an operator client use --operator instead of --org`,
        );
      }
      if (owner === null && wanted.has(SCOPE_API)) {
        throw new RefusedError(
          `${SCOPE_API} acts for an organisation: an operator client holds ${SCOPE_ADMIN} only; for document access create a client with --org`,
        );
      }
      const made = await generateClientSecret(cryptoRandom);
      const record: OAuthClientRecord = {
        id: newId('cli', cryptoRandom),
        organisationId: owner,
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
      .summary("list an organisation's clients, or the operator clients (never the secrets)")
      .option('--org <id>', 'organisation id')
      .option('--operator', 'the operator clients instead'),
  );
  list.action(
    adminAction<OwnerFlags>(list, context, async ({ store, flags, now, print }) => {
      const owner = ownerOf(flags);
      if (owner !== null) await assertOrganisation(store, owner, now);
      const clients = await store.listOAuthClients(owner);
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
      .option('--org <id>', 'organisation id')
      .option('--operator', 'an operator client')
      .requiredOption('--client <id>', 'client id (cli_…), as client list shows'),
  );
  rotate.action(
    adminAction<ClientFlags>(rotate, context, async ({ store, flags, print }) => {
      const record = await loadClient(store, flags);
      if (record.revokedAt !== null) throw new RefusedError(`client ${record.id} is revoked`);
      const made = await generateClientSecret(cryptoRandom);
      const updated = await store.updateOAuthClient(record.organisationId, record.id, {
        kind: 'rotate-secret',
        secretHash: made.hash,
      });
      if (!updated) throw new RefusedError(`no client ${flags.client} ${ownerName(flags)}`);
      print({ ...toClientView(updated), clientSecret: made.secret }, () => made.secret);
    }),
  );

  const dropPrevious = withAdminOptions(
    client
      .command('drop-previous')
      .summary("end a rotation: the client's previous secret stops working now")
      .option('--org <id>', 'organisation id')
      .option('--operator', 'an operator client')
      .requiredOption('--client <id>', 'client id (cli_…)'),
  );
  dropPrevious.action(
    adminAction<ClientFlags>(dropPrevious, context, async ({ store, flags, print }) => {
      const record = await loadClient(store, flags);
      const updated =
        record.secretHashes.length > 1
          ? await store.updateOAuthClient(record.organisationId, record.id, {
              kind: 'drop-previous-secret',
            })
          : record;
      if (!updated) throw new RefusedError(`no client ${flags.client} ${ownerName(flags)}`);
      print(toClientView(updated), () => `${updated.id} has one secret`);
    }),
  );

  const revoke = withAdminOptions(
    client
      .command('revoke')
      .summary('revoke a client: no new tokens, and its tokens stop working at once')
      .option('--org <id>', 'organisation id')
      .option('--operator', 'an operator client')
      .requiredOption('--client <id>', 'client id (cli_…)'),
  );
  revoke.action(
    adminAction<ClientFlags>(revoke, context, async ({ store, flags, now, print }) => {
      const record = await loadClient(store, flags);
      const updated =
        record.revokedAt === null
          ? await store.updateOAuthClient(record.organisationId, record.id, {
              kind: 'revoke',
              at: now,
            })
          : record;
      if (!updated) throw new RefusedError(`no client ${flags.client} ${ownerName(flags)}`);
      print(toClientView(updated), () => `${updated.id} revoked`);
    }),
  );
}

async function assertOrganisation(store: StateStore, id: string, now: Date): Promise<void> {
  if (!(await store.getOrganisation(id, now))) throw new RefusedError(`no organisation ${id}`);
}

/** `--org <id>` or `--operator` (`null`), exactly one. */
function ownerOf(flags: OwnerFlags): string | null {
  if ((flags.org === undefined) === (flags.operator === undefined)) {
    throw new UsageError('give either --org <id> or --operator');
  }
  return flags.org ?? null;
}

function ownerName(flags: OwnerFlags): string {
  return flags.org === undefined ? 'among the operator clients' : `in organisation ${flags.org}`;
}

async function loadClient(store: StateStore, flags: ClientFlags): Promise<OAuthClientRecord> {
  const owner = ownerOf(flags);
  const record = await store.getOAuthClient(flags.client);
  // Another organisation's client is as absent as an unknown one.
  if (record?.organisationId !== owner) {
    throw new RefusedError(`no client ${flags.client} ${ownerName(flags)}`);
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
