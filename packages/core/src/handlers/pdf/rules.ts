/**
 * What a rebuilt PDF may carry, shared by the rebuild (which enforces it) and verify before
 * release (which re-reads the output with its own parser and checks it again). Names are the
 * decoded names (`/Java#53cript` is `JavaScript`), without the leading slash.
 */

/**
 * Action types kept (ISO 32000-1 12.6.4): go-to inside the document, thread, named navigation
 * and web/mail links (checked by {@link isSafeUri}). ResetForm is kept when its `/Next` chain is
 * clean. Everything else (Launch, SubmitForm, ImportData, GoToR, GoToE, Rendition, Sound, Movie,
 * RichMediaExecute, JavaScript, Hide, SetOCGState, GoTo3DView, Trans and unknown types) goes.
 */
export const SAFE_ACTION_TYPES: ReadonlySet<string> = new Set([
  'GoTo',
  'Thread',
  'Named',
  'URI',
  'ResetForm',
]);

/** Named actions kept (ISO 32000-1 12.6.4.11, table 212): navigation only. */
export const SAFE_NAMED_ACTIONS: ReadonlySet<string> = new Set([
  'NextPage',
  'PrevPage',
  'FirstPage',
  'LastPage',
]);

/**
 * Action types that are never kept wherever they sit. A dictionary whose `/S` is one of these is
 * an action even without `/Type /Action`: no other PDF dictionary uses these `/S` values.
 */
export const FORBIDDEN_ACTION_TYPES: ReadonlySet<string> = new Set([
  'JavaScript',
  'Launch',
  'SubmitForm',
  'ImportData',
  'GoToR',
  'GoToE',
  'Rendition',
  'Sound',
  'Movie',
  'RichMediaExecute',
  'Hide',
  'SetOCGState',
  'GoTo3DView',
  'Trans',
  'ECMAScript',
]);

/** Action types that run script: counted as `pdf-javascript`, the others as `pdf-action`. */
export const SCRIPT_ACTION_TYPES: ReadonlySet<string> = new Set([
  'JavaScript',
  'ECMAScript',
  'RichMediaExecute',
]);

/**
 * Annotation subtypes kept (ISO 32000-1 12.5.6, table 169, minus the active ones). FileAttachment,
 * Sound, Movie, Screen, 3D and RichMedia are removed, as is any subtype not listed here.
 */
export const SAFE_ANNOTATION_SUBTYPES: ReadonlySet<string> = new Set([
  'Text',
  'Link',
  'FreeText',
  'Line',
  'Square',
  'Circle',
  'Polygon',
  'PolyLine',
  'Highlight',
  'Underline',
  'Squiggly',
  'StrikeOut',
  'Stamp',
  'Caret',
  'Ink',
  'Popup',
  'Widget',
  'PrinterMark',
  'TrapNet',
  'Watermark',
  'Redact',
]);

/** Subtypes that are annotations the rebuild removes (also used by verify to spot them). */
export const FORBIDDEN_ANNOTATION_SUBTYPES: ReadonlySet<string> = new Set([
  'FileAttachment',
  'Sound',
  'Movie',
  'Screen',
  '3D',
  'RichMedia',
]);

/**
 * Keys never written in any dictionary of a rebuilt PDF: script, additional actions, embedded
 * files, XFA, rich media content, the hybrid-reference and encryption machinery.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set([
  'JS',
  'JavaScript',
  'AA',
  'EmbeddedFiles',
  'EmbeddedFile',
  'EF',
  'RF',
  'XFA',
  'RichMediaContent',
  'RichMediaSettings',
  'XRefStm',
  'Encrypt',
]);

/** `/Type` values that never appear in a rebuilt PDF. */
export const FORBIDDEN_TYPES: ReadonlySet<string> = new Set([
  'EmbeddedFile',
  'ObjStm',
  'XRef',
  'RichMediaContent',
  '3D',
]);

/** Schemes a kept URI action may use (README "PDF"; any other scheme is removed as an action). */
const SAFE_URI = /^(?:https?:\/\/|mailto:)/i;

/** True for a URI a kept `/S /URI` action may point at. */
export function isSafeUri(uri: string): boolean {
  // Anchored at the first byte: leading spaces or controls ("\tjavascript:") never match.
  return SAFE_URI.test(uri);
}

/** Catalogue keys kept (ISO 32000-1 7.7.2, table 28); anything else is dropped. */
export const CATALOG_KEYS: ReadonlySet<string> = new Set([
  'Type',
  'Version',
  'Pages',
  'PageLabels',
  'Names',
  'Dests',
  'ViewerPreferences',
  'PageLayout',
  'PageMode',
  'Outlines',
  'Threads',
  'OpenAction',
  'AcroForm',
  'StructTreeRoot',
  'MarkInfo',
  'Lang',
  'OCProperties',
  'OutputIntents',
  'Extensions',
]);

/** Name trees kept under the catalogue's `/Names` (ISO 32000-1 7.7.4): destinations only. */
export const NAME_TREES_KEPT: ReadonlySet<string> = new Set(['Dests']);

/** FDF catalogue keys kept (ISO 32000-1 12.7.7.2, table 243). */
export const FDF_CATALOG_KEYS: ReadonlySet<string> = new Set(['Type', 'Version', 'FDF']);

/**
 * Keys of the FDF dictionary kept (table 244): field values and annotations. `/JavaScript`,
 * `/EmbeddedFDFs`, `/Pages` (page templates), `/Target` and `/Differences` are dropped.
 */
export const FDF_KEYS: ReadonlySet<string> = new Set([
  'F',
  'ID',
  'Fields',
  'Status',
  'Encoding',
  'Annots',
]);

/**
 * Dictionaries whose keys are on an allowlist of their own, beyond the keys forbidden everywhere:
 * pages, annotations and the action types kept. Any other key (private application data, keys
 * of a later revision we do not know) is dropped and counted as hidden data.
 */
export type DictionaryRole = 'page' | 'annotation' | 'action';

/** What decides a dictionary's role, read the same way by the rebuild and by verify. */
export interface DictionaryFacts {
  /** `/Type`, `/S` and `/Subtype` as decoded names (indirect names resolved). */
  readonly type: string | undefined;
  readonly action: string | undefined;
  readonly subtype: string | undefined;
  readonly hasRect: boolean;
}

/**
 * A page is what the rebuilt page tree marks `/Type /Page`; an annotation has a kept subtype and
 * either `/Type /Annot` or a `/Rect` (`/Type` is optional, ISO 32000-1 table 164); an action has
 * a kept `/S` and no `/Type` other than `/Action` (table 193).
 */
export function dictionaryRole(facts: DictionaryFacts): DictionaryRole | undefined {
  if (facts.type === 'Page') return 'page';
  if (
    facts.subtype !== undefined &&
    SAFE_ANNOTATION_SUBTYPES.has(facts.subtype) &&
    (facts.type === 'Annot' || (facts.type === undefined && facts.hasRect))
  ) {
    return 'annotation';
  }
  if (
    facts.action !== undefined &&
    SAFE_ACTION_TYPES.has(facts.action) &&
    (facts.type === undefined || facts.type === 'Action')
  ) {
    return 'action';
  }
  return undefined;
}

/**
 * Page keys kept (ISO 32000-1 table 30, ISO 32000-2 table 31). `/AA`, `/Metadata` and
 * `/PieceInfo` go by the rules for every dictionary.
 */
const PAGE_KEYS: ReadonlySet<string> = new Set([
  'Type',
  'Parent',
  'LastModified',
  'Resources',
  'MediaBox',
  'CropBox',
  'BleedBox',
  'TrimBox',
  'ArtBox',
  'BoxColorInfo',
  'Contents',
  'Rotate',
  'Group',
  'Thumb',
  'B',
  'Dur',
  'Trans',
  'Annots',
  'StructParents',
  'ID',
  'PZ',
  'SeparationInfo',
  'Tabs',
  'TemplateInstantiated',
  'PresSteps',
  'UserUnit',
  'VP',
  'OutputIntents',
  'DPart',
]);

/**
 * Annotation keys kept: the common ones (ISO 32000-1 table 164, ISO 32000-2 table 166), markup
 * annotations (table 170), the kept subtypes' own (tables 172-192) and, for widgets merged with
 * their field, the field keys (tables 220, 222, 226, 228-231). `/ExData` (external data, 3D
 * markup) and `/AF` (associated files) are not among them.
 */
const ANNOTATION_KEYS: ReadonlySet<string> = new Set([
  // common
  'Type',
  'Subtype',
  'Rect',
  'Contents',
  'P',
  'NM',
  'M',
  'F',
  'AP',
  'AS',
  'Border',
  'C',
  'StructParent',
  'OC',
  'ca',
  'CA',
  'BM',
  'Lang',
  // markup
  'T',
  'Popup',
  'RC',
  'CreationDate',
  'IRT',
  'Subj',
  'RT',
  'IT',
  // subtypes
  'Open',
  'Name',
  'State',
  'StateModel',
  'A',
  'Dest',
  'H',
  'PA',
  'QuadPoints',
  'BS',
  'DA',
  'Q',
  'DS',
  'CL',
  'BE',
  'RD',
  'LE',
  'L',
  'IC',
  'LL',
  'LLE',
  'Cap',
  'LLO',
  'CP',
  'Measure',
  'CO',
  'Vertices',
  'Path',
  'Sy',
  'InkList',
  'Parent',
  'MK',
  'FixedPrint',
  'MN',
  'RO',
  'OverlayText',
  'Repeat',
  'LastModified',
  'Version',
  'AnnotStates',
  'FontFauxing',
  // fields merged with their widget
  'FT',
  'Kids',
  'TU',
  'TM',
  'Ff',
  'V',
  'DV',
  'DR',
  'Opt',
  'TI',
  'I',
  'MaxLen',
  'Lock',
  'SV',
  'RV',
]);

/** Keys of every kept action (ISO 32000-1 table 193) and of each kept type (tables 199-214). */
const ACTION_COMMON_KEYS: readonly string[] = ['Type', 'S', 'Next'];
const ACTION_KEYS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  (
    [
      ['GoTo', ['D', 'SD']],
      ['Thread', ['D', 'B']],
      ['URI', ['URI', 'IsMap']],
      ['Named', ['N']],
      ['ResetForm', ['Fields', 'Flags']],
    ] as const
  ).map(([action, keys]) => [action, new Set([...ACTION_COMMON_KEYS, ...keys])]),
);

/** The keys a dictionary of this role may carry; undefined when its role has no allowlist. */
export function allowedKeys(
  role: DictionaryRole,
  action: string | undefined,
): ReadonlySet<string> | undefined {
  if (role === 'page') return PAGE_KEYS;
  if (role === 'annotation') return ANNOTATION_KEYS;
  return ACTION_KEYS.get(action ?? '');
}
