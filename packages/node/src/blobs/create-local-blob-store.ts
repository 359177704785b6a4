import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

import {
  assertBlobKey,
  assertBlobKeyPrefix,
  assertBlobListOptions,
  BlobDigestMismatchError,
  BlobTooLargeError,
  StorageUnavailableError,
  isBlobKey,
  MAX_BLOB_LIST_LIMIT,
  UPLOAD_CONTENT_TYPE,
} from '@disarm/protocol';
import type { BlobStore, LinkSigner, ListedBlob, SignedUpload } from '@disarm/protocol';

import { fileStream, writeAll } from '../_internal/file-stream.ts';
import { keyToPath } from './_keys.ts';

/** Name of an in-progress `put`: hidden (keys cannot start with `.`) and marked. */
const TEMP_FILE = /^\..+\.[0-9a-f]{16}\.tmp$/;

/**
 * errno codes that say the folder cannot take or serve bytes right now, whatever the key: the
 * disk is full (`ENOSPC`) or over quota (`EDQUOT`), it fails (`EIO`) or was remounted read-only
 * after errors (`EROFS`), or the process or system is out of file descriptors (`EMFILE`,
 * `ENFILE`). Thrown as `StorageUnavailableError`, so a submission is refused with 503 and a
 * worker keeps its document for later, instead of either being a fault of ours.
 */
const UNAVAILABLE_ERRNO_CODES: ReadonlySet<string> = new Set([
  'ENOSPC',
  'EDQUOT',
  'EIO',
  'EROFS',
  'EMFILE',
  'ENFILE',
]);

/** Options of {@link createLocalBlobStore}. */
export interface LocalBlobStoreOptions {
  /** Folder holding the blobs, created when missing. Nothing else should write into it. */
  readonly directory: string;
  /**
   * Signs the storage links. Its base URL must be the origin serving `createStorageApi()` over
   * this same store.
   */
  readonly signer: LinkSigner;
}

/** A {@link BlobStore} on the local disk, with direct access to its files. */
export interface LocalBlobStore extends BlobStore {
  /** Absolute path of the store's folder. */
  readonly directory: string;
  /**
   * The file holding `key`, so a worker process can read it in place instead of a copy. The
   * file may not exist; it must be treated as read-only.
   * @throws {TypeError} for an invalid key.
   */
  pathOf(key: string): string;
  /**
   * Removes temporary files of `put`s that never finished (a crash mid-upload), last modified
   * before `before`. Returns how many were removed.
   */
  removeStaleTempFiles(before: Date): Promise<number>;
}

/**
 * A blob store in a local folder: one file per key (`output/doc_1` is `<directory>/output/doc_1`),
 * with links signed by a {@link LinkSigner} and served by protocol's `createStorageApi()` on its
 * own origin.
 *
 * `put` streams to a hidden temporary file beside the target, checks the size ceiling and the
 * MD5 as the bytes arrive, then fsyncs and renames: a reader sees the whole blob or none, and it
 * is on disk before `put` resolves. A refused or interrupted `put` leaves nothing behind.
 *
 * Keys are made by the service; one with characters other than letters, digits, `_`, `-`, `.`
 * and `/`, or with an empty or dot-leading segment, is a `TypeError` — it could otherwise name a
 * path outside the folder.
 *
 * @example
 * ```ts
 * const signer = createLinkSigner(secret, 'http://localhost:8081');
 * const blobs = createLocalBlobStore({ directory: '.data/blobs', signer });
 * await blobs.put('output/doc_1', stream, { maxBytes: 100 * 1024 ** 2 });
 * const url = await blobs.signedDownloadUrl('output/doc_1', { expiresAt, fileName: 'a.png', contentType: 'image/png' });
 * ```
 */
export function createLocalBlobStore(options: LocalBlobStoreOptions): LocalBlobStore {
  if (typeof options.directory !== 'string' || options.directory === '') {
    throw new TypeError('directory must be a non-empty path');
  }
  const root = resolve(options.directory);
  const { signer } = options;
  const pathOf = (key: string): string => keyToPath(root, key);

  const store: LocalBlobStore = {
    directory: root,
    pathOf,

    async put(key, body, { maxBytes, contentMd5 }) {
      const target = pathOf(key);
      if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
        throw new TypeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
      }
      const folder = dirname(target);
      await mkdir(folder, { recursive: true });
      const temp = join(folder, `.${basename(target)}.${randomBytes(8).toString('hex')}.tmp`);
      const reader = body.getReader();
      let handle: FileHandle | undefined;
      let kept = false;
      try {
        handle = await open(temp, 'wx', 0o600);
        const digest = contentMd5 === undefined ? undefined : createHash('md5');
        let sizeBytes = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (!(value instanceof Uint8Array))
            throw new TypeError('the body must yield Uint8Array chunks');
          sizeBytes += value.byteLength;
          if (sizeBytes > maxBytes) throw new BlobTooLargeError(maxBytes);
          digest?.update(value);
          await writeAll(handle, value);
        }
        if (digest && digest.digest('base64') !== contentMd5) throw new BlobDigestMismatchError();
        await handle.sync();
        await handle.close();
        handle = undefined;
        await rename(temp, target);
        await syncFolder(folder);
        kept = true;
        return { sizeBytes };
      } finally {
        if (!kept) {
          await reader.cancel().catch(() => undefined);
          await handle?.close().catch(() => undefined);
          await rm(temp, { force: true });
        }
        reader.releaseLock();
      }
    },

    async get(key) {
      let handle: FileHandle;
      try {
        handle = await open(pathOf(key), 'r');
      } catch (error) {
        if (isAbsent(error)) return undefined;
        throw error;
      }
      // Open first, then check: a concurrent delete cannot pull the file from under the stream.
      const info = await handle.stat().catch(async (error: unknown) => {
        await handle.close();
        throw error;
      });
      if (!info.isFile()) {
        await handle.close();
        return undefined;
      }
      return fileStream(handle);
    },

    async stat(key) {
      try {
        const info = await stat(pathOf(key));
        return info.isFile() ? { sizeBytes: info.size } : undefined;
      } catch (error) {
        if (isAbsent(error)) return undefined;
        throw error;
      }
    },

    async delete(key) {
      try {
        await unlink(pathOf(key));
      } catch (error) {
        if (!isAbsent(error)) throw error;
      }
    },

    async list(prefix, options) {
      assertBlobKeyPrefix(prefix);
      assertBlobListOptions(prefix, options, MAX_BLOB_LIST_LIMIT);
      const folder = pathOf(prefix.slice(0, -1));
      // Names only (no stat) for the whole folder: the order of keys needs them all. Temporary
      // files of unfinished puts are hidden names, never keys, so they are never listed.
      const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(
        (error: unknown) => {
          if (isAbsent(error)) return [];
          throw error;
        },
      );
      const keys = entries
        .filter((entry) => entry.isFile())
        .map(
          (entry) =>
            prefix + relative(folder, join(entry.parentPath, entry.name)).split(sep).join('/'),
        )
        .filter(
          (key) => isBlobKey(key) && (options.startAfter === undefined || key > options.startAfter),
        )
        .sort();
      const examined = keys.slice(0, options.limit);
      const blobs: ListedBlob[] = [];
      for (const key of examined) {
        const info = await stat(pathOf(key)).catch(() => undefined);
        // Gone since the folder was read: nothing to list.
        if (!info?.isFile()) continue;
        if (info.mtimeMs < options.modifiedBefore.getTime()) {
          blobs.push({ key, modifiedAt: info.mtime, sizeBytes: info.size });
        }
      }
      return { blobs, next: keys.length > examined.length ? examined.at(-1) : undefined };
    },

    async signedDownloadUrl(key, { expiresAt, fileName, contentType }) {
      // A link names no path: the key's form is all there is to check (the storage route maps it).
      assertBlobKey(key);
      return signer.sign({ operation: 'get', key, expiresAt, fileName, contentType });
    },

    async signedUploadUrl(key, { expiresAt, maxBytes }): Promise<SignedUpload> {
      assertBlobKey(key);
      return {
        url: await signer.sign({ operation: 'put', key, expiresAt, maxBytes }),
        method: 'PUT',
        requiredHeaders: { 'Content-Type': UPLOAD_CONTENT_TYPE },
      };
    },

    async removeStaleTempFiles(before) {
      let removed = 0;
      const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(
        (error: unknown) => {
          if (isAbsent(error)) return [];
          throw error;
        },
      );
      for (const entry of entries) {
        if (!entry.isFile() || !TEMP_FILE.test(entry.name)) continue;
        const path = join(entry.parentPath, entry.name);
        const info = await stat(path).catch(() => undefined);
        if (info && info.mtimeMs < before.getTime()) {
          await rm(path, { force: true });
          removed += 1;
        }
      }
      return removed;
    },
  };
  // A full or failing disk is the port's `StorageUnavailableError`, on every operation.
  return {
    ...store,
    put: (key, body, options) => unavailableOnFault(() => store.put(key, body, options)),
    get: (key) => unavailableOnFault(() => store.get(key)),
    stat: (key) => unavailableOnFault(() => store.stat(key)),
    delete: (key) => unavailableOnFault(() => store.delete(key)),
  };
}

/** Makes a rename durable (POSIX: the directory entry lives in the folder's own data). */
async function syncFolder(folder: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(folder, 'r');
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot open or fsync a folder; the file itself is synced.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Runs a blob operation, its resource faults thrown as {@link StorageUnavailableError}. */
async function unavailableOnFault<R>(operation: () => Promise<R>): Promise<R> {
  try {
    return await operation();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (typeof code === 'string' && UNAVAILABLE_ERRNO_CODES.has(code)) {
      throw new StorageUnavailableError('blob-store', code, { cause: error });
    }
    throw error;
  }
}

function isAbsent(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}
