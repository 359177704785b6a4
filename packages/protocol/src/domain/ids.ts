import type { Random } from '../ports.ts';

/** Crockford base32: no I, L, O, U, so ids read and type well. */
const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
/** 20 base32 characters: 100 bits of randomness. */
const ID_RANDOM_CHARS = 20;

/** `crypto.getRandomValues` as a {@link Random}. */
export const cryptoRandom: Random = {
  bytes(length) {
    return crypto.getRandomValues(new Uint8Array(length));
  },
};

/** A random Crockford base32 string of `length` characters. */
export function randomBase32(random: Random, length: number): string {
  const bytes = random.bytes(length);
  let text = '';
  for (const byte of bytes) text += CROCKFORD[byte & 31] ?? '0';
  return text;
}

/** Id prefixes by kind of resource. */
export type IdKind = 'doc' | 'upl' | 'org' | 'key' | 'cli';

/** A new id such as `doc_8k2m...`: a kind prefix and 100 random bits. */
export function newId(kind: IdKind, random: Random): string {
  return `${kind}_${randomBase32(random, ID_RANDOM_CHARS)}`;
}
