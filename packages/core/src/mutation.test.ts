/**
 * Damaged files, made the way transfers and attackers damage them: a few bytes of a valid
 * document overwritten. Whatever the damage, the engine answers with a rebuilt copy or a
 * precise rejection; it never throws (a throw is a `failed` document, "our fault") and never
 * hangs. The seeds are fixed, so a failure names the exact bytes that caused it.
 */
import {
  buildBinaryWorkbook,
  buildExcelWorkbook,
  buildFdf,
  buildImage,
  buildOdt,
  buildPowerPoint97,
  buildTextPdf,
  buildWordBinary,
  rtfField,
  buildWordDocument,
  buildWorkbook,
  buildZip,
  formulaCell,
  FTAB,
  hyperlink,
  numberCell,
  ptg,
  seededRandom,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from './disarm.ts';

const ROUNDS = 60;

interface Base {
  readonly name: string;
  readonly fileName: string;
  readonly bytes: () => Promise<Uint8Array>;
}

const BASES: readonly Base[] = [
  {
    name: 'a PDF with script and an object stream',
    fileName: 'f.pdf',
    bytes: () =>
      Promise.resolve(
        buildTextPdf({
          pages: ['one', 'two'],
          catalog: '/OpenAction << /S /JavaScript /JS (app.alert\\(1\\)) >>',
          layout: { xref: 'stream', compressed: [1, 2, 3] },
        }),
      ),
  },
  {
    name: 'an FDF',
    fileName: 'f.fdf',
    bytes: () => Promise.resolve(buildFdf({ fields: { name: 'Alice' } })),
  },
  {
    name: 'a docx with VBA and DDE',
    fileName: 'f.docx',
    bytes: () => buildWordDocument('docx', { texts: ['a', 'b'], vba: true, dde: true }),
  },
  {
    name: 'a Word 97-2003 document with VBA and DDE',
    fileName: 'f.doc',
    bytes: () => buildWordBinary({ texts: ['a', 'b'], vba: true, dde: true }),
  },
  {
    name: 'an xlsm with an XLM macro sheet',
    fileName: 'f.xlsm',
    bytes: () => buildWorkbook('xlsm', { texts: ['a', 'b'], macroSheet: true, dde: true }),
  },
  {
    name: 'an xlsb with a macro sheet and risky formulas',
    fileName: 'f.xlsb',
    bytes: () => buildBinaryWorkbook({ texts: ['a', 'b'], macroSheet: true, riskyFormulas: true }),
  },
  {
    name: 'an xls with VBA, a CALL formula and a file hyperlink',
    fileName: 'f.xls',
    bytes: () =>
      Promise.resolve(
        buildExcelWorkbook({
          vba: 'Shell "calc"',
          sheets: [
            {
              name: 'Sheet1',
              records: [
                numberCell(0, 0, 1),
                formulaCell(1, 0, Buffer.concat([ptg.str('k'), ptg.funcVar(1, FTAB.CALL)]), 2),
                formulaCell(2, 0, Buffer.concat([ptg.ref(0, 0), ptg.int(1), ptg.add()]), 'x'),
                hyperlink('file://host/share'),
              ],
            },
          ],
        }),
      ),
  },
  {
    name: 'a ppt with a VBA project',
    fileName: 'f.ppt',
    bytes: () => Promise.resolve(buildPowerPoint97({ texts: ['a', 'b'], vba: 'Sub AutoOpen()' })),
  },
  {
    name: 'an odt with Basic and scripts',
    fileName: 'f.odt',
    bytes: () => buildOdt({ texts: ['a', 'b'], basic: true, scripts: true }),
  },
  {
    // Small, so that damage reaches its header and the length of its raw picture run as often
    // as its text.
    name: 'an rtf with an object, a DDE field and a raw picture',
    fileName: 'f.rtf',
    bytes: async () => {
      const png = await buildImage('png', { width: 8, height: 8 });
      return Buffer.concat([
        Buffer.from(
          '{\\rtf1\\ansi{\\fonttbl{\\f0 Arial;}}\\f0 a\\par' +
            '{\\object\\objemb{\\*\\objdata 0105000002000000}{\\result b}}' +
            rtfField('DDEAUTO c:\\\\a.exe', 'c') +
            `{\\pict\\pngblip\\bin${png.length} `,
          'latin1',
        ),
        png,
        Buffer.from('}}', 'latin1'),
      ]);
    },
  },
  {
    name: 'a zip of images',
    fileName: 'f.zip',
    bytes: async () => {
      const png = await buildImage('png', { width: 16, height: 16 });
      return buildZip([
        { name: 'a.png', data: png },
        { name: 'b.png', data: png },
      ]);
    },
  },
];

describe('damaged documents', () => {
  it.each(BASES)(
    '$name: every damage gets a rebuild or a rejection',
    async (base) => {
      const original = await base.bytes();
      const random = seededRandom(original.length);
      const outcomes = new Set<string>();
      for (let round = 0; round < ROUNDS; round += 1) {
        const bytes = Uint8Array.from(original);
        const at: number[] = [];
        for (let flip = 0; flip < 1 + Math.floor(random() * 3); flip += 1) {
          const index = Math.floor(random() * bytes.length);
          at.push(index);
          bytes[index] = Math.floor(random() * 256);
        }
        const outcome = await disarm(
          { bytes, fileName: base.fileName },
          { limits: { timeoutMs: 20_000 } },
        ).catch((error: unknown) => {
          throw new Error(`bytes ${at.join(', ')} overwritten: ${String(error)}`);
        });
        outcomes.add(outcome.status);
      }
      // Some damage is survivable and some is not: both answers must occur.
      expect([...outcomes].sort()).toEqual(['cleaned', 'rejected']);
    },
    120_000,
  );
});
