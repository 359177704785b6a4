import {
  buildBinaryWorkbook,
  buildImage,
  buildOdt,
  buildOfficeDocument,
  buildTextPdf,
  buildZip,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from './disarm.ts';
import { FindingTally, MAX_FINDING_LOCATIONS, MAX_LOCATION_CHARS } from './findings.ts';
import type { Finding, FindingKind } from './findings.ts';
import { cleaned } from './test-support.ts';

/** A link annotation whose action is a script, as authoring tools write one. */
const SCRIPT_LINK = (num: number): { num: number; body: string } => ({
  num,
  body: '<< /Type /Annot /Subtype /Link /Rect [72 600 300 640] /Border [0 0 0] /A << /S /JavaScript /JS (app.alert\\("hi"\\)) >> >>',
});

/**
 * Three pages of text: a script link on page 2, a launch action when page 3 opens, and a
 * document-level script run when the document opens.
 */
function activePdf(): Buffer {
  return buildTextPdf({
    pages: ['one', 'two', 'three'],
    pageEntries: ['', '/Annots [100 0 R]', '/AA << /O << /S /Launch /F (calc.exe) >> >>'],
    objects: [SCRIPT_LINK(100)],
    catalog: '/OpenAction << /S /JavaScript /JS (app.alert\\(1\\)) >>',
  });
}

const findingOf = (findings: readonly Finding[], kind: FindingKind): Finding | undefined =>
  findings.find((finding) => finding.kind === kind);

describe('FindingTally', () => {
  it('reports a kind found nowhere in particular as { kind, count } alone', () => {
    const tally = new FindingTally();
    tally.add('trailing-data');
    tally.add('trailing-data', 0);
    expect(tally.toArray()).toEqual([{ kind: 'trailing-data', count: 1 }]);
  });

  it('places a member report inside the member, keeping what the member could not locate', () => {
    const member = new FindingTally();
    member.at({ page: 2 }).add('pdf-javascript');
    member.add('pdf-javascript');
    const archive = new FindingTally();
    archive
      .at({ member: ['bundle.zip'] })
      .at({ member: ['a.pdf'] })
      .addAll(member.toArray());
    expect(archive.toArray()).toEqual([
      {
        kind: 'pdf-javascript',
        count: 2,
        locations: [
          { member: ['bundle.zip', 'a.pdf'], page: 2, count: 1 },
          { member: ['bundle.zip', 'a.pdf'], count: 1 },
        ],
      },
    ]);
  });

  it(`lists at most ${MAX_FINDING_LOCATIONS} locations per kind and keeps counting past them`, () => {
    const tally = new FindingTally();
    for (let page = 1; page <= 100_000; page += 1) tally.at({ page }).add('pdf-action');
    tally.at({ page: 1 }).add('pdf-action');
    const [finding] = tally.toArray();
    expect(finding?.count).toBe(100_001);
    expect(finding?.locations).toHaveLength(MAX_FINDING_LOCATIONS);
    // A place already listed still counts when it comes again.
    expect(finding?.locations?.[0]).toEqual({ page: 1, count: 2 });
    expect(finding?.locations?.at(-1)).toEqual({ page: MAX_FINDING_LOCATIONS, count: 1 });
  });

  it(`does not list a location whose names run past ${MAX_LOCATION_CHARS} characters`, () => {
    const tally = new FindingTally();
    const archive = tally.at({ member: ['x'.repeat(600)] });
    // 600 + 424 characters are listed; one more is not.
    archive.at({ part: 'y'.repeat(424) }).add('vba-macro');
    archive.at({ part: 'y'.repeat(425) }).add('vba-macro');
    archive
      .at({ member: ['a.xlsm'] })
      .at({ part: 'y'.repeat(1_000) })
      .add('vba-macro');
    expect(tally.toArray()).toEqual([
      {
        kind: 'vba-macro',
        count: 3,
        locations: [{ member: ['x'.repeat(600)], part: 'y'.repeat(424), count: 1 }],
      },
    ]);
  });
});

describe('where findings were found, through the engine', () => {
  it('PDF: a script or action on a page names the page; the document-level one names none', async () => {
    const outcome = cleaned(await disarm({ bytes: activePdf(), fileName: 'report.pdf' }));
    expect(findingOf(outcome.findings, 'pdf-javascript')).toEqual({
      kind: 'pdf-javascript',
      count: 2,
      locations: [{ page: 2, count: 1 }],
    });
    expect(findingOf(outcome.findings, 'pdf-action')).toEqual({
      kind: 'pdf-action',
      count: 1,
      locations: [{ page: 3, count: 1 }],
    });
  });

  it('PDF: a form widget reached through the form fields is still counted on its page', async () => {
    const pdf = buildTextPdf({
      pages: ['one', 'two'],
      pageEntries: ['', '/Annots [100 0 R]'],
      catalog: '/AcroForm << /Fields [100 0 R] >>',
      objects: [
        {
          num: 100,
          body: '<< /Type /Annot /Subtype /Widget /FT /Btn /T (go) /Rect [72 600 200 640] /P 12 0 R /A << /S /JavaScript /JS (this.submitForm\\(\\)) >> >>',
        },
      ],
    });
    const outcome = cleaned(await disarm({ bytes: pdf, fileName: 'form.pdf' }));
    expect(findingOf(outcome.findings, 'pdf-javascript')?.locations).toEqual([
      { page: 2, count: 1 },
    ]);
  });

  it('PDF: what pages share is counted on the first of them', async () => {
    // Illustrator keeps its private data (/PieceInfo) in a form XObject all pages draw.
    const pdf = buildTextPdf({
      pages: ['one', 'two', 'three'],
      page: '/Resources 50 0 R',
      objects: [
        { num: 50, body: '<< /Font << /F1 3 0 R >> /XObject << /X1 51 0 R >> >>' },
        {
          num: 51,
          body: '<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /PieceInfo << /Illustrator << /Private 52 0 R >> >> >>',
          stream: '0 0 10 10 re f\n',
        },
        { num: 52, body: '<< /AIMetaData 1 >>' },
      ],
    });
    const outcome = cleaned(await disarm({ bytes: pdf, fileName: 'shared.pdf' }));
    expect(findingOf(outcome.findings, 'hidden-data')).toEqual({
      kind: 'hidden-data',
      count: 1,
      locations: [{ page: 1, count: 1 }],
    });
  });

  it('PDF: 100 pages with a script each list the first pages only', async () => {
    const pages = Array.from({ length: 100 }, (_, index) => `page ${index + 1}`);
    const pdf = buildTextPdf({
      pages,
      pageEntries: pages.map((_, index) => `/Annots [${1000 + index} 0 R]`),
      objects: pages.map((_, index) => SCRIPT_LINK(1000 + index)),
    });
    const outcome = cleaned(await disarm({ bytes: pdf, fileName: 'many.pdf' }));
    const finding = findingOf(outcome.findings, 'pdf-javascript');
    expect(finding?.count).toBe(100);
    expect(finding?.locations).toHaveLength(MAX_FINDING_LOCATIONS);
    expect(finding?.locations?.map((location) => location.page)).toEqual(
      Array.from({ length: MAX_FINDING_LOCATIONS }, (_, index) => index + 1),
    );
  });

  it('zip: a PDF in a zip in the zip names the member path and the page', async () => {
    const inner = await buildZip([{ name: 'docs/report.pdf', data: activePdf() }]);
    const outer = await buildZip([
      { name: 'readme.txt.png', data: await buildImage('png') },
      { name: 'bundle.zip', data: inner },
    ]);
    const outcome = cleaned(await disarm({ bytes: outer, fileName: 'outer.zip' }));
    const member = ['bundle.zip', 'docs/report.pdf'];
    expect(findingOf(outcome.findings, 'pdf-javascript')).toEqual({
      kind: 'pdf-javascript',
      count: 2,
      locations: [
        { member, page: 2, count: 1 },
        { member, count: 1 },
      ],
    });
    expect(findingOf(outcome.findings, 'pdf-action')?.locations).toEqual([
      { member, page: 3, count: 1 },
    ]);
  });

  it('docm: a macro project and a DDE field name their parts', async () => {
    const docm = await buildOfficeDocument('docm', {
      vba: true,
      dde: true,
      attachedTemplate: 'https://attacker.example/t.dotm',
    });
    const outcome = cleaned(await disarm({ bytes: docm, fileName: 'letter.docm' }));
    expect(findingOf(outcome.findings, 'vba-macro')?.locations).toContainEqual({
      part: 'word/vbaProject.bin',
      count: 1,
    });
    expect(findingOf(outcome.findings, 'dde-link')?.locations).toEqual([
      { part: 'word/document.xml', count: 2 },
    ]);
    // The remote template is a relationship of the settings part.
    expect(findingOf(outcome.findings, 'external-relationship')?.locations).toEqual([
      { part: 'word/settings.xml', count: 1 },
    ]);
  });

  it('xlsm: a DDE formula and a macro sheet name their sheets', async () => {
    const xlsm = await buildOfficeDocument('xlsm', { dde: true, macroSheet: true, sheets: 2 });
    const outcome = cleaned(await disarm({ bytes: xlsm, fileName: 'book.xlsm' }));
    expect(findingOf(outcome.findings, 'dde-link')?.locations).toEqual([
      { part: 'xl/worksheets/sheet1.xml', sheet: 'Sheet1', count: 1 },
    ]);
    expect(findingOf(outcome.findings, 'xlm-macro')?.locations).toContainEqual({
      part: 'xl/macrosheets/sheet2.xml',
      sheet: 'Macro1',
      count: 1,
    });
  });

  it('xlsb: risky formulas and a macro sheet name their sheets', async () => {
    const xlsb = await buildBinaryWorkbook({ riskyFormulas: true, macroSheet: true });
    const outcome = cleaned(await disarm({ bytes: xlsb, fileName: 'book.xlsb' }));
    const sheets = outcome.findings.flatMap((finding) =>
      (finding.locations ?? []).map(({ part, sheet }) => ({ kind: finding.kind, part, sheet })),
    );
    expect(sheets).toContainEqual({
      kind: 'xlm-macro',
      part: 'xl/macrosheets/sheet1.bin',
      sheet: 'Macro1',
    });
    expect(sheets).toContainEqual({
      kind: 'external-relationship',
      part: 'xl/worksheets/sheet1.bin',
      sheet: 'Sheet1',
    });
  });

  it('odt: macros, an embedded object and a DDE field name their parts', async () => {
    const odt = await buildOdt({ basic: true, object: true, dde: true });
    const outcome = cleaned(await disarm({ bytes: odt, fileName: 'letter.odt' }));
    expect(findingOf(outcome.findings, 'odf-macro')?.locations).toContainEqual({
      part: 'Basic/',
      count: 1,
    });
    expect(findingOf(outcome.findings, 'embedded-object')?.locations).toContainEqual({
      part: 'Object 1/',
      count: 1,
    });
    expect(findingOf(outcome.findings, 'dde-link')?.locations).toEqual([
      { part: 'content.xml', count: 2 },
    ]);
  });

  it('image: metadata has no location', async () => {
    const png = await buildImage('png', { exif: { Artist: 'someone' } });
    const outcome = cleaned(await disarm({ bytes: png, fileName: 'photo.png' }));
    expect(outcome.findings).toEqual([{ kind: 'image-metadata', count: 1 }]);
  });
});
