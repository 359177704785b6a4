import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK } from 'jose';
import type { JWK } from 'jose';

import type { Logger } from '../config.ts';
import { cryptoRandom } from '../domain/ids.ts';
import type { Clock, Random, SigningKeyRecord, StateStore } from '../ports.ts';
import { createKeyEncryption } from './_key-encryption.ts';
import {
  ACCESS_TOKEN_LIFETIME_SECONDS,
  KEY_ENCRYPTION_KEY_BYTES,
  KEY_PREPUBLICATION_SECONDS,
  KEY_RETIREMENT_GRACE_SECONDS,
  KEY_SET_CACHE_MS,
  KEY_SET_REFRESH_COOLDOWN_MS,
  SIGNING_ALGORITHM,
} from './config.ts';

/** Where a signing key is in its life: `upcoming` -> `active` -> `published` -> `retired`. */
export type SigningKeyStatus = 'upcoming' | 'active' | 'published' | 'retired';

/** A signing key as the admin API shows it: never the private key. */
export interface SigningKeyView {
  readonly kid: string;
  readonly algorithm: SigningKeyRecord['algorithm'];
  readonly createdAt: Date;
  /** When it starts (or started) signing; `null`: from creation. */
  readonly activeFrom: Date | null;
  /** When it stops (or stopped) signing; `null` while no rotation has replaced it. */
  readonly activeUntil: Date | null;
  /** When it left the JWKS (`activeUntil` + token lifetime + grace); `null` while published. */
  readonly retiredAt: Date | null;
  /**
   * `upcoming`: published, signs from `activeFrom`; `active`: signs and is published;
   * `published`: only verifies; `retired`: gone.
   */
  readonly status: SigningKeyStatus;
}

/** The key the token endpoint signs with. */
export interface ActiveSigningKey {
  readonly kid: string;
  readonly algorithm: typeof SIGNING_ALGORITHM;
  readonly privateKey: CryptoKey;
}

/** A public JWK as the JWKS publishes it (RFC 7517 4, RFC 7518 6.2.1). */
export interface PublicJwk {
  readonly kty: string;
  readonly crv: string;
  readonly x: string;
  readonly y: string;
  readonly kid: string;
  readonly alg: string;
  readonly use: 'sig';
}

/** The embedded issuer's keys, shared by every process through the state store. */
export interface SigningKeyManager {
  /** The newest active key; on first use with none, one is created. */
  signingKey(): Promise<ActiveSigningKey>;
  /** Public keys of the active and not yet retired keys (`GET /.well-known/jwks.json`). */
  publicKeys(): Promise<PublicJwk[]>;
  /**
   * The public key `kid` names, if it is published. An unknown `kid` re-reads the store (at most
   * once per {@link KEY_SET_REFRESH_COOLDOWN_MS}), so a key another process just made verifies.
   */
  verificationKey(kid: string): Promise<CryptoKey | undefined>;
  /**
   * Makes a new key. Staged (the default): the new key is published at once and signs from
   * {@link KEY_PREPUBLICATION_SECONDS} later, when the current key stops; so a verifier caching
   * the JWKS never meets a token whose key it has not seen. `immediate` (for a key that may be
   * compromised): the new key signs now, and every other key stops signing now and has its
   * private half erased. Either way a replaced key stays published until its tokens have expired.
   * Seen by this process at once and by others within {@link KEY_SET_CACHE_MS}.
   */
  rotate(options?: { readonly immediate?: boolean }): Promise<SigningKeyView>;
  /** Every key, newest first, read fresh from the store. */
  list(): Promise<SigningKeyView[]>;
}

/** Options of {@link createSigningKeyManager}. */
export interface SigningKeyManagerOptions {
  readonly store: StateStore;
  readonly clock: Clock;
  /**
   * 32-byte key sealing the private keys in the store (AES-256-GCM).
   * **Security**: see {@link OAuthConfig.keyEncryptionKey}.
   */
  readonly keyEncryptionKey: Uint8Array;
  /** Default: `crypto.getRandomValues`. */
  readonly random?: Random;
  /** Default: no logging. */
  readonly logger?: Logger;
}

interface CachedKeys {
  readonly loadedAtMs: number;
  readonly records: readonly SigningKeyRecord[];
}

const PUBLISHED_AFTER_ACTIVE_MS =
  (ACCESS_TOKEN_LIFETIME_SECONDS + KEY_RETIREMENT_GRACE_SECONDS) * 1000;

/** When a key that stopped signing at `activeUntil` leaves the JWKS. */
function retirementTime(record: SigningKeyRecord): Date | null {
  if (record.retiredAt !== null) return record.retiredAt;
  if (record.activeUntil === null) return null;
  return new Date(record.activeUntil.getTime() + PUBLISHED_AFTER_ACTIVE_MS);
}

function statusAt(record: SigningKeyRecord, now: Date): SigningKeyStatus {
  const retiresAt = retirementTime(record);
  if (retiresAt !== null && now.getTime() >= retiresAt.getTime()) return 'retired';
  if (record.activeUntil !== null && now.getTime() >= record.activeUntil.getTime()) {
    return 'published';
  }
  if (record.activeFrom !== null && now.getTime() < record.activeFrom.getTime()) return 'upcoming';
  return 'active';
}

/** Newest first: by creation time, then `kid`, so every process picks the same key. */
function newestFirst(a: SigningKeyRecord, b: SigningKeyRecord): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  return byTime !== 0 ? byTime : b.kid < a.kid ? -1 : b.kid > a.kid ? 1 : 0;
}

function toPublicJwk(record: SigningKeyRecord): PublicJwk {
  const parsed = JSON.parse(record.publicJwk) as Partial<Record<string, unknown>>;
  const member = (name: string): string => {
    const value = parsed[name];
    if (typeof value !== 'string') throw new Error(`signing key ${record.kid}: no "${name}"`);
    return value;
  };
  // Only the public members, whatever else the stored JWK holds.
  return {
    kty: member('kty'),
    crv: member('crv'),
    x: member('x'),
    y: member('y'),
    kid: record.kid,
    alg: record.algorithm,
    use: 'sig',
  };
}

/**
 * The signing-key manager of the embedded issuer: ES256 (P-256) keys whose `kid` is their RFC
 * 7638 thumbprint, private halves sealed with AES-256-GCM under the key-encryption key. The key
 * set is cached in memory for at most {@link KEY_SET_CACHE_MS} (measured on `clock`). Keys past
 * their retirement time are marked retired in the store when first seen so.
 *
 * @example
 * ```ts
 * const keys = createSigningKeyManager({ store, clock, keyEncryptionKey });
 * const { kid, privateKey } = await keys.signingKey();
 * ```
 * @throws {TypeError} when `keyEncryptionKey` is not 32 bytes.
 */
export function createSigningKeyManager(options: SigningKeyManagerOptions): SigningKeyManager {
  const { store, clock } = options;
  if (
    !(options.keyEncryptionKey instanceof Uint8Array) ||
    options.keyEncryptionKey.length !== KEY_ENCRYPTION_KEY_BYTES
  ) {
    throw new TypeError(`keyEncryptionKey must be ${KEY_ENCRYPTION_KEY_BYTES} bytes`);
  }
  const random = options.random ?? cryptoRandom;
  const sealing = createKeyEncryption(options.keyEncryptionKey, random);
  const logger = options.logger;

  let cache: CachedKeys | undefined;
  let loading: Promise<CachedKeys> | undefined;
  let lastForcedLoadMs = Number.NEGATIVE_INFINITY;
  let creating: Promise<SigningKeyRecord> | undefined;
  const publicKeys = new Map<string, Promise<CryptoKey>>();
  const privateKeys = new Map<string, Promise<CryptoKey>>();

  const isFresh = (cached: CachedKeys, nowMs: number): boolean => {
    const age = nowMs - cached.loadedAtMs;
    // A clock that stepped back counts as stale too.
    return age >= 0 && age < KEY_SET_CACHE_MS;
  };

  async function readStore(): Promise<CachedKeys> {
    const now = clock.now();
    const records = [...(await store.listSigningKeys())].sort(newestFirst);
    const updated: SigningKeyRecord[] = [];
    let newestActive: SigningKeyRecord | undefined;
    for (const record of records) {
      let current = record;
      const status = statusAt(record, now);
      if (status === 'active') {
        if (newestActive === undefined) {
          newestActive = record;
        } else if (record.activeUntil === null) {
          // Two processes made a first key at once: the older stops signing now. (A key another
          // process already deactivated, by a clock running ahead of ours, is left as it is:
          // only the newest active key signs anyway.)
          current = { ...record, activeUntil: now, privateJwk: '' };
          await store.saveSigningKey(current);
          logger?.info({ kid: record.kid }, 'signing key superseded by a newer one');
        }
      } else if (status === 'retired' && record.retiredAt === null) {
        current = { ...record, retiredAt: retirementTime(record), privateJwk: '' };
        await store.saveSigningKey(current);
        logger?.info({ kid: record.kid }, 'signing key retired');
      } else if (status === 'published' && record.privateJwk !== '') {
        // A staged rotation's old key has stopped signing: only its public half is needed now.
        current = { ...record, privateJwk: '' };
        await store.saveSigningKey(current);
        logger?.info({ kid: record.kid }, 'signing key stopped signing');
      }
      updated.push(current);
    }
    return { loadedAtMs: now.getTime(), records: updated };
  }

  function load(force = false): Promise<CachedKeys> {
    const nowMs = clock.now().getTime();
    if (!force && cache !== undefined && isFresh(cache, nowMs)) return Promise.resolve(cache);
    loading ??= readStore()
      .then((loaded) => {
        cache = loaded;
        return loaded;
      })
      .finally(() => {
        loading = undefined;
      });
    return loading;
  }

  async function createKey(activeFrom: Date | null = null): Promise<SigningKeyRecord> {
    // Strictly newer than every key so far, even on a clock that has not moved (test mode), so
    // "newest" is never a tie between the key being replaced and its replacement.
    const latestMs = Math.max(
      Number.NEGATIVE_INFINITY,
      ...(await store.listSigningKeys()).map((record) => record.createdAt.getTime()),
    );
    const createdAt = new Date(Math.max(clock.now().getTime(), latestMs + 1));
    const pair = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const privateJwk = await exportJWK(pair.privateKey);
    const record: SigningKeyRecord = {
      kid,
      algorithm: SIGNING_ALGORITHM,
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' }),
      privateJwk: await sealing.seal(JSON.stringify(privateJwk), kid),
      createdAt,
      activeFrom,
      activeUntil: null,
      retiredAt: null,
    };
    await store.saveSigningKey(record);
    logger?.info(
      { kid, algorithm: SIGNING_ALGORITHM, activeFrom: activeFrom?.toISOString() ?? 'now' },
      'signing key created',
    );
    return record;
  }

  function privateKeyOf(record: SigningKeyRecord): Promise<CryptoKey> {
    let key = privateKeys.get(record.kid);
    if (key === undefined) {
      key = (async () => {
        const jwk = JSON.parse(await sealing.open(record.privateJwk, record.kid)) as JWK;
        const imported = await importJWK(jwk, SIGNING_ALGORITHM, { extractable: false });
        if (imported instanceof Uint8Array) throw new Error('a signing key must be asymmetric');
        return imported;
      })();
      // A failure is not cached: the next request tries again (and logs again).
      key.catch(() => privateKeys.delete(record.kid));
      privateKeys.set(record.kid, key);
    }
    return key;
  }

  function publicKeyOf(record: SigningKeyRecord): Promise<CryptoKey> {
    let key = publicKeys.get(record.kid);
    if (key === undefined) {
      key = importJWK({ ...toPublicJwk(record) }, SIGNING_ALGORITHM).then((imported) => {
        if (imported instanceof Uint8Array) throw new Error('a signing key must be asymmetric');
        return imported;
      });
      key.catch(() => publicKeys.delete(record.kid));
      publicKeys.set(record.kid, key);
    }
    return key;
  }

  const published = (loaded: CachedKeys): SigningKeyRecord[] => {
    const now = clock.now();
    return loaded.records.filter((record) => statusAt(record, now) !== 'retired');
  };

  const toView = (record: SigningKeyRecord, now: Date): SigningKeyView => {
    const status = statusAt(record, now);
    return {
      kid: record.kid,
      algorithm: record.algorithm,
      createdAt: record.createdAt,
      activeFrom: record.activeFrom,
      activeUntil: record.activeUntil,
      retiredAt: status === 'retired' ? retirementTime(record) : null,
      status,
    };
  };

  async function newestActive(): Promise<SigningKeyRecord> {
    const loaded = await load();
    const now = clock.now();
    const found = loaded.records.find((record) => statusAt(record, now) === 'active');
    if (found) return found;
    // First use: no key yet (or every key was deactivated elsewhere). One creation per process.
    creating ??= createKey().finally(() => {
      creating = undefined;
    });
    const created = await creating;
    await load(true);
    return created;
  }

  return {
    async signingKey() {
      const record = await newestActive();
      return {
        kid: record.kid,
        algorithm: SIGNING_ALGORITHM,
        privateKey: await privateKeyOf(record),
      };
    },
    async publicKeys() {
      return published(await load()).map(toPublicJwk);
    },
    async verificationKey(kid) {
      let found = published(await load()).find((record) => record.kid === kid);
      const nowMs = clock.now().getTime();
      if (found === undefined && nowMs - lastForcedLoadMs >= KEY_SET_REFRESH_COOLDOWN_MS) {
        lastForcedLoadMs = nowMs;
        found = published(await load(true)).find((record) => record.kid === kid);
      }
      return found === undefined ? undefined : publicKeyOf(found);
    },
    async rotate(options = {}) {
      const now = clock.now();
      // With no key signing now there is nothing to overlap with: the new key signs at once.
      const signing = published(await load(true)).some((key) => statusAt(key, now) === 'active');
      const immediate = options.immediate === true || !signing;
      const switchAt = immediate
        ? now
        : new Date(now.getTime() + KEY_PREPUBLICATION_SECONDS * 1000);
      const created = await createKey(immediate ? null : switchAt);
      for (const record of await store.listSigningKeys()) {
        if (record.kid === created.kid) continue;
        // A key that already stops signing before the switch keeps its time.
        if (record.activeUntil !== null && record.activeUntil.getTime() <= switchAt.getTime()) {
          continue;
        }
        if (immediate) {
          // It stops signing now; only its public half is needed from here on.
          await store.saveSigningKey({ ...record, activeUntil: now, privateJwk: '' });
          privateKeys.delete(record.kid);
        } else {
          // It signs until the new key takes over (its private half is erased after that).
          await store.saveSigningKey({ ...record, activeUntil: switchAt });
        }
        logger?.info(
          { kid: record.kid, activeUntil: switchAt.toISOString() },
          'signing key replaced by rotation',
        );
      }
      const loaded = await load(true);
      const record = loaded.records.find((item) => item.kid === created.kid) ?? created;
      return toView(record, clock.now());
    },
    async list() {
      const loaded = await load(true);
      const now = clock.now();
      return loaded.records.map((record) => toView(record, now));
    },
  };
}
