import { once } from 'node:events';
import { createWriteStream, openSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Writable } from 'node:stream';

import { FileSource, memorySource } from './byte-source.ts';
import type { ByteSource } from './byte-source.ts';
import { asBuffer } from './bytes.ts';

/**
 * Where a rebuilt file is written as it is made, in order: memory, or a file on disk, so that a
 * family that writes piece by piece (zip, PDF) never holds a large output whole.
 */
export interface ByteSink {
  /** The sink as a stream to pipe into (a zip writer's output). */
  readonly stream: Writable;
  /** Bytes written so far. */
  readonly length: number;
  /** Writes `chunk`; resolves once the sink can take more (back-pressure). */
  write(chunk: Uint8Array): Promise<void>;
  /**
   * Ends the content and opens it for reading back (verify before release). Nothing may be
   * written afterwards.
   */
  finish(): Promise<ByteSource>;
}

/** A sink that keeps the content in memory; `finish` joins it into one buffer. */
export function memorySink(): ByteSink {
  const chunks: Buffer[] = [];
  let length = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      length += chunk.length;
      callback();
    },
  });
  return {
    stream,
    get length() {
      return length;
    },
    write: (chunk) => writeTo(stream, chunk),
    async finish() {
      stream.end();
      await once(stream, 'finish');
      const [only] = chunks;
      return memorySource(chunks.length === 1 && only ? only : Buffer.concat(chunks));
    },
  };
}

/** A file sink: where it writes, and how to remove what it wrote. */
export interface FileSink extends ByteSink {
  readonly path: string;
  /** Closes the file (if open) and removes it. Never throws for a file already gone. */
  discard(): Promise<void>;
}

/**
 * A sink that writes a new file at `path`, created here: an existing file is never replaced (nor
 * removed by {@link FileSink.discard}). Its content is read back from disk by range, never
 * loaded whole.
 * @throws {Error} the system's error (`EEXIST` for an existing path, `ENOENT` for a missing
 *   folder) when the file cannot be created.
 */
export function fileSink(path: string): FileSink {
  const stream = createWriteStream(path, { fd: openSync(path, 'wx', 0o600) });
  // Errors surface on the next write or on finish; until then nothing listens.
  let failure: Error | undefined;
  stream.on('error', (error) => {
    failure ??= error;
  });
  let length = 0;
  const counted = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      length += chunk.length;
      if (failure) {
        callback(failure);
        return;
      }
      if (stream.write(chunk)) callback();
      else {
        stream.once('drain', () => {
          callback();
        });
      }
    },
    final(callback) {
      stream.end(() => {
        callback(failure ?? null);
      });
    },
  });
  let source: FileSource | undefined;
  return {
    path,
    stream: counted,
    get length() {
      return length;
    },
    write: (chunk) => writeTo(counted, chunk),
    async finish() {
      counted.end();
      await once(counted, 'finish');
      if (failure) throw failure;
      const { size } = await stat(path);
      source = FileSource.open(path, size);
      return source;
    },
    async discard() {
      source?.close();
      counted.destroy();
      stream.destroy();
      if (!stream.closed) await once(stream, 'close').catch(() => undefined);
      await rm(path, { force: true });
    },
  };
}

async function writeTo(stream: Writable, chunk: Uint8Array): Promise<void> {
  if (!stream.write(asBuffer(chunk))) await once(stream, 'drain');
}
