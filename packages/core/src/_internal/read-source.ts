import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

import { FileSource, memorySource } from './byte-source.ts';
import type { ByteSource } from './byte-source.ts';
import { formatBytes } from './bytes.ts';
import { Rejection } from './rejection.ts';

/** Where `disarm()` reads the submitted file from. */
export type SourceInput =
  | { readonly bytes: Uint8Array }
  | { readonly path: string }
  | { readonly stream: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array> };

/**
 * Opens the submitted file, never past `maxBytes`: a path is measured and opened for reading by
 * range (a family that can, such as zip and PDF, never loads it whole); bytes are used as they
 * are; a stream is read into memory and cut off as soon as it passes the ceiling. Close a
 * {@link FileSource} when done.
 * @throws {Rejection} `file_too_large` past the ceiling.
 * @throws {TypeError} for a source with no content (`bytes`, `path` or `stream`), `bytes` that
 *   are not a `Uint8Array`, or a `path` that cannot be read (its errno error is the `cause`).
 */
export async function openSource(source: SourceInput, maxBytes: number): Promise<ByteSource> {
  const tooLarge = (): Rejection =>
    new Rejection('file_too_large', `the file is larger than the ${formatBytes(maxBytes)} ceiling`);
  if ('bytes' in source) {
    // Callers in plain JavaScript pass strings; their UTF-16 length is not a byte count.
    const bytes: unknown = source.bytes;
    if (!(bytes instanceof Uint8Array)) {
      throw new TypeError(
        `source.bytes must be a Uint8Array (or Buffer), not ${bytes === null ? 'null' : typeof bytes}`,
      );
    }
    if (source.bytes.length > maxBytes) throw tooLarge();
    return memorySource(source.bytes);
  }
  if ('path' in source) {
    if (typeof source.path !== 'string' || source.path === '') {
      throw new TypeError('source.path must be a non-empty string');
    }
    const unreadable = (error: unknown): TypeError => {
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      return new TypeError(
        code === 'ENOENT' || code === 'ENOTDIR'
          ? `source.path: no such file: ${source.path}`
          : `source.path: cannot read ${source.path} (${code ?? 'unknown error'})`,
        { cause: error },
      );
    };
    const info = await stat(source.path).catch((error: unknown) => {
      throw unreadable(error);
    });
    if (!info.isFile()) throw new TypeError(`${source.path} is not a regular file`);
    if (info.size > maxBytes) throw tooLarge();
    try {
      return FileSource.open(source.path, info.size);
    } catch (error) {
      throw unreadable(error);
    }
  }
  const stream: unknown = 'stream' in source ? source.stream : undefined;
  if (stream === null || typeof stream !== 'object') {
    throw new TypeError('source needs its content: one of bytes, path or stream');
  }
  const iterable: AsyncIterable<Uint8Array> =
    source.stream instanceof ReadableStream
      ? Readable.fromWeb(source.stream as NodeReadableStream<Uint8Array>)
      : source.stream;
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of iterable) {
    total += chunk.length;
    if (total > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return memorySource(Buffer.concat(chunks, total));
}
