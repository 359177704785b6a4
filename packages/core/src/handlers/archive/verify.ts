import { promisify } from 'node:util';
import { crc32, inflateRaw } from 'node:zlib';

import type { ByteSource } from '../../_internal/byte-source.ts';
import { asBuffer } from '../../_internal/bytes.ts';
import { walkZip } from '../../_internal/zip-walk.ts';
import type { WalkedEntry } from '../../_internal/zip-walk.ts';
import { COMPRESSION_DEFLATED, COMPRESSION_STORED } from '../../_internal/zip-reader.ts';
import { isDisarmError } from '../../errors.ts';
import { VerifyFailure } from '../types.ts';
import type { EngineContext, SourcedFile, SourcedOutput } from '../types.ts';
import { collisionKey, pathProblem } from './member-names.ts';

const inflateRawAsync = promisify(inflateRaw);

/** APPNOTE 4.4.4 flag bits meaning encryption: traditional, strong, central directory. */
const ENCRYPTION_FLAGS = 0x0001 | 0x0040 | 0x2000;
/** Unix file-type bits of the external attributes' upper half (st_mode & S_IFMT). */
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

/**
 * Archive checks of verify before release. The written zip (a gz input is returned as one too) is
 * re-read by the strict walker in `zip-walk.ts`, which shares no code with the writer (yazl) or
 * the listing reader (yauzl), and held against the family's rules:
 *
 * - `archive.structure`: the end record ends the file, the central directory and every local
 *   header agree, members follow one another with nothing between, before or after them;
 * - `archive.no-comment`, `archive.no-extra-fields`: our writer writes neither;
 * - `archive.not-encrypted`, `archive.methods`: no encrypted member, only stored and deflate;
 * - `archive.names`: every name decodes and passes the member-name rules, none twice;
 * - `archive.modes`: every entry is a regular file or a directory (no link, device or FIFO);
 * - `archive.data`: every member inflates to its declared size and CRC-32;
 * - `archive.relist`: the names and their count are exactly those the rebuild decided to write.
 */
export async function verifyArchive(
  output: SourcedOutput,
  input: SourcedFile,
  context: EngineContext,
): Promise<void> {
  const decided = output.manifest?.entryNames;
  if (decided === undefined) {
    throw new VerifyFailure('archive.relist', 'the rebuild handed over no list of its entries');
  }
  // The written archive is walked where it was written (a file is read by range, a member at a
  // time), never through the writer's own picture of it.
  const walk = walkZip(output.content);
  if (!walk.ok) throw new VerifyFailure('archive.structure', walk.problem);
  if (walk.zip.commentBytes > 0) {
    throw new VerifyFailure('archive.no-comment', 'the written archive has a comment');
  }
  const seen = new Set<string>();
  const names: string[] = [];
  for (const entry of walk.zip.entries) {
    context.deadline.check();
    const name = checkEntry(entry);
    const key = collisionKey(name.replace(/\/$/, ''));
    if (seen.has(key)) throw new VerifyFailure('archive.names', `"${name}" is written twice`);
    seen.add(key);
    names.push(name);
    await checkData(output.content, entry, name, context);
  }
  if (names.length !== decided.length || names.some((name, index) => name !== decided[index])) {
    throw new VerifyFailure(
      'archive.relist',
      `the written archive of "${input.fileName}" lists ${names.length} entries [${names.join(', ')}], the rebuild decided ${decided.length} [${decided.join(', ')}]`,
    );
  }
}

function checkEntry(entry: WalkedEntry): string {
  const name = entry.name;
  if (name === undefined) {
    throw new VerifyFailure('archive.names', 'an entry name is not valid UTF-8');
  }
  if (entry.commentBytes > 0) {
    throw new VerifyFailure('archive.no-comment', `entry "${name}" has a comment`);
  }
  if (entry.centralExtraBytes > 0 || entry.localExtraBytes > 0) {
    throw new VerifyFailure('archive.no-extra-fields', `entry "${name}" has extra fields`);
  }
  if ((entry.flags & ENCRYPTION_FLAGS) !== 0) {
    throw new VerifyFailure('archive.not-encrypted', `entry "${name}" is marked encrypted`);
  }
  if (entry.method !== COMPRESSION_STORED && entry.method !== COMPRESSION_DEFLATED) {
    throw new VerifyFailure('archive.methods', `entry "${name}" uses method ${entry.method}`);
  }
  const problem = pathProblem(name);
  if (problem !== undefined) throw new VerifyFailure('archive.names', problem);
  // Our writer marks entries as made on Unix with a regular-file or directory mode.
  const type = (entry.externalAttributes >>> 16) & S_IFMT;
  if (type !== (name.endsWith('/') ? S_IFDIR : S_IFREG)) {
    throw new VerifyFailure(
      'archive.modes',
      `entry "${name}" has file type ${type.toString(8)}, not a regular file or directory`,
    );
  }
  return name;
}

async function checkData(
  archive: ByteSource,
  entry: WalkedEntry,
  name: string,
  context: EngineContext,
): Promise<void> {
  const stored = asBuffer(archive.read(entry.dataStart, entry.compressedSize));
  let data: Buffer;
  try {
    data =
      entry.method === COMPRESSION_STORED
        ? stored
        : await context.deadline.race(
            inflateRawAsync(stored, { maxOutputLength: Math.max(1, entry.uncompressedSize) }),
          );
  } catch (error) {
    if (isDisarmError(error) || !(error instanceof Error) || !('code' in error)) throw error;
    throw new VerifyFailure('archive.data', `entry "${name}" does not inflate: ${error.message}`);
  }
  if (data.length !== entry.uncompressedSize || crc32(data) !== entry.crc32) {
    throw new VerifyFailure(
      'archive.data',
      `entry "${name}" does not hold the ${entry.uncompressedSize} bytes and CRC-32 its headers declare`,
    );
  }
}
