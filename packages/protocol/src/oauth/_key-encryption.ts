import { base64url } from 'jose';

import type { Random } from '../ports.ts';

/** Seals private signing keys for the state store and opens them again. */
export interface KeyEncryption {
  /** Encrypts `plaintext`, bound to `associatedData` (the key's `kid`). */
  seal(plaintext: string, associatedData: string): Promise<string>;
  /**
   * Decrypts what {@link seal} made with the same key-encryption key and associated data.
   * @throws {Error} when the sealed text was made under another key-encryption key, for another
   *   `kid`, or was altered.
   */
  open(sealed: string, associatedData: string): Promise<string>;
}

/** Version tag of the sealed format: `v1.<kek id>.<iv>.<ciphertext and tag>` (base64url). */
const FORMAT = 'v1';
/** NIST SP 800-38D 8.2: a 96-bit random IV; one key seals only a handful of signing keys. */
const IV_BYTES = 12;
/** Hex characters of the key-encryption key's fingerprint carried in the sealed text. */
const KEK_ID_CHARS = 16;

const encoder = new TextEncoder();

/**
 * AES-256-GCM under `keyEncryptionKey` (32 bytes). The `kid` is authenticated as associated
 * data, so a sealed key copied onto another row does not open. The sealed text names the
 * key-encryption key by a fingerprint (SHA-256 prefix), so opening under a different one fails
 * with a clear message rather than a bare authentication error.
 */
export function createKeyEncryption(keyEncryptionKey: Uint8Array, random: Random): KeyEncryption {
  const key = crypto.subtle.importKey('raw', keyEncryptionKey.slice(), 'AES-GCM', false, [
    'encrypt',
    'decrypt',
  ]);
  const kekId = crypto.subtle.digest('SHA-256', keyEncryptionKey.slice()).then((digest) =>
    [...new Uint8Array(digest)]
      .map((byte) => byte.toString(16).padStart(2, '0'))
      .join('')
      .slice(0, KEK_ID_CHARS),
  );
  return {
    async seal(plaintext, associatedData) {
      const iv = random.bytes(IV_BYTES).slice();
      const ciphertext = await crypto.subtle.encrypt(
        { name: 'AES-GCM', iv, additionalData: encoder.encode(associatedData) },
        await key,
        encoder.encode(plaintext),
      );
      return [
        FORMAT,
        await kekId,
        base64url.encode(iv),
        base64url.encode(new Uint8Array(ciphertext)),
      ].join('.');
    },
    async open(sealed, associatedData) {
      const [format, sealedKekId, iv, ciphertext, ...rest] = sealed.split('.');
      if (format !== FORMAT || iv === undefined || ciphertext === undefined || rest.length > 0) {
        throw new Error('the sealed signing key is not in a known format');
      }
      if (sealedKekId !== (await kekId)) {
        throw new Error(
          `the signing key was sealed under another key-encryption key (${sealedKekId ?? '?'}); ` +
            'restore that key or rotate the signing key',
        );
      }
      const plaintext = await crypto.subtle.decrypt(
        {
          name: 'AES-GCM',
          iv: base64url.decode(iv).slice(),
          additionalData: encoder.encode(associatedData),
        },
        await key,
        base64url.decode(ciphertext).slice(),
      );
      return new TextDecoder('utf-8', { fatal: true }).decode(plaintext);
    },
  };
}
