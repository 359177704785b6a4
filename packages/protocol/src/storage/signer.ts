/**
 * HMAC-SHA-256 signed storage links (the embedded blob store's own origin). A link names the
 * operation, the blob key, its expiry and, for downloads, the file name and type to serve it
 * with; any change to those breaks the signature.
 */

/** What a verified link allows. */
export type LinkClaims =
  | {
      readonly operation: 'get';
      readonly key: string;
      readonly expiresAt: Date;
      readonly fileName: string;
      readonly contentType: string;
    }
  | {
      readonly operation: 'put';
      readonly key: string;
      readonly expiresAt: Date;
      readonly maxBytes: number;
    };

/** Why a link was refused. */
export type LinkRefusal = 'invalid_signature' | 'expired';

/** Signs and verifies storage links. */
export interface LinkSigner {
  /** Absolute URL of a signed link. */
  sign(claims: LinkClaims): Promise<string>;
  /** Verifies a request URL against the operation its method implies. */
  verify(
    url: URL,
    operation: LinkClaims['operation'],
    now: Date,
  ): Promise<LinkClaims | LinkRefusal>;
}

import { boundedMemo } from '../_internal/bounded-memo.ts';

/** Signatures remembered per signer: a status poll re-signs the same download link each time. */
const SIGNATURE_CACHE_ENTRIES = 4096;

/** Path prefix of storage links: `/blobs/<key>`. */
export const STORAGE_PATH_PREFIX = '/blobs/';

const encoder = new TextEncoder();

function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The expiry a link carries, in whole Unix seconds, rounded toward the later instant: a link must
 * never stop working before the instant it was signed for (a delete-after-download link ends on
 * first download + grace, to the millisecond). It may outlive it by under a second.
 */
function expiresSeconds(expiresAt: Date): number {
  return Math.ceil(expiresAt.getTime() / 1000);
}

/** The canonical string a signature covers: one field per line, in a fixed order. */
function canonical(claims: LinkClaims): string {
  const expires = String(expiresSeconds(claims.expiresAt));
  return claims.operation === 'get'
    ? ['v1', 'get', claims.key, expires, claims.fileName, claims.contentType].join('\n')
    : ['v1', 'put', claims.key, expires, String(claims.maxBytes)].join('\n');
}

/** Constant-time comparison of two strings of equal alphabet. */
function timingSafeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  let difference = left.length ^ right.length;
  for (let i = 0; i < Math.max(left.length, right.length); i += 1) {
    difference |= (left[i] ?? 0) ^ (right[i] ?? 0);
  }
  return difference === 0;
}

/**
 * Creates a signer for links on `storageBaseUrl` (e.g. `http://localhost:8081`).
 * @param secret at least 32 random bytes, kept by the server; rotating it invalidates every link.
 */
export function createLinkSigner(secret: Uint8Array, storageBaseUrl: string): LinkSigner {
  if (secret.length < 32) throw new TypeError('the link-signing secret must be at least 32 bytes');
  const base = new URL(storageBaseUrl);
  const keyPromise = crypto.subtle.importKey(
    'raw',
    secret.slice(),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const macOf = boundedMemo(SIGNATURE_CACHE_ENTRIES, async (text) => {
    const signature = await crypto.subtle.sign('HMAC', await keyPromise, encoder.encode(text));
    return toBase64Url(new Uint8Array(signature));
  });
  const build = async (claims: LinkClaims, text: string): Promise<string> => {
    const url = new URL(
      `${STORAGE_PATH_PREFIX}${claims.key.split('/').map(encodeURIComponent).join('/')}`,
      base,
    );
    url.searchParams.set('expires', String(expiresSeconds(claims.expiresAt)));
    if (claims.operation === 'get') {
      url.searchParams.set('filename', claims.fileName);
      url.searchParams.set('type', claims.contentType);
    } else {
      url.searchParams.set('max', String(claims.maxBytes));
    }
    url.searchParams.set('sig', await macOf(text));
    return url.toString();
  };
  /** Whole links by their claims: a client polling a finished document gets the same link. */
  const links = new Map<string, string>();
  return {
    async sign(claims) {
      const text = canonical(claims);
      const known = links.get(text);
      if (known !== undefined) return known;
      const link = await build(claims, text);
      links.set(text, link);
      if (links.size > SIGNATURE_CACHE_ENTRIES) {
        const oldest = links.keys().next();
        if (oldest.done !== true) links.delete(oldest.value);
      }
      return link;
    },
    async verify(url, operation, now) {
      if (!url.pathname.startsWith(STORAGE_PATH_PREFIX)) return 'invalid_signature';
      let key: string;
      try {
        key = url.pathname
          .slice(STORAGE_PATH_PREFIX.length)
          .split('/')
          .map(decodeURIComponent)
          .join('/');
      } catch {
        return 'invalid_signature';
      }
      const expiresText = url.searchParams.get('expires') ?? '';
      const signature = url.searchParams.get('sig') ?? '';
      if (!/^\d{1,12}$/.test(expiresText) || key.length === 0) return 'invalid_signature';
      const expiresAt = new Date(Number(expiresText) * 1000);
      let claims: LinkClaims;
      if (operation === 'get') {
        claims = {
          operation,
          key,
          expiresAt,
          fileName: url.searchParams.get('filename') ?? '',
          contentType: url.searchParams.get('type') ?? '',
        };
      } else {
        const maxText = url.searchParams.get('max') ?? '';
        if (!/^\d{1,15}$/.test(maxText)) return 'invalid_signature';
        claims = { operation, key, expiresAt, maxBytes: Number(maxText) };
      }
      if (!timingSafeEqual(await macOf(canonical(claims)), signature)) return 'invalid_signature';
      if (now.getTime() >= expiresAt.getTime()) return 'expired';
      return claims;
    },
  };
}
