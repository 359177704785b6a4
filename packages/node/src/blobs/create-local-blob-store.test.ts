import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { createLinkSigner, createStorageApi } from '@disarm/protocol';
import { describeBlobStoreContract } from '@disarm/protocol/testing';
import { createSqliteStore } from '@disarm/sqlite';
import { beforeEach, describe, expect, it } from 'vitest';

import { createLocalBlobStore } from './create-local-blob-store.ts';
import type { LocalBlobStore } from './create-local-blob-store.ts';

const STORAGE_URL = 'http://localhost:8081';
const signer = createLinkSigner(new Uint8Array(32).fill(7), STORAGE_URL);

let directory: string;
let blobs: LocalBlobStore;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'disarm-blobs-'));
  blobs = createLocalBlobStore({ directory, signer });
});

/** Streams made by {@link streamOf} whose consumer cancelled them. */
const cancelledStreams = new WeakSet<ReadableStream<Uint8Array>>();

/** A stream of `chunks`, optionally failing after them. */
function streamOf(chunks: (Uint8Array | string)[], failWith?: Error): ReadableStream<Uint8Array> {
  const queue = chunks.map((chunk) =>
    typeof chunk === 'string' ? new TextEncoder().encode(chunk) : chunk,
  );
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

async function text(stream: ReadableStream<Uint8Array> | undefined): Promise<string> {
  if (!stream) throw new Error('no stream');
  return new Response(stream).text();
}

/** Every file under the store folder, hidden ones included. */
async function files(): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(directory.length + 1))
    .sort();
}

describeBlobStoreContract('local folder', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'disarm-blobs-'));
  const store = createSqliteStore({ path: join(folder, 'state.sqlite') });
  const local = createLocalBlobStore({ directory: join(folder, 'blobs'), signer });
  // The storage origin the links point at, in process: it checks the signature and serves.
  const storage = createStorageApi({
    store,
    blobs: local,
    signer,
    clock: { now: () => new Date() },
    storageBaseUrl: STORAGE_URL,
    problemsBaseUrl: 'http://localhost:8080',
  });
  return {
    blobs: local,
    async keys() {
      const entries = await readdir(local.directory, {
        recursive: true,
        withFileTypes: true,
      }).catch(() => []);
      return entries
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name).slice(local.directory.length + 1))
        .sort();
    },
    fetchLink: (url, init) => storage.fetch(new Request(url, init)),
    async close() {
      await store.close();
      await rm(folder, { recursive: true, force: true });
    },
  };
});

describe('createLocalBlobStore()', () => {
  it('reads a blob larger than one chunk in order', async () => {
    const big = Buffer.alloc(300 * 1024);
    for (let index = 0; index < big.length; index += 1) big[index] = index % 251;
    await blobs.put('big', streamOf([big.subarray(0, 100_000), big.subarray(100_000)]), {
      maxBytes: big.length,
    });
    const read = Buffer.from(await new Response(await blobs.get('big')).arrayBuffer());
    expect(read.equals(big)).toBe(true);
  });

  it('answers undefined for absent keys and for folders', async () => {
    expect(await blobs.get('nothing/here')).toBeUndefined();
    expect(await blobs.stat('nothing')).toBeUndefined();
    await blobs.put('folder/blob', streamOf(['x']), { maxBytes: 1 });
    expect(await blobs.get('folder')).toBeUndefined();
    expect(await blobs.stat('folder')).toBeUndefined();
    // Under a file, not a folder.
    expect(await blobs.get('folder/blob/below')).toBeUndefined();
    await blobs.delete('folder/blob/below');
  });

  it('fails cleanly when the key cannot be created (a file where a folder must be)', async () => {
    await blobs.put('taken', streamOf(['x']), { maxBytes: 1 });
    await expect(blobs.put('taken/below', streamOf(['y']), { maxBytes: 1 })).rejects.toThrow();
    expect(await files()).toEqual(['taken']);
  });

  it('keeps concurrent puts of one key whole: the last rename wins, no temporary file remains', async () => {
    const contents = Array.from({ length: 12 }, (_, index) => String(index).repeat(5000));
    await Promise.all(
      contents.map((content) =>
        blobs.put('race', streamOf([content.slice(0, 2000), content.slice(2000)]), {
          maxBytes: 10_000,
        }),
      ),
    );
    expect(contents).toContain(await text(await blobs.get('race')));
    expect(await files()).toEqual(['race']);
  });

  it('keeps serving a blob that is deleted while it is read', async () => {
    await blobs.put('k', streamOf(['still here']), { maxBytes: 100 });
    const stream = await blobs.get('k');
    await blobs.delete('k');
    expect(await text(stream)).toBe('still here');
  });

  it('releases a read that is cancelled', async () => {
    await blobs.put('k', streamOf([Buffer.alloc(200_000, 1)]), { maxBytes: 200_000 });
    const stream = await blobs.get('k');
    const reader = stream!.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await blobs.delete('k');
    expect(await files()).toEqual([]);
  });

  it.each([
    '',
    '../escape',
    'a/../../escape',
    '/absolute',
    'a//b',
    'a/',
    '.hidden',
    'a/.tmp',
    'a/./b',
    'a\\b',
    'a b',
    'ümlaut',
    'a/..',
    '%2e%2e/x',
    'x'.repeat(513),
    Array.from({ length: 9 }, () => 'a').join('/'),
  ])('rejects the key %j everywhere, as a TypeError', async (key) => {
    const expiresAt = new Date(Date.now() + 60_000);
    expect(() => blobs.pathOf(key)).toThrow(TypeError);
    await expect(blobs.put(key, streamOf(['x']), { maxBytes: 1 })).rejects.toThrow(TypeError);
    await expect(blobs.get(key)).rejects.toThrow(TypeError);
    await expect(blobs.stat(key)).rejects.toThrow(TypeError);
    await expect(blobs.delete(key)).rejects.toThrow(TypeError);
    await expect(
      blobs.signedDownloadUrl(key, { expiresAt, fileName: 'a.png', contentType: 'image/png' }),
    ).rejects.toThrow(TypeError);
    await expect(blobs.signedUploadUrl(key, { expiresAt, maxBytes: 1 })).rejects.toThrow(TypeError);
    expect(await files()).toEqual([]);
  });

  it('maps keys to paths inside its folder', () => {
    expect(blobs.directory).toBe(directory);
    expect(blobs.pathOf('output/doc_1')).toBe(join(directory, 'output', 'doc_1'));
    expect(blobs.pathOf('a.b-c_d/e')).toBe(join(directory, 'a.b-c_d', 'e'));
  });

  it('signs download links the signer verifies', async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    const url = await blobs.signedDownloadUrl('output/doc_1', {
      expiresAt,
      fileName: 'report ü.pdf',
      contentType: 'application/pdf',
    });
    expect(url.startsWith(`${STORAGE_URL}/blobs/output/doc_1?`)).toBe(true);
    expect(await signer.verify(new URL(url), 'get', new Date())).toMatchObject({
      operation: 'get',
      key: 'output/doc_1',
      fileName: 'report ü.pdf',
      contentType: 'application/pdf',
    });
    expect(await signer.verify(new URL(url), 'put', new Date())).toBe('invalid_signature');
  });

  it('signs upload links with the method and headers the storage routes require', async () => {
    const expiresAt = new Date(Date.now() + 60_000);
    const upload = await blobs.signedUploadUrl('uploads/org_1/upl_1', {
      expiresAt,
      maxBytes: 1234,
    });
    expect(upload).toMatchObject({
      method: 'PUT',
      requiredHeaders: { 'Content-Type': 'application/octet-stream' },
    });
    expect(await signer.verify(new URL(upload.url), 'put', new Date())).toMatchObject({
      operation: 'put',
      key: 'uploads/org_1/upl_1',
      maxBytes: 1234,
    });
  });

  it('removes temporary files left by an interrupted run, and only those', async () => {
    await blobs.put('kept', streamOf(['x']), { maxBytes: 1 });
    await mkdir(join(directory, 'uploads'), { recursive: true });
    const stale = join(directory, 'uploads', '.upl_1.0123456789abcdef.tmp');
    const fresh = join(directory, '.kept.fedcba9876543210.tmp');
    await writeFile(stale, 'half an upload');
    await writeFile(fresh, 'a put in progress');
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(stale, hourAgo, hourAgo);

    expect(await blobs.removeStaleTempFiles(new Date(Date.now() - 60_000))).toBe(1);
    expect(await files()).toEqual(['.kept.fedcba9876543210.tmp', 'kept']);
    const empty = createLocalBlobStore({ directory: join(directory, 'missing'), signer });
    expect(await empty.removeStaleTempFiles(new Date())).toBe(0);
  });
});
