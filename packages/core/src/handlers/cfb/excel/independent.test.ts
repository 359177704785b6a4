/**
 * Independent readers agree with the Excel 97-2003 rebuild on workbooks headless LibreOffice
 * exported and that were then given, in code, what macro and dropper workbooks carry: a VBA
 * project, formulas calling code, a file hyperlink, an embedded object's storage; and a workbook
 * LibreOffice exported with an embedded text document (an OLE object). python-olefile
 * lists no macro or object storage in any output, ClamAV flags the active inputs and no output,
 * and LibreOffice reads every sheet of every output with the same cell values as the input.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  biffRecord,
  buildExcelWorkbook,
  clamscanVerdicts,
  externSheet,
  formulaCell,
  FTAB,
  hyperlink,
  labelCell,
  nameRecord,
  numberCell,
  olefileListing,
  ptg,
  ref3d,
  selfSupbook,
  withWorkbookRecords,
} from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../../../disarm.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(300_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..', '..', '..', '..');
const VBA_SOURCE = 'Sub Auto_Open()\r\n  Shell "cmd /c calc"\r\nEnd Sub';

/** Two sheets of values and formulas, as LibreOffice's flat ODS (ODF 1.3 §2.2.4, `.fods`). */
const FLAT_ODS = `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
  xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
  xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2"
  office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.spreadsheet">
 <office:body><office:spreadsheet>
  <table:table table:name="Prices">
   <table:table-row>
    <table:table-cell office:value-type="string"><text:p>Item</text:p></table:table-cell>
    <table:table-cell office:value-type="string"><text:p>Price</text:p></table:table-cell>
    <table:table-cell office:value-type="string"><text:p>Double</text:p></table:table-cell>
   </table:table-row>
   <table:table-row>
    <table:table-cell office:value-type="string"><text:p>Apples</text:p></table:table-cell>
    <table:table-cell office:value-type="float" office:value="2.5"/>
    <table:table-cell table:formula="of:=[.B2]*2" office:value-type="float" office:value="5"/>
   </table:table-row>
   <table:table-row>
    <table:table-cell office:value-type="string"><text:p>Pears</text:p></table:table-cell>
    <table:table-cell office:value-type="float" office:value="4"/>
    <table:table-cell table:formula="of:=[.B3]*2" office:value-type="float" office:value="8"/>
   </table:table-row>
  </table:table>
  <table:table table:name="Totals">
   <table:table-row>
    <table:table-cell office:value-type="string"><text:p>Sum</text:p></table:table-cell>
    <table:table-cell table:formula="of:=SUM([Prices.B2:.B3])" office:value-type="float" office:value="6.5"/>
   </table:table-row>
  </table:table>
 </office:spreadsheet></office:body>
</office:document>
`;

/** {@link FLAT_ODS} with a text document embedded in the first sheet (ODF 1.3 §10.4.6 draw:object). */
const FLAT_ODS_WITH_OBJECT = FLAT_ODS.replace(
  'xmlns:of=',
  'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:of=',
).replace(
  '<text:p>Item</text:p>',
  `<text:p>Item</text:p>
     <draw:frame svg:width="3cm" svg:height="2cm" svg:x="0cm" svg:y="1cm"><draw:object>
      <office:document office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
       <office:body><office:text><text:p>Embedded words</text:p></office:text></office:body>
      </office:document>
     </draw:object></draw:frame>`,
);

let work: string;
const names: string[] = [];

function soffice(args: readonly string[]): void {
  execFileSync(
    'soffice',
    [`-env:UserInstallation=file://${join(work, 'profile')}`, '--headless', ...args],
    { stdio: 'ignore', timeout: 240_000 },
  );
}

beforeAll(async () => {
  execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
  work = await mkdtemp(join(tmpdir(), 'xls-independent-'));
  await writeFile(join(work, 'disarm.ndb'), ACTIVE_CONTENT_SIGNATURES);
  for (const folder of ['in', 'out']) await mkdir(join(work, folder));
  await writeFile(join(work, 'book.fods'), FLAT_ODS);
  await writeFile(join(work, 'ole.fods'), FLAT_ODS_WITH_OBJECT);
  soffice([
    '--convert-to',
    'xls',
    '--outdir',
    work,
    join(work, 'book.fods'),
    join(work, 'ole.fods'),
  ]);
  const exported = await readFile(join(work, 'book.xls'));
  const inputs: [string, Uint8Array][] = [
    ['clean', exported],
    ['vba', withWorkbookRecords(exported, { vba: VBA_SOURCE, globals: [biffRecord(0x00d3)] })],
    [
      'formulas',
      withWorkbookRecords(exported, {
        sheet: [
          formulaCell(4, 0, Buffer.concat([ptg.str('kernel32'), ptg.funcVar(1, FTAB.CALL)]), 7),
          formulaCell(5, 0, Buffer.concat([ptg.str('calc.exe'), ptg.funcVar(1, FTAB.EXEC)]), 'ran'),
        ],
      }),
    ],
    ['link', withWorkbookRecords(exported, { sheet: [hyperlink('file://attacker/share/x.exe')] })],
    [
      'object',
      withWorkbookRecords(exported, {
        streams: {
          'MBD00000001/\u0001Ole10Native': Buffer.from('MZ payload of an embedded object'),
        },
      }),
    ],
    ['ole', await readFile(join(work, 'ole.xls'))],
  ];
  for (const [name, input] of inputs) {
    const outcome = await disarm({ bytes: input, fileName: `${name}.xls` });
    if (outcome.status !== 'cleaned') throw new Error(`${name}: ${outcome.detail}`);
    if (name !== 'clean') expect(outcome.findings.length, name).toBeGreaterThan(0);
    await writeFile(join(work, 'in', `${name}.xls`), input);
    await writeFile(join(work, 'out', `${name}.xls`), outcome.bytes);
    names.push(name);
  }
});

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** Every sheet of every workbook in `folder` as LibreOffice writes it to CSV, by file-sheet. */
async function libreOfficeCsv(folder: string): Promise<Record<string, string>> {
  const out = join(folder, 'csv');
  soffice([
    '--convert-to',
    // Token 12 = -1: one CSV file per sheet (named file-Sheet.csv).
    'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1',
    '--outdir',
    out,
    ...names.map((name) => join(folder, `${name}.xls`)),
  ]);
  const texts: Record<string, string> = {};
  for (const file of await readdir(out)) {
    texts[file.replace(/\.csv$/, '')] = (await readFile(join(out, file), 'utf8')).trim();
  }
  return texts;
}

describe('Excel 97-2003 outputs, as independent readers see them', () => {
  it('python-olefile lists the Workbook stream and nothing else in every output', async () => {
    expect(
      olefileListing(await readFile(join(work, 'in', 'vba.xls'))).entries.map((e) => e.path),
    ).toContain('_VBA_PROJECT_CUR/VBA/Module1');
    for (const name of names) {
      const listing = olefileListing(await readFile(join(work, 'out', `${name}.xls`)));
      expect(listing.issues, name).toEqual([]);
      expect(
        listing.entries.map((entry) => entry.path),
        name,
      ).toEqual(['Workbook']);
    }
  });

  it('ClamAV flags the macro input and no output', () => {
    const inputs = clamscanVerdicts(join(work, 'in'), join(work, 'disarm.ndb'));
    const outputs = clamscanVerdicts(join(work, 'out'), join(work, 'disarm.ndb'));
    expect(inputs['vba.xls']).toMatch(/^Heuristics\.OLE2\.ContainsMacros/);
    for (const name of names) expect(outputs[`${name}.xls`], name).toBe('OK');
  });

  it('LibreOffice reads every sheet of every output with the input cell values', async () => {
    const inputs = await libreOfficeCsv(join(work, 'in'));
    const outputs = await libreOfficeCsv(join(work, 'out'));
    expect(Object.keys(outputs).sort()).toEqual(Object.keys(inputs).sort());
    expect(Object.keys(outputs)).toHaveLength(names.length * 2);
    // LibreOffice has no CALL or EXEC and recalculates the input's to #NAME?; the rebuilt cells
    // hold the values Excel cached for them.
    inputs['formulas-Prices'] = (inputs['formulas-Prices'] ?? '').replace(
      '#NAME?,,\n#NAME?',
      '7,,\nran',
    );
    for (const [sheet, text] of Object.entries(inputs)) expect(outputs[sheet], sheet).toBe(text);
    expect(outputs['formulas-Prices']).toContain('ran');
    expect(outputs['clean-Totals']).toContain('6.5');
  });

  it('LibreOffice shows the picture of an embedded object where the object was', async () => {
    const folder = join(work, 'ole');
    for (const side of ['in', 'out']) {
      soffice([
        '--convert-to',
        'fods',
        '--outdir',
        join(folder, side),
        join(work, side, 'ole.xls'),
      ]);
    }
    expect(
      olefileListing(await readFile(join(work, 'in', 'ole.xls'))).entries.some((entry) =>
        /^MBD[0-9A-F]{8}\/WordDocument$/.test(entry.path),
      ),
    ).toBe(true);
    // Each frame's place and size, and what it draws: an object, or only pictures.
    const frames = async (
      side: string,
    ): Promise<{ at: string; object: boolean; image: boolean }[]> =>
      [
        ...(await readFile(join(folder, side, 'ole.fods'), 'utf8')).matchAll(
          /<draw:frame [^>]*?(svg:width="[^"]*" svg:height="[^"]*" svg:x="[^"]*" svg:y="[^"]*")[^>]*>([\s\S]*?)<\/draw:frame>/g,
        ),
      ].map((match) => ({
        at: match[1] ?? '',
        object: (match[2] ?? '').includes('<draw:object'),
        image: (match[2] ?? '').includes('<draw:image'),
      }));
    const before = await frames('in');
    expect(before).toHaveLength(1);
    expect(before[0]?.object).toBe(true);
    expect(await frames('out')).toEqual([{ at: before[0]?.at, object: false, image: true }]);
  });

  it('LibreOffice reads a workbook whose macro sheet went with its references renumbered', async () => {
    // As the Excel 4.0 droppers are built: a very hidden macro sheet run by a built-in Auto_Open
    // name; the sheet after it is reached by a 3D reference from the first.
    const exec = Buffer.concat([ptg.str('calc.exe'), ptg.funcVar(1, FTAB.EXEC)]);
    const input = buildExcelWorkbook({
      sheets: [
        {
          name: 'Sheet1',
          records: [labelCell(0, 0, 'Total'), formulaCell(0, 1, ref3d(1, 0, 0), 5)],
        },
        { name: 'Macro1', macro: true, visibility: 2, records: [formulaCell(0, 0, exec, 0)] },
        { name: 'Data', records: [numberCell(0, 0, 5)] },
      ],
      globals: [
        selfSupbook(3),
        externSheet([
          [0, 1, 1],
          [0, 2, 2],
        ]),
        nameRecord({ name: '\u0001', builtin: true, hidden: true, rgce: ref3d(0, 0, 0) }),
      ],
    });
    const outcome = await disarm({ bytes: input, fileName: 'macro.xls' });
    if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
    const folder = join(work, 'macro');
    await mkdir(folder);
    await writeFile(join(folder, 'in.xls'), input);
    await writeFile(join(folder, 'out.xls'), outcome.bytes);
    soffice([
      '--convert-to',
      'fods',
      '--outdir',
      folder,
      join(folder, 'in.xls'),
      join(folder, 'out.xls'),
    ]);
    // LibreOffice's flat ODS names every sheet and named range, and writes each formula.
    const seen = async (name: string): Promise<string[]> =>
      [
        ...(await readFile(join(folder, `${name}.fods`), 'utf8')).matchAll(
          /<table:(?:table|named-range|named-expression) table:name="([^"]*)"|table:formula="([^"]*)"/g,
        ),
      ].map((match) => match[1] ?? match[2] ?? '');
    const before = await seen('in');
    expect(before).toEqual(expect.arrayContaining(['Macro1', 'Excel_BuiltIn_Auto_Open']));
    const after = await seen('out');
    expect(after).toContain('of:=[$Data.A1]');
    expect(after).toEqual(expect.arrayContaining(['Sheet1', 'Data', '_disarmed_1']));
    expect(after).not.toContain('Macro1');
    expect(after.some((text) => /auto_open|#NAME/i.test(text))).toBe(false);
  });
});
