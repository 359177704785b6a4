import { cryptoRandom, generateApiKey, newId } from '@disarm/protocol';
import type { StateStore } from '@disarm/protocol';

/** The demo organisation made on first start, and its API key (shown once). */
export interface DemoAccount {
  readonly organisationId: string;
  readonly apiKey: string;
}

/**
 * On an empty store, creates an organisation on the `internal` plan (unmetered, so trying the
 * service costs nothing) with one API key; on any other store, does nothing.
 */
export async function provisionDemo(store: StateStore, at: Date): Promise<DemoAccount | undefined> {
  if ((await store.listOrganisations(at)).length > 0) return undefined;
  const organisation = await store.createOrganisation(
    { id: newId('org', cryptoRandom), name: 'Demo', plan: 'internal' },
    at,
  );
  const key = await generateApiKey(cryptoRandom);
  await store.createApiKey({
    id: newId('key', cryptoRandom),
    organisationId: organisation.id,
    name: 'demo',
    displayPrefix: key.displayPrefix,
    hash: key.hash,
    createdAt: at,
    revokedAt: null,
  });
  return { organisationId: organisation.id, apiKey: key.key };
}
