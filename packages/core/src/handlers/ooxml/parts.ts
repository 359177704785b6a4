/**
 * The OOXML allowlist: which relationship may point at which content type. A part is kept only
 * when it is reached from the package root through relationships that are all in this table and
 * its own content type is one the relationship allows (ECMA-376 Part 1 §11-§13, Part 2 OPC;
 * [MS-DOCX], [MS-XLSX], [MS-PPTX] for the Microsoft extensions). Everything else is dropped and
 * counted by {@link droppedKind}.
 */
import type { FindingKind } from '../../findings.ts';

const OD = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/';
const PKG = 'http://schemas.openxmlformats.org/package/2006/relationships/';
const MS = 'http://schemas.microsoft.com/office/';

const WML = 'application/vnd.openxmlformats-officedocument.wordprocessingml.';
const SML = 'application/vnd.openxmlformats-officedocument.spreadsheetml.';
const PML = 'application/vnd.openxmlformats-officedocument.presentationml.';
const DML = 'application/vnd.openxmlformats-officedocument.drawingml.';
/** [MS-XLSB] binary part content types (lower-cased). */
const XLSB = 'application/vnd.ms-excel.';
const XLSB_MAIN = `${XLSB}sheet.binary.macroenabled.main`;

/** A pivot cache definition (ECMA-376 Part 1 §18.10.1.67), lower-cased. */
export const PIVOT_CACHE_TYPE = `${SML}pivotcachedefinition+xml`;
/** A pivot table definition (ECMA-376 Part 1 §18.10.1.73), lower-cased. */
export const PIVOT_TABLE_TYPE = `${SML}pivottable+xml`;

/** Content type of relationship parts (OPC §10.1.2.2). */
export const RELATIONSHIPS_TYPE = 'application/vnd.openxmlformats-package.relationships+xml';

/**
 * Picture content types, with the extension the engine rebuilds them by: raster images through
 * the image handler, metafiles (EMF, WMF) through the metafile rebuild.
 */
export const IMAGE_TYPES: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/gif': 'gif',
  'image/bmp': 'bmp',
  'image/tiff': 'tif',
  'image/x-emf': 'emf',
  'image/emf': 'emf',
  'image/x-wmf': 'wmf',
  'image/wmf': 'wmf',
};

/** Main document parts (the `officeDocument` relationship's target). */
const MAIN_TYPES: readonly string[] = [
  `${WML}document.main+xml`,
  `${WML}template.main+xml`,
  'application/vnd.ms-word.document.macroenabled.main+xml',
  'application/vnd.ms-word.template.macroenabledtemplate.main+xml',
  `${SML}sheet.main+xml`,
  `${SML}template.main+xml`,
  'application/vnd.ms-excel.sheet.macroenabled.main+xml',
  'application/vnd.ms-excel.template.macroenabled.main+xml',
  'application/vnd.ms-excel.addin.macroenabled.main+xml',
  // [MS-XLSB]: the binary workbook keeps this type whether or not it has macros.
  XLSB_MAIN,
  `${PML}presentation.main+xml`,
  `${PML}slideshow.main+xml`,
  `${PML}template.main+xml`,
  'application/vnd.ms-powerpoint.presentation.macroenabled.main+xml',
  'application/vnd.ms-powerpoint.slideshow.macroenabled.main+xml',
  'application/vnd.ms-powerpoint.template.macroenabled.main+xml',
  'application/vnd.ms-powerpoint.addin.macroenabled.main+xml',
];

/** `'image'` stands for any of {@link IMAGE_TYPES}. */
type Targets = readonly string[] | 'image';

/** Relationship type -> content types it may point at (all lower-case). */
const ALLOWED: ReadonlyMap<string, Targets> = new Map<string, Targets>([
  [`${OD}officeDocument`, MAIN_TYPES],
  [
    `${PKG}metadata/core-properties`,
    ['application/vnd.openxmlformats-package.core-properties+xml'],
  ],
  [
    'http://schemas.openxmlformats.org/officedocument/2006/relationships/metadata/core-properties',
    ['application/vnd.openxmlformats-package.core-properties+xml'],
  ],
  [`${PKG}metadata/thumbnail`, 'image'],
  [
    `${OD}extended-properties`,
    ['application/vnd.openxmlformats-officedocument.extended-properties+xml'],
  ],
  [`${OD}styles`, [`${WML}styles+xml`, `${SML}styles+xml`, `${XLSB}styles`]],
  [`${MS}2007/relationships/stylesWithEffects`, ['application/vnd.ms-word.styleswitheffects+xml']],
  [`${OD}settings`, [`${WML}settings+xml`]],
  [`${OD}webSettings`, [`${WML}websettings+xml`]],
  [`${OD}fontTable`, [`${WML}fonttable+xml`]],
  [`${OD}numbering`, [`${WML}numbering+xml`]],
  [`${OD}header`, [`${WML}header+xml`]],
  [`${OD}footer`, [`${WML}footer+xml`]],
  [`${OD}footnotes`, [`${WML}footnotes+xml`]],
  [`${OD}endnotes`, [`${WML}endnotes+xml`]],
  [
    `${OD}comments`,
    [`${WML}comments+xml`, `${SML}comments+xml`, `${PML}comments+xml`, `${XLSB}comments`],
  ],
  [`${MS}2011/relationships/commentsExtended`, ['application/vnd.ms-word.commentsextended+xml']],
  [`${MS}2016/09/relationships/commentsIds`, ['application/vnd.ms-word.commentsids+xml']],
  [
    `${MS}2018/08/relationships/commentsExtensible`,
    ['application/vnd.ms-word.commentsextensible+xml'],
  ],
  [`${MS}2011/relationships/people`, [`${WML}people+xml`, 'application/vnd.ms-word.people+xml']],
  [`${OD}glossaryDocument`, [`${WML}document.glossary+xml`]],
  [`${OD}theme`, ['application/vnd.openxmlformats-officedocument.theme+xml']],
  [`${OD}themeOverride`, ['application/vnd.openxmlformats-officedocument.themeoverride+xml']],
  [`${OD}image`, 'image'],
  [`${OD}chart`, [`${DML}chart+xml`]],
  [`${OD}chartUserShapes`, [`${DML}chartshapes+xml`]],
  [`${MS}2011/relationships/chartStyle`, ['application/vnd.ms-office.chartstyle+xml']],
  [`${MS}2011/relationships/chartColorStyle`, ['application/vnd.ms-office.chartcolorstyle+xml']],
  [`${OD}drawing`, ['application/vnd.openxmlformats-officedocument.drawing+xml']],
  [`${OD}diagramData`, [`${DML}diagramdata+xml`]],
  [`${OD}diagramLayout`, [`${DML}diagramlayout+xml`]],
  [`${OD}diagramQuickStyle`, [`${DML}diagramstyle+xml`]],
  [`${OD}diagramColors`, [`${DML}diagramcolors+xml`]],
  [
    `${MS}2007/relationships/diagramDrawing`,
    ['application/vnd.ms-office.drawingml.diagramdrawing+xml'],
  ],
  [`${OD}worksheet`, [`${SML}worksheet+xml`, `${XLSB}worksheet`]],
  [`${OD}chartsheet`, [`${SML}chartsheet+xml`, `${XLSB}chartsheet`]],
  [`${OD}sharedStrings`, [`${SML}sharedstrings+xml`, `${XLSB}sharedstrings`]],
  [`${OD}calcChain`, [`${SML}calcchain+xml`, `${XLSB}calcchain`]],
  [`${OD}table`, [`${SML}table+xml`, `${XLSB}table`]],
  [`${OD}sheetMetadata`, [`${SML}sheetmetadata+xml`]],
  // Pivot tables (ECMA-376 Part 1 §18.10): a cache reading anything but this workbook is refused
  // by its content (see `pivotCacheRefusal`), and a pivot table whose cache is refused goes too.
  [`${OD}pivotCacheDefinition`, [PIVOT_CACHE_TYPE]],
  [`${OD}pivotCacheRecords`, [`${SML}pivotcacherecords+xml`]],
  [`${OD}pivotTable`, [PIVOT_TABLE_TYPE]],
  [`${OD}vmlDrawing`, ['application/vnd.openxmlformats-officedocument.vmldrawing']],
  [`${MS}2017/10/relationships/threadedComment`, ['application/vnd.ms-excel.threadedcomments+xml']],
  [`${MS}2017/10/relationships/person`, ['application/vnd.ms-excel.person+xml']],
  [`${OD}slide`, [`${PML}slide+xml`]],
  [`${OD}slideLayout`, [`${PML}slidelayout+xml`]],
  [`${OD}slideMaster`, [`${PML}slidemaster+xml`]],
  [`${OD}notesSlide`, [`${PML}notesslide+xml`]],
  [`${OD}notesMaster`, [`${PML}notesmaster+xml`]],
  [`${OD}handoutMaster`, [`${PML}handoutmaster+xml`]],
  [`${OD}presProps`, [`${PML}presprops+xml`]],
  [`${OD}viewProps`, [`${PML}viewprops+xml`]],
  [`${OD}tableStyles`, [`${PML}tablestyles+xml`]],
  [`${OD}commentAuthors`, [`${PML}commentauthors+xml`]],
  [`${MS}2018/10/relationships/comments`, ['application/vnd.ms-powerpoint.comments+xml']],
  [`${MS}2018/10/relationships/authors`, ['application/vnd.ms-powerpoint.authors+xml']],
]);

/** The only relationship that may point outside the package, and only to a safe URL. */
export const HYPERLINK_RELATIONSHIP = `${OD}hyperlink`;

/** The package-level relationship to the main part. */
export const OFFICE_DOCUMENT_RELATIONSHIP = `${OD}officeDocument`;

/** Whether a relationship of `type` may point at a part of `contentType`. */
export function isAllowedTarget(type: string, contentType: string): boolean {
  const targets = ALLOWED.get(type);
  if (targets === undefined) return false;
  const folded = contentType.toLowerCase();
  return targets === 'image' ? folded in IMAGE_TYPES : targets.includes(folded);
}

/** What a package may label any XML part (OPC §10.1.2.2.2: the Default for `.xml`). */
const GENERIC_XML_TYPES: ReadonlySet<string> = new Set(['application/xml', 'text/xml']);

/** The vocabularies of source parts, by the content types that speak them. */
const VOCABULARIES: readonly { readonly prefixes: readonly string[]; readonly own: string }[] = [
  { prefixes: [WML, 'application/vnd.ms-word.'], own: WML },
  { prefixes: [SML, XLSB], own: SML },
  { prefixes: [PML, 'application/vnd.ms-powerpoint.'], own: PML },
];

/**
 * The content type a part labelled only as generic XML takes from the relationship that reaches
 * it, or `undefined`: the relationship's one XML target, or the one in the vocabulary of the part
 * the relationship comes from (styles of a workbook are SpreadsheetML styles). Some producers
 * (ClosedXML, early converters) write no Override for such parts, and Office and LibreOffice
 * read them by their relationship; the rebuilt package names their type.
 */
export function impliedContentType(
  type: string,
  contentType: string,
  sourceContentType: string,
): string | undefined {
  if (!GENERIC_XML_TYPES.has(contentType.toLowerCase())) return undefined;
  const targets = ALLOWED.get(type);
  if (targets === undefined || targets === 'image') return undefined;
  const xml = targets.filter((target) => target.endsWith('+xml'));
  if (xml.length === 1) return xml[0];
  const source = sourceContentType.toLowerCase();
  const own = VOCABULARIES.find(({ prefixes }) => prefixes.some((p) => source.startsWith(p)))?.own;
  const inVocabulary = own === undefined ? [] : xml.filter((target) => target.startsWith(own));
  return inVocabulary.length === 1 ? inVocabulary[0] : undefined;
}

/** Every content type some relationship may point at, for verify before release. */
export function isAllowedContentType(contentType: string): boolean {
  const folded = contentType.toLowerCase();
  if (folded === RELATIONSHIPS_TYPE || folded in IMAGE_TYPES) return true;
  for (const targets of ALLOWED.values()) {
    if (targets !== 'image' && targets.includes(folded)) return true;
  }
  return false;
}

const DROPPED_BY_CONTENT_TYPE: Readonly<Record<string, FindingKind>> = {
  'application/vnd.ms-office.vbaproject': 'vba-macro',
  'application/vnd.ms-office.vbaprojectsignature': 'vba-macro',
  'application/vnd.ms-office.vbaprojectsignatureagile': 'vba-macro',
  'application/vnd.ms-office.vbaprojectsignaturev3': 'vba-macro',
  'application/vnd.ms-word.vbadata+xml': 'vba-macro',
  'application/vnd.ms-word.keymapcustomizations+xml': 'vba-macro',
  'application/vnd.ms-word.attachedtoolbars': 'vba-macro',
  'application/vnd.ms-excel.macrosheet+xml': 'xlm-macro',
  'application/vnd.ms-excel.intlmacrosheet+xml': 'xlm-macro',
  [`${SML}dialogsheet+xml`]: 'xlm-macro',
  [`${XLSB}macrosheet`]: 'xlm-macro',
  [`${XLSB}intlmacrosheet`]: 'xlm-macro',
  [`${XLSB}dialogsheet`]: 'xlm-macro',
  'application/vnd.ms-office.activex+xml': 'activex-control',
  'application/vnd.ms-office.activex': 'activex-control',
  'application/vnd.openxmlformats-officedocument.oleobject': 'embedded-object',
  'application/vnd.openxmlformats-officedocument.package': 'embedded-object',
  'application/vnd.ms-excel.controlproperties+xml': 'activex-control',
  [`${SML}externallink+xml`]: 'external-relationship',
  [`${SML}connections+xml`]: 'data-connection',
  [`${SML}querytable+xml`]: 'data-connection',
  [`${XLSB}externallink`]: 'external-relationship',
  [`${XLSB}connections`]: 'data-connection',
  [`${XLSB}querytable`]: 'data-connection',
  'application/vnd.openxmlformats-officedocument.custom-properties+xml': 'document-metadata',
  'application/vnd.openxmlformats-officedocument.customxmlproperties+xml': 'document-metadata',
  'application/vnd.openxmlformats-package.digital-signature-origin': 'hidden-data',
  'application/vnd.openxmlformats-package.digital-signature-xmlsignature+xml': 'hidden-data',
};

const DROPPED_BY_RELATIONSHIP: Readonly<Record<string, FindingKind>> = {
  [`${MS}2006/relationships/vbaProject`]: 'vba-macro',
  [`${MS}2006/relationships/vbaProjectSignature`]: 'vba-macro',
  [`${MS}2006/relationships/wordVbaData`]: 'vba-macro',
  [`${MS}2006/relationships/keyMapCustomizations`]: 'vba-macro',
  [`${MS}2006/relationships/attachedToolbars`]: 'vba-macro',
  // Ribbon XML (customUI) names VBA procedures as its callbacks.
  [`${MS}2006/relationships/ui/extensibility`]: 'vba-macro',
  [`${MS}2007/relationships/ui/extensibility`]: 'vba-macro',
  [`${MS}2006/relationships/xlMacrosheet`]: 'xlm-macro',
  [`${MS}2006/relationships/xlIntlMacrosheet`]: 'xlm-macro',
  [`${OD}dialogsheet`]: 'xlm-macro',
  [`${OD}control`]: 'activex-control',
  [`${MS}2006/relationships/activeXControlBinary`]: 'activex-control',
  [`${OD}oleObject`]: 'embedded-object',
  [`${OD}package`]: 'embedded-object',
  [`${OD}aFChunk`]: 'embedded-object',
  [`${OD}externalLink`]: 'external-relationship',
  [`${OD}externalLinkPath`]: 'external-relationship',
  [`${OD}attachedTemplate`]: 'external-relationship',
  [`${OD}subDocument`]: 'external-relationship',
  [`${OD}frame`]: 'external-relationship',
  [`${OD}connections`]: 'data-connection',
  [`${OD}queryTable`]: 'data-connection',
  [`${OD}mailMergeSource`]: 'data-connection',
  [`${OD}mailMergeHeaderSource`]: 'data-connection',
  [`${OD}customXml`]: 'document-metadata',
  [`${OD}customXmlProps`]: 'document-metadata',
  [`${OD}custom-properties`]: 'document-metadata',
  [`${PKG}digital-signature/origin`]: 'hidden-data',
  [`${PKG}digital-signature/signature`]: 'hidden-data',
};

/** The finding a dropped part or relationship is counted as; `hidden-data` when unknown. */
export function droppedKind(
  type: string | undefined,
  contentType: string | undefined,
): FindingKind {
  return (
    (contentType === undefined ? undefined : DROPPED_BY_CONTENT_TYPE[contentType.toLowerCase()]) ??
    (type === undefined ? undefined : DROPPED_BY_RELATIONSHIP[type]) ??
    'hidden-data'
  );
}

/**
 * [MS-XLSB] Binary Index parts: byte offsets into a sheet stream, stale once the sheet is
 * rewritten and optional to Excel. They are left out like the package machinery, not counted.
 */
export function isRegeneratedPart(type: string): boolean {
  return type === `${MS}2006/relationships/xlBinaryIndex`;
}
