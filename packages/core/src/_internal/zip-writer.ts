import { Readable } from 'node:stream';

import yazl from 'yazl';

import { asBuffer } from './bytes.ts';

/** One entry of a zip being written. */
export type ZipWriteEntry =
  | {
      readonly path: string;
      readonly bytes: Uint8Array;
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
      const data = asBuffer(entry.bytes);
      zip.addReadStreamLazy(
        entry.path,
        {
          mtime: entry.modifiedAt,
          mode: FILE_MODE,
          compress: true,
          forceDosTimestamp: true,
          size: data.length,
        },
        (callback) => {
          callback(null, Readable.from([data]));
        },
      );
    } else {
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
  });
  zip.end();
  await done;
  return Buffer.concat(chunks);
}
