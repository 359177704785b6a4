import { openZip, readMember } from '../_internal/zip-reader.ts';
import type { ZipListing, ZipMember } from '../_internal/zip-reader.ts';
import { attributeNs, scanXmlStartTags } from '../_internal/xml.ts';
import type { ContentKind } from '../formats.ts';

/** What a zip container really is. */
export type ZipContent =
  | { readonly container: 'ooxml'; readonly kind: ContentKind | 'other' }
  | { readonly container: 'odf'; readonly kind: ContentKind | 'other'; readonly encrypted: boolean }
  | { readonly container: 'zip' };

/** Package parts the probe reads are small; a larger one is itself suspicious. */
const MAX_PROBE_PART_BYTES = 8 * 1024 * 1024;

/**
 * ECMA-376 Part 1 and [MS-OFFMACRO2]/[MS-XLSB] main-part content types, by the content kind of
 * the package they start.
 */
const OOXML_MAIN_TYPES: Readonly<Record<string, ContentKind>> = {
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml': 'word-ooxml',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml': 'word-ooxml',
  'application/vnd.ms-word.document.macroenabled.main+xml': 'word-ooxml',
  'application/vnd.ms-word.template.macroenabledtemplate.main+xml': 'word-ooxml',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml': 'excel-ooxml',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml': 'excel-ooxml',
  'application/vnd.ms-excel.sheet.macroenabled.main+xml': 'excel-ooxml',
  'application/vnd.ms-excel.template.macroenabled.main+xml': 'excel-ooxml',
  'application/vnd.ms-excel.addin.macroenabled.main+xml': 'excel-ooxml',
  'application/vnd.ms-excel.sheet.binary.macroenabled.main': 'excel-binary-ooxml',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml':
    'powerpoint-ooxml',
  'application/vnd.openxmlformats-officedocument.presentationml.slideshow.main+xml':
    'powerpoint-ooxml',
  'application/vnd.openxmlformats-officedocument.presentationml.template.main+xml':
    'powerpoint-ooxml',
  'application/vnd.ms-powerpoint.presentation.macroenabled.main+xml': 'powerpoint-ooxml',
  'application/vnd.ms-powerpoint.slideshow.macroenabled.main+xml': 'powerpoint-ooxml',
  'application/vnd.ms-powerpoint.template.macroenabled.main+xml': 'powerpoint-ooxml',
  'application/vnd.ms-powerpoint.addin.macroenabled.main+xml': 'powerpoint-ooxml',
};

/** OASIS ODF 1.3 Part 2 §3.3 media types (templates open as their document kind). */
const ODF_MEDIA_TYPES: Readonly<Record<string, ContentKind>> = {
  'application/vnd.oasis.opendocument.text': 'odf-text',
  'application/vnd.oasis.opendocument.text-template': 'odf-text',
  'application/vnd.oasis.opendocument.spreadsheet': 'odf-spreadsheet',
  'application/vnd.oasis.opendocument.spreadsheet-template': 'odf-spreadsheet',
  'application/vnd.oasis.opendocument.presentation': 'odf-presentation',
  'application/vnd.oasis.opendocument.presentation-template': 'odf-presentation',
};

const OFFICE_DOCUMENT_RELATIONSHIP = '/relationships/officeDocument';
const MANIFEST_NS = 'urn:oasis:names:tc:opendocument:xmlns:manifest:1.0';

/**
 * Tells a plain zip from an OOXML package (ECMA-376 Part 2 OPC: `[Content_Types].xml` and the
 * `officeDocument` relationship of `_rels/.rels`) and from an ODF package (the `mimetype` member
 * or the manifest's root entry), and reports ODF encryption.
 * @throws {Rejection} `invalid_file` when the zip or a package part cannot be read.
 */
export async function probeZip(bytes: Uint8Array, maxEntries: number): Promise<ZipContent> {
  const listing = await openZip(bytes, maxEntries);
  try {
    const byName = new Map(listing.members.map((member) => [member.name.toLowerCase(), member]));
    const contentTypes = byName.get('[content_types].xml');
    if (contentTypes) return { container: 'ooxml', kind: await ooxmlKind(listing, byName) };
    const mimetype = byName.get('mimetype');
    const manifest = byName.get('meta-inf/manifest.xml');
    if (mimetype || manifest) return await odfContent(listing, mimetype, manifest);
    return { container: 'zip' };
  } finally {
    listing.file.close();
  }
}

async function readPart(listing: ZipListing, member: ZipMember): Promise<Uint8Array> {
  return readMember(listing, member, MAX_PROBE_PART_BYTES, `package part ${member.name}`);
}

async function ooxmlKind(
  listing: ZipListing,
  byName: ReadonlyMap<string, ZipMember>,
): Promise<ContentKind | 'other'> {
  const rels = byName.get('_rels/.rels');
  const types = byName.get('[content_types].xml');
  if (!rels || !types) return 'other';
  let mainPart: string | undefined;
  scanXmlStartTags(await readPart(listing, rels), 'the package relationships', (tag) => {
    const type = tag.attributes.Type ?? '';
    if (tag.localName === 'Relationship' && type.endsWith(OFFICE_DOCUMENT_RELATIONSHIP)) {
      mainPart ??= tag.attributes.Target;
    }
  });
  if (mainPart === undefined) return 'other';
  const partName = `/${mainPart.replace(/^\/+/, '')}`.toLowerCase();
  const extension = partName.slice(partName.lastIndexOf('.') + 1);
  let override: string | undefined;
  let fallback: string | undefined;
  scanXmlStartTags(await readPart(listing, types), 'the content types part', (tag) => {
    const contentType = tag.attributes.ContentType?.toLowerCase();
    if (tag.localName === 'Override' && tag.attributes.PartName?.toLowerCase() === partName) {
      override ??= contentType;
    } else if (
      tag.localName === 'Default' &&
      tag.attributes.Extension?.toLowerCase() === extension
    ) {
      fallback ??= contentType;
    }
  });
  const contentType = override ?? fallback;
  return contentType === undefined ? 'other' : (OOXML_MAIN_TYPES[contentType] ?? 'other');
}

async function odfContent(
  listing: ZipListing,
  mimetype: ZipMember | undefined,
  manifest: ZipMember | undefined,
): Promise<ZipContent> {
  let mediaType = mimetype
    ? new TextDecoder().decode(await readPart(listing, mimetype)).trim()
    : undefined;
  let encrypted = false;
  if (manifest) {
    scanXmlStartTags(await readPart(listing, manifest), 'the package manifest', (tag) => {
      if (tag.uri !== MANIFEST_NS) return;
      if (tag.localName === 'encryption-data') encrypted = true;
      if (tag.localName === 'file-entry' && attributeNs(tag, MANIFEST_NS, 'full-path') === '/') {
        mediaType ??= attributeNs(tag, MANIFEST_NS, 'media-type');
      }
    });
  }
  return { container: 'odf', kind: ODF_MEDIA_TYPES[mediaType ?? ''] ?? 'other', encrypted };
}
