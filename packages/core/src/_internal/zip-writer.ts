import { Readable } from 'node:stream';

import yazl from 'yazl';

import { asBuffer } from './bytes.ts';

/** Data made in chunks when its entry's turn comes. */
export type LazyBytes = () => AsyncIterable<Uint8Array>;

/** One entry of a zip being written. */
export type ZipWriteEntry =
  | {
      readonly path: string;
      /**
       * The data, or a function that makes it in chunks when the entry's turn comes: then only
       * the lazy entry being written and the next one are alive at a time (a package rebuilt part
       * by part stays bounded by its largest parts), and the chunks are deflated as they come. A
       * rejection it throws fails the whole write.
       */
      readonly bytes: Uint8Array | LazyBytes;
      readonly modifiedAt: Date;
      /** Deflate the data; leave off for formats that are compressed already. */
      readonly compress: boolean;
    }
  | { readonly path: string; readonly directory: true; readonly modifiedAt: Date };

/**
 * One lazy entry's data, made eagerly from the moment it is started: chunks wait here until the
 * zip writer reads them. A failure is reported to `fail` and ends the data (the write is failed
 * by then, so the zip writer never waits on it).
 */
class Production {
  readonly #chunks: Uint8Array[] = [];
  #finished = false;
  #wake: (() => void) | undefined;

  constructor(make: LazyBytes, fail: (error: unknown) => void) {
    void this.#run(make, fail);
  }

  async #run(make: LazyBytes, fail: (error: unknown) => void): Promise<void> {
    try {
      // Started on a later turn, so the entry being written is handed to yazl first.
      await new Promise<void>((resolve) => {
        setImmediate(resolve);
      });
      for await (const chunk of make()) {
        this.#chunks.push(chunk);
        this.#wake?.();
      }
    } catch (error) {
      fail(error);
    }
    this.#finished = true;
    this.#wake?.();
  }

  /** The chunks in order, as they come. Never throws. */
  async *drain(): AsyncGenerator<Buffer, void, undefined> {
    for (;;) {
      const chunk = this.#chunks.shift();
      if (chunk !== undefined) {
        yield asBuffer(chunk);
        continue;
      }
      if (this.#finished) return;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }
}

/**
 * Lazy entries are made one ahead: while entry N's chunks are deflated (zlib works on the thread
 * pool between the main thread's slices), entry N + 1 is read and rewritten. At most two lazy
 * entries' data are alive at once.
 */
class Prefetch {
  readonly #entries: readonly ZipWriteEntry[];
  readonly #started = new Map<number, Production>();
  readonly #fail: (error: unknown) => void;
  /** Set once the write failed: nothing more is made. */
  stopped = false;

  constructor(entries: readonly ZipWriteEntry[], fail: (error: unknown) => void) {
    this.#entries = entries;
    this.#fail = fail;
  }

  /** The data of lazy entry `index` as a stream; starts making the next lazy entry. */
  take(index: number): Readable {
    const production = this.#start(index);
    this.#started.delete(index);
    for (let next = index + 1; next < this.#entries.length; next += 1) {
      if (this.#lazy(next) === undefined) continue;
      this.#start(next);
      break;
    }
    return production === undefined ? Readable.from([]) : Readable.from(production.drain());
  }

  #lazy(index: number): LazyBytes | undefined {
    const entry = this.#entries[index];
    if (entry === undefined || 'directory' in entry || typeof entry.bytes !== 'function') {
      return undefined;
    }
    return entry.bytes;
  }

  #start(index: number): Production | undefined {
    const started = this.#started.get(index);
    if (started || this.stopped) return started;
    const make = this.#lazy(index);
    if (make === undefined) return undefined;
    const production = new Production(make, this.#fail);
    this.#started.set(index, production);
    return production;
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
  let failure: { readonly error: unknown } | undefined;
  let failWrite: (error: unknown) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => {
    failWrite = reject;
  });
  failed.catch(() => undefined);
  const made = new Prefetch(entries, (error) => {
    if (failure) return;
    failure = { error };
    made.stopped = true;
    failWrite(error);
  });
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
          callback(
            null,
            typeof source === 'function' ? made.take(index) : Readable.from([asBuffer(source)]),
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
    zip.on('error', rejectWrite);
  });
  zip.end();
  // A lazy entry that fails ends its data early and fails the write at once.
  await Promise.race([done, failed]);
  if (failure) throw failure.error;
  return Buffer.concat(chunks);
}
