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

/** Schemes a kept URI action may use (the rule; anything else is removed). */
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
