import { describe, expect, it } from 'vitest';

import { createLinkSigner } from './signer.ts';

const SECRET = new Uint8Array(32).fill(7);
const NOW = new Date('2026-01-01T00:00:00Z');
const LATER = new Date('2026-01-01T01:00:00Z');

describe('storage link signer', () => {
  const signer = createLinkSigner(SECRET, 'http://localhost:8081');

  it('round-trips download and upload claims', async () => {
    const get = await signer.sign({
      operation: 'get',
      key: 'output/doc_1',
      expiresAt: LATER,
      fileName: 'résumé final.pdf',
      contentType: 'application/pdf',
    });
    expect(get.startsWith('http://localhost:8081/blobs/output/doc_1?')).toBe(true);
    expect(await signer.verify(new URL(get), 'get', NOW)).toMatchObject({
      key: 'output/doc_1',
      fileName: 'résumé final.pdf',
    });
    const put = await signer.sign({
      operation: 'put',
      key: 'uploads/upl_1',
      expiresAt: LATER,
      maxBytes: 100,
    });
    expect(await signer.verify(new URL(put), 'put', NOW)).toMatchObject({ maxBytes: 100 });
  });

  it('refuses a tampered, cross-operation, foreign or expired link', async () => {
    const get = await signer.sign({
      operation: 'get',
      key: 'output/doc_1',
      expiresAt: LATER,
      fileName: 'a.pdf',
      contentType: 'application/pdf',
    });
    const tampered = new URL(get);
    tampered.searchParams.set('filename', 'a.html');
    expect(await signer.verify(tampered, 'get', NOW)).toBe('invalid_signature');
    const otherKey = new URL(get.replace('doc_1', 'doc_2'));
    expect(await signer.verify(otherKey, 'get', NOW)).toBe('invalid_signature');
    expect(await signer.verify(new URL(get), 'put', NOW)).toBe('invalid_signature');
    const foreign = createLinkSigner(new Uint8Array(32).fill(8), 'http://localhost:8081');
    expect(await foreign.verify(new URL(get), 'get', NOW)).toBe('invalid_signature');
    expect(await signer.verify(new URL(get), 'get', LATER)).toBe('expired');
    const extended = new URL(get);
    extended.searchParams.set('expires', String(Math.floor(LATER.getTime() / 1000) + 3600));
    expect(await signer.verify(extended, 'get', LATER)).toBe('invalid_signature');
  });

  it('rounds a link’s expiry up to the next whole second, never down', async () => {
    // A delete-after-download link ends at first download + grace, on a millisecond: rounded
    // down it would stop working up to a second early.
    const expiresAt = new Date(LATER.getTime() + 300);
    for (const claims of [
      {
        operation: 'get',
        key: 'output/doc_1',
        expiresAt,
        fileName: 'a.pdf',
        contentType: 'application/pdf',
      },
      { operation: 'put', key: 'uploads/upl_1', expiresAt, maxBytes: 100 },
    ] as const) {
      const link = new URL(await signer.sign(claims));
      expect(link.searchParams.get('expires')).toBe(String(LATER.getTime() / 1000 + 1));
      const justBefore = new Date(expiresAt.getTime() - 1);
      expect(await signer.verify(link, claims.operation, justBefore)).toMatchObject({
        key: claims.key,
      });
      expect(await signer.verify(link, claims.operation, new Date(LATER.getTime() + 1000))).toBe(
        'expired',
      );
    }
    // An instant on a whole second is kept as it is.
    const exact = await signer.sign({
      operation: 'put',
      key: 'uploads/upl_2',
      expiresAt: LATER,
      maxBytes: 1,
    });
    expect(new URL(exact).searchParams.get('expires')).toBe(String(LATER.getTime() / 1000));
  });

  it('needs a 32-byte secret', () => {
    expect(() => createLinkSigner(new Uint8Array(16), 'http://x')).toThrow(TypeError);
  });
});
