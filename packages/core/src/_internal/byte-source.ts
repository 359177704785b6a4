import { closeSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

import { asBuffer } from './bytes.ts';

/** Bytes read from a file per step of a sequential pass (hashing, scanning, comparing). */
export const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Random access to the content of one file, held in memory or read from disk by range, so that a
 * family that can (zip, PDF) never loads a large submitted file whole: it reads the central
 * directory, a member, an object, as it needs them.
 */
export interface ByteSource {
  /** Bytes in the content. */
  readonly length: number;
  /** The content when it is held in memory (a view, never copied), else `undefined`. */
  readonly bytes: Uint8Array | undefined;
  /**
   * `length` bytes from `offset`, fewer where the content ends first: a view of memory, or a
   * buffer of its own read from the file.
   * @throws {RangeError} for a negative or unsafe offset or length.
   */
  read(offset: number, length: number): Uint8Array;
  /** The bytes of `[start, end)` in order, in chunks of at most {@link READ_CHUNK_BYTES}. */
  chunks(start?: number, end?: number): AsyncGenerator<Uint8Array, void, undefined>;
  /** The whole content in memory (a file is read whole: only where the family needs it). */
  readAll(): Promise<Uint8Array>;
}

/** A source over bytes already in memory. */
export function memorySource(bytes: Uint8Array): ByteSource {
  return {
    length: bytes.length,
    bytes,
    read(offset, length) {
      checkRange(offset, length);
      return bytes.subarray(offset, Math.min(bytes.length, offset + length));
    },
    chunks: (start = 0, end = bytes.length) => chunksOf(bytes, start, end),
    readAll: () => Promise.resolve(bytes),
  };
}

// An async generator, to match a file's chunks; it never waits.
// eslint-disable-next-line @typescript-eslint/require-await
async function* chunksOf(
  bytes: Uint8Array,
  start: number,
  end: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  for (let at = start; at < Math.min(end, bytes.length); at += READ_CHUNK_BYTES) {
    yield bytes.subarray(at, Math.min(end, bytes.length, at + READ_CHUNK_BYTES));
  }
}

/**
 * The first `length` bytes of a source, as a source of its own (a zip read without the bytes
 * appended after its end record).
 */
export function prefixOf(source: ByteSource, length: number): ByteSource {
  if (length >= source.length) return source;
  if (source.bytes !== undefined) return memorySource(source.bytes.subarray(0, length));
  return {
    length,
    bytes: undefined,
    read: (offset, count) => source.read(offset, Math.max(0, Math.min(count, length - offset))),
    chunks: (start = 0, end = length) => source.chunks(start, Math.min(end, length)),
    readAll: async () => (await source.readAll()).subarray(0, length),
  };
}

/**
 * A file on disk read by range. Reads are synchronous (`pread`) for the small, scattered reads of
 * a parser (headers, a directory, one member), and asynchronous for sequential passes over the
 * whole file ({@link FileSource.chunks}). The file must not change while it is read: the engine
 * reads the submitted file, which the caller owns until `disarm()` returns.
 */
export class FileSource implements ByteSource {
  readonly path: string;
  readonly length: number;
  readonly bytes = undefined;
  #fd: number | undefined;

  private constructor(path: string, fd: number, length: number) {
    this.path = path;
    this.#fd = fd;
    this.length = length;
  }

  /** Opens `path` for reading; `size` is what the caller measured (the file is held to it). */
  static open(path: string, size: number): FileSource {
    return new FileSource(path, openSync(path, 'r'), size);
  }

  read(offset: number, length: number): Uint8Array {
    checkRange(offset, length);
    const count = Math.max(0, Math.min(length, this.length - offset));
    const buffer = Buffer.allocUnsafe(count);
    let filled = 0;
    while (filled < count) {
      const read = readSync(this.#open(), buffer, filled, count - filled, offset + filled);
      if (read === 0) throw new RangeError(`${this.path} ended before its measured size`);
      filled += read;
    }
    return buffer;
  }

  async *chunks(start = 0, end = this.length): AsyncGenerator<Uint8Array, void, undefined> {
    const handle: FileHandle = await open(this.path, 'r');
    try {
      const last = Math.min(end, this.length);
      for (let at = start; at < last;) {
        const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, last - at));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, at);
        if (bytesRead === 0) throw new RangeError(`${this.path} ended before its measured size`);
        at += bytesRead;
        yield buffer.subarray(0, bytesRead);
      }
    } finally {
      await handle.close();
    }
  }

  readAll(): Promise<Uint8Array> {
    return Promise.resolve(this.read(0, this.length));
  }

  /** Closes the file; reading afterwards throws. Closing twice does nothing. */
  close(): void {
    if (this.#fd === undefined) return;
    closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): number {
    if (this.#fd === undefined) throw new TypeError(`${this.path} is closed`);
    return this.#fd;
  }
}

function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`cannot read ${length} bytes at ${offset}`);
  }
}

/**
 * Whether two contents are byte for byte the same, compared chunk by chunk (neither is loaded
 * whole).
 */
export function sameContent(a: ByteSource, b: ByteSource): boolean {
  if (a.length !== b.length) return false;
  if (a.bytes !== undefined && b.bytes !== undefined) {
    return asBuffer(a.bytes).equals(asBuffer(b.bytes));
  }
  for (let at = 0; at < a.length; at += READ_CHUNK_BYTES) {
    const length = Math.min(READ_CHUNK_BYTES, a.length - at);
    if (!asBuffer(a.read(at, length)).equals(asBuffer(b.read(at, length)))) return false;
  }
  return true;
}

/** Whether `text` occurs anywhere in the content, searched chunk by chunk. */
export async function sourceIncludes(source: ByteSource, text: string): Promise<boolean> {
  const needle = Buffer.from(text, 'latin1');
  if (source.bytes !== undefined) return asBuffer(source.bytes).includes(needle);
  // Each chunk is searched, and so is where it meets the one before, for a match across them.
  let tail = Buffer.alloc(0);
  for await (const chunk of source.chunks()) {
    const view = asBuffer(chunk);
    const seam = Buffer.concat([tail, view.subarray(0, needle.length - 1)]);
    if (seam.includes(needle) || view.includes(needle)) return true;
    tail = Buffer.from(view.subarray(Math.max(0, view.length - needle.length + 1)));
  }
  return false;
}

/** Pages a {@link PagedReader} keeps. */
const PAGE_COUNT = 16;
/** Bytes of one page of a {@link PagedReader}. */
const PAGE_BYTES = 64 * 1024;

/**
 * Little-endian reads at absolute offsets of a source, for parsers that hop between a file's
 * records (the zip walker): memory is read in place, a file through a few cached pages, so a walk
 * over a large archive reads its headers, never its data.
 */
export class PagedReader {
  readonly length: number;
  readonly #source: ByteSource;
  readonly #bytes: Uint8Array | undefined;
  readonly #pages = new Map<number, Uint8Array>();

  constructor(source: ByteSource) {
    this.#source = source;
    this.#bytes = source.bytes;
    this.length = source.length;
  }

  /** The byte at `offset` (0 past the end: callers check bounds first). */
  byte(offset: number): number {
    if (this.#bytes !== undefined) return this.#bytes[offset] ?? 0;
    if (offset < 0 || offset >= this.length) return 0;
    const page = this.#page(Math.floor(offset / PAGE_BYTES));
    return page[offset % PAGE_BYTES] ?? 0;
  }

  u16(offset: number): number {
    return this.byte(offset) | (this.byte(offset + 1) << 8);
  }

  u32(offset: number): number {
    return (
      (this.byte(offset) |
        (this.byte(offset + 1) << 8) |
        (this.byte(offset + 2) << 16) |
        (this.byte(offset + 3) << 24)) >>>
      0
    );
  }

  /** `[start, end)`, clipped to the content: a view of memory, a copy from a file. */
  slice(start: number, end: number): Uint8Array {
    const from = Math.max(0, Math.min(start, this.length));
    const to = Math.max(from, Math.min(end, this.length));
    if (this.#bytes !== undefined) return this.#bytes.subarray(from, to);
    return this.#source.read(from, to - from);
  }

  #page(index: number): Uint8Array {
    const cached = this.#pages.get(index);
    if (cached !== undefined) {
      // Most recently used last, so the oldest is dropped first.
      this.#pages.delete(index);
      this.#pages.set(index, cached);
      return cached;
    }
    const page = this.#source.read(index * PAGE_BYTES, PAGE_BYTES);
    this.#pages.set(index, page);
    if (this.#pages.size > PAGE_COUNT) {
      const oldest = this.#pages.keys().next().value;
      if (oldest !== undefined) this.#pages.delete(oldest);
    }
    return page;
  }
}
