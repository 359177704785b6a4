import { Rejection, ThreatReport } from '../../_internal/rejection.ts';
import { CHUNK_BYTES } from '../../_internal/xml-rewrite.ts';
import {
  compressionName,
  COMPRESSION_DEFLATED,
  COMPRESSION_STORED,
  dataStartOf,
  openZip,
  readMember,
} from '../../_internal/zip-reader.ts';
import type { ZipListing, ZipMember } from '../../_internal/zip-reader.ts';
import type { FindingTally } from '../../findings.ts';
import { extensionOf } from '../../formats.ts';
import { formatBytes } from '../../_internal/bytes.ts';
import { assertExpansionRatio } from '../../limits.ts';
import { metafileKindOf, rebuildMetafile } from '../image/metafile/metafile.ts';
import type { DetectedFile, EngineContext, FileInput } from '../types.ts';
import { preparePartChecks } from './part-checks.ts';

/** One member of an office package, inflated only when read. */
export interface PackageMember {
  /** Name as stored in the zip, without a leading slash. */
  readonly name: string;
  readonly compressionMethod: number;
  /** Size its record declares (reading holds the member to it). */
  readonly size: number;
  /**
   * Inflates the member. The first read counts it against the content budget and scans it; a
   * threat found then refuses the package (with every threat of the members read so far).
   * Callers read a member once and let the bytes go: the package never holds its members.
   * @throws {Rejection} `file_too_large`, `invalid_file`, `threat_detected`.
   */
  read(): Promise<Uint8Array>;
}

/** The members of an office package, by name and by case-folded name. */
export interface OfficePackage {
  readonly members: readonly PackageMember[];
  /** Lower-cased name -> member (ECMA-376 Part 2 §6.2.2.3: part names compare case-insensitively). */
  readonly byFoldedName: ReadonlyMap<string, PackageMember>;
  /** The package's bytes, the enclosing archive of members handed to the engine. */
  readonly bytes: Uint8Array;
  /** Bytes after the zip's end record, left out of the rebuild (see `openZip`). */
  readonly trailingBytes: number;
}

/**
 * Opens an OOXML or ODF package (a zip) under the engine's budgets and runs `use` on it; memory
 * stays bounded by the members `use` holds at once, not by the package. Everything that can be
 * decided from the central directory is decided before a byte is inflated: encrypted members,
 * compression other than stored/deflate (neither OPC nor ODF allows another), names that repeat
 * case-insensitively or climb out of the package, declared sizes against the content budget,
 * expansion ratios, and members that share compressed data. Every member is scanned by the
 * engine's scanners: those `use` reads as it reads them, the others one at a time afterwards,
 * so a threat anywhere in the package decides its reason, also over a rejection `use` threw.
 * @throws {Rejection} `invalid_file`, `password_protected`, `file_too_large`, `threat_detected`.
 */
export async function withOfficePackage<T>(
  input: DetectedFile,
  context: EngineContext,
  use: (pkg: OfficePackage, what: string) => Promise<T>,
): Promise<T> {
  const { bytes } = input;
  const what = `the .${input.format.extension} package`;
  const listing = await openZip(bytes, context.limits.maxEntries);
  try {
    await checkListing(listing, bytes.length, context, what);
    const threats = new ThreatReport();
    const read = new Set<ZipMember>();
    const threatRejection = (): Rejection => threats.toRejection('the file');
    const inflate = async (member: ZipMember): Promise<Uint8Array> => {
      context.deadline.check();
      const label = `${what} member "${member.name}"`;
      // A second read of a member is already counted: its declared size bounds it (readMember
      // holds every member to its declared size).
      const limit = read.has(member) ? member.uncompressedSize : context.budget.remaining;
      const data = await readMember(listing, member, limit, label);
      if (!read.has(member)) {
        read.add(member);
        context.budget.consume(data.length, label);
        threats.add(
          await context.scanMember({ bytes: data, fileName: member.name }, bytes),
          `part "${member.name}"`,
        );
      }
      return data;
    };
    const members: PackageMember[] = listing.members
      .filter((member) => !member.isDirectory)
      .map((member) => ({
        name: member.name,
        compressionMethod: member.compressionMethod,
        size: member.uncompressedSize,
        read: async () => {
          const data = await inflate(member);
          if (threats.size > 0) throw threatRejection();
          return data;
        },
      }));
    /** Scans what `use` did not read; `lenient` ignores members that fail to inflate. */
    const scanUnread = async (lenient: boolean): Promise<void> => {
      for (const member of listing.members) {
        if (member.isDirectory || read.has(member)) continue;
        try {
          await inflate(member);
        } catch (error) {
          if (!lenient) throw error;
        }
      }
      if (threats.size > 0) throw threatRejection();
    };
    let result: T;
    try {
      result = await use(
        {
          members,
          byFoldedName: new Map(members.map((member) => [member.name.toLowerCase(), member])),
          bytes,
          trailingBytes: listing.trailingBytes,
        },
        what,
      );
    } catch (error) {
      // A threat anywhere decides the reason, whatever went wrong first.
      if (error instanceof Rejection) await scanUnread(true);
      throw error;
    }
    await scanUnread(false);
    return result;
  } finally {
    listing.file.close();
  }
}

/** The central-directory checks of {@link withOfficePackage}. */
async function checkListing(
  listing: ZipListing,
  archiveBytes: number,
  context: EngineContext,
  what: string,
): Promise<void> {
  const folded = new Set<string>();
  let declared = 0;
  for (const member of listing.members) {
    if (member.isEncrypted) {
      throw new Rejection(
        'password_protected',
        `${what} has an encrypted member "${member.name}"; it cannot be opened without its password`,
      );
    }
    if (
      member.compressionMethod !== COMPRESSION_STORED &&
      member.compressionMethod !== COMPRESSION_DEFLATED
    ) {
      throw new Rejection(
        'invalid_file',
        `${what} member "${member.name}" uses ${compressionName(member.compressionMethod)} compression; a package allows only stored and deflate`,
      );
    }
    const name = member.name;
    // APPNOTE 4.6.9: an Info-ZIP Unicode Path extra field renames the member for the readers that
    // honour it (Info-ZIP, yauzl), not for Office or LibreOffice, which read the header's own
    // name. Part names are ASCII (ECMA-376 Part 2 Annex A.3; ODF writes UTF-8 names), so the two
    // differ only in a package built to show each reader another document.
    if (name !== member.rawName) {
      throw new Rejection(
        'invalid_file',
        `${what} has a member named "${member.rawName}" that its Unicode Path field renames "${name}": readers would disagree on which part it is`,
      );
    }
    if (
      name.startsWith('/') ||
      name.includes('\\') ||
      name.split('/').some((segment) => segment === '..' || segment === '.') ||
      /\p{Cc}/u.test(name)
    ) {
      throw new Rejection('invalid_file', `${what} has a member with an invalid name`);
    }
    const key = name.toLowerCase();
    if (folded.has(key)) {
      throw new Rejection('invalid_file', `${what} holds "${name}" twice`);
    }
    folded.add(key);
    declared += member.uncompressedSize;
    assertExpansionRatio(member, context.limits.maxExpansionRatio, `${what} member "${name}"`);
  }
  if (declared > context.budget.remaining) {
    throw new Rejection(
      'file_too_large',
      `${what} expands to ${formatBytes(declared)}, past the ${formatBytes(context.limits.maxBytes)} ceiling`,
    );
  }
  await checkNoOverlap(listing, archiveBytes, what);
}

/** APPNOTE 4.3.6: members follow one another; shared data is the overlapping-entry zip bomb. */
async function checkNoOverlap(
  listing: ZipListing,
  archiveBytes: number,
  what: string,
): Promise<void> {
  const spans: { start: number; end: number }[] = [];
  for (const member of listing.members) {
    const dataStart = await dataStartOf(listing, member);
    spans.push({ start: member.localHeaderOffset, end: dataStart + member.compressedSize });
  }
  spans.sort((a, b) => a.start - b.start);
  for (let i = 0; i < spans.length; i += 1) {
    const span = spans[i];
    const next = spans[i + 1];
    if (!span) continue;
    if (span.end > archiveBytes) {
      throw new Rejection('invalid_file', `${what} has a member reaching past its end`);
    }
    if (next && span.end > next.start) {
      throw new Rejection('file_too_large', `${what} has members sharing compressed data`);
    }
  }
}

/** Fixed member time of every rebuilt package, so the same input gives the same bytes. */
export const PACKAGE_TIME = new Date(Date.UTC(1980, 0, 1, 0, 0, 0));

/**
 * A picture of a package through the whole engine (scan, detect, the image handler, its verify),
 * its findings added to the package's; a metafile (`.emf`, `.wmf`, not a file type of its own)
 * through the metafile rebuild, which the package's verify reads back. One that is refused is
 * left out (`undefined`, counted as `hidden-data`); a threat or the size budget refuses the
 * package.
 */
export async function rebuildPackageImage(
  image: FileInput,
  pkg: OfficePackage,
  context: EngineContext,
  findings: FindingTally,
): Promise<Uint8Array | undefined> {
  const metafile = metafileKindOf(extensionOf(image.fileName));
  try {
    if (metafile !== undefined) {
      context.deadline.check();
      return rebuildMetafile(image.bytes, metafile, context.limits, findings);
    }
    const rebuilt = await context.processMember(image, pkg.bytes);
    findings.addAll(rebuilt.findings);
    return rebuilt.bytes;
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    if (error.reason === 'threat_detected' || error.reason === 'file_too_large') throw error;
    findings.add('hidden-data');
    return undefined;
  }
}

/**
 * Starts a check worker ahead when an XML member is large enough to be rewritten in more than one
 * chunk (such parts are checked in a worker while written), so its start-up overlaps the walk.
 */
export function prepareChecksFor(pkg: OfficePackage): void {
  if (pkg.members.some((member) => member.size > CHUNK_BYTES && /\.xml$/i.test(member.name))) {
    preparePartChecks();
  }
}
