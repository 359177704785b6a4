import { createDecipheriv } from 'node:crypto';

import { PDFParser, ParseSpeeds } from '@cantoo/pdf-lib';
import type { PDFContext } from '@cantoo/pdf-lib';

import { Rejection } from '../../_internal/rejection.ts';

/** What the parser asks of its decryption (pdf-lib does not export the type by name). */
type CryptoFactory = NonNullable<Parameters<typeof PDFParser.forBytesWithOptions>[5]>;

/**
 * Parses a PDF 2.0 file (security handler revision 5 or 6) whose owner password is empty, with
 * the file encryption key that password yields (ISO 32000-2 7.6.4.3.3 Algorithm 2.A). pdf-lib
 * only tries the empty password as the user password, so it is given a decryption of ours:
 * AESV3 (7.6.3.3) uses the file key itself for every string and stream, without a per-object key.
 *
 * pdf-lib decrypts strings and streams alike, with one filter: a file whose `/StrF` and `/StmF`
 * name different methods is refused rather than read half-decrypted.
 */
export async function parseWithFileKey(
  bytes: Uint8Array,
  key: Uint8Array,
  methods: { readonly strings: string; readonly streams: string },
): Promise<PDFContext> {
  if (methods.strings !== methods.streams) {
    throw new Rejection(
      'password_protected',
      `the PDF encrypts strings (${methods.strings}) and streams (${methods.streams}) differently, which this engine cannot decrypt`,
    );
  }
  const method = methods.streams;
  if (method !== 'AESV3' && method !== 'Identity' && method !== 'None') {
    throw new Rejection(
      'password_protected',
      `the PDF is encrypted with the ${method} crypt filter, which a revision 5 or 6 security handler does not use`,
    );
  }
  const decryptBytes =
    method === 'AESV3'
      ? (data: Uint8Array): Uint8Array => decryptAes256(key, data)
      : (data: Uint8Array): Uint8Array => data;
  const decryption = {
    encryptionKey: key,
    createCipherTransform: () => ({ decryptBytes }),
  };
  const context = await PDFParser.forBytesWithOptions(
    bytes,
    ParseSpeeds.Fastest,
    false,
    false,
    false,
    // The parser calls only these two members of pdf-lib's own decryption class.
    decryption as unknown as CryptoFactory,
  ).parseDocument();
  // As PDFDocument.load does for a decrypted file: the rebuilt copy is written unencrypted.
  delete context.trailerInfo.Encrypt;
  return context;
}

/**
 * AES-256 in CBC mode with the 16-byte initialisation vector in front and PKCS #5 padding
 * (ISO 32000-2 7.6.3.1). Read as leniently as readers do: a last block whose padding is not valid
 * is kept whole, bytes past the last whole block are dropped, and data shorter than a vector
 * decrypts to nothing.
 */
function decryptAes256(key: Uint8Array, data: Uint8Array): Uint8Array {
  if (data.length < 32) return new Uint8Array();
  const blocks = data.subarray(16, 16 + Math.floor((data.length - 16) / 16) * 16);
  const decipher = createDecipheriv('aes-256-cbc', key, data.subarray(0, 16));
  decipher.setAutoPadding(false);
  const plain = Buffer.concat([decipher.update(blocks), decipher.final()]);
  const pad = plain[plain.length - 1] ?? 0;
  if (pad < 1 || pad > 16) return plain;
  for (let i = plain.length - pad; i < plain.length; i += 1) {
    if (plain[i] !== pad) return plain;
  }
  return plain.subarray(0, plain.length - pad);
}
