/**
 * Excel 97-2003 rebuild ([MS-XLS], BIFF8): a new compound file holding one new `Workbook` stream
 * written from the records of the old one that are on the allowlist. The VBA project, embedded
 * objects' storages, summary information and every other stream go; formulas that run code, fetch
 * or talk DDE become the values Excel cached for them; OLE objects and ActiveX controls become the
 * pictures Excel shows for them.
 */
import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { childNamed, streamNamed } from '../../../_internal/cfb/tree.ts';
import type { CompoundNode, CompoundStorage } from '../../../_internal/cfb/tree.ts';
import { writeCompoundFile } from '../../../_internal/cfb/write.ts';
import { u16le, u32le } from '../../../_internal/bytes.ts';
import { reject, ThreatReport } from '../../../_internal/rejection.ts';
import { FindingTally } from '../../../findings.ts';
import type { FindingKind } from '../../../findings.ts';
import type { Deadline } from '../../../limits.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../../types.ts';
import { PTG_EXP, refusedBiffFormula } from './formulas.ts';
import {
  ADD_IN_SUPBOOK,
  braiRefusal,
  disarmedExternName,
  disarmedName,
  isKeptHyperlink,
  isKeptRecord,
  nameItab,
  nameRefusal,
  objectRefusal,
  objectWithoutActiveParts,
  REFUSED_RECORDS,
  SHEET_KIND,
  supbookKind,
  withNameItab,
} from './judge.ts';
import {
  plainView,
  readSubstreams,
  RECORD_HEADER_BYTES,
  RecordCursor,
  RecordWriter,
  RT,
} from './records.ts';
import {
  renumberedExternSheet,
  renumberedSelfSupbook,
  renumberedTabIds,
  renumberedWindow,
  SheetMap,
} from './sheets.ts';
import type { ObjectRemovals } from './judge.ts';
import type { Substream } from './records.ts';

const WHAT = 'the Excel workbook';
/** [MS-XLS] 2.4.21 BOF: BIFF8's version, and the substream types. */
const BIFF8_VERSION = 0x0600;
const BOF_GLOBALS = 0x0005;
const BOF_WORKSHEET = 0x0010;
const BOF_CHART = 0x0020;
/** BOF substream type each BOUNDSHEET8 `dt` opens. */
const SHEET_BOF: ReadonlyMap<number, number> = new Map([
  [SHEET_KIND.worksheet, BOF_WORKSHEET],
  [SHEET_KIND.chart, BOF_CHART],
]);
/** The root CLSID Excel 97-2003 writes: Excel.Sheet.8, {00020820-0000-0000-C000-000000000046}. */
const EXCEL_CLSID = Uint8Array.from([
  0x20, 0x08, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x46,
]);
/** Globals records that count sheets by position ([MS-XLS] EXTERNSHEET, Window1, RRTabId). */
const EXTERNSHEET = 0x0017;
const WINDOW1 = 0x003d;
const RRTABID = 0x013d;
/** [MS-XLS] XCT and CRN: the cached cells of another workbook, under its SUPBOOK. */
const EXTERNAL_CACHE_RECORDS: ReadonlySet<number> = new Set([0x0059, 0x005a]);
/** [MS-XLS] WriteAccess: the name of the user who saved the workbook. */
const WRITE_ACCESS = 0x005c;
/** [MS-XLS] 2.4.148 LABEL holds at most 255 characters. */
const MAX_LABEL_CHARACTERS = 255;
/** [MS-XLS] 2.4.127 FORMULA: Cell (6), FormulaValue (8), flags (2), chn (4), then cce and rgce. */
const FORMULA_TOKENS_AT = 22;
/** [MS-XLS] 2.4.107 EXTSST: dsst (2), then 8-byte ISSTInf entries whose first 4 bytes are `ib`. */
const EXTSST_ENTRIES_AT = 2;
const EXTSST_ENTRY_BYTES = 8;

/** Streams and storages of the container, by upper-cased name: what their removal is reported as. */
const DROPPED_ENTRIES: ReadonlyMap<string, FindingKind | undefined> = new Map([
  ['_VBA_PROJECT_CUR', 'vba-macro'],
  ['\u0005SUMMARYINFORMATION', 'document-metadata'],
  ['\u0005DOCUMENTSUMMARYINFORMATION', 'document-metadata'],
  ['CTLS', 'activex-control'],
  // Written by every Office and LibreOffice: the object's class name and OLE flags, nothing else.
  ['\u0001COMPOBJ', undefined],
  ['\u0001OLE', undefined],
]);

/**
 * Rebuilds an Excel 97-2003 workbook (`.xls`): the `Workbook` stream's globals and sheets are
 * rewritten from allowlisted records, every stream offset recomputed (BOUNDSHEET8 `lbPlyPos`,
 * EXTSST), INDEX and DBCELL left out (Excel and LibreOffice rebuild them); the VBA project
 * (`_VBA_PROJECT_CUR`), embedded objects' `MBD…` storages, ActiveX `Ctls`, summary information
 * and every other stream are not copied, each scanned by the engine's scanners first. An OLE
 * object's or ActiveX control's OBJ record loses its ftPictFmla, so the picture Excel draws for
 * it stays as a plain picture.
 * @throws {Rejection} `invalid_file` for a container or record stream that does not hold together
 *   or an Excel 5.0/95 workbook; `password_protected` for FILEPASS; `threat_detected` when a
 *   scanner flags a stream that is not copied; `policy_violation` naming a construct that cannot
 *   be removed safely (a query table, a data connection, a PivotTable).
 */
export async function rebuildExcelBinary(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const { root } = parseCompoundFile(input.bytes, {
    what: WHAT,
    maxBytes: context.limits.maxBytes,
  });
  const workbook = streamNamed(root, 'Workbook');
  if (workbook === undefined) {
    if (childNamed(root, 'Book') !== undefined) {
      reject(
        'invalid_file',
        'Excel 5.0/95 workbooks are not supported: the file has a BIFF5 `Book` stream and no `Workbook` stream',
      );
    }
    reject('invalid_file', `${WHAT} has no \`Workbook\` stream ([MS-XLS] 2.1.2)`);
  }
  const findings = new FindingTally();
  tallyDroppedEntries(root, findings);
  await scanDroppedStreams(root, input.bytes, context);
  context.deadline.check();
  const stream = rebuildWorkbookStream(workbook.content, findings, context.deadline);
  const bytes = writeCompoundFile({
    kind: 'storage',
    name: 'Root Entry',
    clsid: EXCEL_CLSID,
    stateBits: 0,
    children: [{ kind: 'stream', name: 'Workbook', content: stream }],
  });
  return { bytes, findings: findings.toArray() };
}

function tallyDroppedEntries(root: CompoundStorage, findings: FindingTally): void {
  for (const child of root.children) {
    const upper = child.name.toUpperCase();
    if (upper === 'WORKBOOK') continue;
    if (child.kind === 'storage' && upper.startsWith('MBD')) {
      findings.add('embedded-object');
    } else if (DROPPED_ENTRIES.has(upper)) {
      const kind = DROPPED_ENTRIES.get(upper);
      if (kind !== undefined) findings.add(kind);
    } else {
      findings.add('hidden-data');
    }
  }
}

/**
 * Every stream the rebuild does not copy (object storages, controls, the VBA project) goes
 * through the engine's scanners on its own, as an office package's parts do: a scanner may know a
 * dropped payload only when it sees it alone, and a threat is refused, not silently dropped.
 */
async function scanDroppedStreams(
  root: CompoundStorage,
  file: Uint8Array,
  context: EngineContext,
): Promise<void> {
  const threats = new ThreatReport();
  const walk = async (node: CompoundNode, path: string): Promise<void> => {
    if (node.kind === 'stream') {
      context.deadline.check();
      const found = await context.scanMember({ bytes: node.content, fileName: path }, file);
      // JSON spelling shows the control character `\x01Ole10Native` and its kin start with.
      threats.add(found, `stream ${JSON.stringify(path)}`);
      return;
    }
    for (const child of node.children) await walk(child, `${path}/${child.name}`);
  };
  for (const child of root.children) {
    if (child.name.toUpperCase() !== 'WORKBOOK') await walk(child, child.name);
  }
  if (threats.size > 0) throw threats.toRejection('the file');
}

function refuse(detail: string): never {
  return reject('policy_violation', `${WHAT} holds ${detail}, which cannot be removed safely`);
}

/** The `dt` of every BOUNDSHEET8 record of the globals, in order. */
function sheetKindsOf(stream: Uint8Array, globals: Substream): number[] {
  const kinds: number[] = [];
  const records = new RecordCursor(stream, globals.offset, globals.end);
  while (records.nextGroup()) {
    if (records.type !== RT.BOUNDSHEET8) continue;
    // lbPlyPos (4), hsState, dt, then the name: cch and a flags byte (bit 0: UTF-16).
    const characters = records.byte(6);
    const nameBytes = characters * (records.byte(7) & 0x01 ? 2 : 1);
    if (records.size < 8 || characters === 0 || records.size !== 8 + nameBytes) {
      reject(
        'invalid_file',
        `${WHAT} has a BOUNDSHEET8 record whose sheet name does not fit it ([MS-XLS] 2.4.28)`,
      );
    }
    kinds.push(records.byte(5));
  }
  return kinds;
}

/** The BOF record ([MS-XLS] 2.4.21) a substream opens with. */
function bofOf(stream: Uint8Array, substream: Substream): RecordCursor {
  const bof = new RecordCursor(stream, substream.offset, substream.end);
  bof.next();
  return bof;
}

/**
 * A sheet as BOUNDSHEET8 ([MS-XLS] 2.4.28) lists it: where its substream starts in the old stream,
 * its kind, and where its record's `lbPlyPos` is in the new stream.
 */
interface SheetEntry {
  readonly offset: number;
  readonly kind: number;
  readonly lbPlyPosAt: number;
}

function rebuildWorkbookStream(
  content: Uint8Array,
  findings: FindingTally,
  deadline: Deadline,
): Uint8Array {
  const stream = plainView(content);
  const [globals, ...rest] = readSubstreams(stream, WHAT);
  if (globals === undefined) return reject('invalid_file', `${WHAT} has no workbook globals`);
  const bof = bofOf(stream, globals);
  if (bof.size < 4 || bof.u16(0) !== BIFF8_VERSION) {
    reject(
      'invalid_file',
      'Excel 5.0/95 workbooks are not supported: the workbook globals are not BIFF8 ([MS-XLS] 2.4.21 BOF vers)',
    );
  }
  if (bof.u16(2) !== BOF_GLOBALS) {
    reject(
      'invalid_file',
      `${WHAT} does not open with its workbook globals ([MS-XLS] 2.4.21 BOF dt)`,
    );
  }
  const bySheetOffset = new Map(rest.map((substream) => [substream.offset, substream]));

  const out = new RecordWriter(stream);
  const sheets: SheetEntry[] = [];
  let sstFrom: number | undefined;
  let sstTo: number | undefined;
  const sheetKinds = sheetKindsOf(stream, globals);
  // Excel 4.0 macro sheets and VBA module sheets go, with every later sheet renumbered.
  const sheetMap = new SheetMap(
    sheetKinds.map((kind) => kind === SHEET_KIND.macro || kind === SHEET_KIND.vbModule),
  );
  let sheetIndex = -1;
  let namePosition = 0;
  let supbooks = 0;
  let selfSupbook: number | undefined;
  let inRemovedLink = false;
  let externNames = 0;
  const removedSupbooks = new Set<number>();
  // EXTERNSHEET entries into removed links: formulas through them become their cached values.
  const removedXtis = new Set<number>();
  const records = new RecordCursor(stream, globals.offset, globals.end);
  while (records.nextGroup()) {
    const { type } = records;
    if (type === RT.FILEPASS) {
      reject(
        'password_protected',
        'the Excel workbook is encrypted ([MS-XLS] FILEPASS); it cannot be opened without its password',
      );
    }
    const refusedRecord = isKeptRecord(type) ? undefined : REFUSED_RECORDS.get(type);
    if (refusedRecord !== undefined) refuse(refusedRecord);
    if (type === RT.BOUNDSHEET8) {
      sheetIndex += 1;
      const kind = records.byte(5);
      if (sheetMap.newIndex(sheetIndex) === undefined) {
        findings.add(kind === SHEET_KIND.vbModule ? 'vba-macro' : 'xlm-macro');
        continue;
      }
      const offset = u32le(records.data(), 0);
      sheets.push({ offset, kind, lbPlyPosAt: out.length + RECORD_HEADER_BYTES });
      // The record alone: its sheet name fits it (checked above), a CONTINUE after it is stray.
      out.copy(records.offset, records.headEnd);
      continue;
    }
    if (type === RT.NAME) {
      namePosition += 1;
      const whole = records.joined();
      const refused = nameRefusal(whole, removedXtis);
      if (refused === null) {
        reject(
          'invalid_file',
          `${WHAT} has a NAME record that does not hold together ([MS-XLS] 2.4.150)`,
        );
      }
      const itab = nameItab(whole);
      const newItab = itab === 0 ? 0 : sheetMap.newIndex(itab - 1);
      if (refused !== undefined || newItab === undefined) {
        findings.add('xlm-macro');
        out.write(type, disarmedName(namePosition, newItab === undefined ? 0 : newItab + 1));
        continue;
      }
      if (sheetMap.changed && itab !== 0) {
        out.write(type, withNameItab(whole, newItab + 1));
        continue;
      }
    } else if (type === RT.SUPBOOK) {
      supbooks += 1;
      externNames = 0;
      const data = records.data();
      const kind = supbookKind(data);
      inRemovedLink = kind === 'workbook' || kind === 'dde';
      if (inRemovedLink) {
        // The link goes; an add-in SUPBOOK keeps the place formulas count SUPBOOKs by.
        findings.add(kind === 'dde' ? 'dde-link' : 'external-relationship');
        removedSupbooks.add(supbooks - 1);
        out.write(type, ADD_IN_SUPBOOK);
        continue;
      }
      if (kind === 'self') {
        selfSupbook = supbooks - 1;
        if (sheetMap.changed) {
          out.write(type, renumberedSelfSupbook(data, sheetMap));
          continue;
        }
      }
    } else if (type === RT.EXTERNNAME && inRemovedLink) {
      externNames += 1;
      out.write(type, disarmedExternName(externNames));
      continue;
    } else if (EXTERNAL_CACHE_RECORDS.has(type) && inRemovedLink) {
      continue;
    } else if (type === EXTERNSHEET && (sheetMap.changed || removedSupbooks.size > 0)) {
      // Every XTI must be read to renumber them; EXTERNSHEET continued is 1,370 XTIs and more.
      if (records.continued) refuse('an EXTERNSHEET too long to renumber');
      const supbookPlaces = { self: selfSupbook, removed: removedSupbooks };
      out.write(type, renumberedExternSheet(records.data(), supbookPlaces, sheetMap, removedXtis));
      continue;
    } else if (sheetMap.changed && type === WINDOW1) {
      out.write(type, renumberedWindow(records.data(), sheetMap));
      continue;
    } else if (sheetMap.changed && type === RRTABID) {
      const ids = renumberedTabIds(records.data(), sheetMap, sheetKinds.length);
      if (ids !== undefined) out.write(type, ids);
      continue;
    } else if (type === WRITE_ACCESS) {
      findings.add('document-metadata');
      continue;
    } else if (type === RT.OBJPROJ || type === RT.CODENAME) {
      // The VBA project these name goes with `_VBA_PROJECT_CUR`, counted there.
      continue;
    } else if (type === RT.SST) {
      sstFrom = records.offset;
      sstTo = out.length;
    } else if (type === RT.EXTSST && sstFrom !== undefined && sstTo !== undefined) {
      out.write(type, shiftedExtSst(records.data(), sstTo - sstFrom));
      continue;
    } else if (!isKeptRecord(type) && type !== RT.BOF && type !== RT.EOF) {
      findings.add('hidden-data');
      continue;
    }
    out.copy(records.offset, records.end);
  }

  // BOUNDSHEET8 lbPlyPos ([MS-XLS] 2.4.28) is the absolute stream offset of the sheet's BOF.
  const sheetOffsets: number[] = [];
  for (const entry of sheets) {
    const substream = bySheetOffset.get(entry.offset);
    if (substream === undefined) {
      reject(
        'invalid_file',
        `${WHAT} lists a sheet at offset ${entry.offset}, where no substream starts ([MS-XLS] BOUNDSHEET8 lbPlyPos)`,
      );
    }
    deadline.check();
    sheetOffsets.push(out.length);
    rebuildSheet(stream, substream, { kind: entry.kind, removedXtis, findings, out });
  }
  const written = out.finish();
  const view = new DataView(written.buffer, written.byteOffset, written.byteLength);
  sheets.forEach((entry, index) => {
    view.setUint32(entry.lbPlyPosAt, sheetOffsets[index] ?? 0, true);
  });
  return written;
}

/**
 * EXTSST `ib` fields are absolute offsets of strings in the SST record, which moved by `delta`
 * with everything after it unchanged.
 */
function shiftedExtSst(data: Uint8Array, delta: number): Uint8Array {
  const shifted = Uint8Array.from(data);
  const view = new DataView(shifted.buffer);
  for (
    let at = EXTSST_ENTRIES_AT;
    at + EXTSST_ENTRY_BYTES <= shifted.length;
    at += EXTSST_ENTRY_BYTES
  ) {
    view.setUint32(at, (view.getUint32(at, true) + delta) >>> 0, true);
  }
  return shifted;
}

/** Records after a FORMULA that may come before its STRING: its shared, array or table formula. */
const FORMULA_COMPANIONS: ReadonlySet<number> = new Set([RT.SHRFMLA, RT.ARRAY, 0x0236]);

/** What a sheet's rebuild reads beside its records, and where it writes them. */
interface SheetRebuild {
  readonly kind: number;
  readonly removedXtis: ReadonlySet<number>;
  readonly findings: FindingTally;
  readonly out: RecordWriter;
}

function rebuildSheet(
  stream: Uint8Array,
  substream: Substream,
  { kind, removedXtis, findings, out }: SheetRebuild,
): void {
  const bof = bofOf(stream, substream);
  if (bof.size < 4 || bof.u16(0) !== BIFF8_VERSION || bof.u16(2) !== SHEET_BOF.get(kind)) {
    reject(
      'invalid_file',
      `${WHAT} has a sheet whose BOF does not match its BOUNDSHEET8 kind ([MS-XLS] 2.4.21)`,
    );
  }
  const refusedGroups = refusedFormulaGroups(stream, substream, removedXtis, findings);
  // The STRING record of a formula flattened to its cached text, which its LABEL replaces.
  let consumedAt = -1;
  let droppedLink = false;
  const records = new RecordCursor(stream, substream.offset, substream.end);
  while (records.nextGroup()) {
    if (records.offset === consumedAt) continue;
    const { type } = records;
    const refusedRecord = isKeptRecord(type) ? undefined : REFUSED_RECORDS.get(type);
    if (refusedRecord !== undefined) refuse(refusedRecord);
    if (type === RT.FORMULA) {
      const refused = formulaRefusal(records, refusedGroups, removedXtis);
      if (refused === undefined) {
        out.copy(records.offset, records.end);
        continue;
      }
      if (refused !== 'group') findings.add(refused);
      const value = flattened(records, substream.end);
      consumedAt = value.stringAt;
      out.write(value.type, value.data);
      continue;
    }
    if (type === RT.SHRFMLA || type === RT.ARRAY) {
      if (!refusedGroups.has(anchorOf(records))) out.copy(records.offset, records.end);
      continue;
    }
    if (type === RT.OBJ) {
      const data = records.data();
      const stripped = objectWithoutActiveParts(data);
      const refused = stripped === null ? null : objectRefusal(stripped.data);
      if (stripped === null || refused === null) {
        reject(
          'invalid_file',
          `${WHAT} has an OBJ record whose subrecords do not hold together ([MS-XLS] 2.4.181)`,
        );
      }
      if (refused !== undefined) refuse(refused);
      tallyObjectRemovals(stripped.removed, findings);
      if (stripped.data === data) {
        out.copy(records.offset, records.end);
      } else {
        out.write(type, stripped.data);
        out.copy(records.headEnd, records.end);
      }
      continue;
    }
    if (type === RT.HLINK) {
      droppedLink = !isKeptHyperlink(records.joined());
      if (droppedLink) findings.add('external-relationship');
      else out.copy(records.offset, records.end);
      continue;
    }
    if (type === RT.HLINKTOOLTIP) {
      if (!droppedLink) out.copy(records.offset, records.end);
      continue;
    }
    if (type === RT.BRAI) {
      const refused = braiRefusal(records.data(), removedXtis);
      if (refused !== undefined) refuse(refused);
      out.copy(records.offset, records.end);
      continue;
    }
    if (type === RT.OBJPROJ || type === RT.CODENAME) continue;
    // [MS-XLS] 2.4.144 INDEX and 2.4.71 DBCELL only speed up reading; their offsets would change.
    if (type === 0x020b || type === 0x00d7) continue;
    if (type === RT.BOF || type === RT.EOF || isKeptRecord(type)) {
      out.copy(records.offset, records.end);
      continue;
    }
    findings.add('hidden-data');
  }
}

/** The findings for what came off an OBJ record (its `MBD…` storage is counted where it goes). */
function tallyObjectRemovals({ macro, ole }: ObjectRemovals, findings: FindingTally): void {
  if (macro) findings.add('xlm-macro');
  if (ole === 'control') findings.add('activex-control');
  else if (ole === 'linked') findings.add('external-relationship');
  else if (ole === 'embedded') findings.add('embedded-object');
}

/** A cell as a number, row in the high 16 bits: how shared and array formulas are found. */
function cellKey(row: number, column: number): number {
  return row * 0x10000 + column;
}

/** Where the current shared or array formula starts (its first row and column). */
function anchorOf(records: RecordCursor): number {
  return cellKey(records.u16(0), records.byte(4));
}

/**
 * The shared and array formulas of a sheet ([MS-XLS] 2.4.260 SHRFMLA: RefU, 2 bytes, then cce and
 * rgce; 2.4.4 ARRAY: RefU, 6 bytes, then cce and rgce) the screening refuses, by anchor.
 */
function refusedFormulaGroups(
  stream: Uint8Array,
  substream: Substream,
  removedXtis: ReadonlySet<number>,
  findings: FindingTally,
): Set<number> {
  const refused = new Set<number>();
  if (!substream.formulaGroups) return refused;
  const records = new RecordCursor(stream, substream.offset, substream.end);
  while (records.nextGroup()) {
    const tokensAt = records.type === RT.SHRFMLA ? 10 : records.type === RT.ARRAY ? 14 : undefined;
    if (tokensAt === undefined) continue;
    const end = tokensAt + records.u16(tokensAt - 2);
    const kind =
      end > records.size
        ? 'hidden-data'
        : refusedBiffFormula(records.data(tokensAt, end), removedXtis);
    if (kind !== undefined) {
      findings.add(kind);
      refused.add(anchorOf(records));
    }
  }
  return refused;
}

/** Why the current FORMULA record's formula may not stay; `group` when its shared formula is refused. */
function formulaRefusal(
  records: RecordCursor,
  refusedGroups: ReadonlySet<number>,
  removedXtis: ReadonlySet<number>,
): FindingKind | 'group' | undefined {
  if (records.size < FORMULA_TOKENS_AT) {
    reject(
      'invalid_file',
      `${WHAT} has a FORMULA record too short for its cell ([MS-XLS] 2.4.127)`,
    );
  }
  const cce = records.u16(FORMULA_TOKENS_AT - 2);
  const end = FORMULA_TOKENS_AT + cce;
  if (end > records.size) return 'hidden-data';
  // PtgExp: the row and column of the shared or array formula this cell is a row of.
  if (records.byte(FORMULA_TOKENS_AT) === PTG_EXP && cce === 5) {
    const anchor = cellKey(records.u16(FORMULA_TOKENS_AT + 1), records.u16(FORMULA_TOKENS_AT + 3));
    return refusedGroups.has(anchor) ? 'group' : undefined;
  }
  // Read in place: a view per formula, a million times a sheet, costs more than the walk.
  const tokensAt = records.dataAt + FORMULA_TOKENS_AT;
  return refusedBiffFormula(records.stream, removedXtis, tokensAt, tokensAt + cce);
}

/** A formula cell's value record, and the offset of the STRING record it took its text from. */
interface FlattenedCell {
  readonly type: number;
  readonly data: Uint8Array;
  /** The STRING record that is not written, or -1. */
  readonly stringAt: number;
}

/**
 * The value record of the current formula cell's cached value ([MS-XLS] 2.5.133 FormulaValue):
 * NUMBER for a number, BOOLERR for a boolean or an error, LABEL with the text of the STRING
 * record that follows for a string (which is then not written), BLANK when there is no value to
 * show. `to` is the end of the sheet's substream.
 */
function flattened(records: RecordCursor, to: number): FlattenedCell {
  const data = records.data();
  const cell = data.subarray(0, 6);
  if (u16le(data, 12) !== 0xffff) {
    return {
      type: RT.NUMBER,
      data: Buffer.concat([cell, data.subarray(6, 14)]),
      stringAt: -1,
    };
  }
  const valueType = data[6];
  if (valueType === 1 || valueType === 2) {
    return {
      type: RT.BOOLERR,
      data: Buffer.concat([cell, Uint8Array.of(data[8] ?? 0, valueType - 1)]),
      stringAt: -1,
    };
  }
  if (valueType === 3) {
    return { type: RT.LABEL, data: Buffer.concat([cell, Uint8Array.of(0, 0, 0)]), stringAt: -1 };
  }
  let stringAt = -1;
  if (valueType === 0) {
    const next = new RecordCursor(records.stream, records.end, to);
    while (next.nextGroup()) {
      if (next.type === RT.STRING) {
        stringAt = next.offset;
        // XLUnicodeString ([MS-XLS] 2.5.294): cch, a flags byte (bit 0: UTF-16), the characters.
        const text = next.joined();
        const characters = u16le(text, 0);
        const size = 3 + characters * ((text[2] ?? 0) & 0x01 ? 2 : 1);
        if (characters <= MAX_LABEL_CHARACTERS && text.length === size) {
          return { type: RT.LABEL, data: Buffer.concat([cell, text]), stringAt };
        }
        break;
      }
      if (!FORMULA_COMPANIONS.has(next.type)) break;
    }
  }
  return { type: RT.BLANK, data: Uint8Array.from(cell), stringAt };
}
