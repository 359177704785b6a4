import { forEachLimited, MEMBER_CONCURRENCY } from '../../_internal/concurrency.ts';
import { isSafeHyperlink } from '../office/hyperlinks.ts';
import {
  PACKAGE_TIME,
  prepareChecksFor,
  rebuildPackageImage,
  withOfficePackage,
} from '../office/package-zip.ts';
import type { OfficePackage, PackageMember } from '../office/package-zip.ts';
import { checkedWhileWritten } from '../office/part-checks.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { collectChunks, paceWith } from '../../_internal/xml-rewrite.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import type { ZipWriteEntry } from '../../_internal/zip-writer.ts';
import { FindingTally } from '../../findings.ts';
import type { FindingPlace } from '../../findings.ts';
import type { DetectedFile, EngineContext, HandlerOutput, PartCheckResult } from '../types.ts';
import { rewritePart } from './content.ts';
import { pivotCacheRefusal } from './pivot-cache.ts';
import { isWorkbookType, sheetNamesById } from './workbook-sheets.ts';
import {
  contentTypeOf,
  memberOf,
  parseContentTypes,
  parseRelationships,
  relationshipsPartOf,
  resolveTarget,
} from './package.ts';
import type { ContentTypes, Relationship } from './package.ts';
import {
  droppedKind,
  HYPERLINK_RELATIONSHIP,
  IMAGE_TYPES,
  impliedContentType,
  isAllowedTarget,
  isRegeneratedPart,
  OFFICE_DOCUMENT_RELATIONSHIP,
  PIVOT_CACHE_TYPE,
  PIVOT_TABLE_TYPE,
  RELATIONSHIPS_TYPE,
} from './parts.ts';
import {
  binarySheetNamesById,
  isBinaryPartType,
  isBinaryWorkbookType,
  rewriteBinaryPart,
} from './xlsb.ts';
import { metafileKindOf } from '../image/metafile/metafile.ts';

interface KeptPart {
  /** Part name, `/word/document.xml`, spelled as the member is. */
  readonly name: string;
  readonly contentType: string;
  /**
   * A rebuilt image, or the member a part is read from (and rewritten) when it is written. An
   * image holds its member until it is rebuilt, after the walk.
   */
  source: Uint8Array | PackageMember | undefined;
  relationships: Relationship[];
}

/** An image part kept by the walk, rebuilt after it. */
interface PendingImage {
  readonly part: KeptPart;
  readonly member: PackageMember;
  readonly extension: string;
}

const VML_TYPE = 'application/vnd.openxmlformats-officedocument.vmldrawing';
const EMPTY_VML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<xml/>';

/** The package itself, as the source of `_rels/.rels`. */
const PACKAGE_ROOT = '/';

/**
 * Rebuilds an OOXML package (docx, xlsx, pptx and their macro-enabled, template, show and add-in
 * forms) from its allowlisted parts. Starting at the package relationships, a part is kept only
 * when every relationship leading to it is in the allowlist and its content type is one the
 * relationship allows; images are rebuilt through the engine's image handler; every kept XML
 * part is re-serialised without what can run or fetch (see `content.ts`). The new package has
 * fresh `[Content_Types].xml` and relationship parts naming exactly the kept parts. What was left
 * out is counted by kind. The main part keeps its content type, so a `.docm` stays a `.docm`.
 *
 * An `.xlsb` is the same package with binary record-stream parts ([MS-XLSB]): each kept binary
 * part is parsed whole and written back record by record without what runs or links out (see
 * `xlsb.ts`); one that does not validate refuses the file as `invalid_file`.
 */
export async function rebuildOoxml(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  return withOfficePackage(input, context, (pkg, what) => rebuildPackage(pkg, context, what));
}

async function rebuildPackage(
  pkg: OfficePackage,
  context: EngineContext,
  what: string,
): Promise<HandlerOutput> {
  const typesMember = memberOf(pkg, '/[Content_Types].xml');
  if (!typesMember) throw new Rejection('invalid_file', `${what} has no [Content_Types].xml`);
  const types = parseContentTypes(await typesMember.read(), 'the content types part');
  prepareChecksFor(pkg);
  const findings = new FindingTally();
  findings.add('trailing-data', pkg.trailingBytes > 0 ? 1 : 0);
  const walk = new PackageWalk(pkg, types, findings, context);
  await walk.run();
  await walk.rebuildImages();

  const main = walk.parts
    .get(PACKAGE_ROOT)
    ?.relationships.find((relationship) => relationship.type === OFFICE_DOCUMENT_RELATIONSHIP);
  if (!main) {
    throw new Rejection('invalid_file', `${what} has no main document part of a known type`);
  }
  walk.countUnreached();
  // Parts are read, rewritten and deflated one at a time as the writer reaches them; XML parts
  // are checked for verify before release in a worker thread while they are written.
  const checkedParts = new Map<string, Promise<PartCheckResult>>();
  const bytes = await writePackage([...walk.parts.values()], (part) => {
    const chunks = partBytes(part, findings.at(walk.placeOf(part.name)), context);
    const contentType = part.contentType.toLowerCase();
    if (!isXmlType(contentType) || isBinaryPartType(contentType)) return chunks;
    return checkedWhileWritten(
      chunks,
      'ooxml-xml',
      part.name,
      checkedParts,
      part.name.slice(1).toLowerCase(),
      context.deadline,
    );
  });
  return { bytes, findings: findings.toArray(), checkedParts };
}

/** The bytes a kept part is written with: XML and binary parts rewritten, images as rebuilt. */
async function* partBytes(
  part: KeptPart,
  findings: FindingTally,
  context: EngineContext,
): AsyncGenerator<Uint8Array, void, undefined> {
  const source = part.source;
  if (source === undefined) return;
  if (source instanceof Uint8Array) {
    yield source;
    return;
  }
  const bytes = await source.read();
  const contentType = part.contentType.toLowerCase();
  const rules = {
    keptIds: new Set(part.relationships.map((relationship) => relationship.id)),
    contentType,
    findings,
  };
  context.deadline.check();
  if (isBinaryPartType(contentType)) {
    yield rewriteBinaryPart(bytes, `part ${part.name}`, rules);
    return;
  }
  if (!isXmlType(contentType)) {
    yield bytes;
    return;
  }
  const pace = paceWith(context.deadline);
  if (contentType !== VML_TYPE) {
    yield* rewritePart(bytes, `part ${part.name}`, rules, pace);
    return;
  }
  // Legacy VML written by older Office is often not well-formed (unclosed `<br>`); it only
  // draws comment boxes and form controls, so an unreadable one is emptied, not fatal. It is
  // rewritten whole before any of it is written, so an unreadable one leaves nothing behind.
  let vml: Uint8Array;
  try {
    vml = await collectChunks(rewritePart(bytes, `part ${part.name}`, rules, pace));
  } catch (error) {
    if (!(error instanceof Rejection) || error.reason !== 'invalid_file') throw error;
    findings.add('hidden-data');
    vml = new TextEncoder().encode(EMPTY_VML);
  }
  yield vml;
}

/** Breadth-first walk of the relationship graph from the package root. */
class PackageWalk {
  readonly parts = new Map<string, KeptPart>();
  /** Folded part name -> whether it is kept; decided once, when first reached. */
  readonly #decided = new Map<string, boolean>();
  readonly #counted = new Set<string>();
  /** Folded part name -> the name of the sheet it is, as the workbook names it. */
  readonly #sheets = new Map<string, string>();
  readonly #images: PendingImage[] = [];
  readonly #pkg: OfficePackage;
  readonly #types: ContentTypes;
  readonly #findings: FindingTally;
  readonly #context: EngineContext;

  constructor(
    pkg: OfficePackage,
    types: ContentTypes,
    findings: FindingTally,
    context: EngineContext,
  ) {
    this.#pkg = pkg;
    this.#types = types;
    this.#findings = findings;
    this.#context = context;
  }

  async run(): Promise<void> {
    const root: KeptPart = {
      name: PACKAGE_ROOT,
      contentType: '',
      source: undefined,
      relationships: [],
    };
    this.parts.set(PACKAGE_ROOT, root);
    this.#decided.set(PACKAGE_ROOT, true);
    const queue: KeptPart[] = [root];
    for (let next = queue.shift(); next; next = queue.shift()) {
      this.#context.deadline.check();
      const relsName = relationshipsPartOf(next.name === PACKAGE_ROOT ? '/' : next.name);
      const relsMember = this.#pkg.byFoldedName.get(relsName.toLowerCase());
      if (!relsMember) continue;
      const rels = await relsMember.read();
      const incomplete = (): void => {
        this.#findings.at({ part: relsName }).add('hidden-data');
      };
      const relationships = parseRelationships(rels, `part /${relsName}`, incomplete);
      await this.#nameSheets(next, relationships);
      for (const relationship of relationships) {
        const target = this.#follow(next, relationship);
        if (target === false || (target && !(await this.#admitted(target)))) continue;
        next.relationships.push(relationship);
        if (target) queue.push(target);
      }
    }
    this.#withdrawOrphanedPivotTables();
  }

  /**
   * Whether a newly kept part may stay by what it holds; a pivot cache reading anything but this
   * workbook is refused (see `pivotCacheRefusal`), counted, and never kept from then on.
   */
  async #admitted(part: KeptPart): Promise<boolean> {
    if (part.contentType.toLowerCase() !== PIVOT_CACHE_TYPE || part.source instanceof Uint8Array) {
      return true;
    }
    const refusal = part.source && pivotCacheRefusal(await part.source.read(), `part ${part.name}`);
    if (refusal === undefined) return true;
    this.#withdraw(new Set([part.name.toLowerCase()]));
    this.#findings.at(this.placeOf(part.name)).add(refusal);
    return false;
  }

  /**
   * A pivot table shows its cache (ECMA-376 Part 1 §18.10.1.73 `cacheId`, and the table's
   * relationship to the cache definition): one whose cache was refused or is missing goes too,
   * counted as hidden data. The cells Excel wrote for it stay in the sheet.
   */
  #withdrawOrphanedPivotTables(): void {
    const orphans = new Set<string>();
    for (const part of this.parts.values()) {
      if (part.contentType.toLowerCase() !== PIVOT_TABLE_TYPE) continue;
      const cached = part.relationships.some(
        (relationship) =>
          !relationship.external &&
          this.parts
            .get(resolveTarget(part.name, relationship.target)?.toLowerCase() ?? '')
            ?.contentType.toLowerCase() === PIVOT_CACHE_TYPE,
      );
      if (cached) continue;
      orphans.add(part.name.toLowerCase());
      this.#findings.at(this.placeOf(part.name)).add('hidden-data');
    }
    this.#withdraw(orphans);
  }

  /** Leaves out kept parts (folded names), with every relationship to them. */
  #withdraw(names: ReadonlySet<string>): void {
    if (names.size === 0) return;
    for (const [folded, part] of this.parts) {
      if (names.has(part.name.toLowerCase())) {
        this.parts.delete(folded);
        this.#decided.set(folded, false);
        this.#counted.add(folded);
        continue;
      }
      part.relationships = part.relationships.filter((relationship) => {
        if (relationship.external) return true;
        const target = resolveTarget(part.name, relationship.target);
        return target === undefined || !names.has(target.toLowerCase());
      });
    }
  }

  /** Decides one relationship: `false` drops it, a part is newly kept, `undefined` keeps it only. */
  #follow(source: KeptPart, relationship: Relationship): KeptPart | false | undefined {
    if (relationship.external) {
      if (relationship.type === HYPERLINK_RELATIONSHIP && isSafeHyperlink(relationship.target)) {
        return undefined;
      }
      this.#findings.at(this.placeOf(source.name)).add('external-relationship');
      return false;
    }
    if (isRegeneratedPart(relationship.type)) {
      const regenerated = resolveTarget(source.name, relationship.target);
      if (regenerated !== undefined) this.#counted.add(regenerated.toLowerCase());
      return false;
    }
    const partName = resolveTarget(source.name, relationship.target);
    const member = partName === undefined ? undefined : memberOf(this.#pkg, partName);
    // A relationship to a part that is not there is dropped: nothing to keep or to count.
    if (partName === undefined || !member || isPackageMachinery(member.name)) return false;
    const folded = partName.toLowerCase();
    const labelled = contentTypeOf(this.#types, partName);
    const contentType =
      labelled === undefined
        ? undefined
        : (impliedContentType(relationship.type, labelled, source.contentType) ?? labelled);
    if (contentType === undefined || !isAllowedTarget(relationship.type, contentType)) {
      if (!this.#counted.has(folded) && this.#decided.get(folded) !== true) {
        this.#counted.add(folded);
        this.#findings.at(this.placeOf(partName)).add(droppedKind(relationship.type, contentType));
      }
      return false;
    }
    const decided = this.#decided.get(folded);
    if (decided !== undefined) return decided ? undefined : false;
    this.#decided.set(folded, true);
    const part: KeptPart = {
      name: `/${member.name}`,
      contentType,
      source: member,
      relationships: [],
    };
    this.parts.set(folded, part);
    const imageExtension = IMAGE_TYPES[contentType.toLowerCase()];
    if (imageExtension !== undefined)
      this.#images.push({ part, member, extension: imageExtension });
    return part;
  }

  /**
   * Rebuilds the kept images through the engine, one per CPU at once (their decodes together
   * stay within the decode ceiling, see `DecodeGate`). An image the engine refuses is dropped
   * with every relationship to it.
   */
  async rebuildImages(): Promise<void> {
    const refused = new Set<string>();
    await forEachLimited(this.#images, MEMBER_CONCURRENCY, async ({ part, member, extension }) => {
      const rebuilt = await this.#rebuildImage(await member.read(), extension, part.name);
      if (rebuilt) part.source = rebuilt;
      else refused.add(part.name.toLowerCase());
    });
    this.#withdraw(refused);
  }

  /** A kept image through the engine; one it refuses is counted here and left out. */
  async #rebuildImage(
    bytes: Uint8Array,
    extension: string,
    partName: string,
  ): Promise<Uint8Array | undefined> {
    const stem = partName.slice(partName.lastIndexOf('/') + 1).replace(/\.[^.]*$/, '');
    const rebuilt = await rebuildPackageImage(
      { bytes, fileName: `${stem}.${extension}` },
      this.#pkg,
      this.#context,
      this.#findings.at(this.placeOf(partName)),
    );
    if (!rebuilt) this.#counted.add(partName.toLowerCase());
    return rebuilt;
  }

  /**
   * Where a finding in a part is reported: the part's path in the package and, for a sheet of a
   * workbook, the sheet's name. The package relationships (`/`) report as their own part.
   */
  placeOf(partName: string): FindingPlace {
    if (partName === PACKAGE_ROOT) return { part: relationshipsPartOf(PACKAGE_ROOT) };
    const sheet = this.#sheets.get(partName.toLowerCase());
    return { part: partName.slice(1), ...(sheet !== undefined && { sheet }) };
  }

  /**
   * Learns the sheet names of a workbook part (ECMA-376 Part 1 §18.2.19 `sheet`, [MS-XLSB]
   * 2.4.304 BrtBundleSh: the name and the relationship id of its part) before its relationships
   * are followed, so findings in a sheet part name the sheet. A workbook that does not read names
   * none here; its rewrite decides what that means.
   */
  async #nameSheets(part: KeptPart, relationships: readonly Relationship[]): Promise<void> {
    const binary = isBinaryWorkbookType(part.contentType);
    if ((!binary && !isWorkbookType(part.contentType)) || part.source === undefined) return;
    const bytes = part.source instanceof Uint8Array ? part.source : await part.source.read();
    const what = `part ${part.name}`;
    let names: ReadonlyMap<string, string>;
    try {
      names = binary ? binarySheetNamesById(bytes, what) : sheetNamesById(bytes, what);
    } catch (error) {
      if (error instanceof Rejection) return;
      throw error;
    }
    for (const relationship of relationships) {
      const name = names.get(relationship.id);
      const target = relationship.external
        ? undefined
        : resolveTarget(part.name, relationship.target);
      if (name !== undefined && target !== undefined) this.#sheets.set(target.toLowerCase(), name);
    }
  }

  /** Members no kept relationship reaches are dropped and counted by what they are. */
  countUnreached(): void {
    for (const member of this.#pkg.members) {
      const folded = `/${member.name}`.toLowerCase();
      if (isPackageMachinery(member.name) || this.#decided.get(folded) === true) continue;
      if (this.#counted.has(folded)) continue;
      this.#findings
        .at({ part: member.name })
        .add(droppedKind(undefined, contentTypeOf(this.#types, `/${member.name}`)));
    }
  }
}

/** `[Content_Types].xml` and relationship parts: rebuilt, never copied. */
function isPackageMachinery(memberName: string): boolean {
  const folded = memberName.toLowerCase();
  return folded === '[content_types].xml' || /(^|\/)_rels\/[^/]*\.rels$/.test(folded);
}

function isXmlType(contentType: string): boolean {
  const folded = contentType.toLowerCase();
  return folded.endsWith('+xml') || folded === VML_TYPE;
}

/** Writes the package: content types first, then the package relationships, parts, their rels. */
async function writePackage(
  parts: readonly KeptPart[],
  bytesOf: (part: KeptPart) => AsyncIterable<Uint8Array>,
): Promise<Uint8Array> {
  const contentTypes = [
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n',
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">',
    `<Default Extension="rels" ContentType="${RELATIONSHIPS_TYPE}"/>`,
  ];
  const entries: ZipWriteEntry[] = [];
  const relsEntries: ZipWriteEntry[] = [];
  for (const part of parts) {
    if (part.name !== PACKAGE_ROOT) {
      contentTypes.push(
        `<Override PartName="${escape(part.name)}" ContentType="${escape(part.contentType)}"/>`,
      );
      const imageExtension = IMAGE_TYPES[part.contentType.toLowerCase()];
      const source = part.source;
      entries.push({
        path: part.name.slice(1),
        // Images were rebuilt during the walk; the rest is made lazily.
        bytes:
          imageExtension !== undefined && source instanceof Uint8Array
            ? source
            : () => bytesOf(part),
        modifiedAt: PACKAGE_TIME,
        // Raster images are stored as they are; metafiles deflate well.
        compress: imageExtension === undefined || metafileKindOf(imageExtension) !== undefined,
      });
    }
    if (part.relationships.length === 0) continue;
    const rels = [
      '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n',
      '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">',
      ...part.relationships.map(
        (r) =>
          `<Relationship Id="${escape(r.id)}" Type="${escape(r.writtenType)}" Target="${escape(r.target)}"${r.external ? ' TargetMode="External"' : ''}/>`,
      ),
      '</Relationships>',
    ];
    const relsEntry: ZipWriteEntry = {
      path: relationshipsPartOf(part.name),
      bytes: new TextEncoder().encode(rels.join('')),
      modifiedAt: PACKAGE_TIME,
      compress: true,
    };
    if (part.name === PACKAGE_ROOT) entries.unshift(relsEntry);
    else relsEntries.push(relsEntry);
  }
  contentTypes.push('</Types>');
  entries.unshift({
    path: '[Content_Types].xml',
    bytes: new TextEncoder().encode(contentTypes.join('')),
    modifiedAt: PACKAGE_TIME,
    compress: true,
  });
  return writeZip([...entries, ...relsEntries]);
}

function escape(value: string): string {
  return value.replace(/[&<>"]/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;',
  );
}
