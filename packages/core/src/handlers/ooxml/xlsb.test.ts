import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  binaryWorkbookCsv,
  buildBinaryWorkbook,
  clamscanVerdicts,
  buildOpcPackage,
  COMPOUND_FIXTURES,
  RELATIONSHIP_TYPES,
  RISKY_FORMULA_CACHE,
  seededRandom,
  XLSB_RECORDS as R,
  xlsbRecord,
  convertWithLibreOffice,
} from '@disarm/fixtures';
import type { BinaryWorkbookOptions } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../../disarm.ts';
import { refusedFormula } from './xlsb-formulas.ts';
import { Deadline } from '../../limits.ts';
import type { CleanedOutcome } from '../../outcome.ts';
import type { DetectedFile, EngineContext } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { verifyOoxml } from './verify.ts';
import { parseRecords } from './xlsb-records.ts';
import type { XlsbRecord } from './xlsb-records.ts';
import { cleaned, findingsOf } from '../../test-support.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(600_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..', '..', '..');
const WORKBOOK_TYPE = 'application/vnd.ms-excel.sheet.binary.macroEnabled.main';
const TEXTS = ['Quarterly numbers are up', 'Second row'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'xlsb-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The package as Info-ZIP sees it: member names, the text of the XML members, and `read`. */
async function unzipped(
  bytes: Uint8Array,
): Promise<{ names: string[]; text: string; read: (name: string) => Buffer }> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.zip`);
  await writeFile(path, bytes);
  execFileSync('unzip', ['-tqq', path]);
  const names = execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).trim().split('\n');
  const text = execFileSync('unzip', ['-p', path, '*.xml', '*.rels'], { encoding: 'utf8' });
  return {
    names,
    text,
    read: (name) => execFileSync('unzip', ['-p', path, name], { maxBuffer: 1 << 26 }),
  };
}

/** The records of one binary part, read by an independent loop (not the engine's reader). */
function recordsOf(bytes: Uint8Array): { type: number; data: Buffer }[] {
  const records: { type: number; data: Buffer }[] = [];
  let at = 0;
  while (at < bytes.length) {
    let type = bytes[at++] ?? 0;
    if (type & 0x80) type = (type & 0x7f) | (((bytes[at++] ?? 0) & 0x7f) << 7);
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[at++] ?? 0;
      size |= (byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
    }
    records.push({ type, data: Buffer.from(bytes.subarray(at, at + size)) });
    at += size;
  }
  return records;
}

/** UTF-16LE text of every record, for "does it still mention X" checks. */
const utf16 = (records: { data: Buffer }[]): string =>
  records
    .map((record) => record.data.toString('utf16le') + record.data.subarray(1).toString('utf16le'))
    .join('\n');

async function rebuilt(options: BinaryWorkbookOptions): Promise<CleanedOutcome> {
  const input = await buildBinaryWorkbook({ texts: TEXTS, ...options });
  return cleaned(await disarm({ bytes: input, fileName: 'book.xlsb' }));
}

/** A package with one workbook part and one sheet, both given as record streams. */
function minimalPackage(workbook: Uint8Array, sheet?: Uint8Array): Promise<Buffer> {
  const bundle = xlsbRecord(
    R.BrtBundleSh,
    Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]),
    wide('rId1'),
    wide('Sheet1'),
  );
  return buildOpcPackage(
    [
      {
        name: 'xl/workbook.bin',
        contentType: WORKBOOK_TYPE,
        data:
          workbook.length > 0
            ? workbook
            : Buffer.concat([
                xlsbRecord(R.BrtBeginBook),
                xlsbRecord(R.BrtBeginBundleShs),
                bundle,
                xlsbRecord(R.BrtEndBundleShs),
                xlsbRecord(R.BrtEndBook),
              ]),
        relationships: [
          { id: 'rId1', type: RELATIONSHIP_TYPES.worksheet, target: 'worksheets/sheet1.bin' },
        ],
      },
      {
        name: 'xl/worksheets/sheet1.bin',
        contentType: 'application/vnd.ms-excel.worksheet',
        data:
          sheet ??
          Buffer.concat([
            xlsbRecord(R.BrtBeginSheet),
            xlsbRecord(R.BrtBeginSheetData),
            xlsbRecord(R.BrtEndSheetData),
            xlsbRecord(R.BrtEndSheet),
          ]),
      },
    ],
    [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.bin' }],
  );
}

function wide(text: string): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32LE(text.length);
  return Buffer.concat([length, Buffer.from(text, 'utf16le')]);
}

describe('xlsb rebuild', () => {
  it('rebuilds a clean binary workbook with nothing to report, every part re-serialised', async () => {
    const input = await buildBinaryWorkbook({ texts: TEXTS, hyperlinks: ['https://example.com/'] });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'book.xlsb' }));
    expect(outcome.findings).toEqual([]);
    expect(outcome.format).toBe('xlsb');
    const { names, text, read } = await unzipped(outcome.bytes);
    expect(names.sort()).toEqual([
      '[Content_Types].xml',
      '_rels/.rels',
      'docProps/core.xml',
      'xl/_rels/workbook.bin.rels',
      'xl/sharedStrings.bin',
      'xl/workbook.bin',
      'xl/worksheets/_rels/sheet1.bin.rels',
      'xl/worksheets/sheet1.bin',
    ]);
    expect(text).toContain(WORKBOOK_TYPE);
    expect(text).toContain('https://example.com/');
    const sheet = recordsOf(read('xl/worksheets/sheet1.bin'));
    expect(sheet.map((record) => record.type)).toContain(R.BrtFmlaNum);
    expect(sheet.filter((record) => record.type === R.BrtHLink)).toHaveLength(1);
    expect(utf16(recordsOf(read('xl/sharedStrings.bin')))).toContain('Quarterly numbers are up');
  });

  it('removes the VBA project and its signature', async () => {
    const outcome = await rebuilt({
      vba: true,
      payload: 'Sub Auto_Open(): Shell "calc.exe": End Sub',
    });
    expect(findingsOf(outcome)).toEqual({ 'vba-macro': 2 });
    const { names, text } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /vba/i.test(name))).toEqual([]);
    expect(text).not.toMatch(/vbaProject/);
  });

  it('removes an Excel 4.0 macro sheet, its bundle record and its Auto_Open names, renumbering the sheets after it', async () => {
    const outcome = await rebuilt({ macroSheet: true });
    // The macro sheet, `_xlnm.Auto_Open`, the macro name `Pwn` and `Launcher`, which points into
    // the macro sheet.
    expect(findingsOf(outcome)).toEqual({ 'xlm-macro': 4 });
    const { names, text, read } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /macrosheet/i.test(name))).toEqual([]);
    expect(text).not.toMatch(/xlMacrosheet|rIdMacro/);
    const workbook = recordsOf(read('xl/workbook.bin'));
    const bundles = workbook.filter((record) => record.type === R.BrtBundleSh);
    expect(bundles).toHaveLength(1);
    expect(utf16(bundles)).toContain('Sheet1');
    const nameRecords = workbook.filter((record) => record.type === R.BrtName);
    const nameText = utf16(nameRecords);
    expect(nameText).not.toMatch(/Auto_Open|Pwn|Launcher/);
    // Disarmed in place (formulas find names by position): hidden, no macro flag, `=#REF!`;
    // Total is still the fourth name.
    expect(nameRecords).toHaveLength(4);
    expect(utf16(nameRecords.slice(3))).toContain('Total');
    for (const record of nameRecords.slice(0, 3)) {
      expect(record.data.readUInt32LE(0)).toBe(1);
      expect(utf16([record])).toMatch(/_disarmed_/);
      expect(record.data.subarray(-14, -8)).toEqual(Buffer.from([2, 0, 0, 0, 0x1c, 0x17]));
    }
    // Macro1 was sheet 0, Sheet1 sheet 1: Sheet1's Xti now says 0, Macro1's says #REF! (-1).
    const externSheet = workbook.find((record) => record.type === R.BrtExternSheet)?.data;
    expect(externSheet && [...new Int32Array(new Uint8Array(externSheet).buffer)]).toEqual([
      2, 0, 0, 0, 0, -1, -1,
    ]);
    // The book view's active sheet (Sheet1) follows it to index 0.
    const view = workbook.find((record) => record.type === R.BrtBookView)?.data;
    expect(view?.readUInt32LE(24)).toBe(0);
  });

  it('shows the first sheet left when the macro sheet was the only visible one, and refuses a book of macro sheets only', async () => {
    const outcome = await rebuilt({ macroSheet: true, macroSheetVisible: true });
    const workbook = recordsOf((await unzipped(outcome.bytes)).read('xl/workbook.bin'));
    const bundles = workbook.filter((record) => record.type === R.BrtBundleSh);
    expect(bundles.map((record) => record.data.readUInt32LE(0))).toEqual([0]);
    const view = workbook.find((record) => record.type === R.BrtBookView)?.data;
    expect([view?.readUInt32LE(20), view?.readUInt32LE(24)]).toEqual([0, 0]);
    const macroOnly = await buildOpcPackage(
      [
        {
          name: 'xl/workbook.bin',
          contentType: WORKBOOK_TYPE,
          data: Buffer.concat([
            xlsbRecord(R.BrtBeginBook),
            xlsbRecord(R.BrtBeginBundleShs),
            xlsbRecord(
              R.BrtBundleSh,
              Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]),
              wide('rId1'),
              wide('M'),
            ),
            xlsbRecord(R.BrtEndBundleShs),
            xlsbRecord(R.BrtEndBook),
          ]),
          relationships: [
            { id: 'rId1', type: RELATIONSHIP_TYPES.macrosheet, target: 'macrosheets/sheet1.bin' },
          ],
        },
        {
          name: 'xl/macrosheets/sheet1.bin',
          contentType: 'application/vnd.ms-excel.macrosheet',
          data: Buffer.concat([xlsbRecord(R.BrtBeginSheet), xlsbRecord(R.BrtEndSheet)]),
        },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.bin' }],
    );
    expect(await disarm({ bytes: macroOnly, fileName: 'm.xlsb' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
    });
  });

  it('cuts an external workbook link: part dropped, supporting link emptied in place, its Xti #REF!, cached value kept', async () => {
    const outcome = await rebuilt({ externalData: true });
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1 });
    const { names, text, read } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /externalLink/i.test(name))).toEqual([]);
    expect(text).not.toMatch(/externalLink|attacker/);
    const workbook = recordsOf(read('xl/workbook.bin'));
    const link = workbook.find((record) => record.type === R.BrtSupBookSrc);
    expect(link?.data).toEqual(Buffer.alloc(4));
    // Supporting links: [0] the cut book, [1] this workbook. Xti 0 is Sheet1, Xti 1 the cut book.
    const externSheet = workbook.find((record) => record.type === R.BrtExternSheet)?.data;
    expect(externSheet && [...new Int32Array(new Uint8Array(externSheet).buffer)]).toEqual([
      2, 1, 0, 0, 0, -1, -1,
    ]);
    const sheet = recordsOf(read('xl/worksheets/sheet1.bin'));
    const cached = sheet
      .filter((record) => record.type === R.BrtFmlaNum)
      .map((r) => r.data.readDoubleLE(8));
    expect(cached).toEqual([3, 7]);
  });

  it('removes OLE objects with their block in the sheet, embedded and linked alike', async () => {
    const outcome = await rebuilt({
      oleObject: true,
      externalOle: 'mhtml:http://attacker.example/x.html!x-usc:http://attacker.example/x.html',
    });
    expect(findingsOf(outcome)).toEqual({ 'embedded-object': 1, 'external-relationship': 1 });
    const { names, text, read } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /embeddings/i.test(name))).toEqual([]);
    expect(text).not.toMatch(/oleObject|mhtml|attacker/);
    const types = recordsOf(read('xl/worksheets/sheet1.bin')).map((record) => record.type);
    for (const type of [R.BrtBeginOleObjects, R.BrtOleObject, R.BrtEndOleObjects]) {
      expect(types).not.toContain(type);
    }
  });

  it('keeps http, https and mailto hyperlinks and drops the others with their BrtHLink', async () => {
    const outcome = await rebuilt({
      hyperlinks: ['https://example.com/', 'file:///C:/Windows/calc.exe', 'mailto:a@example.com'],
    });
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1 });
    const { text, read } = await unzipped(outcome.bytes);
    expect(text).not.toContain('calc.exe');
    const links = recordsOf(read('xl/worksheets/sheet1.bin')).filter((r) => r.type === R.BrtHLink);
    expect(utf16(links)).toMatch(/rIdLink0[\s\S]*rIdLink2/);
    expect(utf16(links)).not.toContain('rIdLink1');
  });

  it('removes custom XML, custom properties and the file-sharing password record', async () => {
    const outcome = await rebuilt({
      customXml: true,
      fileSharing: true,
      payload: 'secret payload',
    });
    expect(findingsOf(outcome)).toEqual({ 'document-metadata': 2, 'hidden-data': 1 });
    const { names, text, read } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /customXml|custom\.xml/i.test(name))).toEqual([]);
    expect(text).not.toContain('secret payload');
    const types = recordsOf(read('xl/workbook.bin')).map((record) => record.type);
    expect(types).not.toContain(R.BrtFileSharing);
  });

  it('is deterministic and idempotent: a rebuilt workbook comes back byte-identical with nothing to report', async () => {
    const input = await buildBinaryWorkbook({
      texts: TEXTS,
      vba: true,
      macroSheet: true,
      externalData: true,
      oleObject: true,
      hyperlinks: ['https://example.com/', 'ms-msdt:/id PCWDiagnostic'],
      fileSharing: true,
    });
    const first = cleaned(await disarm({ bytes: input, fileName: 'book.xlsb' }));
    const again = cleaned(await disarm({ bytes: input, fileName: 'book.xlsb' }));
    expect(Buffer.compare(Buffer.from(first.bytes), Buffer.from(again.bytes))).toBe(0);
    const second = cleaned(await disarm({ bytes: first.bytes, fileName: 'book.xlsb' }));
    expect(second.findings).toEqual([]);
    expect(Buffer.compare(Buffer.from(second.bytes), Buffer.from(first.bytes))).toBe(0);
  });

  it('lets a policy reject what it would strip', async () => {
    const input = await buildBinaryWorkbook({ macroSheet: true });
    expect(
      await disarm({ bytes: input, fileName: 'a.xlsb' }, { policy: { 'xlm-macro': 'reject' } }),
    ).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('reads a BrtBundleSh in the Excel 2007 beta layout and writes it in the published one', async () => {
    const beta = xlsbRecord(
      R.BrtBundleSh,
      Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]),
      wide('rId1'),
      wide('Sheet1'),
    );
    const workbook = Buffer.concat([
      xlsbRecord(R.BrtBeginBook),
      xlsbRecord(R.BrtBeginBundleShs),
      beta,
      xlsbRecord(R.BrtEndBundleShs),
      xlsbRecord(R.BrtEndBook),
    ]);
    const outcome = cleaned(
      await disarm({ bytes: await minimalPackage(workbook), fileName: 'a.xlsb' }),
    );
    expect(outcome.findings).toEqual([]);
    const { read } = await unzipped(outcome.bytes);
    const bundle = recordsOf(read('xl/workbook.bin')).find((r) => r.type === R.BrtBundleSh);
    expect(bundle?.data).toEqual(
      Buffer.concat([Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]), wide('rId1'), wide('Sheet1')]),
    );
  });

  const sheetOf = (...records: Uint8Array[]): Buffer => Buffer.concat(records);
  const begin = xlsbRecord(R.BrtBeginSheet);
  const end = xlsbRecord(R.BrtEndSheet);
  const deep = Buffer.concat(Array.from({ length: 100_000 }, () => xlsbRecord(37)));
  it.each([
    ['a truncated record header', sheetOf(begin, end, Buffer.from([0x83]))],
    ['a record running past the end', sheetOf(begin, Buffer.from([0x05, 0x10, 1, 2, 3]))],
    ['a record type over 2 bytes', sheetOf(begin, Buffer.from([0x81, 0x81, 0x01, 0x00]), end)],
    [
      'a record size over 4 bytes',
      sheetOf(begin, Buffer.from([0x05, 0x80, 0x80, 0x80, 0x80, 0x01]), end),
    ],
    [
      'a size larger than the part',
      sheetOf(begin, Buffer.from([0x05, 0xff, 0xff, 0xff, 0x7f]), end),
    ],
    ['an End closing the wrong Begin', sheetOf(begin, xlsbRecord(R.BrtBeginSheetData), end)],
    ['an End with no Begin', sheetOf(begin, xlsbRecord(R.BrtEndSheetData), end)],
    ['a Begin never closed', sheetOf(begin, xlsbRecord(R.BrtBeginSheetData))],
    ['records after the end of the part', sheetOf(begin, end, xlsbRecord(R.BrtCellReal))],
    [
      'a part not opened by its Begin record',
      sheetOf(xlsbRecord(R.BrtBeginSheetData), xlsbRecord(R.BrtEndSheetData)),
    ],
    ['Begin records nested 100,000 deep', sheetOf(begin, deep)],
  ])('rejects a sheet with %s as invalid_file, quickly', async (_, sheet) => {
    const started = performance.now();
    expect(
      await disarm({ bytes: await minimalPackage(new Uint8Array(), sheet), fileName: 'a.xlsb' }),
    ).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
    });
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it.each([
    [
      'a BrtName shorter than its fields',
      xlsbRecord(R.BrtName, Buffer.from([0, 0, 0, 0, 0, 0xff])),
    ],
    [
      'a BrtBundleSh whose string runs past the record',
      xlsbRecord(R.BrtBundleSh, Buffer.from([0, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0])),
    ],
    ['a BrtWbProp of 4 bytes (tafia/calamine#666)', xlsbRecord(R.BrtWbProp, Buffer.alloc(4))],
  ])('rejects a workbook with %s as invalid_file', async (_, record) => {
    const workbook = Buffer.concat([xlsbRecord(R.BrtBeginBook), record, xlsbRecord(R.BrtEndBook)]);
    expect(
      await disarm({ bytes: await minimalPackage(workbook), fileName: 'a.xlsb' }),
    ).toMatchObject({
      reason: 'invalid_file',
    });
  });

  it('removes nested OLE object blocks whole, and table-part blocks left empty', async () => {
    const sheet = Buffer.concat([
      xlsbRecord(R.BrtBeginSheet),
      xlsbRecord(R.BrtBeginSheetData),
      xlsbRecord(R.BrtEndSheetData),
      xlsbRecord(R.BrtBeginOleObjects),
      xlsbRecord(R.BrtBeginOleObjects),
      xlsbRecord(R.BrtOleObject, Buffer.alloc(14)),
      xlsbRecord(R.BrtEndOleObjects),
      xlsbRecord(R.BrtEndOleObjects),
      xlsbRecord(R.BrtBeginListParts, Buffer.from([1, 0, 0, 0])),
      xlsbRecord(R.BrtListPart, wide('rIdNoSuchTable')),
      xlsbRecord(R.BrtEndListParts),
      xlsbRecord(R.BrtEndSheet),
    ]);
    const outcome = cleaned(
      await disarm({ bytes: await minimalPackage(new Uint8Array(), sheet), fileName: 'a.xlsb' }),
    );
    const { read } = await unzipped(outcome.bytes);
    expect(recordsOf(read('xl/worksheets/sheet1.bin')).map((record) => record.type)).toEqual([
      R.BrtBeginSheet,
      R.BrtBeginSheetData,
      R.BrtEndSheetData,
      R.BrtEndSheet,
    ]);
  });

  it('renumbers 100,000 sheets and 100,000 sheet ranges in linear time', async () => {
    const bundles = Array.from({ length: 100_000 }, (_, index) =>
      xlsbRecord(
        R.BrtBundleSh,
        Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]),
        wide(index % 2 === 0 ? 'rId1' : 'rIdGone'),
        wide(`S${index}`),
      ),
    );
    const xti = Buffer.alloc(4 + 12 * 100_000);
    xti.writeUInt32LE(100_000);
    for (let i = 0; i < 100_000; i += 1) xti.writeInt32LE(99_999, 4 + 12 * i + 8);
    const workbook = Buffer.concat([
      xlsbRecord(R.BrtBeginBook),
      xlsbRecord(R.BrtBeginBundleShs),
      ...bundles,
      xlsbRecord(R.BrtEndBundleShs),
      xlsbRecord(R.BrtBeginExternals),
      xlsbRecord(R.BrtSupSelf),
      xlsbRecord(R.BrtExternSheet, xti),
      xlsbRecord(R.BrtEndExternals),
      xlsbRecord(R.BrtEndBook),
    ]);
    const started = performance.now();
    const outcome = cleaned(
      await disarm({ bytes: await minimalPackage(workbook), fileName: 'a.xlsb' }),
    );
    expect(performance.now() - started).toBeLessThan(10_000);
    const { read } = await unzipped(outcome.bytes);
    const records = recordsOf(read('xl/workbook.bin'));
    expect(records.filter((record) => record.type === R.BrtBundleSh)).toHaveLength(50_000);
    // Every range [0, 99999] now spans the 50,000 sheets left: [0, 49999].
    const ranges = records.find((record) => record.type === R.BrtExternSheet)?.data;
    expect(ranges?.readInt32LE(4 + 12 * 99_999 + 4)).toBe(0);
    expect(ranges?.readInt32LE(4 + 12 * 99_999 + 8)).toBe(49_999);
  });

  it('keeps an encrypted xlsb (a CFB with EncryptionInfo) password_protected', async () => {
    expect(
      await disarm({ bytes: COMPOUND_FIXTURES.encryptedOoxml(), fileName: 'a.xlsb' }),
    ).toMatchObject({ reason: 'password_protected' });
  });

  it('parses what it writes: the engine reader accepts every rebuilt binary part', async () => {
    const outcome = await rebuilt({ macroSheet: true, externalData: true, oleObject: true });
    const { names, read } = await unzipped(outcome.bytes);
    for (const name of names.filter((n) => n.endsWith('.bin'))) {
      const records: XlsbRecord[] = parseRecords(read(name), name);
      expect(records.length, name).toBeGreaterThan(2);
    }
  });
});

describe('xlsb structures the fuzzer found (npm run fuzz -- ooxml)', () => {
  it('drops a sheet-list record written into a worksheet, which names a relationship the sheet has not', async () => {
    // The worksheet kept it, and verify refused the output (ooxml.xlsb-parse) where the file
    // deserved a rebuild.
    const sheet = Buffer.concat([
      xlsbRecord(R.BrtBeginSheet),
      xlsbRecord(R.BrtBundleSh, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0]), wide('rId9'), wide('S')),
      xlsbRecord(R.BrtBeginSheetData),
      xlsbRecord(R.BrtEndSheetData),
      xlsbRecord(R.BrtEndSheet),
    ]);
    const outcome = cleaned(
      await disarm({ bytes: await minimalPackage(new Uint8Array(), sheet), fileName: 'a.xlsb' }),
    );
    expect(outcome.findings.map((finding) => finding.kind)).toEqual(['hidden-data']);
    const { read } = await unzipped(outcome.bytes);
    const records = recordsOf(read('xl/worksheets/sheet1.bin'));
    expect(records.map((record) => record.type)).not.toContain(R.BrtBundleSh);
  });
});

describe('verify before release of an xlsb', () => {
  const context = {
    deadline: new Deadline(60_000),
    limits: { maxEntries: 1_000, maxBytes: 1 << 26 },
  } as unknown as EngineContext;
  const check = async (bytes: Uint8Array): Promise<string> => {
    try {
      await verifyOoxml({ bytes, findings: [] }, {} as DetectedFile, context);
      return 'passed';
    } catch (error) {
      if (error instanceof VerifyFailure) return error.check;
      throw error;
    }
  };
  const sheetWith = (...records: Uint8Array[]): Buffer =>
    Buffer.concat([xlsbRecord(R.BrtBeginSheet), ...records, xlsbRecord(R.BrtEndSheet)]);
  const workbookWith = (...records: Uint8Array[]): Buffer =>
    Buffer.concat([
      xlsbRecord(R.BrtBeginBook),
      xlsbRecord(R.BrtBeginBundleShs),
      xlsbRecord(R.BrtBundleSh, Buffer.from([0, 0, 0, 0, 1, 0, 0, 0]), wide('rId1'), wide('S')),
      xlsbRecord(R.BrtEndBundleShs),
      ...records,
      xlsbRecord(R.BrtEndBook),
    ]);

  it('passes a rebuilt workbook', async () => {
    const outcome = await rebuilt({ macroSheet: true, oleObject: true, externalData: true });
    expect(await check(outcome.bytes)).toBe('passed');
    expect(await check(await minimalPackage(workbookWith()))).toBe('passed');
  });

  it('refuses a member whose data does not match its CRC-32', async () => {
    const outcome = await rebuilt({});
    const bytes = Buffer.from(outcome.bytes);
    // The central directory record of the workbook part (APPNOTE 4.3.12): CRC-32 at offset 16.
    const name = Buffer.from('xl/workbook.bin');
    let record = bytes.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    while (record >= 0 && !bytes.subarray(record + 46, record + 46 + name.length).equals(name)) {
      record = bytes.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]), record + 4);
    }
    expect(record).toBeGreaterThan(0);
    bytes.writeUInt32LE((bytes.readUInt32LE(record + 16) ^ 1) >>> 0, record + 16);
    expect(await check(bytes)).toBe('ooxml.zip');
  });

  it.each([
    [
      'an OLE object block',
      () =>
        minimalPackage(
          workbookWith(),
          sheetWith(
            xlsbRecord(R.BrtBeginOleObjects),
            xlsbRecord(R.BrtOleObject, Buffer.alloc(14)),
            xlsbRecord(R.BrtEndOleObjects),
          ),
        ),
      'ooxml.active-content',
    ],
    [
      'an Auto_Open name',
      () =>
        minimalPackage(
          workbookWith(
            xlsbRecord(
              R.BrtName,
              Buffer.from([0x20, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
              wide('Auto_Open'),
              Buffer.alloc(8),
            ),
          ),
        ),
      'ooxml.active-content',
    ],
    [
      'a file-sharing record',
      () => minimalPackage(workbookWith(xlsbRecord(R.BrtFileSharing, Buffer.alloc(8)))),
      'ooxml.active-content',
    ],
    [
      'a sheet bundle naming a relationship the workbook lacks',
      () =>
        minimalPackage(
          workbookWith(
            xlsbRecord(
              R.BrtBundleSh,
              Buffer.from([2, 0, 0, 0, 2, 0, 0, 0]),
              wide('rId9'),
              wide('M'),
            ),
          ),
        ),
      'ooxml.dangling-reference',
    ],
    [
      'a formula calling CALL',
      () =>
        minimalPackage(
          workbookWith(),
          sheetWith(
            xlsbRecord(
              R.BrtFmlaNum,
              Buffer.alloc(8),
              Buffer.alloc(8),
              Buffer.alloc(2),
              // cce 4: PtgFuncVar(0 arguments, CALL), then cb 0.
              Buffer.from([4, 0, 0, 0, 0x42, 0, 0x96, 0, 0, 0, 0, 0]),
            ),
          ),
        ),
      'ooxml.active-content',
    ],
    [
      'a hyperlink naming a relationship the sheet lacks',
      () =>
        minimalPackage(
          workbookWith(),
          sheetWith(
            xlsbRecord(R.BrtHLink, Buffer.alloc(16), wide('rId7'), wide(''), wide(''), wide('')),
          ),
        ),
      'ooxml.dangling-reference',
    ],
    [
      'a record stream that does not parse',
      () => minimalPackage(workbookWith(), sheetWith(Buffer.from([0x05, 0x7f]))),
      'ooxml.xlsb-parse',
    ],
  ])('fails a package whose binary parts keep %s', async (_, make, expected) => {
    expect(await check(await make())).toBe(expected);
  });
});

describe('xlsb worksheet formulas', () => {
  it('turns formulas calling CALL, RTD or a function by name into their cached values, keeping the rest', async () => {
    const outcome = await rebuilt({ riskyFormulas: true });
    expect(findingsOf(outcome)).toEqual({ 'xlm-macro': 1, 'external-relationship': 3 });
    const sheet = recordsOf((await unzipped(outcome.bytes)).read('xl/worksheets/sheet1.bin'));
    // Column 0: `=CALL(...)` is now BrtCellReal 0; 1 and 2: BrtCellSt with the cached text.
    const call = [...sheet].reverse().find((r) => r.type === R.BrtCellReal);
    expect(call?.data.readDoubleLE(8)).toBe(0);
    expect(
      sheet
        .filter((r) => r.type === R.BrtCellSt)
        .map((r) => r.data.subarray(12).toString('utf16le')),
    ).toEqual(['quote', 'pong', 'Report']);
    // HYPERLINK to a web page and `="Yes "&57` stay formulas: its "Y" and 57 are data, not tokens.
    const kept = sheet.filter((r) => r.type === R.BrtFmlaString);
    expect(kept.map((r) => r.data.readUInt32LE(0))).toEqual([4, 5]);
    expect(utf16(sheet)).toContain('https://example.com/');
    expect(utf16(sheet)).not.toMatch(/kernel32|WinExec|evil\.server|attacker/);
    // Idempotent: the output has nothing left to screen.
    const again = cleaned(await disarm({ bytes: outcome.bytes, fileName: 'again.xlsb' }));
    expect(again.findings).toEqual([]);
  });
});

describe('xlsb formula screening on hostile token streams', () => {
  it('never throws or loops on random tokens, and keeps only streams that walk cleanly', () => {
    const random = seededRandom(11);
    let kept = 0;
    for (let round = 0; round < 2000; round += 1) {
      const rgce = Uint8Array.from({ length: 1 + Math.floor(random() * 40) }, () =>
        Math.floor(random() * 256),
      );
      if (refusedFormula(rgce) === undefined) kept += 1;
    }
    // Random bytes rarely form a clean token stream: a walker that accepts them is too lax.
    expect(kept).toBeLessThan(100);
    // Cut in the middle of a token, or an unknown token: refused (the cached value stays).
    expect(refusedFormula(Uint8Array.from([0x1e, 0x01]))).toBe('hidden-data');
    expect(refusedFormula(Uint8Array.from([0x02, 0, 0, 0, 0]))).toBe('hidden-data');
    expect(refusedFormula(Uint8Array.from([0x1e, 1, 0, 0x1e, 2, 0, 0x03]))).toBeUndefined();
  });
});

describe('xlsb HYPERLINK formulas, judged by their target as the XML path judges them', () => {
  /** PtgStr, PtgRef (A1), PtgFunc, PtgFuncVar and PtgConcat ([MS-XLSB] 2.5.98). */
  const str = (text: string): number[] => [
    0x17,
    text.length & 0xff,
    text.length >> 8,
    ...Buffer.from(text, 'utf16le'),
  ];
  const ref = [0x24, 0, 0, 0, 0, 0, 0xc0];
  const func = (tab: number): number[] => [0x41, tab & 0xff, tab >> 8];
  const funcVar = (count: number, tab: number): number[] => [0x42, count, tab & 0xff, tab >> 8];
  const HYPERLINK = 0x0167;
  const UPPER = 0x0071;
  const CONCAT = [0x08];
  const judged = (...tokens: number[][]): string | undefined =>
    refusedFormula(Uint8Array.from(tokens.flat()));

  it('refuses a target a hyperlink relationship could not keep: file:, UNC, ms-* and paths', () => {
    for (const target of [
      'file:///\\\\attacker\\share\\x.exe',
      '\\\\attacker\\share',
      'ms-msdt:/id PCWDiagnostic',
      'C:\\Windows\\System32\\calc.exe',
    ]) {
      expect(judged(str(target), str('Report'), funcVar(2, HYPERLINK)), target).toBe(
        'external-relationship',
      );
    }
    // The target a concatenation starts with, as `HYPERLINK("\\\\host\\"&A1)` is read.
    expect(judged(str('\\\\attacker\\'), ref, CONCAT, funcVar(1, HYPERLINK))).toBe(
      'external-relationship',
    );
  });

  it('keeps http, https, mailto and places in the workbook, and targets computed from cells', () => {
    expect(judged(str('https://example.com/'), str('Site'), funcVar(2, HYPERLINK))).toBeUndefined();
    expect(judged(str('mailto:a@example.com'), funcVar(1, HYPERLINK))).toBeUndefined();
    expect(judged(str("#'Sheet 2'!A1"), str('Go'), funcVar(2, HYPERLINK))).toBeUndefined();
    // The friendly name is not the target.
    expect(judged(ref, str('file://x'), funcVar(2, HYPERLINK))).toBeUndefined();
    // A literal that is no argument of the call: IF(A1, HYPERLINK(A1), "C:\\x").
    expect(
      judged(ref, ref, funcVar(1, HYPERLINK), str('C:\\x'), funcVar(3, 0x0001)),
    ).toBeUndefined();
  });

  it('judges every literal once a fixed-arity function hides the stack (fail closed)', () => {
    // HYPERLINK(UPPER("https://example.com/"), "Site"): "Site" could be the target.
    expect(
      judged(str('https://example.com/'), func(UPPER), str('Site'), funcVar(2, HYPERLINK)),
    ).toBe('external-relationship');
    expect(
      judged(str('https://example.com/'), func(UPPER), str('#A1'), funcVar(2, HYPERLINK)),
    ).toBeUndefined();
  });
});

describe('xlsb outputs, as independent readers see them', () => {
  const cases: [string, BinaryWorkbookOptions][] = [
    ['clean', {}],
    ['vba', { vba: true }],
    ['xlm', { macroSheet: true }],
    ['ole', { oleObject: true, externalOle: 'mhtml:http://attacker.example/x.html' }],
    ['external', { externalData: true }],
    ['links', { hyperlinks: ['https://example.com/', 'ms-msdt:/id PCWDiagnostic'] }],
    ['formulas', { riskyFormulas: true }],
  ];
  let work: string;

  beforeAll(async () => {
    execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
    work = await mkdtemp(join(tmpdir(), 'xlsb-independent-'));
    await writeFile(join(work, 'disarm.ndb'), ACTIVE_CONTENT_SIGNATURES);
    for (const folder of ['in', 'out']) await mkdir(join(work, folder));
    for (const [name, options] of cases) {
      const input = await buildBinaryWorkbook({ texts: TEXTS, ...options });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `${name}.xlsb` }));
      await writeFile(join(work, 'in', `${name}.xlsb`), input);
      await writeFile(join(work, 'out', `${name}.xlsb`), outcome.bytes);
    }
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** Every sheet of every workbook in `folder` as LibreOffice writes it to CSV, by file-sheet. */
  async function libreOfficeCsv(folder: string): Promise<Record<string, string>> {
    const out = join(folder, 'csv');
    convertWithLibreOffice({
      // Token 12 = -1: one CSV file per sheet (named file-Sheet.csv).
      to: 'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1',
      outDir: out,
      files: cases.map(([name]) => join(folder, `${name}.xlsb`)),
      profileDir: join(work, 'profile'),
    });
    const texts: Record<string, string> = {};
    for (const file of await readdir(out)) {
      texts[file.replace(/\.csv$/, '')] = (await readFile(join(out, file), 'utf8')).trim();
    }
    return texts;
  }

  it('ClamAV flags every active input and no output', () => {
    const inputs = clamscanVerdicts(join(work, 'in'), join(work, 'disarm.ndb'));
    const outputs = clamscanVerdicts(join(work, 'out'), join(work, 'disarm.ndb'));
    for (const [name] of cases) {
      const file = `${name}.xlsb`;
      // Formulas calling CALL or RTD carry no macro ClamAV knows; the records test covers them.
      if (name !== 'clean' && name !== 'links' && name !== 'formulas') {
        expect(inputs[file], `input ${file}`).toMatch(
          /^(Heuristics\.OLE2\.ContainsMacros|Disarm\.)/,
        );
      }
      expect(outputs[file], `output ${file}`).toBe('OK');
    }
    expect(inputs['vba.xlsb']).toMatch(/^Heuristics\.OLE2\.ContainsMacros/);
  });

  it('LibreOffice opens every output, and its cell text is the input cell text', async () => {
    const before = await libreOfficeCsv(join(work, 'in'));
    const after = await libreOfficeCsv(join(work, 'out'));
    const expected = binaryWorkbookCsv({ texts: TEXTS });
    for (const [name] of cases) {
      const sheet = `${name}-Sheet1`;
      if (name === 'external' || name === 'formulas') continue;
      expect(before[sheet], sheet).toBe(expected);
      expect(after[sheet], sheet).toBe(expected);
    }
    // LibreOffice recalculates a formula through an external link on load: 0 for the missing
    // book in the input, #REF! once the link is cut. Excel shows the cached 7 until it recalculates.
    expect(before['external-Sheet1']).toBe(`${expected}\n0,,,`);
    expect(after['external-Sheet1']).toBe(`${expected}\n#REF!,,,`);
    // The refused formulas show their cached values; the harmless one is still a formula
    // (LibreOffice computes it on load).
    // The row of formulas is wider than the text rows, which LibreOffice pads to its width.
    const widened = expected
      .split('\n')
      .map((line) => `${line},,`)
      .join('\n');
    expect(after['formulas-Sheet1']).toBe(`${widened}\n${RISKY_FORMULA_CACHE.join(',')}`);
    // The macro sheet was there and is gone.
    expect(before['xlm-Macro1']).toBeDefined();
    expect(Object.keys(after).filter((sheet) => sheet.includes('Macro'))).toEqual([]);
  });
});
