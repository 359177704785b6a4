import { cryptoRandom, generateApiKey, newId } from '@disarm/protocol';
import type { ApiKeyRecord } from '@disarm/protocol';
import type { Command } from 'commander';

import type { CliContext } from '../context.ts';
import { adminAction, RefusedError, toKeyView, withAdminOptions } from './_common.ts';

interface CreateFlags {
  readonly org: string;
  readonly name: string;
}

interface ListFlags {
  readonly org: string;
}

interface RevokeFlags {
  readonly org: string;
  readonly key: string;
}

/** Default name of a key created without `--name`. */
const DEFAULT_KEY_NAME = 'default';

/** Adds `disarm admin key create|list|revoke` under `admin`. */
export function registerKeyCommands(admin: Command, context: CliContext): void {
  const key = admin.command('key').summary('API keys');

  const create = withAdminOptions(
    key
      .command('create')
      .summary('create an API key; prints its id and the key, once')
      .requiredOption('--org <id>', 'organisation id')
      .option('--name <name>', 'what the key is for, shown in listings', DEFAULT_KEY_NAME),
  );
  create.action(
    adminAction<CreateFlags>(create, context, async ({ store, flags, now, print }) => {
      if (!(await store.getOrganisation(flags.org, now))) {
        throw new RefusedError(`no organisation ${flags.org}`);
      }
      const made = await generateApiKey(cryptoRandom);
      const record: ApiKeyRecord = {
        id: newId('key', cryptoRandom),
        organisationId: flags.org,
        name: flags.name,
        displayPrefix: made.displayPrefix,
        hash: made.hash,
        createdAt: now,
        revokedAt: null,
      };
      await store.createApiKey(record);
      print({ ...toKeyView(record), key: made.key }, () => `${record.id}\n${made.key}`);
    }),
  );

  const list = withAdminOptions(
    key
      .command('list')
      .summary("list an organisation's keys (never the keys themselves)")
      .requiredOption('--org <id>', 'organisation id'),
  );
  list.action(
    adminAction<ListFlags>(list, context, async ({ store, flags, now, print }) => {
      if (!(await store.getOrganisation(flags.org, now))) {
        throw new RefusedError(`no organisation ${flags.org}`);
      }
      const keys = (await store.listApiKeys(flags.org)).map(toKeyView);
      print({ keys }, () =>
        keys.length === 0
          ? '(no keys)'
          : keys
              .map((item) =>
                [
                  item.id,
                  `${item.displayPrefix}…`,
                  item.revokedAt === null ? 'active ' : 'revoked',
                  item.name,
                ].join('  '),
              )
              .join('\n'),
      );
    }),
  );

  const revoke = withAdminOptions(
    key
      .command('revoke')
      .summary('revoke an API key: refused from the next request on, on every server')
      .requiredOption('--org <id>', 'organisation id')
      .requiredOption('--key <id>', 'key id (key_…), as key list shows'),
  );
  revoke.action(
    adminAction<RevokeFlags>(revoke, context, async ({ store, flags, now, print }) => {
      const record = await store.revokeApiKey(flags.org, flags.key, now);
      if (!record) throw new RefusedError(`no key ${flags.key} in organisation ${flags.org}`);
      print(toKeyView(record), () => `${record.id} revoked`);
    }),
  );
}
