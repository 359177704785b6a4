import { kMaxLength } from 'node:buffer';
import { Readable } from 'node:stream';
import { crc32, inflateRaw } from 'node:zlib';

import yauzl from 'yauzl';
import type { Entry, ZipFile } from 'yauzl';

import { memorySource, prefixOf, READ_CHUNK_BYTES } from './byte-source.ts';
import type { ByteSource } from './byte-source.ts';
import { asBuffer } from './bytes.ts';
import { Rejection } from './rejection.ts';
import { endRecords, readZipEnd } from './zip-walk.ts';

/** One central-directory record, with what the engine decides on already decoded. */
export interface ZipMember {
  /** Name as a reader shows it: Info-ZIP Unicode Path extra field first, else CP437/UTF-8. */
  readonly name: string;
  /** Name decoded from the record's own bytes, ignoring extra fields (may differ: a trick). */
  readonly rawName: string;
  readonly isDirectory: boolean;
  /** Unix mode bits when the archive was made on Unix, else `undefined`. */
  readonly unixMode: number | undefined;
  /** MS-DOS/NTFS attribute bits (low 16 bits of the external attributes). */
  readonly dosAttributes: number;
  readonly isEncrypted: boolean;
  readonly compressionMethod: number;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  readonly localHeaderOffset: number;
  readonly commentBytes: number;
  readonly extraFieldBytes: number;
  /** DOS modification time, UTC, kept on the rebuilt member. */
  readonly modifiedAt: Date;
  readonly entry: Entry;
}

/** A zip opened for reading; close it when done. */
export interface ZipListing {
  readonly members: readonly ZipMember[];
  readonly commentBytes: number;
  /** Bytes after the end of central directory record and its comment, left unread. */
  readonly trailingBytes: number;
  readonly file: ZipFile;
  /** The archive as opened: the input without its trailing bytes. */
  readonly source: ByteSource;
}

/** APPNOTE 4.4.5 compression methods we can decode, and those that mean encryption. */
export const COMPRESSION_STORED = 0;
export const COMPRESSION_DEFLATED = 8;
/** APPNOTE 4.4.5 / WinZip AE-x: method 99 marks AES-encrypted data. */
export const COMPRESSION_AES = 99;

const COMPRESSION_NAMES: Readonly<Record<number, string>> = {
  1: 'shrink',
  6: 'implode',
  9: 'deflate64',
  12: 'bzip2',
  14: 'LZMA',
  93: 'zstd',
  95: 'xz',
  96: 'JPEG',
  97: 'WavPack',
  98: 'PPMd',
};

/** Name of a compression method for details. */
export function compressionName(method: number): string {
  return COMPRESSION_NAMES[method] ?? `method ${method}`;
}

/** APPNOTE 4.4.2: the upper byte of "version made by" is the host system; 3 is Unix. */
const HOST_UNIX = 3;

/**
 * Opens a zip, held in memory or read by range from a file, and reads its central directory,
 * refusing archives with more than `maxEntries` records before reading any of them.
 */
export async function openZip(
  input: Uint8Array | ByteSource,
  maxEntries: number,
): Promise<ZipListing> {
  const whole = input instanceof Uint8Array ? memorySource(input) : input;
  let source = whole;
  const file = await openSource(source).catch((error: unknown) => {
    // Bytes appended after the archive (a newline added in transfer, a polyglot's tail): yauzl
    // finds the end record but holds its comment length to the rest of the file. Info-ZIP,
    // Office and LibreOffice read such an archive; it is read without the tail.
    const end = error instanceof Error && /comment length/i.test(error.message) ? endOf(whole) : 0;
    if (end <= 0 || end >= whole.length) throw endRejection(whole) ?? toZipRejection(error);
    source = prefixOf(whole, end);
    return openSource(source).catch((retry: unknown) => {
      throw toZipRejection(retry);
    });
  });
  try {
    // yauzl reads the ZIP64 end record whenever a locator precedes the end record, but holds
    // neither the end record's other fields nor the locator to one disk; the same reading as the
    // strict walk's does (APPNOTE 4.4.1.4).
    const rejection = endRejection(source);
    if (rejection) throw rejection;
    if (file.entryCount > maxEntries) {
      throw new Rejection(
        'policy_violation',
        `archive holds ${file.entryCount} entries; the limit is ${maxEntries}`,
      );
    }
    const members = await readMembers(file);
    return {
      members,
      commentBytes: commentLength(file),
      trailingBytes: whole.length - source.length,
      file,
      source,
    };
  } catch (error) {
    file.close();
    throw error;
  }
}

/**
 * The end records' problem (see `readZipEnd`), if any: yauzl reads the ZIP64 end record whenever a
 * locator precedes the end record, but holds neither the end record's other fields nor the
 * locator to one disk, and says less when it refuses one.
 */
function endRejection(source: ByteSource): Rejection | undefined {
  const end = readZipEnd(source);
  return end.ok
    ? undefined
    : new Rejection('invalid_file', `the archive is corrupt: ${end.problem}`);
}

const YAUZL_OPTIONS = {
  lazyEntries: true,
  decodeStrings: false,
  validateEntrySizes: true,
  autoClose: false,
} as const;

/** yauzl over the source: straight from memory, or by range from a file. */
function openSource(source: ByteSource): Promise<ZipFile> {
  return new Promise<ZipFile>((resolve, reject) => {
    const done = (error: Error | null, zipFile: ZipFile): void => {
      if (error) reject(error);
      else resolve(zipFile);
    };
    if (source.bytes !== undefined) yauzl.fromBuffer(asBuffer(source.bytes), YAUZL_OPTIONS, done);
    else yauzl.fromRandomAccessReader(new SourceReader(source), source.length, YAUZL_OPTIONS, done);
  });
}

/** yauzl's view of a file read by range. */
class SourceReader extends yauzl.RandomAccessReader {
  readonly #source: ByteSource;

  constructor(source: ByteSource) {
    super();
    this.#source = source;
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const source = this.#source;
    return Readable.from(
      (function* chunks() {
        for (let at = start; at < end; at += READ_CHUNK_BYTES) {
          yield asBuffer(source.read(at, Math.min(READ_CHUNK_BYTES, end - at)));
        }
      })(),
    );
  }

  override read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
    callback: (err: Error | null) => void,
  ): void {
    try {
      const data = this.#source.read(position, length);
      if (data.length !== length) throw new RangeError('read past the end of the archive');
      buffer.set(data, offset);
    } catch (error) {
      callback(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    callback(null);
  }
}

/**
 * Where the archive ends when bytes follow it: just after the last end of central directory
 * record (APPNOTE 4.3.16) whose comment fits in the file, looked for as far back as a full
 * comment and as much tail again; 0 when there is none.
 */
function endOf(source: ByteSource): number {
  for (const record of endRecords(source, 2 * 0xffff)) {
    if (record.end <= source.length) return record.end;
  }
  return 0;
}

function commentLength(file: ZipFile): number {
  const comment: unknown = file.comment;
  return typeof comment === 'string' || comment instanceof Uint8Array ? comment.length : 0;
}

function readMembers(file: ZipFile): Promise<ZipMember[]> {
  return new Promise((resolve, rejectRead) => {
    const members: ZipMember[] = [];
    const cleanup = (): void => {
      file.removeAllListeners('entry');
      file.removeAllListeners('end');
      file.removeAllListeners('error');
    };
    file.on('entry', (entry: Entry) => {
      try {
        members.push(toMember(entry));
        file.readEntry();
      } catch (error) {
        cleanup();
        rejectRead(error instanceof Error ? error : new Error(String(error)));
      }
    });
    file.on('end', () => {
      cleanup();
      resolve(members);
    });
    file.on('error', (error: Error) => {
      cleanup();
      rejectRead(toZipRejection(error));
    });
    file.readEntry();
  });
}

function toMember(entry: Entry): ZipMember {
  const raw = entry.fileNameRaw;
  const flags = entry.generalPurposeBitFlag;
  const host = entry.versionMadeBy >>> 8;
  const name = yauzl.getFileNameLowLevel(flags, raw, entry.extraFields, true);
  const rawName = yauzl.getFileNameLowLevel(flags, raw, [], true);
  return {
    name,
    rawName,
    isDirectory: name.endsWith('/') || name.endsWith('\\'),
    unixMode: host === HOST_UNIX ? (entry.externalFileAttributes >>> 16) & 0xffff : undefined,
    dosAttributes: entry.externalFileAttributes & 0xffff,
    isEncrypted: entry.isEncrypted() || entry.compressionMethod === COMPRESSION_AES,
    compressionMethod: entry.compressionMethod,
    compressedSize: entry.compressedSize,
    uncompressedSize: entry.uncompressedSize,
    localHeaderOffset: entry.relativeOffsetOfLocalHeader,
    commentBytes: entry.fileCommentLength,
    extraFieldBytes: entry.extraFieldLength,
    modifiedAt: entry.getLastModDate({ timezone: 'UTC', forceDosFormat: true }),
    entry,
  };
}

/** Where each member's data starts, read from its local header (APPNOTE 4.3.7). */
export async function dataStartOf(listing: ZipListing, member: ZipMember): Promise<number> {
  try {
    const header = await listing.file.readLocalFileHeaderPromise(member.entry, { minimal: true });
    return header.fileDataStart;
  } catch (error) {
    throw toZipRejection(error);
  }
}

/** Largest output step of one inflate: a member up to this size is inflated in one step. */
const MAX_INFLATE_STEP = 16 * 1024 * 1024;

/**
 * Inflates one member into memory, refusing it as soon as it would pass `maxBytes`, and refuses a
 * member whose data is not the size its record declares. The member's data is inflated by zlib on
 * the thread pool in one step sized from the declared size (not in 16 KB steps that each need the
 * main thread).
 * @throws {Rejection} `file_too_large` past `maxBytes`, `password_protected` for an encrypted
 *   member, `invalid_file` on corrupt data or an unsupported method.
 */
export async function readMember(
  listing: ZipListing,
  member: ZipMember,
  maxBytes: number,
  what: string,
): Promise<Uint8Array> {
  if (member.uncompressedSize > maxBytes) {
    throw new Rejection('file_too_large', `${what} expands past the content ceiling`);
  }
  if (member.isEncrypted) {
    throw new Rejection('password_protected', `the archive is encrypted (${what})`);
  }
  const start = await dataStartOf(listing, member);
  const end = start + member.compressedSize;
  if (end > listing.source.length) {
    throw new Rejection('invalid_file', `the archive is corrupt: ${what} runs past its end`);
  }
  // A member of a file on disk is read into a buffer of its own; one in memory is copied, so the
  // archive's bytes are not kept alive by a member.
  const raw = listing.source.read(start, end - start);
  let data: Uint8Array;
  if (member.compressionMethod === COMPRESSION_STORED) {
    data = listing.source.bytes === undefined ? raw : raw.slice();
  } else if (member.compressionMethod === COMPRESSION_DEFLATED) {
    data = await inflateMember(raw, member.uncompressedSize, maxBytes, what);
  } else {
    throw new Rejection(
      'invalid_file',
      `the archive is corrupt: ${what} uses ${compressionName(member.compressionMethod)}, which is not supported`,
    );
  }
  if (data.length !== member.uncompressedSize) {
    throw new Rejection(
      'invalid_file',
      `the archive is corrupt: ${what} holds ${data.length} bytes, its record says ${member.uncompressedSize}`,
    );
  }
  return data;
}

function inflateMember(
  raw: Uint8Array,
  declaredSize: number,
  maxBytes: number,
  what: string,
): Promise<Uint8Array> {
  // Inflating stops at the declared size (a member that lies about it is corrupt) or at the
  // ceiling, whichever is smaller; `readMember` refused a declared size past the ceiling.
  return new Promise((resolve, rejectInflate) => {
    inflateRaw(
      raw,
      {
        // One step when the declared size is true.
        chunkSize: Math.min(MAX_INFLATE_STEP, Math.max(4096, declaredSize + 64)),
        maxOutputLength: Math.max(1, Math.min(declaredSize, maxBytes, kMaxLength)),
      },
      (error, data) => {
        if (!error) resolve(data);
        else if (error instanceof RangeError || /larger than/i.test(error.message)) {
          rejectInflate(
            new Rejection(
              'invalid_file',
              `the archive is corrupt: ${what} inflates past the ${declaredSize} bytes its record declares`,
            ),
          );
        } else {
          rejectInflate(new Rejection('invalid_file', `the archive is corrupt: ${error.message}`));
        }
      },
    );
  });
}

/**
 * Whether a member's data has the CRC-32 its central directory record states. Inputs are not held
 * to it (as readers mostly are not); verify before release holds the engine's own output to it.
 */
export function matchesCrc(member: ZipMember, data: Uint8Array): boolean {
  return crc32(data) === member.entry.crc32;
}

/** Maps a yauzl or zlib error to the rejection it means for the file. */
export function toZipRejection(error: unknown): Rejection {
  if (error instanceof Rejection) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/encrypt/i.test(message)) {
    return new Rejection('password_protected', `the archive is encrypted (${message})`);
  }
  return new Rejection('invalid_file', `the archive is corrupt: ${message}`);
}
