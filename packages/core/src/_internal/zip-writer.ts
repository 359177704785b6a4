import { Readable } from 'node:stream';

import yazl from 'yazl';

import { asBuffer } from './bytes.ts';

/** One entry of a zip being written. */
export type ZipWriteEntry =
  | {
      readonly path: string;
      /**
       * The data, or a function that makes it when the entry's turn comes: then only one lazy
       * entry's data is alive at a time (a package rebuilt part by part stays bounded by its
       * largest part). A rejection it throws fails the whole write.
       */
      readonly bytes: Uint8Array | (() => Promise<Uint8Array>);
      readonly modifiedAt: Date;
      /** Deflate the data; leave off for formats that are compressed already. */
      readonly compress: boolean;
    }
  | { readonly path: string; readonly directory: true; readonly modifiedAt: Date };

/**
 * Lazy entries are made one ahead: while zlib deflates entry N on the thread pool, entry N + 1
 * is read and rewritten on the main thread. At most two lazy entries' data are alive at once.
 */
class Prefetch {
  readonly #entries: readonly ZipWriteEntry[];
  readonly #started = new Map<number, Promise<Uint8Array>>();

  constructor(entries: readonly ZipWriteEntry[]) {
    this.#entries = entries;
  }

  /** The data of lazy entry `index`; starts making the next lazy entry. */
  take(index: number): Promise<Uint8Array> {
    const data = this.#start(index);
    this.#started.delete(index);
    for (let next = index + 1; next < this.#entries.length; next += 1) {
      const entry = this.#entries[next];
      if (entry === undefined || 'directory' in entry || typeof entry.bytes !== 'function')
        continue;
      // Made now, awaited when its turn comes; a failure then fails the write (never unhandled).
      this.#start(next).catch(() => undefined);
      break;
    }
    return data;
  }

  #start(index: number): Promise<Uint8Array> {
    const started = this.#started.get(index);
    if (started) return started;
    const entry = this.#entries[index];
    const source = entry && !('directory' in entry) ? entry.bytes : undefined;
    const data =
      typeof source === 'function'
        ? // Started on a later turn, so the current entry's stream is handed to yazl first.
          new Promise<void>((resolve) => setImmediate(resolve)).then(source)
        : Promise.resolve(source ?? new Uint8Array());
    this.#started.set(index, data);
    return data;
  }
}

/** Regular file, rw-r--r--. */
const FILE_MODE = 0o100644;
/** Directory, rwxr-xr-x. */
const DIRECTORY_MODE = 0o040755;

/**
 * Writes a fresh zip: entries in the given order, DOS timestamps only (no extra fields), no
 * comments, nothing before the first local header or after the end record.
 */
export async function writeZip(entries: readonly ZipWriteEntry[]): Promise<Uint8Array> {
  const zip = new yazl.ZipFile();
  const made = new Prefetch(entries);
  for (const [index, entry] of entries.entries()) {
    if ('directory' in entry) {
      zip.addEmptyDirectory(entry.path, {
        mtime: entry.modifiedAt,
        mode: DIRECTORY_MODE,
        forceDosTimestamp: true,
      });
    } else if (entry.compress) {
      // yazl deflates every added buffer at once; a lazy stream is deflated only when its turn
      // comes, so an archive of thousands of members holds one zlib state, not thousands.
      const source = entry.bytes;
      zip.addReadStreamLazy(
        entry.path,
        {
          mtime: entry.modifiedAt,
          mode: FILE_MODE,
          compress: true,
          forceDosTimestamp: true,
          ...(typeof source === 'function' ? {} : { size: source.length }),
        },
        (callback) => {
          if (typeof source !== 'function') {
            callback(null, Readable.from([asBuffer(source)]));
            return;
          }
          made.take(index).then(
            (data) => {
              callback(null, Readable.from([asBuffer(data)]));
            },
            (error: unknown) => {
              callback(
                error instanceof Error ? error : new Error(String(error)),
                Readable.from([]),
              );
            },
          );
        },
      );
    } else {
      if (typeof entry.bytes === 'function') {
        // A stored entry's sizes go in its local header: its data must be known up front.
        throw new TypeError('a stored zip entry needs its bytes up front');
      }
      zip.addBuffer(asBuffer(entry.bytes), entry.path, {
        mtime: entry.modifiedAt,
        mode: FILE_MODE,
        compress: false,
        forceDosTimestamp: true,
      });
    }
  }
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, rejectWrite) => {
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => {
      resolve();
    });
    zip.outputStream.on('error', rejectWrite);
    // A lazy entry that fails is reported on the zip itself; the output then never ends.
    zip.on('error', rejectWrite);
  });
  zip.end();
  await done;
  return Buffer.concat(chunks);
}
