import { randomBase32 } from '../domain/ids.ts';
import type { Random } from '../ports.ts';

/**
 * API key format: `dsm_live_` (fixed prefix, then the live marker) and a 43-character body: 37
 * random Crockford base32 characters (185 bits) and a 6-character checksum of them, so secret
 * scanners can recognise a leaked key by its prefix and reject look-alikes by the checksum.
 */
export const API_KEY_PREFIX = 'dsm_live_';
export const API_KEY_BODY_CHARS = 43;
const RANDOM_CHARS = 37;
const CHECKSUM_CHARS = 6;
const API_KEY_PATTERN = /^dsm_live_[0-9a-z]{43}$/;

/** A newly made key: show `key` once, store only `hash`. */
export interface NewApiKey {
  readonly key: string;
  readonly hash: string;
  /** Enough of the key to recognise it in a listing (`dsm_live_ab12…`). */
  readonly displayPrefix: string;
}

const encoder = new TextEncoder();

/** CRC-32 (IEEE) of `text`, for the key checksum. */
function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of encoder.encode(text)) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function checksum(randomPart: string): string {
  return crc32(randomPart).toString(32).padStart(CHECKSUM_CHARS, '0').slice(-CHECKSUM_CHARS);
}

/** Hex SHA-256 of a key: what the store keeps and looks keys up by. */
export async function hashApiKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', encoder.encode(key));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Makes a new API key. */
export async function generateApiKey(random: Random): Promise<NewApiKey> {
  const randomPart = randomBase32(random, RANDOM_CHARS);
  const key = `${API_KEY_PREFIX}${randomPart}${checksum(randomPart)}`;
  return {
    key,
    hash: await hashApiKey(key),
    displayPrefix: key.slice(0, API_KEY_PREFIX.length + 4),
  };
}

/** True when `value` is shaped like an API key (prefix, length, alphabet). */
export function looksLikeApiKey(value: string): boolean {
  return value.startsWith(API_KEY_PREFIX);
}

/** True when `value` is a well-formed API key whose checksum matches. */
export function isWellFormedApiKey(value: string): boolean {
  if (!API_KEY_PATTERN.test(value)) return false;
  const body = value.slice(API_KEY_PREFIX.length);
  return checksum(body.slice(0, RANDOM_CHARS)) === body.slice(RANDOM_CHARS);
}
