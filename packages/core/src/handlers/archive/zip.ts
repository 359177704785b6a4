import { sha256Hex } from '../../_internal/bytes.ts';
import { Rejection } from '../../_internal/rejection.ts';
import {
  compressionName,
  COMPRESSION_DEFLATED,
  COMPRESSION_STORED,
  dataStartOf,
  openZip,
  readMember,
} from '../../_internal/zip-reader.ts';
import type { ZipListing, ZipMember } from '../../_internal/zip-reader.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import type { ZipWriteEntry } from '../../_internal/zip-writer.ts';
import { FindingTally } from '../../findings.ts';
import { EXPANSION_RATIO_FLOOR_BYTES, formatBytes } from '../../limits.ts';
import type { DetectedFile, EngineContext, HandlerOutput, RebuiltFile } from '../types.ts';
import { checkMemberName, collisionKey, findNameConflict } from './member-names.ts';
import type { SafeName } from './member-names.ts';
import { ArchiveVerdict, isCompressedFormat } from './verdict.ts';

/**
 * Rebuilds a zip archive (PKWARE APPNOTE): every member is checked before a byte is inflated
 * (names, links, encryption, declared sizes, overlapping data), then inflated under the shared
 * content budget, scanned and rebuilt through the engine, and written into a fresh archive.
 */
export async function rebuildZip(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const listing = await openZip(input.bytes, context.limits.maxEntries);
  try {
    const names = checkStructure(listing, context);
    await checkLayout(listing, input.bytes.length);
    const archiveHash = sha256Hex(input.bytes);
    const verdict = new ArchiveVerdict();
    const findings = new FindingTally();
    if (listing.commentBytes > 0) findings.add('archive-comment');
    const entries: ZipWriteEntry[] = [];
    const taken = new Set(
      names.filter((name) => !name.isDirectory).map((name) => collisionKey(name.path)),
    );

    for (const [index, member] of listing.members.entries()) {
      context.deadline.check();
      const name = names[index];
      if (!name) continue;
      if (member.commentBytes > 0) findings.add('archive-comment');
      if (hasForeignExtraFields(member)) findings.add('archive-metadata');
      if (name.isDirectory) {
        entries.push({ path: `${name.path}/`, directory: true, modifiedAt: member.modifiedAt });
        continue;
      }
      const what = `member "${name.path}"`;
      const bytes = await readMember(listing, member, context.budget.remaining, what);
      context.budget.consume(bytes.length, what);
      const memberInput = { bytes, fileName: name.path };
      if (verdict.decided) {
        verdict.addThreats(await context.scanMember(memberInput, archiveHash));
        continue;
      }
      const rebuilt = await verdict.capture(context.processMember(memberInput, archiveHash), what);
      if (!rebuilt) continue;
      findings.addAll(rebuilt.findings);
      entries.push(toWriteEntry(rebuilt, name, member, taken));
    }
    verdict.throwIfRejected();
    return { bytes: await writeZip(entries), findings: findings.toArray() };
  } finally {
    listing.file.close();
  }
}

/** Everything decidable from the central directory alone, in a fixed order of precedence. */
function checkStructure(listing: ZipListing, context: EngineContext): SafeName[] {
  const names: SafeName[] = [];
  for (const member of listing.members) {
    const checked = checkMemberName(member);
    if (typeof checked === 'string') throw new Rejection('policy_violation', checked);
    names.push(checked);
  }
  const conflict = findNameConflict(names);
  if (conflict !== undefined) throw new Rejection('policy_violation', conflict);

  const encrypted = listing.members.find((member) => member.isEncrypted);
  if (encrypted) {
    throw new Rejection(
      'password_protected',
      `member "${encrypted.name}" is encrypted; it cannot be opened without its password`,
    );
  }
  const unreadable = listing.members.find(
    (member) =>
      member.compressionMethod !== COMPRESSION_STORED &&
      member.compressionMethod !== COMPRESSION_DEFLATED,
  );
  if (unreadable) {
    throw new Rejection(
      'unsupported_file_type',
      `member "${unreadable.name}" uses ${compressionName(unreadable.compressionMethod)} compression, which is not supported (only stored and deflate)`,
    );
  }

  let declared = 0;
  for (const member of listing.members) {
    declared += member.uncompressedSize;
    const ratio = member.uncompressedSize / Math.max(1, member.compressedSize);
    if (
      member.uncompressedSize > EXPANSION_RATIO_FLOOR_BYTES &&
      ratio > context.limits.maxExpansionRatio
    ) {
      throw new Rejection(
        'file_too_large',
        `member "${member.name}" expands ${Math.round(ratio)} times (limit ${context.limits.maxExpansionRatio}); a decompression bomb`,
      );
    }
  }
  if (declared > context.budget.remaining) {
    throw new Rejection(
      'file_too_large',
      `the archive's members expand to ${formatBytes(declared)}, past the ${formatBytes(context.limits.maxBytes)} ceiling`,
    );
  }
  return names;
}

/**
 * APPNOTE 4.3.6: members are stored one after another. Data shared between members (the
 * "overlapping entries" of non-recursive zip bombs) or reaching past the central directory is
 * refused before anything is inflated.
 */
async function checkLayout(listing: ZipListing, archiveBytes: number): Promise<void> {
  const spans: { start: number; end: number; name: string }[] = [];
  for (const member of listing.members) {
    const dataStart = await dataStartOf(listing, member);
    spans.push({
      start: member.localHeaderOffset,
      end: dataStart + member.compressedSize,
      name: member.name,
    });
  }
  spans.sort((a, b) => a.start - b.start);
  for (let i = 0; i < spans.length; i += 1) {
    const span = spans[i];
    const next = spans[i + 1];
    if (!span) continue;
    if (span.end > archiveBytes) {
      throw new Rejection(
        'invalid_file',
        `member "${span.name}" reaches past the end of the archive`,
      );
    }
    if (next && span.end > next.start) {
      throw new Rejection(
        'file_too_large',
        `members "${span.name}" and "${next.name}" share compressed data (an overlapping-entry zip bomb)`,
      );
    }
  }
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
): ZipWriteEntry {
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
