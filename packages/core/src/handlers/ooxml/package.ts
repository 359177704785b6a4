/**
 * ECMA-376 Part 2 (Open Packaging Conventions): content types, relationship parts and the
 * resolution of relationship targets to part names. Shared by the rebuild and its verify step.
 */
import type { OfficePackage, PackageMember } from '../office/package-zip.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { transitional } from '../../_internal/strict-ooxml.ts';
import { walkXml } from '../../_internal/xml-rewrite.ts';

const CONTENT_TYPES_NS = 'http://schemas.openxmlformats.org/package/2006/content-types';
const RELATIONSHIPS_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';

/** Relationships of one part may not exceed this (every loop over input has a cap). */
const MAX_RELATIONSHIPS_PER_PART = 100_000;

/** `[Content_Types].xml` read: defaults by extension, overrides by part name (both folded). */
export interface ContentTypes {
  readonly defaults: ReadonlyMap<string, string>;
  readonly overrides: ReadonlyMap<string, string>;
}

/** One `<Relationship>`. */
export interface Relationship {
  readonly id: string;
  /** The type rules go by: a Strict type as its Transitional twin (see `transitional`). */
  readonly type: string;
  /** The type as the part spells it, written back so. */
  readonly writtenType: string;
  readonly target: string;
  readonly external: boolean;
}

/** OPC §10.1.2.2: `[Content_Types].xml`. */
export function parseContentTypes(bytes: Uint8Array, what: string): ContentTypes {
  const defaults = new Map<string, string>();
  const overrides = new Map<string, string>();
  walkXml(bytes, what, {
    open(element) {
      if (element.uri !== CONTENT_TYPES_NS) return;
      const value = (name: string): string | undefined =>
        element.attributes.find((a) => a.uri === '' && a.local === name)?.value;
      const contentType = value('ContentType');
      if (contentType === undefined) return;
      if (element.localName === 'Default') {
        const extension = value('Extension');
        if (extension !== undefined) defaults.set(extension.toLowerCase(), contentType);
      } else if (element.localName === 'Override') {
        const partName = value('PartName');
        if (partName !== undefined) overrides.set(partName.toLowerCase(), contentType);
      }
    },
  });
  return { defaults, overrides };
}

/** The content type of a part name (`/word/document.xml`), or `undefined`. */
export function contentTypeOf(types: ContentTypes, partName: string): string | undefined {
  const folded = partName.toLowerCase();
  const override = types.overrides.get(folded);
  if (override !== undefined) return override;
  const slash = folded.lastIndexOf('/');
  const dot = folded.lastIndexOf('.');
  return dot > slash ? types.defaults.get(folded.slice(dot + 1)) : undefined;
}

/**
 * OPC §9.3.3: relationships of a part (or of the package when `partName` is `''`). A relationship
 * without an Id or a Target can neither be named nor followed: with `incomplete` given it is left
 * out and reported there (Google Sheets writes an `externalLinkPath` with neither), else the part
 * is refused.
 */
export function parseRelationships(
  bytes: Uint8Array,
  what: string,
  incomplete?: () => void,
): Relationship[] {
  const relationships: Relationship[] = [];
  const ids = new Set<string>();
  walkXml(bytes, what, {
    open(element) {
      if (element.uri !== RELATIONSHIPS_NS || element.localName !== 'Relationship') return;
      const value = (name: string): string | undefined =>
        element.attributes.find((a) => a.uri === '' && a.local === name)?.value;
      const id = value('Id');
      const type = value('Type');
      const target = value('Target');
      if (id === undefined || type === undefined || target === undefined) {
        if (incomplete !== undefined) {
          incomplete();
          return;
        }
        throw new Rejection(
          'invalid_file',
          `${what} has a relationship without Id, Type or Target`,
        );
      }
      // OPC §9.3.2.2: Ids are unique within a relationships part.
      if (ids.has(id)) throw new Rejection('invalid_file', `${what} repeats relationship ${id}`);
      if (ids.size >= MAX_RELATIONSHIPS_PER_PART) {
        throw new Rejection('invalid_file', `${what} has too many relationships`);
      }
      ids.add(id);
      relationships.push({
        id,
        type: transitional(type),
        writtenType: type,
        target,
        external: value('TargetMode')?.toLowerCase() === 'external',
      });
    },
  });
  return relationships;
}

/** OPC §9.3.4: `/word/document.xml` -> `word/_rels/document.xml.rels`; the package: `_rels/.rels`. */
export function relationshipsPartOf(partName: string): string {
  const slash = partName.lastIndexOf('/');
  return `${partName.slice(1, slash + 1)}_rels/${partName.slice(slash + 1)}.rels`;
}

/**
 * OPC §9.3.5 / RFC 3986 §5.2: the part an internal target names, relative to its source part,
 * or `undefined` when it leaves the package or names no part.
 */
export function resolveTarget(sourcePartName: string, target: string): string | undefined {
  if (target === '' || /[?#]/.test(target) || /^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(target.replace(/\\/g, '/'));
  } catch {
    return undefined;
  }
  const base = decoded.startsWith('/') ? [] : sourcePartName.split('/').slice(1, -1);
  const segments = [...base];
  for (const segment of decoded.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) return undefined;
      segments.pop();
    } else {
      segments.push(segment);
    }
  }
  return segments.length === 0 ? undefined : `/${segments.join('/')}`;
}

/** The member holding a part name, compared case-insensitively (OPC §9.1.1.1.2). */
export function memberOf(pkg: OfficePackage, partName: string): PackageMember | undefined {
  return pkg.byFoldedName.get(partName.slice(1).toLowerCase());
}
