/**
 * What is removed inside the XML streams of an OpenDocument text, spreadsheet or presentation
 * (OASIS ODF 1.3 Part 3): scripts and event listeners, macro and script URLs, embedded objects,
 * DDE, linked sections, sheets, ranges and media, formulas that fetch or reach other documents,
 * database sources, and metadata beyond plain text values.
 */
import { isSafeHyperlink } from '../office/hyperlinks.ts';
import { classifyField } from '../office/fields.ts';
import {
  DROP,
  KEEP,
  partText,
  rewriteXml,
  UNWRAP,
  walkXmlPaced,
} from '../../_internal/xml-rewrite.ts';
import type {
  ElementDecision,
  Pace,
  XmlAttributeNode,
  XmlElementNode,
  XmlWalker,
} from '../../_internal/xml-rewrite.ts';
import type { FindingKind, FindingTally } from '../../findings.ts';
import { classifyOdfFormula } from '../office/formulas.ts';

export const ODF_NS = {
  office: 'urn:oasis:names:tc:opendocument:xmlns:office:1.0',
  script: 'urn:oasis:names:tc:opendocument:xmlns:script:1.0',
  text: 'urn:oasis:names:tc:opendocument:xmlns:text:1.0',
  table: 'urn:oasis:names:tc:opendocument:xmlns:table:1.0',
  draw: 'urn:oasis:names:tc:opendocument:xmlns:drawing:1.0',
  form: 'urn:oasis:names:tc:opendocument:xmlns:form:1.0',
  presentation: 'urn:oasis:names:tc:opendocument:xmlns:presentation:1.0',
  anim: 'urn:oasis:names:tc:opendocument:xmlns:animation:1.0',
  style: 'urn:oasis:names:tc:opendocument:xmlns:style:1.0',
  /** LibreOffice's conditional formats (not in ODF 1.3), whose conditions are formulas. */
  calcext: 'urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0',
  meta: 'urn:oasis:names:tc:opendocument:xmlns:meta:1.0',
  dc: 'http://purl.org/dc/elements/1.1/',
  xlink: 'http://www.w3.org/1999/xlink',
  manifest: 'urn:oasis:names:tc:opendocument:xmlns:manifest:1.0',
  /** LibreOffice's fieldmarks (not in ODF 1.3): Word fields it has no field of its own for. */
  field: 'urn:openoffice:names:experimental:ooo-ms-interop:xmlns:field:1.0',
  /** XForms 1.0, the data model of ODF forms (ODF 1.3 Part 3 §13.2). */
  xforms: 'http://www.w3.org/2002/xforms',
} as const;

/** Elements removed with everything inside them, and what they count as. */
export const ODF_DROPPED: ReadonlyMap<string, FindingKind> = new Map<string, FindingKind>([
  [`${ODF_NS.office} scripts`, 'odf-macro'],
  [`${ODF_NS.office} event-listeners`, 'odf-macro'],
  [`${ODF_NS.script} event-listener`, 'odf-macro'],
  [`${ODF_NS.presentation} event-listener`, 'odf-macro'],
  [`${ODF_NS.text} script`, 'odf-macro'],
  [`${ODF_NS.draw} object`, 'embedded-object'],
  [`${ODF_NS.draw} object-ole`, 'embedded-object'],
  [`${ODF_NS.draw} applet`, 'embedded-object'],
  [`${ODF_NS.draw} plugin`, 'embedded-object'],
  [`${ODF_NS.draw} floating-frame`, 'embedded-object'],
  [`${ODF_NS.office} dde-source`, 'dde-link'],
  [`${ODF_NS.text} dde-connection-decls`, 'dde-link'],
  [`${ODF_NS.table} dde-links`, 'dde-link'],
  [`${ODF_NS.text} section-source`, 'external-relationship'],
  // A linked sheet and a linked range (ODF 1.3 Part 3, `table:table-source` and
  // `table:cell-range-source`): the cells keep what was last copied from the source.
  [`${ODF_NS.table} table-source`, 'external-relationship'],
  [`${ODF_NS.table} cell-range-source`, 'external-relationship'],
  // The macro a validity check runs on invalid input.
  [`${ODF_NS.table} error-macro`, 'odf-macro'],
  // Database ranges and pivot tables imported from a data source or run by a UNO service; the
  // imported cells stay.
  [`${ODF_NS.table} database-source-sql`, 'data-connection'],
  [`${ODF_NS.table} database-source-table`, 'data-connection'],
  [`${ODF_NS.table} database-source-query`, 'data-connection'],
  [`${ODF_NS.table} source-service`, 'data-connection'],
  // Sends the form's data to its action URL when a button asks (XForms 1.0 §3.3.3).
  [`${ODF_NS.xforms} submission`, 'external-relationship'],
  // Inline images bypass the image rebuild.
  [`${ODF_NS.office} binary-data`, 'hidden-data'],
]);

/**
 * A start tag of a dropped element, under any prefix, unless it is written empty (`<p:name/>`):
 * element names cannot be written with references (XML 1.0 §2.3, §4.1), so a stream without one
 * has no dropped element that holds something, and needs no first walk. LibreOffice writes an
 * empty `<office:scripts/>` into every document.
 */
const DROPPED_NAMES = [...ODF_DROPPED.keys()].map((key) => key.slice(key.indexOf(' ') + 1));
const HOLDING_DROPPED = new RegExp(
  `<(?:[^\\s<>/:="'!?]+:)?(?:${DROPPED_NAMES.join('|')})(?=[\\s/>])(?!/>)`,
);

/**
 * Fields replaced by their content: a macro button, a DDE field, and the mail-merge fields that
 * read a registered data source (ODF 1.3 Part 3 §7.6), which keep the value last shown.
 */
export const ODF_UNWRAPPED: ReadonlyMap<string, FindingKind> = new Map<string, FindingKind>([
  [`${ODF_NS.text} execute-macro`, 'odf-macro'],
  [`${ODF_NS.text} dde-connection`, 'dde-link'],
  [`${ODF_NS.text} database-display`, 'data-connection'],
  [`${ODF_NS.text} database-name`, 'data-connection'],
  [`${ODF_NS.text} database-row-number`, 'data-connection'],
  [`${ODF_NS.text} database-next`, 'data-connection'],
  [`${ODF_NS.text} database-row-select`, 'data-connection'],
]);

/**
 * Elements that draw or play what their `xlink:href` names (ODF 1.3 Part 3: `draw:image`,
 * `anim:audio`, and `presentation:sound`, the sound of a slide transition or an action): left
 * out when what they name does not stay in the package.
 */
const LINKED_MEDIA: ReadonlySet<string> = new Set([
  `${ODF_NS.draw} image`,
  `${ODF_NS.anim} audio`,
  `${ODF_NS.presentation} sound`,
]);

/**
 * Attributes that hold a formula or a reference a formula may name (ODF 1.3 Part 3: a cell's
 * `table:formula`, named expressions and ranges, validity and style-map conditions, and
 * LibreOffice's conditional formats), by namespace and local name.
 */
const FORMULA_ATTRIBUTES: ReadonlySet<string> = new Set([
  `${ODF_NS.table} formula`,
  `${ODF_NS.table} expression`,
  `${ODF_NS.table} condition`,
  `${ODF_NS.table} cell-range-address`,
  `${ODF_NS.style} condition`,
  `${ODF_NS.calcext} value`,
  `${ODF_NS.calcext} formula`,
]);

/** The finding a formula attribute is removed as, or `undefined` for any other or a harmless one. */
export function classifyFormulaAttribute(attribute: XmlAttributeNode): FindingKind | undefined {
  if (!FORMULA_ATTRIBUTES.has(`${attribute.uri} ${attribute.local}`)) return undefined;
  return classifyOdfFormula(attribute.value);
}

/** A table cell, covered or not (which keeps its cached value when its formula goes). */
export function isCell(element: XmlElementNode): boolean {
  return (
    element.uri === ODF_NS.table &&
    (element.localName === 'table-cell' || element.localName === 'covered-table-cell')
  );
}

/**
 * The attributes through which an XForms element loads or sends data (`instance src`,
 * `resource`, `action`), in whatever namespace a writer puts them; only a reference inside the
 * document (`#id`) stays.
 */
export function isXformsUrl(element: XmlElementNode, attribute: XmlAttributeNode): boolean {
  return (
    element.uri === ODF_NS.xforms &&
    ['src', 'resource', 'action'].includes(attribute.local) &&
    !attribute.name.startsWith('xmlns') &&
    !attribute.value.trim().startsWith('#')
  );
}

/** Macro and script URL schemes (LibreOffice Basic, the scripting framework). */
export const SCRIPT_URL =
  /^\s*(vnd\.sun\.star\.script|macro|javascript|vbscript|service|slot)\s*:/i;

/** `meta:`/`dc:` children of `office:meta` kept as plain text (ODF 1.3 Part 3 §4). */
const META_KEPT = new Set([
  `${ODF_NS.meta} generator`, `${ODF_NS.dc} title`, `${ODF_NS.dc} description`,
  `${ODF_NS.dc} subject`, `${ODF_NS.meta} keyword`, `${ODF_NS.meta} initial-creator`,
  `${ODF_NS.dc} creator`, `${ODF_NS.meta} printed-by`, `${ODF_NS.meta} creation-date`,
  `${ODF_NS.dc} date`, `${ODF_NS.meta} print-date`, `${ODF_NS.meta} editing-cycles`,
  `${ODF_NS.meta} editing-duration`, `${ODF_NS.dc} language`, `${ODF_NS.meta} document-statistic`,
]); // prettier-ignore

/** How one stream of the package is rewritten. */
export interface OdfStreamRewrite {
  /**
   * Package paths a link may name: the pictures kept (`Pictures/a.png`) and the chart objects
   * kept (`Object 1`, a folder).
   */
  readonly kept: ReadonlySet<string>;
  readonly meta: boolean;
  readonly findings: FindingTally;
  /** Sees every element read outside dropped ones, before it is decided (a render budget). */
  readonly observe?: (element: XmlElementNode, ancestors: readonly XmlElementNode[]) => void;
}

/** The object folder (`Object 1`) a `draw:object` anchors, or `undefined` for anything else. */
export function anchoredFolder(element: XmlElementNode): string | undefined {
  if (element.uri !== ODF_NS.draw || element.localName !== 'object') return undefined;
  const href = element.attributes.find((a) => a.uri === ODF_NS.xlink && a.local === 'href');
  const path = href === undefined ? undefined : internalPath(href.value);
  return path !== undefined && OBJECT_FOLDER.test(path) ? path : undefined;
}

/** A top-level object folder of the package, as a link names it. */
const OBJECT_FOLDER = /^Object \d{1,6}$/;

/** Whether `element` is a `draw:object` anchoring one of the `kept` object folders. */
export function isKeptObject(element: XmlElementNode, kept: ReadonlySet<string>): boolean {
  const folder = anchoredFolder(element);
  return folder !== undefined && kept.has(folder);
}

/** The package path an internal `xlink:href` names, or `undefined` for a URL or a bookmark. */
export function internalPath(href: string): string | undefined {
  const value = href.trim();
  if (value === '' || value.startsWith('#') || /^[a-z][a-z0-9+.-]*:/i.test(value)) return undefined;
  // `./Object 1` and `Object 1/` name the same folder.
  return value.replace(/^\.\//, '').replace(/(.)\/$/, '$1');
}

/** Rewrites `content.xml`, `styles.xml` or `meta.xml`. */
export async function* rewriteOdfStream(
  bytes: Uint8Array,
  what: string,
  stream: OdfStreamRewrite,
  pace: Pace,
): AsyncGenerator<Uint8Array, void, undefined> {
  const text = partText(bytes, what);
  const occupied =
    stream.meta || !HOLDING_DROPPED.test(text)
      ? new Set<number>()
      : await occupiedDroppedElements(text, what, pace);
  const fieldmarks =
    stream.meta || !FIELDMARK.test(text)
      ? new Map<number, FindingKind | undefined>()
      : await activeFieldmarks(text, what, pace);
  yield* rewriteXml(
    text,
    what,
    {
      element: (element, ancestors) => {
        stream.observe?.(element, ancestors);
        if (stream.meta) return metaDecision(element, ancestors, stream);
        if (fieldmarks.has(element.index)) {
          const kind = fieldmarks.get(element.index);
          if (kind !== undefined) stream.findings.add(kind);
          return DROP;
        }
        return streamDecision(element, stream, occupied);
      },
    },
    pace,
  );
}

/** A LibreOffice fieldmark start tag, under any prefix. */
const FIELDMARK = /<(?:[^\s<>/:="'!?]+:)?fieldmark(?:-start)?(?=[\s/>])/;

/** The fieldmark parameter that holds a Word field's instruction (LibreOffice's ODF_CODE_PARAM). */
const FIELD_CODE_PARAM = 'vnd.oasis.opendocument.field.code';

/** The Word instruction a `field:param` holds, or `undefined` for any other element or param. */
export function fieldCode(element: XmlElementNode): string | undefined {
  if (element.uri !== ODF_NS.field || element.localName !== 'param') return undefined;
  const attribute = (local: string): string | undefined =>
    element.attributes.find((a) => a.uri === ODF_NS.field && a.local === local)?.value;
  return attribute('name') === FIELD_CODE_PARAM ? (attribute('value') ?? '') : undefined;
}

/**
 * LibreOffice keeps a Word field it has no field of its own for (DDEAUTO, INCLUDETEXT,
 * MACROBUTTON, …) as a fieldmark whose `field:param` holds the instruction, and writes that
 * field back when the document is saved as Word again. A fieldmark whose instruction the Word
 * rules remove (`classifyField`) goes with its separator and end (each a point in the text;
 * `field:fieldmark-start` and `-end` nest, across paragraphs), its shown text stays: the index of
 * each such element, mapped to the finding on the start and `undefined` on the rest.
 */
async function activeFieldmarks(
  text: string,
  what: string,
  pace: Pace,
): Promise<Map<number, FindingKind | undefined>> {
  const active = new Map<number, FindingKind | undefined>();
  const open: number[] = [];
  const isField = (element: XmlElementNode, name: string): boolean =>
    element.uri === ODF_NS.field && element.localName === name;
  const walker: XmlWalker = {
    open(element, ancestors) {
      if (isField(element, 'fieldmark-start')) {
        open.push(element.index);
      } else if (isField(element, 'fieldmark-separator') || isField(element, 'fieldmark-end')) {
        const start = isField(element, 'fieldmark-end') ? open.pop() : open.at(-1);
        if (start !== undefined && active.has(start)) active.set(element.index, undefined);
      } else {
        const code = fieldCode(element);
        const parent = ancestors.at(-1);
        if (
          code === undefined ||
          parent === undefined ||
          !(isField(parent, 'fieldmark-start') || isField(parent, 'fieldmark'))
        ) {
          return;
        }
        const kind = classifyField(code);
        if (kind !== undefined) active.set(parent.index, kind);
      }
    },
  };
  await walkXmlPaced(text, what, walker, pace);
  return active;
}

/**
 * Indexes of to-be-dropped elements that hold something. LibreOffice writes an empty
 * `<office:scripts/>` into every document; only one with content is a finding.
 */
async function occupiedDroppedElements(
  text: string,
  what: string,
  pace: Pace,
): Promise<Set<number>> {
  const occupied = new Set<number>();
  const walker: XmlWalker = {
    open(element, ancestors) {
      const parent = ancestors.at(-1);
      if (parent && ODF_DROPPED.has(parent.key)) occupied.add(parent.index);
      if (
        ODF_DROPPED.has(element.key) &&
        element.attributes.some((a) => !a.name.startsWith('xmlns'))
      ) {
        occupied.add(element.index);
      }
    },
    text(value, ancestors) {
      const parent = ancestors.at(-1);
      if (parent && value.trim() !== '' && ODF_DROPPED.has(parent.key)) {
        occupied.add(parent.index);
      }
    },
  };
  await walkXmlPaced(text, what, walker, pace);
  return occupied;
}

function streamDecision(
  element: XmlElementNode,
  stream: OdfStreamRewrite,
  occupied: ReadonlySet<number>,
): ElementDecision {
  const key = element.key;
  // A chart object kept beside the stream stays anchored (its attributes screened as any
  // other's); any other object goes.
  const kind = isKeptObject(element, stream.kept) ? undefined : ODF_DROPPED.get(key);
  if (kind !== undefined) {
    if (occupied.has(element.index)) stream.findings.add(kind);
    return DROP;
  }
  // The field goes, its last shown text stays.
  const unwrapped = ODF_UNWRAPPED.get(key);
  if (unwrapped !== undefined) {
    stream.findings.add(unwrapped);
    return UNWRAP;
  }
  const isLink =
    (element.uri === ODF_NS.text || element.uri === ODF_NS.draw) && element.localName === 'a';
  const isMedia = LINKED_MEDIA.has(key);
  let attributes: XmlAttributeNode[] | undefined;
  const remove = (attribute: XmlAttributeNode): void => {
    attributes ??= [...element.attributes];
    attributes.splice(attributes.indexOf(attribute), 1);
  };
  for (const attribute of element.attributes) {
    const formula = classifyFormulaAttribute(attribute);
    if (formula !== undefined) {
      stream.findings.add(formula);
      // A cell shows the value last computed; a name, rule or condition is nothing without it.
      if (!isCell(element)) return DROP;
      remove(attribute);
      continue;
    }
    if (
      attribute.uri === ODF_NS.form &&
      (attribute.local === 'datasource' || attribute.local === 'command')
    ) {
      stream.findings.add('data-connection');
      remove(attribute);
      continue;
    }
    if (isXformsUrl(element, attribute)) {
      stream.findings.add('external-relationship');
      remove(attribute);
      continue;
    }
    if (SCRIPT_URL.test(attribute.value) && attribute.uri !== ODF_NS.xlink) {
      stream.findings.add('odf-macro');
      remove(attribute);
      continue;
    }
    if (attribute.uri !== ODF_NS.xlink || attribute.local !== 'href') continue;
    const path = internalPath(attribute.value);
    if (path !== undefined) {
      if (stream.kept.has(path)) continue;
      // A link into the package to something not kept (an object's replacement image).
      if (isMedia) return DROP;
      if (isLink) return UNWRAP;
      remove(attribute);
      continue;
    }
    const value = attribute.value.trim();
    if (value.startsWith('#') || (isLink && isSafeHyperlink(value))) continue;
    stream.findings.add(SCRIPT_URL.test(value) ? 'odf-macro' : 'external-relationship');
    if (isMedia) return DROP;
    if (isLink) return UNWRAP;
    remove(attribute);
  }
  return attributes ? { action: 'keep', attributes } : KEEP;
}

function metaDecision(
  element: XmlElementNode,
  ancestors: readonly XmlElementNode[],
  stream: OdfStreamRewrite,
): ElementDecision {
  if (ancestors.length === 0) return screenedMeta(element, stream);
  if (ancestors.length === 1 && element.uri === ODF_NS.office && element.localName === 'meta') {
    return screenedMeta(element, stream);
  }
  if (ancestors.length === 2 && META_KEPT.has(element.key)) {
    return screenedMeta(element, stream);
  }
  stream.findings.add('document-metadata');
  return DROP;
}

/**
 * A kept element of `meta.xml` without what no metadata needs and verify refuses in any stream:
 * a script URL in any attribute, and links (`xlink:*`) out of the package. Found by
 * `npm run fuzz -- odf`: `xlink:href="macro:x"` on `office:document-meta` was kept, and the part
 * check refused the rebuilt stream.
 */
function screenedMeta(element: XmlElementNode, stream: OdfStreamRewrite): ElementDecision {
  const attributes = element.attributes.filter((attribute) => {
    if (attribute.name.startsWith('xmlns')) return true;
    if (SCRIPT_URL.test(attribute.value)) {
      stream.findings.add('odf-macro');
      return false;
    }
    if (attribute.uri === ODF_NS.xlink) {
      stream.findings.add('external-relationship');
      return false;
    }
    return true;
  });
  return attributes.length === element.attributes.length ? KEEP : { action: 'keep', attributes };
}
