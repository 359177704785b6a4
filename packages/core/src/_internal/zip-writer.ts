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
  for (const entry of entries) {
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
          source().then(
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
