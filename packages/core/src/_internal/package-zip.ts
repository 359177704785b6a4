import type { EngineContext } from '../handlers/types.ts';
import { assertExpansionRatio, formatBytes } from '../limits.ts';
import { Rejection } from './rejection.ts';
import {
  compressionName,
  COMPRESSION_DEFLATED,
  COMPRESSION_STORED,
  dataStartOf,
  openZip,
  readMember,
} from './zip-reader.ts';

/** One member of an office package, read into memory. */
export interface PackageMember {
  /** Name as stored in the zip, without a leading slash. */
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly compressionMethod: number;
}

/** The members of an office package, by name and by case-folded name. */
export interface OfficePackage {
  readonly members: readonly PackageMember[];
  /** Lower-cased name -> member (ECMA-376 Part 2 §6.2.2.3: part names compare case-insensitively). */
  readonly byFoldedName: ReadonlyMap<string, PackageMember>;
  /** SHA-256 of the package, for members handed to the engine. */
  readonly hash: string;
}

/**
 * Reads an OOXML or ODF package (a zip) into memory under the engine's budgets. Everything that
 * can be decided from the central directory is decided before a byte is inflated: encrypted
 * members, compression other than stored/deflate (neither OPC nor ODF allows another), names
 * that repeat case-insensitively or climb out of the package, declared sizes against the
 * content budget, expansion ratios, and members that share compressed data. Every member is
 * scanned by the engine's scanners, so a threat inside a package decides its reason.
 * @throws {Rejection} `invalid_file`, `password_protected`, `file_too_large`, `threat_detected`.
 */
export async function readOfficePackage(
  bytes: Uint8Array,
  hash: string,
  context: EngineContext,
  what: string,
): Promise<OfficePackage> {
  const listing = await openZip(bytes, context.limits.maxEntries);
  try {
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
    await checkNoOverlap(listing, bytes.length, what);

    const members: PackageMember[] = [];
    const threats = new Set<string>();
    for (const member of listing.members) {
      context.deadline.check();
      if (member.isDirectory) continue;
      const label = `${what} member "${member.name}"`;
      const data = await readMember(listing, member, context.budget.remaining, label);
      context.budget.consume(data.length, label);
      for (const threat of await context.scanMember({ bytes: data, fileName: member.name }, hash)) {
        threats.add(threat);
      }
      members.push({
        name: member.name,
        bytes: data,
        compressionMethod: member.compressionMethod,
      });
    }
    if (threats.size > 0) {
      throw new Rejection('threat_detected', `the file contains ${[...threats].join(', ')}`, [
        ...threats,
      ]);
    }
    return {
      members,
      byFoldedName: new Map(members.map((member) => [member.name.toLowerCase(), member])),
      hash,
    };
  } finally {
    listing.file.close();
  }
}

/** APPNOTE 4.3.6: members follow one another; shared data is the overlapping-entry zip bomb. */
async function checkNoOverlap(
  listing: Awaited<ReturnType<typeof openZip>>,
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

/** Whether a URL may stay as a hyperlink: http, https or mailto only. */
export function isSafeHyperlink(target: string): boolean {
  return /^(https?:\/\/|mailto:)/i.test(target.trim()) && !/[\p{Cc}\s]/u.test(target.trim());
}
