import {
  PDFArray,
  PDFDict,
  PDFHexString,
  PDFInvalidObject,
  PDFName,
  PDFRawStream,
  PDFRef,
  PDFStream,
  PDFString,
} from '@cantoo/pdf-lib';
import type { PDFContext, PDFObject } from '@cantoo/pdf-lib';

import { Rejection } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import type { FindingKind } from '../../findings.ts';
import type { Deadline } from '../../limits.ts';
import {
  CATALOG_KEYS,
  FDF_CATALOG_KEYS,
  FDF_KEYS,
  FORBIDDEN_ACTION_TYPES,
  FORBIDDEN_ANNOTATION_SUBTYPES,
  FORBIDDEN_KEYS,
  FORBIDDEN_TYPES,
  NAME_TREES_KEPT,
  SAFE_ACTION_TYPES,
  SAFE_ANNOTATION_SUBTYPES,
  SAFE_NAMED_ACTIONS,
  SCRIPT_ACTION_TYPES,
  allowedKeys,
  dictionaryRole,
  isSafeUri,
} from './rules.ts';
import { salvageSplitContents } from './page-content.ts';
import type { PageContents } from './page-content.ts';
import type { StreamBudget } from './streams.ts';

/** Deepest nesting of direct arrays and dictionaries inside one object. */
const MAX_NESTING_DEPTH = 100;
/** Most page-tree levels (real files use a handful). */
const MAX_PAGE_TREE_DEPTH = 64;
/** Items a removed subtree is searched for when counting what it held. */
const MAX_COUNTED_ITEMS = 10_000;

/** Keys dropped everywhere and the finding each counts as (not active, but hidden data). */
const DROPPED_KEYS: ReadonlyMap<string, FindingKind> = new Map([
  ['Metadata', 'document-metadata'],
  ['PieceInfo', 'hidden-data'],
]);

/** What {@link disarmDocument} works with besides the parsed document. */
export interface DisarmOptions {
  readonly findings: FindingTally;
  readonly deadline: Deadline;
  /** Counts the page content streams decoded to salvage pages split over several. */
  readonly budget: StreamBudget;
}

/** The document after disarm: the objects to write, in the order they are numbered. */
export interface DisarmedDocument {
  /** Reachable indirect objects in breadth-first order from the catalogue (which is first). */
  readonly objects: readonly PDFRef[];
  readonly pageCount: number;
  /** The content streams that are a page's only one (salvaged when written, if damaged). */
  readonly contentStreams: ReadonlySet<PDFRef>;
}

const name = (value: PDFObject | undefined): string | undefined =>
  value instanceof PDFName ? value.decodeText() : undefined;
const key = (text: string): PDFName => PDFName.of(text);

/** A catalogue written directly into the trailer (minimal hand-made files) becomes an object. */
function registerDirectRoot(context: PDFContext): void {
  if (context.trailerInfo.Root instanceof PDFDict) {
    context.trailerInfo.Root = context.register(context.trailerInfo.Root);
  }
}

/**
 * Walks the document from the catalogue and removes active content in place (the rules in
 * `rules.ts`), counting what goes. Only what stays reachable from the catalogue afterwards is
 * returned; the trailer (`/Info`, `/Encrypt`, `/ID`, `/XRefStm`) is not carried over.
 * @throws {Rejection} `invalid_file` for a missing catalogue, a broken page tree, a reachable object
 *   that did not parse, or nesting past {@link MAX_NESTING_DEPTH}.
 */
export function disarmDocument(
  context: PDFContext,
  { findings, deadline, budget }: DisarmOptions,
): DisarmedDocument {
  registerDirectRoot(context);
  const rootRef = context.trailerInfo.Root;
  if (!(rootRef instanceof PDFRef)) {
    throw new Rejection('invalid_file', 'the PDF trailer names no document catalogue');
  }
  const catalog = context.lookup(rootRef);
  if (!(catalog instanceof PDFDict)) {
    throw new Rejection('invalid_file', 'the PDF has no document catalogue');
  }
  // ISO 32000-1 7.7.2: the trailer's /Root is the catalogue. One that declares another type (a
  // page, a font) is not repaired into one: rebuilt as a catalogue it wrote a page as the root.
  const declared = name(catalog.get(key('Type')));
  if (declared !== undefined && declared !== 'Catalog') {
    throw new Rejection(
      'invalid_file',
      `the PDF trailer's /Root is a /${declared} dictionary, not a document catalogue`,
    );
  }
  if (context.trailerInfo.Info !== undefined) findings.add('document-metadata');
  disarmCatalog(catalog, context, findings);
  // ISO 32000-1 7.7.2: /Type is required; minimal files leave it out.
  catalog.set(key('Type'), key('Catalog'));
  registerDirectFields(catalog, context);
  const pagesRef = pageTreeRoot(catalog, context, findings);
  const pageContents: PageContents[] = [];
  const pages: PDFRef[] = [];
  const pageCount = countPages(context, findings, pagesRef, { deadline, pageContents, pages });
  const contentStreams = salvageSplitContents(pageContents, {
    context,
    budget,
    findings,
    deadline,
  });

  const walker = new Walker(context, findings, deadline);
  walker.ownPages(pages);
  const objects = walker.walk(rootRef);
  return { objects, pageCount, contentStreams };
}

/** Fields of the interactive form are indirect objects (ISO 32000-1 12.7.2, table 218). */
function registerDirectFields(catalog: PDFDict, context: PDFContext): void {
  const form = context.lookup(catalog.get(key('AcroForm')));
  const fields = form instanceof PDFDict ? context.lookup(form.get(key('Fields'))) : undefined;
  if (!(fields instanceof PDFArray)) return;
  for (let index = 0; index < fields.size(); index += 1) {
    const field = fields.get(index);
    if (field instanceof PDFDict) fields.set(index, context.register(field));
  }
}

/**
 * The page tree's root (ISO 32000-1 7.7.3), made a `/Pages` node. Minimal hand-made files and
 * proofs of concept (`/Pages <<>>`) put a single page, or nothing usable, where the root belongs;
 * readers open them (Acrobat runs their script) and show one empty page. Such a file is rebuilt:
 * a direct node becomes an object, a lone page gets a root above it, and a root that is an action,
 * not a dictionary or missing is removed (counted) and replaced by an empty root, which
 * {@link countPages} gives one blank page.
 */
function pageTreeRoot(catalog: PDFDict, context: PDFContext, findings: FindingTally): PDFRef {
  let value = catalog.get(key('Pages'));
  if (value instanceof PDFDict) {
    value = context.register(value);
    catalog.set(key('Pages'), value);
  }
  const node = value instanceof PDFRef ? context.lookup(value) : undefined;
  if (value instanceof PDFRef && node instanceof PDFDict && forbiddenKind(node) === undefined) {
    if (
      name(node.get(key('Type'))) === 'Pages' ||
      context.lookup(node.get(key('Kids'))) instanceof PDFArray
    ) {
      return value;
    }
    const root = context.register(context.obj({ Type: 'Pages', Kids: [value], Count: 1 }));
    node.set(key('Parent'), root);
    if (!node.has(key('MediaBox'))) node.set(key('MediaBox'), context.obj(DEFAULT_MEDIA_BOX));
    catalog.set(key('Pages'), root);
    return root;
  }
  if (value !== undefined) countActions(value, context, findings, 'hidden-data');
  const root = context.register(context.obj({ Type: 'Pages', Kids: [], Count: 0 }));
  catalog.set(key('Pages'), root);
  return root;
}

function disarmCatalog(catalog: PDFDict, context: PDFContext, findings: FindingTally): void {
  for (const [entryKey, value] of catalog.entries()) {
    const text = entryKey.decodeText();
    if (CATALOG_KEYS.has(text)) continue;
    catalog.delete(entryKey);
    if (text === 'AA') countActions(value, context, findings);
    else if (text === 'Metadata') findings.add('document-metadata');
    else if (text === 'Collection') findings.add('pdf-embedded-file');
    else findings.add('hidden-data');
  }
  const openAction = catalog.get(key('OpenAction'));
  if (openAction !== undefined) {
    const resolved = context.lookup(openAction);
    // ISO 32000-1 7.7.2: a destination array or an action; only a go-to inside the document stays.
    const isGoTo = resolved instanceof PDFDict && name(resolved.lookup(key('S'))) === 'GoTo';
    if (!(resolved instanceof PDFArray) && !isGoTo) {
      catalog.delete(key('OpenAction'));
      countActions(openAction, context, findings, 'pdf-action');
    } else if (isGoTo) {
      // A kept go-to loses its chain: on open, nothing but the jump happens.
      const next = resolved.get(key('Next'));
      if (next !== undefined) {
        resolved.delete(key('Next'));
        countActions(next, context, findings, 'pdf-action');
      }
    }
  }
  const names = context.lookup(catalog.get(key('Names')));
  if (names instanceof PDFDict) {
    for (const [treeKey, tree] of names.entries()) {
      const text = treeKey.decodeText();
      if (NAME_TREES_KEPT.has(text)) continue;
      names.delete(treeKey);
      if (text === 'JavaScript') countActions(tree, context, findings, 'pdf-javascript');
      else if (text === 'EmbeddedFiles')
        findings.add('pdf-embedded-file', countFileSpecs(tree, context));
      else if (text === 'Renditions') findings.add('pdf-action');
      else findings.add('hidden-data');
    }
  } else if (catalog.has(key('Names'))) {
    catalog.delete(key('Names'));
    findings.add('hidden-data');
  }
}

/** US Letter, what readers assume for a page without a `/MediaBox` (ISO 32000-1 7.7.3.3). */
const DEFAULT_MEDIA_BOX = [0, 0, 612, 792];

/**
 * Follows the page tree (ISO 32000-1 7.7.3) with a cycle check and returns the number of pages.
 * Kids that are actions are removed (counted), every `/Count` is rewritten to the pages found
 * under its node, and a tree holding no page at all gets one blank page (see {@link pageTreeRoot}).
 * The pages found are appended to `pages` in document order.
 */
function countPages(
  context: PDFContext,
  findings: FindingTally,
  rootRef: PDFRef,
  {
    deadline,
    pageContents,
    pages: found,
  }: { deadline: Deadline; pageContents: PageContents[]; pages: PDFRef[] },
): number {
  const seen = new Set<PDFRef>();
  /** Intermediate nodes in visiting order, each with its parent's index (-1 for the root). */
  const nodes: { dict: PDFDict; parent: number; count: number }[] = [];
  const stack: [PDFObject | undefined, number, number][] = [[rootRef, 0, -1]];
  let pages = 0;
  while (stack.length > 0) {
    deadline.check();
    const [ref, depth, parent] = stack.pop() ?? [undefined, 0, -1];
    if (!(ref instanceof PDFRef) || seen.has(ref) || depth > MAX_PAGE_TREE_DEPTH) {
      throw new Rejection(
        'invalid_file',
        'the PDF page tree is broken (a missing, direct, repeated or too deep node)',
      );
    }
    seen.add(ref);
    const node = context.lookup(ref);
    if (!(node instanceof PDFDict))
      throw new Rejection('invalid_file', 'a PDF page tree node is not a dictionary');
    // ISO 32000-1 7.7.3: every node is a /Pages or a /Page. A node that declares another type (the
    // catalogue listed among the kids, a font) would be retyped into a page and written so.
    const declared = name(node.get(key('Type')));
    if (declared !== undefined && declared !== 'Page' && declared !== 'Pages') {
      throw new Rejection('invalid_file', `a PDF page tree node is a /${declared} dictionary`);
    }
    const kids = context.lookup(node.get(key('Kids')));
    if (
      ref !== rootRef &&
      (name(node.get(key('Type'))) === 'Page' || !(kids instanceof PDFArray))
    ) {
      pageContents.push({ page: node, streams: contentsOf(node, context) });
      // ISO 32000-1 7.7.3.3: /Type is required; readers that insist get it.
      node.set(key('Type'), key('Page'));
      pages += 1;
      found.push(ref);
      for (let index = parent; index >= 0; index = nodes[index]?.parent ?? -1) {
        const ancestor = nodes[index];
        if (ancestor) ancestor.count += 1;
      }
      continue;
    }
    node.set(key('Type'), key('Pages'));
    const list = kids instanceof PDFArray ? kids : context.obj([]);
    if (!(kids instanceof PDFArray)) node.set(key('Kids'), list);
    nodes.push({ dict: node, parent, count: 0 });
    const self = nodes.length - 1;
    for (let index = list.size() - 1; index >= 0; index -= 1) {
      const kid = list.get(index);
      const resolved = context.lookup(kid);
      const kind = resolved instanceof PDFDict ? forbiddenKind(resolved) : undefined;
      if (kind !== undefined) {
        // An action where a page belongs (a proof of concept's trick): removed, never shown.
        list.remove(index);
        findings.add(kind);
      } else if (kid instanceof PDFDict) {
        // Kids must be indirect (7.7.3.2); a direct page dictionary becomes an object.
        const registered = context.register(kid);
        list.set(index, registered);
        stack.push([registered, depth + 1, self]);
      } else stack.push([kid, depth + 1, self]);
    }
  }
  if (pages === 0) {
    const root = context.lookup(rootRef, PDFDict);
    const blank = context.register(
      context.obj({ Type: 'Page', Parent: rootRef, MediaBox: DEFAULT_MEDIA_BOX, Resources: {} }),
    );
    root.set(key('Kids'), context.obj([blank]));
    const first = nodes[0];
    if (first) first.count = 1;
    pages = 1;
  }
  for (const node of nodes) node.dict.set(key('Count'), context.obj(node.count));
  return pages;
}

/**
 * A page's content streams, in order. A page whose content stream is missing (a truncated file, a
 * damaged cross-reference) would come back blank: that is a file we cannot rebuild faithfully, so
 * it is `invalid_file`.
 */
function contentsOf(page: PDFDict, context: PDFContext): PDFRef[] {
  const contents = page.get(key('Contents'));
  const resolved = context.lookup(contents);
  const refs = resolved instanceof PDFArray ? resolved.asArray() : [contents];
  const streams: PDFRef[] = [];
  for (const ref of refs) {
    if (ref === undefined) continue;
    if (ref instanceof PDFRef) streams.push(ref);
    if (!(context.lookup(ref) instanceof PDFRawStream)) {
      throw new Rejection(
        'invalid_file',
        "a PDF page's content stream is missing (truncated or damaged file)",
      );
    }
  }
  return streams;
}

/** Why an object may not be kept anywhere, as the finding its removal counts; undefined if it may. */
function forbiddenKind(dict: PDFDict): FindingKind | undefined {
  const type = name(dict.lookup(key('Type')));
  const action = name(dict.lookup(key('S')));
  const subtype = name(dict.lookup(key('Subtype')));
  if (action !== undefined && FORBIDDEN_ACTION_TYPES.has(action)) {
    return SCRIPT_ACTION_TYPES.has(action) ? 'pdf-javascript' : 'pdf-action';
  }
  if (action === 'URI') {
    const uri = dict.lookup(key('URI'));
    // ISO 32000-1 12.6.4.7: the URI is 7-bit ASCII; read its bytes as they are, as verify does.
    const text =
      uri instanceof PDFString || uri instanceof PDFHexString
        ? Buffer.from(uri.asBytes()).toString('latin1')
        : '';
    if (!isSafeUri(text)) return 'pdf-action';
  }
  if (action === 'Named' && !SAFE_NAMED_ACTIONS.has(name(dict.lookup(key('N'))) ?? ''))
    return 'pdf-action';
  if (type === 'Action' && !SAFE_ACTION_TYPES.has(action ?? '')) return 'pdf-action';
  if (subtype !== undefined && FORBIDDEN_ANNOTATION_SUBTYPES.has(subtype)) {
    return subtype === 'FileAttachment' ? 'pdf-embedded-file' : 'pdf-action';
  }
  if (type === 'Annot' && !SAFE_ANNOTATION_SUBTYPES.has(subtype ?? '')) return 'hidden-data';
  if (type !== undefined && FORBIDDEN_TYPES.has(type)) {
    return type === 'EmbeddedFile'
      ? 'pdf-embedded-file'
      : type === 'ObjStm' || type === 'XRef'
        ? 'hidden-data'
        : 'pdf-action';
  }
  return undefined;
}

/** The key allowlist of a page, annotation or kept action (see `rules.ts`); undefined for others. */
function allowedKeysOf(dict: PDFDict): ReadonlySet<string> | undefined {
  const action = name(dict.lookup(key('S')));
  const role = dictionaryRole({
    type: name(dict.lookup(key('Type'))),
    action,
    subtype: name(dict.lookup(key('Subtype'))),
    hasRect: dict.has(key('Rect')),
  });
  return role === undefined ? undefined : allowedKeys(role, action);
}

function kindOfKey(text: string): FindingKind {
  if (text === 'JS' || text === 'JavaScript') return 'pdf-javascript';
  if (text === 'XFA') return 'pdf-xfa';
  if (text === 'EmbeddedFiles' || text === 'EmbeddedFile' || text === 'EF' || text === 'RF') {
    return 'pdf-embedded-file';
  }
  if (text === 'XRefStm' || text === 'Encrypt') return 'hidden-data';
  return 'pdf-action';
}

/**
 * Breadth-first walk from the catalogue that disarms every object it reaches. What it removes is
 * counted on the page whose object held it: a page owns itself and its annotations, and an object
 * reached from owned objects is owned by the lowest of their pages that reaches it before it is
 * disarmed; the rest (the catalogue, the document's forms and name trees) belongs to no page.
 */
class Walker {
  readonly #context: PDFContext;
  readonly #findings: FindingTally;
  readonly #deadline: Deadline;
  readonly #order: PDFRef[] = [];
  readonly #seen = new Set<PDFRef>();
  /** Object -> the 1-based number of the page that owns it. */
  readonly #owners = new Map<PDFRef, number>();
  /** Pages and their annotations: owned for good, whatever else reaches them. */
  readonly #fixed = new Set<PDFRef>();
  /**
   * What each page lost, kept apart until the walk ends: the walk meets pages in no particular
   * order, and the report lists them (up to its limit) from the first page on.
   */
  readonly #pageFindings = new Map<number, FindingTally>();
  /** The page owning the object being disarmed, if any. */
  #page: number | undefined;
  /** Where the object being disarmed reports what it loses. */
  #here: FindingTally;

  constructor(context: PDFContext, findings: FindingTally, deadline: Deadline) {
    this.#context = context;
    this.#findings = findings;
    this.#deadline = deadline;
    this.#here = findings;
  }

  /**
   * Gives each page (in document order) itself and its annotations (ISO 32000-1 12.5.2): a
   * widget is reached through the form's fields before its page, but it is shown on the page.
   */
  ownPages(pages: readonly PDFRef[]): void {
    for (const [index, page] of pages.entries()) {
      this.#owners.set(page, index + 1);
      const dict = this.#context.lookup(page);
      const annots = dict instanceof PDFDict ? dict.get(key('Annots')) : undefined;
      const list = this.#context.lookup(annots);
      const owned = list instanceof PDFArray ? [annots, ...list.asArray()] : [];
      this.#fixed.add(page);
      for (const object of owned) {
        if (!(object instanceof PDFRef) || this.#owners.has(object)) continue;
        this.#owners.set(object, index + 1);
        this.#fixed.add(object);
      }
    }
  }

  walk(root: PDFRef): PDFRef[] {
    this.#seen.add(root);
    this.#order.push(root);
    for (let index = 0; index < this.#order.length; index += 1) {
      if (index % 256 === 0) this.#deadline.check();
      const ref = this.#order[index];
      if (!ref) break;
      const object = this.#context.lookup(ref);
      if (object instanceof PDFInvalidObject) {
        throw new Rejection('invalid_file', `PDF object ${ref.objectNumber} does not parse`);
      }
      if (object instanceof PDFStream && !(object instanceof PDFRawStream)) {
        throw new TypeError('the PDF parser returned a stream that is not raw');
      }
      const container = object instanceof PDFRawStream ? object.dict : object;
      this.#page = this.#owners.get(ref);
      this.#here = this.#tallyOf(this.#page);
      if (container instanceof PDFDict || container instanceof PDFArray) this.#disarm(container, 0);
    }
    const pages = [...this.#pageFindings.keys()].sort((a, b) => a - b);
    for (const page of pages) {
      this.#findings.at({ page }).addAll(this.#pageFindings.get(page)?.toArray() ?? []);
    }
    return this.#order;
  }

  /** Disarms one direct dictionary or array and what it holds directly; queues references. */
  #disarm(container: PDFDict | PDFArray, depth: number): void {
    if (depth > MAX_NESTING_DEPTH) {
      throw new Rejection(
        'invalid_file',
        `a PDF object nests deeper than ${MAX_NESTING_DEPTH} levels`,
      );
    }
    if (container instanceof PDFDict) {
      const allowed = allowedKeysOf(container);
      for (const [entryKey, value] of container.entries()) {
        const text = entryKey.decodeText();
        if (FORBIDDEN_KEYS.has(text)) {
          container.delete(entryKey);
          if (text === 'AA') countActions(value, this.#context, this.#here);
          else this.#here.add(kindOfKey(text));
          continue;
        }
        const dropped = DROPPED_KEYS.get(text);
        if (dropped) {
          container.delete(entryKey);
          this.#here.add(dropped);
          continue;
        }
        if (allowed !== undefined && !allowed.has(text)) {
          container.delete(entryKey);
          this.#here.add('hidden-data');
          continue;
        }
        if (!this.#keep(value, depth)) container.delete(entryKey);
      }
      return;
    }
    for (let index = container.size() - 1; index >= 0; index -= 1) {
      if (!this.#keep(container.get(index), depth)) container.remove(index);
    }
  }

  /** Checks one value; false when it must be removed from its container (counted). */
  #keep(value: PDFObject, depth: number): boolean {
    const resolved = value instanceof PDFRef ? this.#context.lookup(value) : value;
    if (value instanceof PDFRef && resolved === undefined) {
      // ISO 32000-1 7.3.10: a reference to a missing object is null; we drop the entry.
      return false;
    }
    const dict = resolved instanceof PDFRawStream ? resolved.dict : resolved;
    if (dict instanceof PDFDict) {
      const kind = forbiddenKind(dict);
      if (kind !== undefined) {
        this.#here.add(kind);
        return false;
      }
    }
    if (value instanceof PDFRef) {
      if (!this.#seen.has(value)) {
        this.#seen.add(value);
        this.#order.push(value);
      }
      // The walk meets pages from the last: what pages share goes to the first of them.
      const owner = this.#owners.get(value);
      if (
        this.#page !== undefined &&
        !this.#fixed.has(value) &&
        (owner === undefined || owner > this.#page)
      ) {
        this.#owners.set(value, this.#page);
      }
      return true;
    }
    if (value instanceof PDFDict || value instanceof PDFArray) this.#disarm(value, depth + 1);
    return true;
  }

  #tallyOf(page: number | undefined): FindingTally {
    if (page === undefined) return this.#findings;
    let tally = this.#pageFindings.get(page);
    if (!tally) {
      tally = new FindingTally();
      this.#pageFindings.set(page, tally);
    }
    return tally;
  }
}

/**
 * Counts the actions inside a removed value (an `/AA` dictionary, a name tree, an action chain):
 * script actions as `pdf-javascript`, the others as `pdf-action`; at least one `fallback`.
 */
function countActions(
  value: PDFObject,
  context: PDFContext,
  findings: FindingTally,
  fallback: FindingKind = 'pdf-action',
): void {
  let counted = 0;
  walkRemoved(value, context, (dict) => {
    const action = name(dict.lookup(key('S')));
    const script = dict.has(key('JS'));
    if (action === undefined && !script) return;
    // `/S //JS (...)` (an empty action type, as proofs of concept write it) still carries script.
    const isScript = script || SCRIPT_ACTION_TYPES.has(action ?? '');
    findings.add(isScript ? 'pdf-javascript' : 'pdf-action');
    counted += 1;
  });
  if (counted === 0) findings.add(fallback);
}

function countFileSpecs(value: PDFObject, context: PDFContext): number {
  let count = 0;
  walkRemoved(value, context, (dict) => {
    if (dict.has(key('EF'))) count += 1;
  });
  return Math.max(1, count);
}

/** Visits every dictionary under a removed value, bounded and cycle-safe. */
function walkRemoved(value: PDFObject, context: PDFContext, visit: (dict: PDFDict) => void): void {
  const seen = new Set<PDFObject>();
  const stack: PDFObject[] = [value];
  while (stack.length > 0 && seen.size < MAX_COUNTED_ITEMS) {
    const item = stack.pop();
    if (item === undefined || seen.has(item)) continue;
    seen.add(item);
    const resolved = item instanceof PDFRef ? context.lookup(item) : item;
    const dict = resolved instanceof PDFRawStream ? resolved.dict : resolved;
    if (dict instanceof PDFDict) {
      visit(dict);
      for (const [entryKey, child] of dict.entries()) {
        // Parents and pages point back up the tree; counting stops at them.
        if (['Parent', 'P', 'Dest', 'D'].includes(entryKey.decodeText())) continue;
        stack.push(child);
      }
    } else if (dict instanceof PDFArray) {
      stack.push(...dict.asArray());
    }
  }
}

/**
 * FDF (ISO 32000-1 12.7.7): the catalogue's `/FDF` dictionary keeps field values and
 * annotations (keys on an allowlist); script, embedded FDFs and page templates go, and every
 * object reached is disarmed by the same rules as a PDF.
 * @throws {Rejection} `invalid_file` without a catalogue holding an `/FDF` dictionary.
 */
export function disarmFdf(
  context: PDFContext,
  findings: FindingTally,
  deadline: Deadline,
): DisarmedDocument {
  registerDirectRoot(context);
  const rootRef = context.trailerInfo.Root;
  const catalog = context.lookup(rootRef);
  const fdf = catalog instanceof PDFDict ? context.lookup(catalog.get(key('FDF'))) : undefined;
  if (!(rootRef instanceof PDFRef) || !(catalog instanceof PDFDict) || !(fdf instanceof PDFDict)) {
    throw new Rejection('invalid_file', 'the FDF has no catalogue with an /FDF dictionary');
  }
  if (context.trailerInfo.Info !== undefined) findings.add('document-metadata');
  for (const [dict, allowed] of [
    [catalog, FDF_CATALOG_KEYS],
    [fdf, FDF_KEYS],
  ] as const) {
    for (const [entryKey, value] of dict.entries()) {
      const text = entryKey.decodeText();
      if (allowed.has(text)) continue;
      dict.delete(entryKey);
      if (text === 'JavaScript' || text === 'AA') {
        countActions(value, context, findings, 'pdf-javascript');
      } else if (text === 'EmbeddedFDFs') findings.add('pdf-embedded-file');
      else findings.add('hidden-data');
    }
  }
  const objects = new Walker(context, findings, deadline).walk(rootRef);
  return { objects, pageCount: 0, contentStreams: new Set() };
}
