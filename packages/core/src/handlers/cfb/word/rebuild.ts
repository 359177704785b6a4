import { u16le, u32le } from '../../../_internal/bytes.ts';
import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { childNamed, streamNamed } from '../../../_internal/cfb/tree.ts';
import type { CompoundNode, CompoundStorage, CompoundStream } from '../../../_internal/cfb/tree.ts';
import { writeCompoundFile } from '../../../_internal/cfb/write.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import { FindingTally } from '../../../findings.ts';
import type { FindingKind } from '../../../findings.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../../types.ts';
import { neutraliseFields } from './fields.ts';
import { clearFcLcb, FC_LCB, fcLcb, parseFib, setFcLcb } from './fib.ts';
import type { Fib } from './fib.ts';
import { clearObjectCharacters, OBJECT_POOL, scanObjectPool } from './objects.ts';
import { rebuildWordPictures } from './pictures.ts';

/** [MS-DOC] 2.1.1: the root storage's class of a Word document, {00020906-0000-0000-C000-000000000046}. */
export const WORD_DOCUMENT_CLSID = Uint8Array.from([
  0x06, 0x09, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46,
]);

/** [MS-DOC] 2.9.274 SttbfAssoc: an extended STTB of 18 strings; ibstAssocDot (1) is the template. */
const ASSOC_STRINGS = 18;
const ASSOC_DOT = 1;
/** ibstAssocMailMerge and ibstAssocMailMergeHeader: a mail merge's data source and header file. */
const ASSOC_MAIL_MERGE = [8, 9];
const STTB_EXTENDED = 0xffff;
const STTB_ASSOC_BYTES = 6 + ASSOC_STRINGS * 2;
/**
 * [MS-DOC] 2.5.5 FibRgFcLcb97: the pair holding dwLowDateTime and dwHighDateTime (when the file
 * was last saved), which is no offset and size.
 */
const FC_LCB_SAVE_TIME = 87;
/** [MS-DOC] 2.5.5: Plcocx, the ActiveX controls' positions; their storages are never kept. */
const FC_LCB_PLCOCX = 85;
/**
 * [MS-OLEPS] 2.21 PropertySetStream: NumPropertySets at offset 24, then FMTID and offset of each
 * set; the second set of DocumentSummaryInformation holds the user-defined properties.
 */
const PROPERTY_SET_COUNT_OFFSET = 24;
const SECOND_SET_OFFSET = 28 + 20 + 16;
/** [MS-OLEPS] 2.18: property ids 0 (dictionary) and 1 (code page) describe the others. */
const FIRST_USER_PROPERTY_ID = 2;
/** Properties read from the user-defined set before deciding. */
const MAX_PROPERTIES = 4096;

/** Top-level entries that hold a VBA project or its parts, matched without case ([MS-OVBA] 2.2). */
const VBA_ENTRIES = /^(?:macros|_vba_project(?:_cur)?|vba|project|projectwm)$/i;
/** Entries Word and LibreOffice write that the rebuild drops without a finding. */
const DROPPED_QUIETLY = new Set([
  '\u0001CompObj',
  '\u0001Ole',
  '\u0005SummaryInformation',
  '\u0005DocumentSummaryInformation',
  OBJECT_POOL,
]);

/**
 * Rebuilds a Word 97-2003 document or template ([MS-DOC]): a new compound file holding the
 * `WordDocument` stream, the table stream the FIB names and the `Data` stream, nothing else.
 * In the copies of those streams, fields that fetch, run or link (DDE, DDEAUTO, INCLUDETEXT,
 * INCLUDEPICTURE, …; judged as OOXML fields are) keep their result and lose their instruction,
 * the customisations and macro tables the FIB points at are cleared, the attached template
 * and mail-merge source are emptied, and every byte of the table stream that no FIB pair
 * points at is zeroed. Embedded and linked objects go with the `ObjectPool` storage (each of
 * its streams scanned first) while their preview pictures stay: the EMBED or LINK field keeps
 * its result, and the result's characters lose the properties that made them an object. Every
 * picture kept, inline or floating, is rebuilt by the image or metafile rebuild and the `Data`
 * stream is written anew with only what the text points at (see {@link rebuildWordPictures}).
 */
export async function rebuildWordBinary(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const what = `the .${input.format.extension} file`;
  const { root } = parseCompoundFile(input.bytes, { what, maxBytes: context.limits.maxBytes });
  const findings = new FindingTally();
  const wordStream = streamNamed(root, 'WordDocument');
  if (!wordStream) {
    throw new Rejection(
      'invalid_file',
      `${what} is not a Word document: it has no WordDocument stream`,
    );
  }
  // Copies: the reader may hand out views of the input, which stays as it was.
  const word = wordStream.content.slice();
  const fib = parseFib(word, what);
  const tableStream = streamNamed(root, fib.tableName);
  if (!tableStream) {
    throw new Rejection(
      'invalid_file',
      `${what} is not a readable Word document: its FIB names the ${fib.tableName} stream, which it does not have`,
    );
  }
  const table = tableStream.content.slice();
  const data = streamNamed(root, 'Data');
  judgeEntries(root, fib, findings);
  const pool = objectPoolOf(root);
  if (pool) await scanObjectPool(pool, input.bytes, context, findings);

  for (const kind of neutraliseFields(word, table, fib, what, true).removed) {
    // An object is reported once, as its ObjectPool storage; a field without one as itself.
    if (kind !== 'embedded-object' || pool === undefined) findings.add(kind);
  }
  clearObjectCharacters(word, table, fib, what, true);
  clearStructures(word, table, fib, findings);
  zeroUnreferenced(word, table, fib);
  context.deadline.check();
  const pictures = await rebuildWordPictures(
    { word, table, data: data?.content, fib, what },
    { input, context, findings },
  );

  const children: CompoundNode[] = [
    { kind: 'stream', name: 'WordDocument', content: pictures.word },
    { kind: 'stream', name: fib.tableName, content: table },
  ];
  if (pictures.data.length > 0) {
    children.push({ kind: 'stream', name: 'Data', content: pictures.data });
  }
  const bytes = writeCompoundFile({
    kind: 'storage',
    name: 'Root Entry',
    clsid: WORD_DOCUMENT_CLSID,
    stateBits: 0,
    children,
  });
  return { bytes, findings: findings.toArray() };
}

/** Reports what the top-level entries that are not kept held (objects: {@link scanObjectPool}). */
function judgeEntries(root: CompoundStorage, fib: Fib, findings: FindingTally): void {
  const kept = new Set(['WORDDOCUMENT', fib.tableName.toUpperCase(), 'DATA']);
  let vba = false;
  for (const entry of root.children) {
    if (kept.has(entry.name.toUpperCase())) continue;
    if (VBA_ENTRIES.test(entry.name)) {
      vba = true;
    } else if (entry === objectPoolOf(root)) {
      continue;
    } else if (entry.name === '\u0005DocumentSummaryInformation' && entry.kind === 'stream') {
      if (hasUserDefinedProperties(entry)) findings.add('document-metadata');
    } else if (/^msodatastore$/i.test(entry.name)) {
      findings.add('document-metadata');
    } else if (!DROPPED_QUIETLY.has(entry.name)) {
      findings.add('hidden-data');
    }
  }
  if (vba) findings.add('vba-macro');
}

/** The `ObjectPool` storage when it holds objects. */
function objectPoolOf(root: CompoundStorage): CompoundStorage | undefined {
  const pool = childNamed(root, OBJECT_POOL);
  return pool?.kind === 'storage' && pool.children.length > 0 ? pool : undefined;
}

/**
 * Whether DocumentSummaryInformation holds user-defined properties: a second property set
 * ([MS-OLEPS] 2.21) with a property other than its dictionary and code page. LibreOffice writes
 * the set empty.
 */
function hasUserDefinedProperties(stream: CompoundStream): boolean {
  const { content } = stream;
  if (content.length < SECOND_SET_OFFSET + 4 || u32le(content, PROPERTY_SET_COUNT_OFFSET) < 2) {
    return false;
  }
  const section = u32le(content, SECOND_SET_OFFSET);
  if (section + 8 > content.length) return true;
  const count = Math.min(u32le(content, section + 4), MAX_PROPERTIES);
  for (let i = 0; i < count && section + 16 + i * 8 <= content.length; i += 1) {
    if (u32le(content, section + 8 + i * 8) >= FIRST_USER_PROPERTY_ID) return true;
  }
  return false;
}

/**
 * Clears what the FIB points at that runs, routes or records: customisations and macro tables
 * (key bindings and toolbar buttons that run macros), ActiveX control positions, the autosave
 * source path, the routing slip, the saved-by history and the last-save time; and empties the
 * associated strings (attached template, mail-merge data source, title and author copies).
 */
function clearStructures(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  findings: FindingTally,
): void {
  for (const index of [FC_LCB.cmds, FC_LCB.plcMcr, FC_LCB.sttbfMcr, FC_LCB_PLCOCX]) {
    clearFcLcb(word, fib, index);
  }
  for (const index of [FC_LCB.autosaveSource, FC_LCB.routeSlip, FC_LCB.sttbSavedBy]) {
    if (fcLcb(word, fib, index).lcb > 0) findings.add('document-metadata');
    clearFcLcb(word, fib, index);
  }
  setFcLcb(word, fib, FC_LCB_SAVE_TIME, { fc: 0, lcb: 0 });

  const assoc = fcLcb(word, fib, FC_LCB.sttbfAssoc);
  if (assoc.lcb === 0) return;
  if (assoc.lcb < STTB_ASSOC_BYTES || assoc.fc + assoc.lcb > table.length) {
    clearFcLcb(word, fib, FC_LCB.sttbfAssoc);
    return;
  }
  for (const kind of assocFindings(table, assoc.fc, assoc.lcb)) findings.add(kind);
  // An SttbfAssoc of 18 empty strings, written where the old one was.
  const view = new DataView(table.buffer, table.byteOffset);
  table.fill(0, assoc.fc, assoc.fc + STTB_ASSOC_BYTES);
  view.setUint16(assoc.fc, STTB_EXTENDED, true);
  view.setUint16(assoc.fc + 2, ASSOC_STRINGS, true);
  setFcLcb(word, fib, FC_LCB.sttbfAssoc, { fc: assoc.fc, lcb: STTB_ASSOC_BYTES });
}

/** Findings for the non-empty attached template and mail-merge strings of an SttbfAssoc. */
function assocFindings(table: Uint8Array, fc: number, lcb: number): FindingKind[] {
  const found: FindingKind[] = [];
  if (u16le(table, fc) !== STTB_EXTENDED) return found;
  const count = Math.min(u16le(table, fc + 2), ASSOC_STRINGS);
  let offset = fc + 6;
  for (let i = 0; i < count && offset + 2 <= fc + lcb; i += 1) {
    const chars = u16le(table, offset);
    if (chars > 0 && i === ASSOC_DOT) found.push('external-relationship');
    if (chars > 0 && ASSOC_MAIL_MERGE.includes(i)) found.push('data-connection');
    offset += 2 + chars * 2;
  }
  return found;
}

/**
 * Zeroes every byte of the table stream that no FIB pair points at: what earlier saves, fast
 * saves and cleared structures left behind ([MS-DOC] 2.5.5: every structure of the table
 * stream is reached from FibRgFcLcb).
 */
function zeroUnreferenced(word: Uint8Array, table: Uint8Array, fib: Fib): void {
  const used = new Uint8Array(table.length);
  for (let index = 0; index < fib.fcLcbCount; index += 1) {
    if (index === FC_LCB_SAVE_TIME) continue;
    const { fc, lcb } = fcLcb(word, fib, index);
    if (lcb === 0 || fc >= table.length) continue;
    used.fill(1, fc, Math.min(table.length, fc + lcb));
  }
  for (let i = 0; i < table.length; i += 1) if (used[i] === 0) table[i] = 0;
}
