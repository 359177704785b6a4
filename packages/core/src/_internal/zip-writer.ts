import { once } from 'node:events';
import { Readable } from 'node:stream';

import yazl from 'yazl';

import type { ByteSink } from './byte-sink.ts';
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

/** One entry handed to a {@link ZipStreamWriter}: its data is made already. */
export type ZipStreamEntry =
  | (Omit<Extract<ZipWriteEntry, { bytes: unknown }>, 'bytes'> & { readonly bytes: Uint8Array })
  | Extract<ZipWriteEntry, { directory: true }>;

/**
 * Writes a fresh zip into a sink entry by entry, as the entries are made (an archive rebuilt
 * member by member): each {@link add} returns once the entry has reached the sink, so only the
 * entry being written is held, whatever the archive's size. The same entries in the same order
 * give the same bytes as {@link writeZip}.
 */
export class ZipStreamWriter {
  readonly #zip = new yazl.ZipFile();
  readonly #sink: ByteSink;
  readonly #done: Promise<void>;

  constructor(sink: ByteSink) {
    this.#sink = sink;
    this.#zip.outputStream.pipe(sink.stream, { end: false });
    const failed = new Promise<never>((_, reject) => {
      this.#zip.on('error', reject);
      this.#zip.outputStream.on('error', reject);
      sink.stream.on('error', reject);
    });
    failed.catch(() => undefined);
    this.#done = Promise.race([once(this.#zip.outputStream, 'end').then(() => undefined), failed]);
    this.#done.catch(() => undefined);
  }

  /** Adds an entry and waits until yazl has handed what it wrote so far to the sink. */
  async add(entry: ZipStreamEntry): Promise<void> {
    if ('directory' in entry) {
      this.#zip.addEmptyDirectory(entry.path, {
        mtime: entry.modifiedAt,
        mode: DIRECTORY_MODE,
        forceDosTimestamp: true,
      });
    } else if (entry.compress) {
      const data = asBuffer(entry.bytes);
      this.#zip.addReadStreamLazy(
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
      this.#zip.addBuffer(asBuffer(entry.bytes), entry.path, {
        mtime: entry.modifiedAt,
        mode: FILE_MODE,
        compress: false,
        forceDosTimestamp: true,
      });
    }
    await this.#drained();
    releaseWritten(this.#zip);
  }

  /** Writes the central directory and the end record; the sink is then complete. */
  async finish(): Promise<void> {
    this.#zip.end();
    await this.#done;
  }

  /**
   * yazl writes an entry into its output stream when the entry's turn comes (a deflated one as
   * zlib produces it): wait until that stream is empty and the sink takes more. An entry still
   * deflating may be left in flight, never more than one.
   */
  async #drained(): Promise<void> {
    const output = this.#zip.outputStream;
    for (;;) {
      await Promise.race([
        new Promise<void>((resolve) => {
          setImmediate(resolve);
        }),
        this.#done,
      ]);
      if (this.#sink.stream.writableNeedDrain) {
        await Promise.race([once(this.#sink.stream, 'drain'), this.#done]);
        continue;
      }
      if (!('readableLength' in output) || output.readableLength === 0) return;
    }
  }
}

/** yazl's `Entry.FILE_DATA_DONE`: the entry's data is in the output stream. */
const ENTRY_FILE_DATA_DONE = 3;

/**
 * yazl keeps every entry until the end (for the central directory), and with each entry the
 * function that writes its data, which holds the data of an `addBuffer` entry: a zip of 450 MB of
 * photos would keep all of them. Once an entry's data is written, only its header fields are
 * needed; dropping that function frees the member's bytes. yazl 3 internals (`entries`, `state`,
 * `doFileDataPump`), held to by `zip-writer.test.ts`.
 */
function releaseWritten(zip: yazl.ZipFile): void {
  const entries: unknown = (zip as unknown as { entries?: unknown }).entries;
  if (!Array.isArray(entries)) return;
  for (const entry of entries as { state?: unknown; doFileDataPump?: unknown }[]) {
    if (entry.state === ENTRY_FILE_DATA_DONE) entry.doFileDataPump = undefined;
  }
}
