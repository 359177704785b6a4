/**
 * What is removed inside the XML parts of a kept OOXML package: field codes that fetch or run,
 * formulas and defined names that call out, OLE and ActiveX anchors, macro actions, references
 * to relationships that were dropped, and document properties beyond plain text.
 */
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
} from '../../_internal/xml-rewrite.ts';
import type { FindingKind, FindingTally } from '../../findings.ts';
import { classifyField, macroButtonText } from '../office/fields.ts';
import { AUTO_RUN_NAME, CALLING_FUNCTIONS, classifyFormula } from '../office/formulas.ts';
import { isSafeHyperlink } from '../office/hyperlinks.ts';
import { attribute, NS } from './namespaces.ts';
import { planSheets, sheetIndexDecision, WORKBOOK_TYPES } from './workbook-sheets.ts';

/**
 * Formulas outside cells (ECMA-376 Part 1 §18.3.1.10 `cfRule`/`formula`, §18.3.1.32
 * `dataValidation`/`formula1`/`formula2`, §18.5.1.2 and §18.5.1.5 table column formulas, and
 * their [MS-XLSX] x14 forms written `xm:f`) -> the elements that go with one refused: the rule
 * or validation holding it, or the formula element itself when it stands alone.
 */
export const RULE_FORMULAS: ReadonlyMap<string, readonly string[]> = new Map([
  [`${NS.s} formula`, [`${NS.s} cfRule`]],
  [`${NS.s} formula1`, [`${NS.s} dataValidation`]],
  [`${NS.s} formula2`, [`${NS.s} dataValidation`]],
  [`${NS.s} calculatedColumnFormula`, []],
  [`${NS.s} totalsRowFormula`, []],
  [`${NS.xm} f`, [`${NS.x14} cfRule`, `${NS.x14} dataValidation`]],
]);

/** The finding a `<definedName>` is removed as, or `undefined`. */
export function classifyDefinedName(
  attributes: readonly XmlAttributeNode[],
  formula: string,
): FindingKind | undefined {
  const value = (local: string): string | undefined =>
    attributes.find((attribute) => attribute.uri === '' && attribute.local === local)?.value;
  if (AUTO_RUN_NAME.test(value('name') ?? '')) return 'xlm-macro';
  if (['xlm', 'function', 'vbProcedure'].some((flag) => /^(1|true)$/i.test(value(flag) ?? ''))) {
    return 'xlm-macro';
  }
  return classifyFormula(formula);
}

/** PowerPoint actions that run something ([MS-PPTX] 2.3.x `ppaction://`). */
const RUNNING_ACTION = /^ppaction:\/\/(macro|program|ole|ocx)/i;

/** Elements whose removal is counted where they are found (their own finding). */
const ALWAYS_DROPPED: ReadonlyMap<string, FindingKind | undefined> = new Map<
  string,
  FindingKind | undefined
>([
  // Anchors of OLE objects and ActiveX controls; the parts they use are counted as relationships.
  // A Word `w:object` (§17.3.3.19) stays for the picture Word shows it by (its VML `v:shape`
  // preview), without what makes it an object: the document shows the object's last picture.
  [`${NS.w} control`, undefined],
  [`${NS.w} objectEmbed`, undefined],
  [`${NS.w} objectLink`, undefined],
  [`${NS.w} movie`, undefined],
  [`${NS.w} subDoc`, undefined],
  [`${NS.w} altChunk`, undefined],
  [`${NS.w} frameset`, undefined],
  [`${NS.o} OLEObject`, undefined],
  [`${NS.p} oleObj`, undefined],
  [`${NS.p} controls`, undefined],
  [`${NS.s} oleObjects`, undefined],
  [`${NS.s} controls`, undefined],
  [`${NS.s} externalReferences`, undefined],
  [`${NS.s} webPublishItems`, undefined],
  [`${NS.s} webPublishObjects`, undefined],
  [`${NS.w} docVars`, 'hidden-data'],
  [`${NS.w} mailMerge`, 'data-connection'],
  // VML form controls name the macro they run ([MS-OI29500] x:FmlaMacro).
  [`${NS.x} FmlaMacro`, 'vba-macro'],
  // The folder Excel last saved the workbook in ("C:\Users\name\…"): nothing shows it.
  [`${NS.x15ac} absPath`, 'document-metadata'],
]);

/** Elements that cannot stand without the relationship they name. */
const NEEDS_RELATIONSHIP = new Set([
  'sheet', 'externalReference', 'headerReference', 'footerReference', 'attachedTemplate',
  'sldId', 'sldLayoutId', 'sldMasterId', 'notesMasterId', 'handoutMasterId', 'pivotCache',
  'legacyDrawing', 'legacyDrawingHF', 'hyperlink', 'hlinkClick', 'hlinkHover', 'hlinkMouseOver',
  'snd', 'embedRegular', 'embedBold', 'embedItalic', 'embedBoldItalic', 'externalData',
  'userShapes', 'picture', 'drawing', 'oleObject', 'control', 'dataSource', 'recipientData',
  'headerSource', 'saveThroughXslt', 'sourceFileName', 'tablePart', 'chart', 'relIds',
  'webExtension', 'contentPart', 'customXml', 'tags', 'custData', 'audioFile', 'videoFile',
  'wavAudioFile', 'quickTimeFile', 'media', 'slicerCache', 'slicer', 'timelineCacheRef',
  'timelineRef',
]); // prettier-ignore

/** Containers that must not be left empty (ECMA-376 schemas: at least one child). */
const DROP_WHEN_EMPTY = new Set([
  `${NS.s} definedNames`,
  `${NS.s} hyperlinks`,
  // An embedded object whose preview picture did not survive shows nothing.
  `${NS.w} object`,
  `${NS.s} pivotCaches`,
  `${NS.s} tableParts`,
  // A conditional format or validation list whose every rule called out (RULE_FORMULAS).
  `${NS.s} conditionalFormatting`,
  `${NS.s} dataValidations`,
  `${NS.x14} conditionalFormatting`,
  `${NS.x14} conditionalFormattings`,
  `${NS.x14} dataValidations`,
  // [MS-XLSX] slicers and timelines (not kept: their parts are outside the allowlist) and the
  // Excel 2010/2013 lists of pivot caches, emptied when what they list was left out.
  `${NS.x14} slicerCaches`,
  `${NS.x14} slicerList`,
  `${NS.x14} pivotCaches`,
  `${NS.x15} slicerCaches`,
  `${NS.x15} slicerList`,
  `${NS.x15} pivotCaches`,
  `${NS.x15} timelineCacheRefs`,
  `${NS.x15} timelineRefs`,
  `${NS.x15} timelineCachePivotCaches`,
  // ECMA-376 Part 3 §10.2: a choice left empty would be chosen and show nothing; the
  // alternatives left with no choice go whole.
  `${NS.mc} Choice`,
  `${NS.mc} AlternateContent`,
  // An extension left with nothing in it, and the list of extensions then.
  `${NS.s} ext`,
  `${NS.s} extLst`,
]);

const CORE_PROPERTIES = new Set([
  'title', 'subject', 'creator', 'keywords', 'description', 'lastModifiedBy', 'revision',
  'created', 'modified', 'category', 'contentStatus', 'language', 'version', 'lastPrinted',
  'identifier',
]); // prettier-ignore

const EXTENDED_PROPERTIES = new Set([
  'Template', 'Manager', 'Company', 'Pages', 'Words', 'Characters', 'PresentationFormat',
  'Lines', 'Paragraphs', 'Slides', 'Notes', 'TotalTime', 'HiddenSlides', 'MMClips', 'ScaleCrop',
  'HeadingPairs', 'TitlesOfParts', 'LinksUpToDate', 'CharactersWithSpaces', 'SharedDoc',
  'HyperlinksChanged', 'AppVersion', 'Application', 'DocSecurity',
]); // prettier-ignore

const PLAIN_VALUES = new Set(['vector', 'variant', 'lpstr', 'lpwstr', 'i4', 'bool']);

/** How one XML part is rewritten. */
export interface PartRewrite {
  /** Ids of the part's relationships that were kept; any other id it names is dangling. */
  readonly keptIds: ReadonlySet<string>;
  /** Lower-cased content type of the part. */
  readonly contentType: string;
  readonly findings: FindingTally;
}

const CORE_TYPE = 'application/vnd.openxmlformats-package.core-properties+xml';
const EXTENDED_TYPE = 'application/vnd.openxmlformats-officedocument.extended-properties+xml';

/**
 * Rewrites one kept XML part. A first walk decides what needs the part's text (complex fields,
 * formulas, defined names) or its descendants (a graphic frame holding an OLE object); the
 * second walk writes the part without it.
 */
export async function* rewritePart(
  bytes: Uint8Array,
  what: string,
  part: PartRewrite,
  pace: Pace,
): AsyncGenerator<Uint8Array, void, undefined> {
  const text = partText(bytes, what);
  const walked = needsFirstWalk(text, part.contentType);
  const { dropped, shown, lessened, previews } = walked
    ? await collectDropped(text, what, part.findings, pace)
    : {
        dropped: new Set<number>(),
        shown: new Map<number, string>(),
        lessened: new Map<number, number>(),
        previews: undefined,
      };
  const sheets = WORKBOOK_TYPES.has(part.contentType)
    ? planSheets(bytes, what, part.keptIds)
    : undefined;
  // Without a first walk every field stays (see mayHoldRefusedField); the field marks that stand
  // outside a field go, decided as they come, as the first walk would have decided them.
  const stray = !walked && FIELD_MARKERS.test(text) ? strayFieldMarks() : undefined;
  // Decided once per part, not per element.
  const anyDropped = dropped.size > 0;
  const anyShown = shown.size > 0;
  const anyLessened = lessened.size > 0;
  const anyPreview = previews !== undefined && previews.pictures.size > 0;
  const properties =
    part.contentType === CORE_TYPE ? true : part.contentType === EXTENDED_TYPE ? false : undefined;
  const decide = (
    element: XmlElementNode,
    ancestors: readonly XmlElementNode[],
  ): ElementDecision => {
    if (anyDropped && dropped.has(element.index)) return DROP;
    if (anyPreview) {
      const decision = previewDecision(element, ancestors, previews);
      if (decision !== undefined) return decision;
    }
    if (stray !== undefined && element.uri === NS.w && stray(element)) return DROP;
    if (anyShown) {
      const text = shown.get(element.index);
      if (text !== undefined) return shownText(element, text);
    }
    if (anyLessened) {
      const gone = lessened.get(element.index);
      if (gone !== undefined) return { action: 'keep', attributes: recounted(element, gone) };
    }
    if (sheets !== undefined && element.uri === NS.s) {
      const decision = sheetIndexDecision(element, sheets, part.findings);
      if (decision !== undefined) return decision;
    }
    if (properties !== undefined) return propertiesDecision(element, ancestors, part, properties);
    const key = element.key;
    if (ALWAYS_DROPPED.has(key)) {
      const kind = ALWAYS_DROPPED.get(key);
      if (kind !== undefined) part.findings.add(kind);
      return DROP;
    }
    if (element.uri === NS.w && element.localName === 'fldSimple') {
      const kind = classifyField(attribute(element, NS.w, 'instr') ?? '');
      if (kind !== undefined) {
        part.findings.add(kind);
        return UNWRAP;
      }
    }
    if (element.uri === NS.a && element.localName.startsWith('hlink')) {
      const action = attribute(element, '', 'action') ?? '';
      const match = RUNNING_ACTION.exec(action);
      if (match) {
        part.findings.add(/^(ole|ocx)$/i.test(match[1] ?? '') ? 'embedded-object' : 'vba-macro');
        return DROP;
      }
    }
    let attributes: XmlAttributeNode[] | undefined;
    for (const attr of element.attributes) {
      // VML names its image relationships `o:relid` ([MS-OI29500] 2.1.1436).
      const naming = attr.uri === NS.r || (attr.uri === NS.o && attr.local === 'relid');
      const dangling = naming && attr.value !== '' && !part.keptIds.has(attr.value);
      const unsafeUrl =
        (attr.local === 'href' || attr.local === 'src') &&
        /^[a-z][a-z0-9+.-]*:/i.test(attr.value.trim()) &&
        !isSafeHyperlink(attr.value);
      if (dangling && NEEDS_RELATIONSHIP.has(element.localName)) {
        return element.uri === NS.w && element.localName === 'hyperlink' ? UNWRAP : DROP;
      }
      if (dangling || unsafeUrl) {
        if (unsafeUrl) part.findings.add('external-relationship');
        attributes ??= [...element.attributes];
        attributes.splice(attributes.indexOf(attr), 1);
      }
    }
    return attributes ? { action: 'keep', attributes } : KEEP;
  };
  yield* rewriteXml(
    text,
    what,
    { element: decide, dropWhenEmpty: (element) => DROP_WHEN_EMPTY.has(element.key) },
    pace,
  );
}

/** The decision for an element of an OLE object kept as its preview picture, if it is one. */
function previewDecision(
  element: XmlElementNode,
  ancestors: readonly XmlElementNode[],
  previews: OlePreviews,
): ElementDecision | undefined {
  if (previews.unwrapped.has(element.index)) return UNWRAP;
  const parent = ancestors.at(-1);
  if (
    parent !== undefined &&
    previews.unwrapped.has(parent.index) &&
    !previews.pictures.has(element.index)
  ) {
    return DROP;
  }
  const attributes = previews.relabelled.get(element.index);
  return attributes === undefined ? undefined : { action: 'keep', attributes };
}

function propertiesDecision(
  element: XmlElementNode,
  ancestors: readonly XmlElementNode[],
  part: PartRewrite,
  core: boolean,
): ElementDecision {
  if (ancestors.length === 0) return KEEP;
  const allowed = core
    ? ancestors.length === 1 && CORE_PROPERTIES.has(element.localName) && element.uri !== NS.vt
    : (ancestors.length === 1 &&
        element.uri === NS.ep &&
        EXTENDED_PROPERTIES.has(element.localName)) ||
      (ancestors.length > 1 && element.uri === NS.vt && PLAIN_VALUES.has(element.localName));
  if (allowed) return KEEP;
  part.findings.add('document-metadata');
  return DROP;
}

/** Markers of what the first walk looks for besides fields. */
const FIRST_WALK_MARKERS = /definedName|oleObj|control/;

/** Markers of Word fields (ECMA-376 Part 1 §17.16.18 complex fields). */
const FIELD_MARKERS = /fldChar|instrText|InstrText/;

/**
 * A start tag of an element holding a formula (`f` in a cell or `xm:f`, or one of
 * {@link RULE_FORMULAS}) under any prefix: element names cannot be written with references
 * (XML 1.0 §2.3, §4.1), so a part holding a formula holds this. The prefix may be any name.
 */
const FORMULA_TAG =
  /<(?:[^\s<>/:="'!?]+:)?(?:f|formula[12]?|calculatedColumnFormula|totalsRowFormula)[\s/>]/;

function needsFirstWalk(text: string, contentType: string): boolean {
  if (contentType.includes('sheet') && FORMULA_TAG.test(text) && mayHoldRefusedFormula(text)) {
    return true;
  }
  return FIRST_WALK_MARKERS.test(text) || (FIELD_MARKERS.test(text) && mayHoldRefusedField(text));
}

/** Field instruction start tags, deleted ones included, to the `>` that most likely ends them. */
const INSTRUCTION_START = /<(?:[^\s<>/:="'!?]+:)?(?:instrText|delInstrText)(?=[\s/>])[^>]*>/g;

/**
 * Whether a field in the part's text might be one {@link classifyField} removes, so that the
 * first walk must find it. A field's instruction may be split over several `instrText`; each is
 * read up to the next `<`. An instruction piece that holds markup or a reference, ends in a letter
 * (the next piece could lengthen its keyword), or is removed when judged on its own counts as a
 * possible removal. Otherwise every piece is a kept instruction on its own and a field's keyword
 * is its first piece's, so no field is removed (a `MACROBUTTON`, removed, always takes the walk).
 * An instruction piece is read as {@link anyRawContent} reads it.
 * Verify before release judges every field kept, whatever this decides.
 */
export function mayHoldRefusedField(text: string): boolean {
  return anyRawContent(
    text,
    INSTRUCTION_START,
    (content) =>
      content.includes('&') || /[A-Za-z]$/.test(content) || classifyField(content) !== undefined,
  );
}

/**
 * Whether `suspect` holds for the raw content of an element `starts` finds (start tags, each to
 * its `>`), read up to the next `<`. Content with markup in it (an element, a comment, CDATA, a
 * processing instruction: the parser would join text around it) or never closed counts as
 * suspect: nothing but the closing tag may follow plain content. Empty elements are skipped.
 */
function anyRawContent(
  text: string,
  starts: RegExp,
  suspect: (content: string) => boolean,
): boolean {
  for (const match of text.matchAll(starts)) {
    if (match[0].endsWith('/>')) continue;
    const start = match.index + match[0].length;
    const end = text.indexOf('<', start);
    if (end < 0 || text[end + 1] !== '/' || suspect(text.slice(start, end))) return true;
  }
  return false;
}

/**
 * The complex fields open at a point of a walk (ECMA-376 Part 1 §17.16.18: begin, instruction,
 * separate, result, end; fields nest). Both walks of a part follow fields with it.
 */
class OpenFields<F extends { inInstruction: boolean }> {
  readonly #open: F[] = [];

  /**
   * A `w:fldChar` of type `type`: `begin` opens `opened()`, `separate` ends the innermost field's
   * instruction, `end` closes it. The field the mark belongs to, or `undefined` for a stray
   * mark (a separator or an end with no field open).
   */
  mark(type: string | undefined, opened: () => F): F | undefined {
    if (type === 'begin') {
      const field = opened();
      this.#open.push(field);
      return field;
    }
    const top = this.#open.at(-1);
    if (top === undefined) return undefined;
    if (type === 'separate') top.inInstruction = false;
    else if (type === 'end') this.#open.pop();
    return top;
  }

  /** The field an instruction here belongs to, or `undefined` (outside a field's instruction). */
  instruction(): F | undefined {
    const top = this.#open.at(-1);
    return top?.inInstruction === true ? top : undefined;
  }

  /** Fields never closed, outermost first. */
  unclosed(): readonly F[] {
    return this.#open;
  }
}

/**
 * Field marks outside a field, as the first walk finds them: a separator or an end with no field
 * open, an instruction outside a field's instruction. Fed every `w:` element in document order.
 */
function strayFieldMarks(): (element: XmlElementNode) => boolean {
  const fields = new OpenFields<{ inInstruction: boolean }>();
  return (element) => {
    if (element.localName === 'fldChar') {
      const type = attribute(element, NS.w, 'fldCharType');
      return fields.mark(type, () => ({ inInstruction: true })) === undefined;
    }
    if (element.localName === 'instrText' || element.localName === 'delInstrText') {
      return fields.instruction() === undefined;
    }
    return false;
  };
}

/** Formula start tags (see {@link FORMULA_TAG}), to the `>` that most likely ends them. */
const FORMULA_START =
  /<(?:[^\s<>/:="'!?]+:)?(?:f|formula[12]?|calculatedColumnFormula|totalsRowFormula)(?=[\s/>])[^>]*>/g;

/**
 * Whether a formula in the part's text might be one {@link classifyFormula} refuses, so that the
 * first walk must find it. Each formula's raw content is read (see {@link anyRawContent}): content
 * holding markup or a character reference (which can spell anything) counts as a possible refusal;
 * plain content is the formula's text but for predefined entities, which only spell `&<>"'`, so
 * testing it for a `|`, a `[` and a digit, or a calling function with the same expression as
 * `classifyFormula` is a superset of what that refuses (string literals are not even skipped).
 * Verify before release screens every formula kept, whatever this decides.
 */
export function mayHoldRefusedFormula(text: string): boolean {
  return anyRawContent(
    text,
    FORMULA_START,
    (content) =>
      content.includes('|') ||
      content.includes('&#') ||
      /\[\d/.test(content) ||
      /HYPERLINK/i.test(content) ||
      CALLING_FUNCTIONS.test(content),
  );
}

interface OpenField {
  readonly indexes: number[];
  instruction: string;
  inInstruction: boolean;
  /** Index of its first `instrText`, where a button's display text goes. */
  firstInstruction: number | undefined;
}

/** First walk: element indexes to drop whose fate depends on text or descendants. */
/** Validation lists that state how many validations they hold (§18.3.1.33 `count`). */
const COUNTED_LISTS = new Set([`${NS.s} dataValidations`, `${NS.x14} dataValidations`]);

/** A list's attributes with its `count` lowered by the `gone` entries removed from it. */
function recounted(element: XmlElementNode, gone: number): XmlAttributeNode[] {
  return element.attributes.map((attribute) =>
    attribute.uri === '' && attribute.local === 'count' && /^\d+$/.test(attribute.value)
      ? { ...attribute, value: String(Math.max(0, Number(attribute.value) - gone)) }
      : attribute,
  );
}

/** What the first walk found: elements to drop, and lists whose `count` loses entries. */
interface FirstWalk {
  readonly dropped: Set<number>;
  /** Index of a removed button's first `instrText` -> the text it showed, written as `w:t`. */
  readonly shown: Map<number, string>;
  /** Index of a counted list -> entries dropped from it. */
  readonly lessened: Map<number, number>;
  /** OLE objects shown by their preview picture (see {@link settleOleFrame}). */
  readonly previews: OlePreviews;
}

/**
 * PowerPoint's OLE objects that keep their preview picture in place of the object: the elements
 * from the graphic frame down to the picture are unwrapped, everything else in them goes, and the
 * picture takes over the frame's id and name (and the namespaces declared on the way).
 */
interface OlePreviews {
  readonly unwrapped: Set<number>;
  readonly pictures: Set<number>;
  /** Index of the picture and of its `p:cNvPr` -> their attributes as written. */
  readonly relabelled: Map<number, readonly XmlAttributeNode[]>;
}

/** A PresentationML graphic frame (ECMA-376 Part 1 §19.3.1.21) being walked. */
interface OleFrame {
  readonly frame: XmlElementNode;
  /** The frame's own `p:cNvPr`: the id and name its picture takes over. */
  cNvPr?: XmlElementNode;
  ole: boolean;
  control: boolean;
  /** Another frame opened inside it (not valid PresentationML): then it goes whole. */
  nested: boolean;
  /** The first `p:pic` inside the object, the elements from the frame down to it, its `p:cNvPr`. */
  picture?: { element: XmlElementNode; path: XmlElementNode[]; cNvPr?: XmlElementNode };
}

const XMLNS = 'http://www.w3.org/2000/xmlns/';

/**
 * Decides a graphic frame once walked. One holding an ActiveX control, or another frame, goes
 * whole. One holding an
 * OLE object (§19.3.2.4 `p:oleObj`) keeps the picture PowerPoint 2010 and later, and
 * LibreOffice, write inside the object for consumers that cannot run it (the `p:pic` of the
 * object in `mc:Fallback`, placed where the frame is): the slide shows the object's last picture,
 * and nothing opens from it. Without such a picture the frame goes whole, as before.
 */
function settleOleFrame(walked: OleFrame, dropped: Set<number>, previews: OlePreviews): void {
  const { frame, cNvPr, picture } = walked;
  if (!walked.ole && !walked.control) return;
  if (walked.control || walked.nested || cNvPr === undefined || picture?.cNvPr === undefined) {
    dropped.add(frame.index);
    return;
  }
  for (const element of picture.path) previews.unwrapped.add(element.index);
  previews.pictures.add(picture.element.index);
  // The picture inside an object is numbered 0 (§19.3.1.12 `id` is unique on the slide): it
  // takes the frame's id and name.
  const taken = new Map(
    cNvPr.attributes
      .filter((a) => a.uri === '' && (a.local === 'id' || a.local === 'name'))
      .map((a) => [a.local, a]),
  );
  previews.relabelled.set(picture.cNvPr.index, [
    ...picture.cNvPr.attributes.map((a) => (a.uri === '' ? (taken.get(a.local) ?? a) : a)),
    ...[...taken.values()].filter(
      (a) => !picture.cNvPr?.attributes.some((b) => b.uri === '' && b.local === a.local),
    ),
  ]);
  // Namespaces declared on the unwrapped elements, innermost first, move onto the picture.
  const declared = new Set(
    picture.element.attributes.filter((a) => a.uri === XMLNS).map((a) => a.name),
  );
  const carried: XmlAttributeNode[] = [];
  for (const element of [...picture.path].reverse()) {
    for (const attribute of element.attributes) {
      if (attribute.uri !== XMLNS || declared.has(attribute.name)) continue;
      declared.add(attribute.name);
      carried.push(attribute);
    }
  }
  if (carried.length > 0) {
    previews.relabelled.set(picture.element.index, [...picture.element.attributes, ...carried]);
  }
}

async function collectDropped(
  text: string,
  what: string,
  findings: FindingTally,
  pace: Pace,
): Promise<FirstWalk> {
  const dropped = new Set<number>();
  const shown = new Map<number, string>();
  const lessened = new Map<number, number>();
  const fields = new OpenFields<OpenField>();
  let instrText: OpenField | undefined;
  let formula:
    { index: number; text: string; shared: string | undefined; master: boolean } | undefined;
  let definedName: { element: XmlElementNode; text: string } | undefined;
  let ruleFormula:
    { element: XmlElementNode; text: string; goes: number; list: number | undefined } | undefined;
  const sharedFormulas: { index: number; si: string }[] = [];
  const droppedShared = new Set<string>();
  const previews: OlePreviews = {
    unwrapped: new Set(),
    pictures: new Set(),
    relabelled: new Map(),
  };
  /** Graphic frames open around the element being walked (one, unless a file nests them). */
  const oleFrames: OleFrame[] = [];
  const finishField = (field: OpenField): void => {
    const kind = classifyField(field.instruction);
    if (kind === undefined) return;
    findings.add(kind);
    for (const index of field.indexes) dropped.add(index);
    // A button shows its text, not a result: the text stays, as plain text where the
    // instruction was (a field that has a result keeps that instead).
    const text = field.inInstruction ? macroButtonText(field.instruction) : undefined;
    if (text !== undefined && field.firstInstruction !== undefined) {
      dropped.delete(field.firstInstruction);
      shown.set(field.firstInstruction, text);
    }
  };
  await walkXmlPaced(
    text,
    what,
    {
      open(element, ancestors) {
        if (element.uri === NS.w && element.localName === 'fldChar') {
          const type = attribute(element, NS.w, 'fldCharType');
          const field = fields.mark(type, () => ({
            indexes: [],
            instruction: '',
            inInstruction: true,
            firstInstruction: undefined,
          }));
          if (field === undefined) dropped.add(element.index);
          // A mark of another type stays with its field's fate undecided, as it always did.
          else if (type === 'begin' || type === 'separate' || type === 'end') {
            field.indexes.push(element.index);
            if (type === 'end') finishField(field);
          }
        } else if (
          element.uri === NS.w &&
          (element.localName === 'instrText' || element.localName === 'delInstrText')
        ) {
          const field = fields.instruction();
          if (field !== undefined) {
            field.indexes.push(element.index);
            if (element.localName === 'instrText') field.firstInstruction ??= element.index;
            instrText = field;
          } else {
            dropped.add(element.index);
          }
        } else if (element.uri === NS.s && element.localName === 'f') {
          const type = attribute(element, '', 't');
          formula = {
            index: element.index,
            text: '',
            shared: type === 'shared' ? (attribute(element, '', 'si') ?? '') : undefined,
            master: attribute(element, '', 'ref') !== undefined,
          };
        } else if (element.uri === NS.s && element.localName === 'definedName') {
          definedName = { element, text: '' };
        } else if (RULE_FORMULAS.has(element.key)) {
          const holders = RULE_FORMULAS.get(element.key) ?? [];
          const holder = ancestors.findLast((a) => holders.includes(a.key));
          const list = holder && ancestors.findLast((a) => COUNTED_LISTS.has(a.key));
          ruleFormula = { element, text: '', goes: (holder ?? element).index, list: list?.index };
        } else if (element.uri === NS.p && element.localName === 'graphicFrame') {
          for (const outer of oleFrames) outer.nested = true;
          oleFrames.push({ frame: element, ole: false, control: false, nested: false });
        } else if (oleFrames.length > 0 && element.uri === NS.p) {
          for (const walked of oleFrames) walkOleFrame(walked, element, ancestors);
        }
      },
      text(value) {
        if (instrText) instrText.instruction += value;
        if (formula) formula.text += value;
        if (definedName) definedName.text += value;
        if (ruleFormula) ruleFormula.text += value;
      },
      close(element) {
        const walked = oleFrames.at(-1);
        if (walked?.frame.index === element.index) {
          settleOleFrame(walked, dropped, previews);
          oleFrames.pop();
        }
        if (
          element.uri === NS.w &&
          (element.localName === 'instrText' || element.localName === 'delInstrText')
        ) {
          instrText = undefined;
        } else if (formula?.index === element.index) {
          const kind = classifyFormula(formula.text);
          if (formula.shared !== undefined)
            sharedFormulas.push({ index: formula.index, si: formula.shared });
          if (kind !== undefined) {
            findings.add(kind);
            dropped.add(formula.index);
            if (formula.shared !== undefined && formula.master) droppedShared.add(formula.shared);
          }
          formula = undefined;
        } else if (definedName?.element.index === element.index) {
          const kind = classifyDefinedName(definedName.element.attributes, definedName.text);
          if (kind !== undefined) {
            findings.add(kind);
            dropped.add(element.index);
          }
          definedName = undefined;
        } else if (ruleFormula?.element.index === element.index) {
          const kind = classifyFormula(ruleFormula.text);
          if (kind !== undefined && !dropped.has(ruleFormula.goes)) {
            findings.add(kind);
            dropped.add(ruleFormula.goes);
            const list = ruleFormula.list;
            if (list !== undefined) lessened.set(list, (lessened.get(list) ?? 0) + 1);
          }
          ruleFormula = undefined;
        }
      },
    },
    pace,
  );
  for (const field of fields.unclosed()) finishField(field);
  // A shared formula's dependents carry no text of their own; without the master they break.
  for (const shared of sharedFormulas) {
    if (droppedShared.has(shared.si)) dropped.add(shared.index);
  }
  return { dropped, shown, lessened, previews };
}

/** Notes what a graphic frame holds, element by element (see {@link settleOleFrame}). */
function walkOleFrame(
  walked: OleFrame,
  element: XmlElementNode,
  ancestors: readonly XmlElementNode[],
): void {
  const parent = ancestors.at(-1);
  switch (element.localName) {
    case 'oleObj':
      walked.ole = true;
      return;
    case 'control':
      walked.control = true;
      return;
    case 'pic': {
      if (walked.picture !== undefined) return;
      if (!ancestors.some((a) => a.uri === NS.p && a.localName === 'oleObj')) return;
      const from = ancestors.findIndex((a) => a.index === walked.frame.index);
      walked.picture = { element, path: ancestors.slice(from) };
      return;
    }
    case 'cNvPr':
      if (
        parent?.localName === 'nvGraphicFramePr' &&
        ancestors.at(-2)?.index === walked.frame.index
      ) {
        walked.cNvPr = element;
      } else if (
        parent?.localName === 'nvPicPr' &&
        walked.picture !== undefined &&
        ancestors.at(-2)?.index === walked.picture.element.index
      ) {
        walked.picture.cNvPr = element;
      }
      return;
    default:
  }
}

const XML_SPACE_PRESERVE: XmlAttributeNode = Object.freeze({
  name: 'xml:space',
  uri: 'http://www.w3.org/XML/1998/namespace',
  local: 'space',
  value: 'preserve',
});

/** `text` as a Word text element (`w:t`, under the prefix `element` is written with). */
function shownText(element: XmlElementNode, text: string): ElementDecision {
  const colon = element.name.indexOf(':');
  return {
    action: 'replace',
    name: `${colon < 0 ? '' : element.name.slice(0, colon + 1)}t`,
    attributes: [XML_SPACE_PRESERVE],
    text,
  };
}
