import { randomBase32 } from '../domain/ids.ts';
import type { Random } from '../ports.ts';

/**
 * Client secret format: `dsm_secret_` and 43 random Crockford base32 characters (215 bits). The
 * prefix lets secret scanners recognise a leaked secret; only its SHA-256 is stored.
 */
export const CLIENT_SECRET_PREFIX = 'dsm_secret_';
const CLIENT_SECRET_RANDOM_CHARS = 43;
/** A client has at most two live secrets: the current one and, after a rotation, the previous. */
export const MAX_LIVE_SECRETS = 2;

/** A newly made client secret: show `secret` once, store only `hash`. */
export interface NewClientSecret {
  readonly secret: string;
  /** Hex SHA-256 of the secret. */
  readonly hash: string;
}

const encoder = new TextEncoder();
/** Compared against when a client has fewer live secrets, so every check costs the same. */
const NO_SECRET_HASH = '0'.repeat(64);

/** Hex SHA-256 of a client secret: what the store keeps. */
export async function hashClientSecret(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(secret));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Makes a new client secret. */
export async function generateClientSecret(random: Random): Promise<NewClientSecret> {
  const secret = `${CLIENT_SECRET_PREFIX}${randomBase32(random, CLIENT_SECRET_RANDOM_CHARS)}`;
  return { secret, hash: await hashClientSecret(secret) };
}

/** Compares two strings in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  const length = Math.max(a.length, b.length);
  for (let index = 0; index < length; index += 1) {
    difference |= (a.charCodeAt(index) | 0) ^ (b.charCodeAt(index) | 0);
  }
  return difference === 0;
}

/**
 * Whether `secret` matches one of `hashes` (the live secrets of a client). The secret is always
 * hashed and compared against {@link MAX_LIVE_SECRETS} slots without an early exit, so an
 * unknown client, a wrong secret and a right one take the same time. Pass `[]` for an unknown
 * client.
 */
export async function verifyClientSecret(
  secret: string,
  hashes: readonly string[],
): Promise<boolean> {
  const presented = await hashClientSecret(secret);
  let matched = false;
  for (let slot = 0; slot < MAX_LIVE_SECRETS; slot += 1) {
    const stored = hashes[slot];
    // Every slot is compared, whatever an earlier one gave.
    const equal = constantTimeEqual(presented, stored ?? NO_SECRET_HASH);
    matched = matched || (equal && stored !== undefined);
  }
  return matched;
}
