import { resolve } from 'node:path';

import { createSigningKeyManager, toSigningKeyView } from '@disarm/protocol/oauth';
import type { SigningKeyManager, SigningKeyView } from '@disarm/protocol/oauth';
import type { StateStore } from '@disarm/protocol';
import type { Command } from 'commander';

import { systemClock } from '../../clock/system-clock.ts';
import { loadTokenSigningKek } from '../../serve/_secrets.ts';
import type { CliContext } from '../context.ts';
import { adminAction, withAdminOptions } from './_common.ts';

/** The data folder's signing keys, unsealed with its `secrets/token-signing.kek`. */
async function signingKeysOf(store: StateStore, dataDir: string): Promise<SigningKeyManager> {
  const keyEncryptionKey = await loadTokenSigningKek(resolve(dataDir));
  return createSigningKeyManager({ store, clock: systemClock, keyEncryptionKey });
}

function line(key: SigningKeyView): string {
  return [
    key.kid,
    key.algorithm,
    key.status.padEnd(9),
    `created ${key.createdAt.toISOString()}`,
    key.activeUntil === null ? '' : `stopped signing ${key.activeUntil.toISOString()}`,
  ]
    .join('  ')
    .trimEnd();
}

/** Adds `disarm admin signing-key list|rotate` under `admin`. */
export function registerSigningKeyCommands(admin: Command, context: CliContext): void {
  const signingKey = admin
    .command('signing-key')
    .summary('the keys that sign OAuth access tokens: list, rotate');

  const list = withAdminOptions(
    signingKey.command('list').summary('list the signing keys, newest first (no private keys)'),
  );
  list.action(
    adminAction<object>(list, context, async ({ store, flags, print }) => {
      const keys = await (await signingKeysOf(store, flags.dataDir)).list();
      print({ keys: keys.map(toSigningKeyView) }, () =>
        keys.length === 0 ? '(no keys yet: the first token makes one)' : keys.map(line).join('\n'),
      );
    }),
  );

  const rotate = withAdminOptions(
    signingKey
      .command('rotate')
      .summary(
        'make a new signing key; the old one stops signing and is published until its tokens expire',
      ),
  );
  rotate.action(
    adminAction<object>(rotate, context, async ({ store, flags, print }) => {
      const key = await (await signingKeysOf(store, flags.dataDir)).rotate();
      print(
        toSigningKeyView(key),
        () => `${key.kid} signs from now (running servers: within a minute)`,
      );
    }),
  );
}
