import { VerifyFailure } from '../types.ts';
import type { EngineContext, SourcedFile, SourcedOutput } from '../types.ts';
import { PdfReadError, parseRebuiltPdf } from './_reader.ts';
import type { ParsedPdf, PdfValue } from './_reader.ts';
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
  SAFE_NAMED_ACTIONS,
  SCRIPT_ACTION_TYPES,
  allowedKeys,
  dictionaryRole,
  isSafeUri,
} from './rules.ts';

/** Trailer keys a rebuilt PDF has: nothing else (no `/Info`, `/Encrypt`, `/Prev`, `/XRefStm`). */
const TRAILER_KEYS: ReadonlySet<string> = new Set(['Size', 'Root', 'ID']);
/** Filters a rebuilt stream may carry (everything else was decoded and re-encoded with Flate). */
const OUTPUT_FILTERS: ReadonlySet<string> = new Set([
  'FlateDecode',
  'DCTDecode',
  'JPXDecode',
  'JBIG2Decode',
  'CCITTFaxDecode',
]);

/**
 * PDF checks of verify before release. The output is re-read with our own strict reader
 * (`_reader.ts`, independent of the parser the rebuild uses) and every object is checked:
 *
 * - `pdf.structure`: the file is exactly the layout the rebuild writes (header at 0, objects back
 *   to back, one xref table, trailer with `/Size`, `/Root`, `/ID` only, nothing after `%%EOF`);
 * - `pdf.no-javascript`: no `/JS`, `/JavaScript` key or script action anywhere;
 * - `pdf.no-actions`: no `/AA`, no action type outside the kept ones, no URI outside
 *   http/https/mailto, an `/OpenAction` only as a go-to inside the document;
 * - `pdf.no-embedded-files`: no embedded file, `/EF`, file attachment;
 * - `pdf.no-active-annotations`: no RichMedia, 3D, Screen, Movie or Sound annotation;
 * - `pdf.no-xfa`: no `/XFA`;
 * - `pdf.catalog`: catalogue keys and name trees on the allowlist (FDF: the catalogue and `/FDF`
 *   dictionary keys on theirs);
 * - `pdf.allowlist`: every page, annotation and kept action carries only the keys of its role.
 */
export function verifyPdf(
  output: SourcedOutput,
  _input: SourcedFile,
  _context: EngineContext,
): Promise<void> {
  let parsed: ParsedPdf;
  try {
    parsed = parseRebuiltPdf(output.content);
  } catch (error) {
    if (error instanceof PdfReadError) {
      return Promise.reject(new VerifyFailure('pdf.structure', error.message));
    }
    throw error;
  }
  try {
    checkDocument(parsed);
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
  return Promise.resolve();
}

function checkDocument(pdf: ParsedPdf): void {
  for (const trailerKey of pdf.trailer.keys()) {
    if (!TRAILER_KEYS.has(trailerKey)) {
      throw new VerifyFailure('pdf.structure', `the trailer carries /${trailerKey}`);
    }
  }
  const resolve = (value: PdfValue | undefined): PdfValue | undefined =>
    value?.type === 'ref' ? pdf.objects.get(value.num)?.value : value;
  for (const [num, object] of pdf.objects) {
    if (object.stream && object.value.type === 'dict')
      checkStream(num, object.value.entries, resolve);
    walk(object.value, (dict) => {
      checkDictionary(num, dict, resolve);
    });
  }
  const root = pdf.trailer.get('Root');
  const catalog = resolve(root);
  if (root?.type !== 'ref' || catalog?.type !== 'dict') {
    throw new VerifyFailure('pdf.structure', 'the trailer /Root is not a catalogue');
  }
  if (pdf.header === 'FDF') {
    checkFdf(catalog.entries, resolve);
    return;
  }
  // Our writer always types the catalogue and its page tree (ISO 32000-1 7.7.2, 7.7.3.2).
  if (nameOf(catalog.entries.get('Type')) !== 'Catalog') {
    throw new VerifyFailure('pdf.structure', 'the trailer /Root is not a /Catalog');
  }
  const pages = resolve(catalog.entries.get('Pages'));
  if (pages?.type !== 'dict' || nameOf(pages.entries.get('Type')) !== 'Pages') {
    throw new VerifyFailure('pdf.structure', 'the catalogue /Pages is not a page tree node');
  }
  for (const catalogKey of catalog.entries.keys()) {
    if (!CATALOG_KEYS.has(catalogKey)) {
      throw new VerifyFailure('pdf.catalog', `the catalogue carries /${catalogKey}`);
    }
  }
  const names = resolve(catalog.entries.get('Names'));
  if (names?.type === 'dict') {
    for (const tree of names.entries.keys()) {
      if (!NAME_TREES_KEPT.has(tree))
        throw new VerifyFailure('pdf.catalog', `the /Names tree /${tree} is kept`);
    }
  }
  const openAction = resolve(catalog.entries.get('OpenAction'));
  if (openAction !== undefined && openAction.type !== 'array') {
    const action =
      openAction.type === 'dict' ? nameOf(resolve(openAction.entries.get('S'))) : undefined;
    if (action !== 'GoTo' || (openAction.type === 'dict' && openAction.entries.has('Next'))) {
      throw new VerifyFailure('pdf.no-actions', 'the /OpenAction is not a plain go-to');
    }
  }
}

type Resolve = (value: PdfValue | undefined) => PdfValue | undefined;

function checkFdf(catalog: ReadonlyMap<string, PdfValue>, resolve: Resolve): void {
  const fdf = resolve(catalog.get('FDF'));
  if (fdf?.type !== 'dict')
    throw new VerifyFailure('pdf.structure', 'the FDF has no /FDF dictionary');
  for (const [entries, allowed] of [
    [catalog, FDF_CATALOG_KEYS],
    [fdf.entries, FDF_KEYS],
  ] as const) {
    for (const entryKey of entries.keys()) {
      if (!allowed.has(entryKey)) {
        throw new VerifyFailure('pdf.catalog', `the FDF carries /${entryKey}`);
      }
    }
  }
}

function nameOf(value: PdfValue | undefined): string | undefined {
  return value?.type === 'name' ? value.value : undefined;
}

function checkStream(num: number, dict: ReadonlyMap<string, PdfValue>, resolve: Resolve): void {
  const filter = resolve(dict.get('Filter'));
  const filters = filter?.type === 'array' ? filter.items.map((item) => resolve(item)) : [filter];
  for (const item of filters) {
    const filterName = nameOf(item);
    if (item !== undefined && (filterName === undefined || !OUTPUT_FILTERS.has(filterName))) {
      throw new VerifyFailure(
        'pdf.structure',
        `object ${num} is a stream with filter ${filterName ?? '?'}`,
      );
    }
  }
}

function checkDictionary(num: number, dict: ReadonlyMap<string, PdfValue>, resolve: Resolve): void {
  for (const dictKey of dict.keys()) {
    if (!FORBIDDEN_KEYS.has(dictKey)) continue;
    const check =
      dictKey === 'JS' || dictKey === 'JavaScript'
        ? 'pdf.no-javascript'
        : dictKey === 'XFA'
          ? 'pdf.no-xfa'
          : dictKey === 'AA' || dictKey.startsWith('RichMedia')
            ? 'pdf.no-actions'
            : dictKey === 'XRefStm' || dictKey === 'Encrypt'
              ? 'pdf.structure'
              : 'pdf.no-embedded-files';
    throw new VerifyFailure(check, `object ${num} carries /${dictKey}`);
  }
  const type = nameOf(resolve(dict.get('Type')));
  const action = nameOf(resolve(dict.get('S')));
  const subtype = nameOf(resolve(dict.get('Subtype')));
  if (action !== undefined && FORBIDDEN_ACTION_TYPES.has(action)) {
    throw new VerifyFailure(
      SCRIPT_ACTION_TYPES.has(action) ? 'pdf.no-javascript' : 'pdf.no-actions',
      `object ${num} holds a ${action} action`,
    );
  }
  if (type === 'Action' && !SAFE_ACTION_TYPES.has(action ?? '')) {
    throw new VerifyFailure(
      'pdf.no-actions',
      `object ${num} holds an action of type ${action ?? '?'}`,
    );
  }
  if (action === 'URI') {
    const uri = resolve(dict.get('URI'));
    if (uri?.type !== 'string' || !isSafeUri(uri.bytes.toString('latin1'))) {
      throw new VerifyFailure(
        'pdf.no-actions',
        `object ${num} holds a URI action outside http, https and mailto`,
      );
    }
  }
  if (action === 'Named' && !SAFE_NAMED_ACTIONS.has(nameOf(resolve(dict.get('N'))) ?? '')) {
    throw new VerifyFailure(
      'pdf.no-actions',
      `object ${num} holds a named action outside navigation`,
    );
  }
  const role = dictionaryRole({ type, action, subtype, hasRect: dict.has('Rect') });
  const allowed = role === undefined ? undefined : allowedKeys(role, action);
  for (const dictKey of allowed === undefined ? [] : dict.keys()) {
    if (!allowed?.has(dictKey)) {
      throw new VerifyFailure('pdf.allowlist', `object ${num} (${role ?? ''}) carries /${dictKey}`);
    }
  }
  if (subtype !== undefined && FORBIDDEN_ANNOTATION_SUBTYPES.has(subtype)) {
    throw new VerifyFailure(
      subtype === 'FileAttachment' ? 'pdf.no-embedded-files' : 'pdf.no-active-annotations',
      `object ${num} is a ${subtype} annotation`,
    );
  }
  if (type !== undefined && FORBIDDEN_TYPES.has(type)) {
    throw new VerifyFailure(
      type === 'EmbeddedFile'
        ? 'pdf.no-embedded-files'
        : type === '3D' || type.startsWith('RichMedia')
          ? 'pdf.no-active-annotations'
          : 'pdf.structure',
      `object ${num} has /Type /${type}`,
    );
  }
}

/** Visits every dictionary of a value, nested ones included (the reader bounded the depth). */
function walk(value: PdfValue, visit: (dict: ReadonlyMap<string, PdfValue>) => void): void {
  if (value.type === 'dict') {
    visit(value.entries);
    for (const child of value.entries.values()) walk(child, visit);
  } else if (value.type === 'array') {
    for (const child of value.items) walk(child, visit);
  }
}
