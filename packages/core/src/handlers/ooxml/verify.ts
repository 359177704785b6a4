import { isSafeHyperlink } from '../office/hyperlinks.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { verdictOn } from '../office/part-checks.ts';
import { matchesCrc, openZip, readMember } from '../../_internal/zip-reader.ts';
import type { ZipMember } from '../../_internal/zip-reader.ts';
import { FindingTally } from '../../findings.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { checkMetafile, metafileKindOf } from '../image/metafile/metafile.ts';
import { assertReferences, checkXmlPart } from './part-check.ts';
import {
  contentTypeOf,
  parseContentTypes,
  parseRelationships,
  relationshipsPartOf,
  resolveTarget,
} from './package.ts';
import {
  HYPERLINK_RELATIONSHIP,
  IMAGE_TYPES,
  isAllowedContentType,
  isAllowedTarget,
  RELATIONSHIPS_TYPE,
} from './parts.ts';
import {
  BINARY_PART_TYPES,
  isForbiddenRecord,
  isRunningName,
  readBundleSheet,
  readDefinedName,
  relationshipOf,
} from './xlsb.ts';
import { screenFormulas } from './xlsb-formulas.ts';
import { parseRecords, RT } from './xlsb-records.ts';

/** Bytes of members verify inflates ahead of the one it checks (beyond the next one). */
const READ_AHEAD_BYTES = 16 * 1024 * 1024;

/**
 * OOXML checks of verify before release. The written package is re-listed with yauzl and its
 * parts re-read with saxes, independently of the writer: every member has an allowlisted content
 * type, every relationship is allowlisted and resolves (external ones are http/https/mailto
 * hyperlinks), every part is reached from the package relationships, every XML part parses
 * without a DTD, and none holds an OLE/ActiveX anchor, a fetching or running field, formula or
 * defined name, or a macro action. Every binary (xlsb) part parses as a balanced record stream and
 * holds no OLE, ActiveX or file-sharing record, no auto-run or macro name, and no record naming a
 * relationship the part does not have.
 */
export async function verifyOoxml(
  output: HandlerOutput,
  _input: DetectedFile,
  context: EngineContext,
): Promise<void> {
  const listing = await openZip(output.bytes, context.limits.maxEntries).catch((error: unknown) => {
    throw new VerifyFailure('ooxml.zip', `the written package cannot be listed: ${String(error)}`);
  });
  try {
    if (listing.trailingBytes > 0) {
      throw new VerifyFailure('ooxml.zip', 'bytes follow the end of the written package');
    }
    // Only the package machinery is held in memory; every other part is read when checked.
    const members = new Map<string, ZipMember>();
    const parts = new Map<string, Uint8Array>();
    for (const member of listing.members) {
      if (member.isDirectory || member.isEncrypted) {
        throw new VerifyFailure('ooxml.zip', `unexpected member "${member.name}"`);
      }
      const folded = member.name.toLowerCase();
      if (members.has(folded))
        throw new VerifyFailure('ooxml.zip', `"${member.name}" is listed twice`);
      members.set(folded, member);
      if (folded === '[content_types].xml' || /(^|\/)_rels\/[^/]*\.rels$/.test(folded)) {
        parts.set(folded, await readMember(listing, member, context.limits.maxBytes, member.name));
      }
    }
    const typesBytes = parts.get('[content_types].xml');
    if (!typesBytes) throw new VerifyFailure('ooxml.content-types', 'no [Content_Types].xml');
    const types = guard('ooxml.xml-parse', () =>
      parseContentTypes(typesBytes, '[Content_Types].xml'),
    );
    for (const name of members.keys()) {
      if (name === '[content_types].xml') continue;
      const contentType = contentTypeOf(types, `/${name}`);
      if (contentType === undefined || !isAllowedContentType(contentType)) {
        throw new VerifyFailure(
          'ooxml.part-allowlist',
          `part /${name} has content type ${contentType ?? '(none)'}, outside the allowlist`,
        );
      }
      if (
        contentType.toLowerCase() === RELATIONSHIPS_TYPE &&
        !/(^|\/)_rels\/[^/]*\.rels$/.test(name)
      ) {
        throw new VerifyFailure('ooxml.part-allowlist', `part /${name} poses as relationships`);
      }
    }
    const reached = new Set<string>(['[content_types].xml']);
    const relationshipIds = new Map<string, Set<string>>();
    const queue = ['/'];
    for (let source = queue.shift(); source !== undefined; source = queue.shift()) {
      const relsName = relationshipsPartOf(source).toLowerCase();
      const relsBytes = parts.get(relsName);
      if (!relsBytes) continue;
      reached.add(relsName);
      const relationships = guard('ooxml.xml-parse', () => parseRelationships(relsBytes, relsName));
      relationshipIds.set(source.slice(1).toLowerCase(), new Set(relationships.map((r) => r.id)));
      for (const relationship of relationships) {
        if (relationship.external) {
          if (
            relationship.type !== HYPERLINK_RELATIONSHIP ||
            !isSafeHyperlink(relationship.target)
          ) {
            throw new VerifyFailure(
              'ooxml.relationship-allowlist',
              `${relsName} keeps an external ${relationship.type} relationship`,
            );
          }
          continue;
        }
        const target = resolveTarget(source, relationship.target);
        const contentType = target === undefined ? undefined : contentTypeOf(types, target);
        if (
          target === undefined ||
          !members.has(target.slice(1).toLowerCase()) ||
          contentType === undefined
        ) {
          throw new VerifyFailure(
            'ooxml.relationship-target',
            `${relsName} has a dangling relationship`,
          );
        }
        if (!isAllowedTarget(relationship.type, contentType)) {
          throw new VerifyFailure(
            'ooxml.relationship-allowlist',
            `${relsName}: ${relationship.type} -> ${contentType} is outside the allowlist`,
          );
        }
        const folded = target.slice(1).toLowerCase();
        if (!reached.has(folded)) {
          reached.add(folded);
          queue.push(target);
        }
      }
    }
    // Every member is inflated and its CRC-32 checked. Members are inflated ahead while one is
    // checked: always the next, and further ones while those inflated ahead stay within
    // READ_AHEAD_BYTES (many small parts inflate side by side on the thread pool).
    const listed = [...members];
    const reading = new Map<number, Promise<Uint8Array>>();
    let nextToRead = 0;
    let bytesAhead = 0;
    const readAhead = (current: number): void => {
      for (; nextToRead < listed.length; nextToRead += 1) {
        const entry = listed[nextToRead];
        if (!entry) break;
        const [name, member] = entry;
        const size = member.uncompressedSize;
        if (nextToRead > current + 1 && bytesAhead + size > READ_AHEAD_BYTES) break;
        const read = Promise.resolve(
          parts.get(name) ?? readMember(listing, member, context.limits.maxBytes, member.name),
        );
        // Awaited in its turn; a check failing before then must not leave it unhandled.
        read.catch(() => undefined);
        reading.set(nextToRead, read);
        bytesAhead += size;
      }
    };
    for (const [index, [name, member]] of listed.entries()) {
      if (!reached.has(name)) {
        throw new VerifyFailure(
          'ooxml.unreferenced-part',
          `part /${name} has no relationship to it`,
        );
      }
      readAhead(index);
      const bytes = await (reading.get(index) ?? Promise.reject(new Error('unreachable')));
      reading.delete(index);
      bytesAhead -= member.uncompressedSize;
      if (!matchesCrc(member, bytes)) {
        throw new VerifyFailure('ooxml.zip', `part /${name} does not match its CRC-32`);
      }
      const contentType = contentTypeOf(types, `/${name}`)?.toLowerCase() ?? '';
      const ids = relationshipIds.get(name) ?? new Set<string>();
      const imageExtension = IMAGE_TYPES[contentType];
      if (imageExtension !== undefined) {
        // Raster images passed the image handler's own verify; metafiles are read back here.
        const metafile = metafileKindOf(imageExtension);
        const fault = metafile === undefined ? undefined : checkMetafile(bytes, metafile);
        if (fault !== undefined) {
          throw new VerifyFailure('ooxml.metafile', `picture /${name}: ${fault}`);
        }
        continue;
      }
      if (BINARY_PART_TYPES.has(contentType)) {
        checkBinaryPart(bytes, `/${name}`, contentType, ids);
      } else {
        const report =
          (await verdictOn(
            output.checkedParts?.get(name),
            bytes,
            `/${name}`,
            'ooxml.zip',
            context.deadline,
          )) ?? checkXmlPart(bytes, `/${name}`);
        assertReferences(report, ids, `/${name}`);
      }
    }
  } finally {
    listing.file.close();
  }
}

function guard<T>(check: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof Rejection) throw new VerifyFailure(check, error.message);
    throw error;
  }
}

/** Re-reads one binary part ([MS-XLSB] record stream) and checks what it may not hold. */
function checkBinaryPart(
  bytes: Uint8Array,
  name: string,
  contentType: string,
  ids: ReadonlySet<string>,
): void {
  const records = guard('ooxml.xlsb-parse', () =>
    parseRecords(bytes, name, BINARY_PART_TYPES.get(contentType)),
  );
  guard('ooxml.xlsb-parse', () => {
    for (const record of records) {
      if (isForbiddenRecord(record.type)) {
        throw new VerifyFailure(
          'ooxml.active-content',
          `${name} still holds record ${record.type}`,
        );
      }
      if (record.type === RT.BrtName && isRunningName(readDefinedName(record, name))) {
        throw new VerifyFailure(
          'ooxml.active-content',
          `${name} still holds a defined name that runs`,
        );
      }
      const id =
        record.type === RT.BrtBundleSh
          ? readBundleSheet(record, name).id
          : relationshipOf(record, name);
      // Only a hyperlink or a cut supporting link may name no relationship.
      const mayBeEmpty = record.type === RT.BrtHLink || record.type === RT.BrtSupBookSrc;
      if (id !== undefined && !(mayBeEmpty && id === '') && !ids.has(id)) {
        throw new VerifyFailure(
          'ooxml.dangling-reference',
          `${name}: record ${record.type} names relationship ${id}, which the part does not have`,
        );
      }
    }
    // Every formula left must pass the screening again: none calls code, a server or a name.
    const left = new FindingTally();
    if (contentType === WORKSHEET_BINARY_TYPE) screenFormulas(records, left);
    if (left.toArray().length > 0) {
      throw new VerifyFailure('ooxml.active-content', `${name} still holds a refused formula`);
    }
  });
}

const WORKSHEET_BINARY_TYPE = 'application/vnd.ms-excel.worksheet';
