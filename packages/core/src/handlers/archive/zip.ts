import type { ByteSink } from '../../_internal/byte-sink.ts';
import { Rejection } from '../../_internal/rejection.ts';
import {
  compressionName,
  COMPRESSION_DEFLATED,
  COMPRESSION_STORED,
  openZip,
  readMember,
} from '../../_internal/zip-reader.ts';
import type { ZipListing, ZipMember } from '../../_internal/zip-reader.ts';
import { walkZip } from '../../_internal/zip-walk.ts';
import { ZipStreamWriter } from '../../_internal/zip-writer.ts';
import type { ZipStreamEntry } from '../../_internal/zip-writer.ts';
import { FindingTally } from '../../findings.ts';
import { extensionOf, formatForFileName } from '../../formats.ts';
import { formatBytes } from '../../_internal/bytes.ts';
import { assertExpansionRatio } from '../../limits.ts';
import type { EngineContext, RebuiltFile, SourcedFile, SourcedOutput } from '../types.ts';
import { checkMemberName, collisionKey, findNameConflict } from './member-names.ts';
import type { SafeName } from './member-names.ts';
import { ArchiveVerdict, hidesArchive, isCompressedFormat } from './verdict.ts';

/**
 * Rebuilds a zip archive (PKWARE APPNOTE) read by range from `input.source` into `sink`. Before a
 * byte is inflated: the tree-wide entry budget, the structure (central directory against local
 * headers, layout), declared sizes, then every member's name, type, encryption and compression.
 * Then each member is inflated under the shared content budget, scanned and rebuilt through the
 * engine, and written into a fresh archive at once: only the member being worked on is in memory,
 * never the archive nor its rebuilt form. Every member is processed even after one is rejected or
 * fails, so the verdict depends on the set of members, not their order (see
 * {@link ArchiveVerdict}).
 */
export async function rebuildZip(
  input: SourcedFile,
  context: EngineContext,
  sink: ByteSink,
): Promise<SourcedOutput> {
  const listing = await openZip(input.source, context.limits.maxEntries);
  try {
    context.entries.consume(listing.members.length);
    const walk = walkZip(input.source);
    if (!walk.ok)
      throw new Rejection('invalid_file', `the zip structure is inconsistent: ${walk.problem}`);
    checkSizes(listing, context);
    if (context.depth === 0 && listing.members.every((member) => member.isDirectory)) {
      // A submitted archive without a single file has nothing to rebuild; its rebuilt form would
      // be the 22 bytes of an end record, the input itself. Inside another archive it stays an
      // empty member, so that an empty folder does not lose the archive around it.
      throw new Rejection('invalid_file', 'the zip holds no files: there is nothing to rebuild');
    }
    const verdict = new ArchiveVerdict();
    const names = checkMembers(listing, verdict);
    // A name, type, encryption or compression problem loses the archive whatever its members
    // hold; they are then only scanned, so that a threat still decides the reason.
    const scanOnly = verdict.lost;
    const findings = new FindingTally();
    if (listing.commentBytes > 0) findings.add('archive-comment');
    const writer = new ZipStreamWriter(sink);
    const written: string[] = [];
    const write = async (entry: ZipStreamEntry): Promise<void> => {
      // Once the archive is lost its output is thrown away: nothing more is written.
      if (verdict.lost) return;
      written.push(entry.path);
      await writer.add(entry);
    };
    const taken = new Set(
      names
        .filter((name): name is SafeName => name !== undefined && !name.isDirectory)
        .map((name) => collisionKey(name.path)),
    );

    for (const [index, member] of listing.members.entries()) {
      context.deadline.check();
      const name = names[index];
      const here = findings.at({ member: [name?.path ?? member.name] });
      if (member.commentBytes > 0) here.add('archive-comment');
      if (hasForeignExtraFields(member)) here.add('archive-metadata');
      if (member.isDirectory) {
        if (name)
          await write({ path: `${name.path}/`, directory: true, modifiedAt: member.modifiedAt });
        continue;
      }
      if (!isReadable(member)) continue;
      const what = `member "${name?.path ?? member.name}"`;
      const bytes = await readMemberInto(verdict, listing, member, context, what);
      if (!bytes) continue;
      const memberInput = { bytes, fileName: name?.path ?? member.name };
      if (scanOnly || !name) {
        verdict.addThreats(await context.scanMember(memberInput, input.source), what);
        continue;
      }
      const rebuilt = await verdict.capture(context.processMember(memberInput, input.source), what);
      if (rebuilt) {
        here.addAll(rebuilt.findings);
        await write(toWriteEntry(rebuilt, name, member, taken));
      } else if (hidesArchive(memberInput)) {
        verdict.addThreats(await context.scanMember(memberInput, input.source), what);
      }
    }
    verdict.throwIfLost();
    await writer.finish();
    return {
      content: await sink.finish(),
      findings: findings.toArray(),
      manifest: { entryNames: written },
    };
  } finally {
    listing.file.close();
  }
}

/**
 * Reads one member, recording corrupt data (a deflate error, a size lie) against the member so the
 * others are still examined; running out of the content budget stops the whole archive.
 */
async function readMemberInto(
  verdict: ArchiveVerdict,
  listing: ZipListing,
  member: ZipMember,
  context: EngineContext,
  what: string,
): Promise<Uint8Array | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readMember(listing, member, context.budget.remaining, what);
  } catch (error) {
    if (!(error instanceof Rejection) || error.reason === 'file_too_large') throw error;
    verdict.reject(new Rejection(error.reason, `${what}: ${error.message}`));
    return undefined;
  }
  context.budget.consume(bytes.length, what);
  return bytes;
}

function isReadable(member: ZipMember): boolean {
  return (
    !member.isEncrypted &&
    (member.compressionMethod === COMPRESSION_STORED ||
      member.compressionMethod === COMPRESSION_DEFLATED)
  );
}

/**
 * Declared sizes, before anything is inflated: a member past the expansion ratio or a total past
 * what the content budget has left is `file_too_large` at once.
 */
function checkSizes(listing: ZipListing, context: EngineContext): void {
  let declared = 0;
  for (const member of listing.members) {
    declared += member.uncompressedSize;
    assertExpansionRatio(member, context.limits.maxExpansionRatio, `member "${member.name}"`);
  }
  if (declared > context.budget.remaining) {
    throw new Rejection(
      'file_too_large',
      `the archive's members expand to ${formatBytes(declared)}, past the ${formatBytes(context.limits.maxBytes)} ceiling`,
    );
  }
}

/**
 * Everything decidable from the central directory about each member, recorded in the verdict:
 * unsafe names, links, name conflicts (`policy_violation`), types off the allowlist and unknown
 * compression (`unsupported_file_type`), encryption (`password_protected`).
 * @returns each member's safe name, or `undefined` where the name is refused.
 */
function checkMembers(listing: ZipListing, verdict: ArchiveVerdict): (SafeName | undefined)[] {
  const names = listing.members.map((member) => {
    const checked = checkMemberName(member);
    if (typeof checked !== 'string') return checked;
    verdict.reject(new Rejection('policy_violation', checked));
    return undefined;
  });
  const conflict = findNameConflict(names.filter((name): name is SafeName => name !== undefined));
  if (conflict !== undefined) verdict.reject(new Rejection('policy_violation', conflict));
  for (const [index, member] of listing.members.entries()) {
    const name = names[index];
    if (member.isEncrypted) {
      verdict.reject(
        new Rejection(
          'password_protected',
          `member "${member.name}" is encrypted; it cannot be opened without its password`,
        ),
      );
    } else if (!isReadable(member)) {
      verdict.reject(
        new Rejection(
          'unsupported_file_type',
          `member "${member.name}" uses ${compressionName(member.compressionMethod)} compression, which is not supported (only stored and deflate)`,
        ),
      );
    }
    if (name && !name.isDirectory && !formatForFileName(name.path)) {
      const extension = extensionOf(name.path);
      verdict.reject(
        new Rejection(
          'unsupported_file_type',
          extension === ''
            ? `member "${name.path}" has no file extension, so its type is not supported`
            : `member "${name.path}": .${extension} files are not a supported type`,
        ),
      );
    }
  }
  return names;
}

/**
 * APPNOTE 4.5/4.6 extra fields every archiver writes (ZIP64 sizes, NTFS and Unix timestamps and
 * owners, Info-ZIP Unicode names, the JAR marker). They are dropped silently; any other extra
 * field is data hidden in a member header and is reported.
 */
const ORDINARY_EXTRA_FIELDS = new Set([
  0x0001, 0x000a, 0x000d, 0x5455, 0x5855, 0x7855, 0x7875, 0x7075, 0x6375, 0xcafe,
]);

function hasForeignExtraFields(member: ZipMember): boolean {
  return member.entry.extraFields.some((field) => !ORDINARY_EXTRA_FIELDS.has(field.id));
}

function toWriteEntry(
  rebuilt: RebuiltFile,
  name: SafeName,
  member: ZipMember,
  taken: Set<string>,
): ZipStreamEntry {
  let path = name.path;
  if (rebuilt.converted) {
    // A converted member carries its new extension; if that name is taken, keep the old one too.
    path = rebuilt.fileName;
    if (taken.has(collisionKey(path))) path = `${name.path}.${rebuilt.format.outputExtension}`;
    taken.add(collisionKey(path));
  }
  return {
    path,
    bytes: rebuilt.bytes,
    modifiedAt: member.modifiedAt,
    compress: !isCompressedFormat(rebuilt.format.outputExtension),
  };
}
