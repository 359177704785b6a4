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
  const now = Date.now();
  return [
    key.kid,
    key.algorithm,
    key.status.padEnd(9),
    `created ${key.createdAt.toISOString()}`,
    key.activeFrom === null || key.activeFrom.getTime() <= key.createdAt.getTime()
      ? ''
      : `${key.activeFrom.getTime() > now ? 'signs from' : 'signed from'} ${key.activeFrom.toISOString()}`,
    key.activeUntil === null
      ? ''
      : `${key.activeUntil.getTime() > now ? 'signs until' : 'stopped signing'} ${key.activeUntil.toISOString()}`,
  ]
    .filter((part) => part !== '')
    .join('  ')
    .trimEnd();
}

/** Adds `disarm admin signing-key list|rotate` under `admin`. */
export function registerSigningKeyCommands(admin: Command, context: CliContext): void {
  const signingKey = admin.command('signing-key').summary('the keys that sign OAuth access tokens');

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
        'make a new signing key: published now, signing in seven minutes (--immediate: now); the old one stays published until its tokens expire',
      )
      .option(
        '--immediate',
        'switch signing to the new key now (for a key that may be compromised); verifiers that cache the JWKS may refuse new tokens until they refetch it',
      ),
  );
  rotate.action(
    adminAction<{ immediate?: boolean }>(rotate, context, async ({ store, flags, print }) => {
      const immediate = flags.immediate === true;
      const key = await (await signingKeysOf(store, flags.dataDir)).rotate({ immediate });
      print(toSigningKeyView(key), () =>
        key.activeFrom === null
          ? `${key.kid} signs from now (running servers: within a minute)`
          : `${key.kid} is published now and signs from ${key.activeFrom.toISOString()}`,
      );
    }),
  );
}
