import { md5 as md5Digest } from '@noble/hashes/legacy.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { UPLOAD_CONTENT_TYPE } from '../storage/api.ts';
import { BlobDigestMismatchError, BlobTooLargeError, MAX_BLOB_LIST_LIMIT } from '../ports.ts';
import type { BlobStore } from '../ports.ts';

/** A blob store opened for one test of {@link describeBlobStoreContract}. */
export interface BlobStoreContractHandle {
  /** The store under test. It must start empty. */
  readonly blobs: BlobStore;
  /**
   * Every key the store holds now, sorted, including anything a write left behind under another
   * name (temporary files, objects) so that "nothing is kept" can be checked.
   */
  readonly keys: () => Promise<string[]>;
  /**
   * Follows a signed link the way a client would: over the network, or into the storage origin
   * that serves the store's links.
   */
  readonly fetchLink: (url: string, init?: RequestInit) => Promise<Response>;
  /** Closes the store and removes what it created. */
  readonly close: () => Promise<void>;
}

const MINUTE_MS = 60_000;

/** Large enough to take several parts in a multipart write of 5 MiB parts. */
const LARGE_BYTES = 11 * 1024 * 1024 + 17;

/**
 * Declares the vitest suite every {@link BlobStore} must pass: streamed writes with their size
 * ceiling and Content-MD5 check (nothing kept on refusal, the previous bytes untouched), reads,
 * sizes, idempotent deletes, paged listings by prefix and age (never an unfinished write), the
 * key grammar, and signed links a client can follow.
 *
 * @example
 * ```ts
 * describeBlobStoreContract('s3', async () => {
 *   const prefix = `test-${randomUUID()}/`;
 *   const blobs = createS3BlobStore({ client, bucket, prefix });
 *   return { blobs, keys: () => listKeys(prefix), fetchLink: fetch, close: async () => {} };
 * });
 * ```
 */
export function describeBlobStoreContract(
  name: string,
  makeStore: () => Promise<BlobStoreContractHandle>,
): void {
  describe(`BlobStore contract: ${name}`, () => {
    let handle: BlobStoreContractHandle | undefined;
    const current = (): BlobStoreContractHandle => {
      if (handle === undefined) throw new Error('the store is only open inside a test');
      return handle;
    };

    beforeEach(async () => {
      handle = await makeStore();
    });

    afterEach(async () => {
      await handle?.close();
      handle = undefined;
    });

    it('stores, reads, sizes and deletes a blob under a nested key; deleting twice succeeds', async () => {
      const { blobs, keys } = current();
      expect(
        await blobs.put('output/doc_1', streamOf(['hello ', 'world']), { maxBytes: 100 }),
      ).toEqual({ sizeBytes: 11 });
      expect(await blobs.stat('output/doc_1')).toEqual({ sizeBytes: 11 });
      expect(await text(await blobs.get('output/doc_1'))).toBe('hello world');
      expect(await keys()).toEqual(['output/doc_1']);

      await blobs.delete('output/doc_1');
      expect(await blobs.stat('output/doc_1')).toBeUndefined();
      expect(await blobs.get('output/doc_1')).toBeUndefined();
      await blobs.delete('output/doc_1');
      expect(await keys()).toEqual([]);
    });

    it('streams a blob of several write parts and reads it back in order', async () => {
      const { blobs } = current();
      const big = pattern(LARGE_BYTES);
      const chunks = [big.subarray(0, 3_000_000), big.subarray(3_000_000, 9_000_000)];
      chunks.push(big.subarray(9_000_000));
      expect(await blobs.put('big', streamOf(chunks), { maxBytes: LARGE_BYTES })).toEqual({
        sizeBytes: LARGE_BYTES,
      });
      const read = new Uint8Array(await new Response(await blobs.get('big')).arrayBuffer());
      expect(read.length).toBe(LARGE_BYTES);
      expect(md5(read)).toBe(md5(big));
    });

    it('answers undefined for absent keys', async () => {
      const { blobs } = current();
      expect(await blobs.get('nothing/here')).toBeUndefined();
      expect(await blobs.stat('nothing')).toBeUndefined();
      await blobs.put('folder/blob', streamOf(['x']), { maxBytes: 1 });
      expect(await blobs.get('folder')).toBeUndefined();
      expect(await blobs.stat('folder')).toBeUndefined();
    });

    it('replaces an existing blob whole', async () => {
      const { blobs, keys } = current();
      await blobs.put('k', streamOf(['old']), { maxBytes: 10 });
      await blobs.put('k', streamOf(['newer']), { maxBytes: 10 });
      expect(await text(await blobs.get('k'))).toBe('newer');
      expect(await keys()).toEqual(['k']);
    });

    it('accepts exactly maxBytes and an empty body', async () => {
      const { blobs } = current();
      expect(await blobs.put('exact', streamOf(['12345']), { maxBytes: 5 })).toEqual({
        sizeBytes: 5,
      });
      expect(await blobs.put('empty', streamOf([]), { maxBytes: 0 })).toEqual({ sizeBytes: 0 });
      expect(await blobs.stat('empty')).toEqual({ sizeBytes: 0 });
      expect(await text(await blobs.get('empty'))).toBe('');
    });

    it('refuses a body past maxBytes while streaming, cancels it and keeps the old bytes', async () => {
      const { blobs, keys } = current();
      await blobs.put('k', streamOf(['kept']), { maxBytes: 10 });
      const body = streamOf(['12345', '67890', 'never read']);
      const attempt = blobs.put('k', body, { maxBytes: 9 });
      await expect(attempt).rejects.toBeInstanceOf(BlobTooLargeError);
      await expect(attempt).rejects.toMatchObject({ maxBytes: 9 });
      expect(cancelledStreams.has(body)).toBe(true);
      expect(await text(await blobs.get('k'))).toBe('kept');
      expect(await keys()).toEqual(['k']);
    });

    it('refuses a large body past maxBytes after several parts and keeps nothing', async () => {
      const { blobs, keys } = current();
      const big = pattern(LARGE_BYTES);
      await expect(
        blobs.put('too-big', streamOf([big.subarray(0, 6_000_000), big.subarray(6_000_000)]), {
          maxBytes: LARGE_BYTES - 1,
        }),
      ).rejects.toBeInstanceOf(BlobTooLargeError);
      expect(await blobs.stat('too-big')).toBeUndefined();
      expect(await keys()).toEqual([]);
    });

    it('checks Content-MD5 as the bytes arrive and keeps nothing on a mismatch', async () => {
      const { blobs, keys } = current();
      await blobs.put('md5', streamOf(['abc', 'def']), {
        maxBytes: 10,
        contentMd5: md5(bytes('abcdef')),
      });
      expect(await text(await blobs.get('md5'))).toBe('abcdef');

      await expect(
        blobs.put('bad', streamOf(['abc', 'def']), {
          maxBytes: 10,
          contentMd5: md5(bytes('abcdeg')),
        }),
      ).rejects.toBeInstanceOf(BlobDigestMismatchError);
      expect(await blobs.stat('bad')).toBeUndefined();

      // Discovered only after the last part: a multipart write must be abandoned, not completed.
      const big = pattern(LARGE_BYTES);
      await expect(
        blobs.put('bad-big', streamOf([big]), {
          maxBytes: LARGE_BYTES,
          contentMd5: md5(bytes('something else')),
        }),
      ).rejects.toBeInstanceOf(BlobDigestMismatchError);
      expect(await keys()).toEqual(['md5']);
    });

    it('rejects with the body’s own error when it fails mid-way, and keeps nothing', async () => {
      const { blobs, keys } = current();
      const failure = new Error('client went away');
      await expect(
        blobs.put('uploads/upl_1', streamOf(['part one', 'part two'], failure), { maxBytes: 100 }),
      ).rejects.toBe(failure);
      expect(await blobs.stat('uploads/upl_1')).toBeUndefined();
      expect(await keys()).toEqual([]);
    });

    it('refuses chunks that are not bytes, and keeps nothing', async () => {
      const { blobs, keys } = current();
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue('text, not bytes');
          controller.close();
        },
      }) as unknown as ReadableStream<Uint8Array>;
      await expect(blobs.put('k', body, { maxBytes: 100 })).rejects.toThrow(TypeError);
      expect(await keys()).toEqual([]);
    });

    it('keeps concurrent puts of one key whole, and of different keys apart', async () => {
      const { blobs, keys } = current();
      const contents = Array.from({ length: 6 }, (_, index) => String(index).repeat(5000));
      await Promise.all(
        contents.map((content) =>
          blobs.put('race', streamOf([content.slice(0, 2000), content.slice(2000)]), {
            maxBytes: 10_000,
          }),
        ),
      );
      expect(contents).toContain(await text(await blobs.get('race')));
      await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          blobs.put(`many/k${index}`, streamOf([`value ${index}`]), { maxBytes: 100 }),
        ),
      );
      for (let index = 0; index < 10; index += 1) {
        expect(await text(await blobs.get(`many/k${index}`))).toBe(`value ${index}`);
      }
      expect(await keys()).toHaveLength(11);
    });

    it.each([
      '',
      '../escape',
      'a/../../escape',
      '/absolute',
      'a//b',
      'a/',
      '.hidden',
      'a/./b',
      'a\\b',
      'a b',
      'ümlaut',
      '%2e%2e/x',
      'x'.repeat(513),
      Array.from({ length: 9 }, () => 'a').join('/'),
    ])('rejects the key %j everywhere, as a TypeError', async (key) => {
      const { blobs, keys } = current();
      const expiresAt = new Date(Date.now() + 60_000);
      await expect(blobs.put(key, streamOf(['x']), { maxBytes: 1 })).rejects.toThrow(TypeError);
      await expect(blobs.get(key)).rejects.toThrow(TypeError);
      await expect(blobs.stat(key)).rejects.toThrow(TypeError);
      await expect(blobs.delete(key)).rejects.toThrow(TypeError);
      await expect(
        blobs.signedDownloadUrl(key, { expiresAt, fileName: 'a.png', contentType: 'image/png' }),
      ).rejects.toThrow(TypeError);
      await expect(blobs.signedUploadUrl(key, { expiresAt, maxBytes: 1 })).rejects.toThrow(
        TypeError,
      );
      expect(await keys()).toEqual([]);
    });

    it('rejects a bad maxBytes as a TypeError', async () => {
      const { blobs } = current();
      await expect(blobs.put('k', streamOf(['x']), { maxBytes: -1 })).rejects.toThrow(TypeError);
      await expect(blobs.put('k', streamOf(['x']), { maxBytes: 1.5 })).rejects.toThrow(TypeError);
    });

    it('lists the blobs under a prefix in key order, paged, with their size and time', async () => {
      const { blobs } = current();
      const before = new Date(Date.now() - MINUTE_MS);
      for (const key of ['intake/d3', 'intake/d1', 'intake/nested/d2', 'intake/d4', 'intakes/x']) {
        await blobs.put(key, streamOf([key]), { maxBytes: 100 });
      }
      await blobs.put('output/d1', streamOf(['out']), { maxBytes: 100 });
      const soon = new Date(Date.now() + MINUTE_MS);
      const all = await blobs.list('intake/', { modifiedBefore: soon, limit: 10 });
      expect(all.next).toBeUndefined();
      expect(all.blobs.map((blob) => [blob.key, blob.sizeBytes])).toEqual([
        ['intake/d1', 9],
        ['intake/d3', 9],
        ['intake/d4', 9],
        ['intake/nested/d2', 16],
      ]);
      for (const blob of all.blobs) {
        expect(blob.modifiedAt.getTime()).toBeGreaterThanOrEqual(before.getTime());
        expect(blob.modifiedAt.getTime()).toBeLessThan(soon.getTime());
      }

      // Pages look at `limit` keys each and continue after the last one looked at.
      const first = await blobs.list('intake/', { modifiedBefore: soon, limit: 3 });
      expect(first.blobs.map((blob) => blob.key)).toEqual(['intake/d1', 'intake/d3', 'intake/d4']);
      expect(first.next).toBe('intake/d4');
      const second = await blobs.list('intake/', {
        modifiedBefore: soon,
        limit: 3,
        startAfter: first.next,
      });
      expect(second).toEqual({ blobs: [all.blobs[3]], next: undefined });

      // Written after `modifiedBefore`: looked at (the page moves on), not listed.
      const old = await blobs.list('intake/', { modifiedBefore: before, limit: 2 });
      expect(old).toEqual({ blobs: [], next: 'intake/d3' });
      expect(await blobs.list('nothing/', { modifiedBefore: soon, limit: 5 })).toEqual({
        blobs: [],
        next: undefined,
      });
    });

    it('never lists a write still in progress', async () => {
      const { blobs } = current();
      let pulls = 0;
      let secondPull: () => void = () => undefined;
      const pulledTwice = new Promise<void>((resolve) => {
        secondPull = resolve;
      });
      let finish: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const body = new ReadableStream<Uint8Array>(
        {
          async pull(controller) {
            pulls += 1;
            if (pulls === 1) {
              controller.enqueue(bytes('first part'));
              return;
            }
            secondPull();
            await finished;
            controller.close();
          },
        },
        { highWaterMark: 0 },
      );
      const writing = blobs.put('intake/doc_1', body, { maxBytes: 100 });
      await pulledTwice;
      const soon = new Date(Date.now() + MINUTE_MS);
      expect(await blobs.list('intake/', { modifiedBefore: soon, limit: 10 })).toEqual({
        blobs: [],
        next: undefined,
      });
      finish();
      await writing;
      expect(
        (await blobs.list('intake/', { modifiedBefore: soon, limit: 10 })).blobs.map(
          (blob) => blob.key,
        ),
      ).toEqual(['intake/doc_1']);
    });

    it('refuses a bad prefix or page size as a TypeError', async () => {
      const { blobs } = current();
      const modifiedBefore = new Date();
      for (const prefix of ['', 'intake', '/intake/', '../', 'a//', '.hidden/']) {
        await expect(blobs.list(prefix, { modifiedBefore, limit: 1 })).rejects.toThrow(TypeError);
      }
      for (const limit of [0, -1, 1.5, MAX_BLOB_LIST_LIMIT + 1]) {
        await expect(blobs.list('intake/', { modifiedBefore, limit })).rejects.toThrow(TypeError);
      }
      await expect(
        blobs.list('intake/', { modifiedBefore, limit: 1, startAfter: 'output/x' }),
      ).rejects.toThrow(TypeError);
      await expect(
        blobs.list('intake/', { modifiedBefore: new Date(Number.NaN), limit: 1 }),
      ).rejects.toThrow(TypeError);
    });

    it('signs a download link that serves the bytes as an attachment with its file name', async () => {
      const { blobs, fetchLink } = current();
      await blobs.put('output/doc_1', streamOf(['%PDF-1.7 rebuilt']), { maxBytes: 100 });
      const url = await blobs.signedDownloadUrl('output/doc_1', {
        expiresAt: new Date(Date.now() + 60_000),
        fileName: 'report ü (final).pdf',
        contentType: 'application/pdf',
      });
      const response = await fetchLink(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('Content-Type')).toBe('application/pdf');
      expect(response.headers.get('Content-Disposition')).toBe(
        `attachment; filename="report _ (final).pdf"; filename*=UTF-8''report%20%C3%BC%20%28final%29.pdf`,
      );
      expect(await response.text()).toBe('%PDF-1.7 rebuilt');

      // A bearer token must never reach storage (spec: the download redirect).
      const withToken = await fetchLink(url, { headers: { Authorization: 'Bearer secret' } });
      expect(withToken.status).toBe(400);
      await withToken.body?.cancel();
    });

    it('signs an upload link for one PUT with the headers a client must send', async () => {
      const { blobs, keys } = current();
      const upload = await blobs.signedUploadUrl('uploads/upl_1', {
        expiresAt: new Date(Date.now() + 60_000),
        maxBytes: 1234,
      });
      expect(upload.method).toBe('PUT');
      expect(new URL(upload.url).protocol).toMatch(/^https?:$/);
      expect(upload.requiredHeaders['Content-Type']).toBe(UPLOAD_CONTENT_TYPE);
      // Making a link writes nothing.
      expect(await keys()).toEqual([]);
    });
  });
}

/** Streams made by {@link streamOf} whose consumer cancelled them. */
const cancelledStreams = new WeakSet<ReadableStream<Uint8Array>>();

function bytes(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

/** A stream of `chunks`, optionally failing after them. */
function streamOf(chunks: (Uint8Array | string)[], failWith?: Error): ReadableStream<Uint8Array> {
  const queue = chunks.map((chunk) => (typeof chunk === 'string' ? bytes(chunk) : chunk));
  const stream: ReadableStream<Uint8Array> = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = queue.shift();
      if (next) controller.enqueue(next);
      else if (failWith) controller.error(failWith);
      else controller.close();
    },
    cancel() {
      cancelledStreams.add(stream);
    },
  });
  return stream;
}

/** `length` bytes that differ from offset to offset, so a reordered part shows. */
function pattern(length: number): Uint8Array {
  const data = new Uint8Array(length);
  for (let index = 0; index < length; index += 1) data[index] = (index * 31 + (index >> 12)) % 251;
  return data;
}

/** Base64 MD5, the form of a `Content-MD5` header (RFC 1864). */
function md5(data: Uint8Array): string {
  return btoa(String.fromCharCode(...md5Digest(data)));
}

async function text(stream: ReadableStream<Uint8Array> | undefined): Promise<string> {
  if (!stream) throw new Error('no stream');
  return new Response(stream).text();
}
