import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildCalcSpreadsheet,
  buildImpressPresentation,
  findPdfActiveContent,
} from '@disarm/fixtures';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { isDisarmError } from '../../errors.ts';
import { formatForFileName } from '../../formats.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../../handlers/types.ts';
import { engineContext } from '../../test-support.ts';
import { convertToPdf, verifyConverted } from '../convert.ts';
import type { RenderInput, Renderer } from '../renderer.ts';

import { builtinRenderer } from './index.ts';
import { MAX_HTML_TABLE_CELLS } from './html.ts';
import { MAX_SHEET_CELLS } from './odf.ts';

const DIR = mkdtempSync(join(tmpdir(), 'disarm-builtin-'));
let counter = 0;
/** Requests the local server received: no vector may make the renderer fetch anything. */
let contacted = 0;
const server = createServer((_request, response) => {
  contacted += 1;
  response.end();
});
let origin = '';

beforeAll(async () => {
  // The independent judges (Debian qpdf and poppler-utils) are installed by this script.
  execFileSync('bash', [join(import.meta.dirname, '../../../../../scripts/ensure-system-deps.sh')]);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function file(bytes: Uint8Array): string {
  counter += 1;
  const path = join(DIR, `${counter}.pdf`);
  writeFileSync(path, bytes);
  return path;
}

const context = (renderers: readonly Renderer[] = [builtinRenderer]): EngineContext => ({
  ...engineContext(),
  renderers,
});

const SOURCE_NAMES: Readonly<Record<RenderInput['kind'], string>> = {
  svg: 'drawing.svg',
  html: 'page.html',
  spreadsheet: 'book.ods',
  presentation: 'deck.odp',
};

/** The input converted as the engine does: rendered, rebuilt as a PDF, verified before release. */
async function convert(
  input: RenderInput,
  engine: EngineContext = context(),
): Promise<HandlerOutput> {
  const fileName = SOURCE_NAMES[input.kind];
  const format = formatForFileName(fileName);
  if (format === undefined) throw new Error(`${fileName} is not on the allowlist`);
  const source: DetectedFile = {
    bytes: 'bytes' in input ? input.bytes : Buffer.from(input.markup),
    fileName,
    format,
  };
  const output = await convertToPdf(input, source, [], engine);
  await verifyConverted(output, source, engine);
  return output;
}

/** The judges every output must satisfy: qpdf finds no error and no active content. */
function assertCleanPdf(bytes: Uint8Array): string {
  const path = file(bytes);
  const check = spawnSync('qpdf', ['--check', path], { encoding: 'utf8' });
  expect(check.status, check.stdout + check.stderr).toBe(0);
  expect(findPdfActiveContent(path)).toEqual([]);
  return path;
}

const textOf = (path: string): string =>
  execFileSync('pdftotext', ['-layout', path, '-'], { encoding: 'utf8' });

function pdfInfo(path: string): { pages: number; size: string } {
  const info = execFileSync('pdfinfo', [path], { encoding: 'utf8' });
  return {
    pages: Number(/^Pages:\s+(\d+)/m.exec(info)?.[1]),
    size: /^Page size:\s+(.+?) pts/m.exec(info)?.[1] ?? '',
  };
}

/** The colour at a point of page 1 (fractions of its width and height), as poppler draws it. */
async function colourAt(path: string, x: number, y: number): Promise<number[]> {
  const png = execFileSync('pdftoppm', ['-scale-to', '400', '-png', '-singlefile', path], {
    maxBuffer: 1 << 26,
  });
  const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const offset = (Math.floor(info.height * y) * info.width + Math.floor(info.width * x)) * 3;
  return [...data.subarray(offset, offset + 3)];
}

describe('the built-in renderer, svg', () => {
  it('rasterises the drawing on one page of its size, in CSS pixels at 96 per inch', async () => {
    const markup =
      '<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200" viewBox="0 0 40 20">' +
      '<rect x="0" y="0" width="20" height="20" fill="#ff0000"/><rect x="20" y="0" width="20" height="20" fill="#0000ff"/></svg>';
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect(pdfInfo(path)).toEqual({ pages: 1, size: '300 x 150' });
    const [red, , blue] = await colourAt(path, 0.25, 0.5);
    expect(red).toBeGreaterThan(200);
    expect(blue).toBeLessThan(60);
    expect((await colourAt(path, 0.75, 0.5))[2]).toBeGreaterThan(200);
  });

  it('keeps a size given in physical units', async () => {
    const markup =
      '<svg xmlns="http://www.w3.org/2000/svg" width="2in" height="1in"><circle cx="50%" cy="50%" r="20"/></svg>';
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect(pdfInfo(path).size).toBe('144 x 72');
  });

  it('draws an enormous drawing on a page within the PDF limits, at a lower resolution', async () => {
    const markup =
      '<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="50000"><rect width="100000" height="50000" fill="#00ff00"/></svg>';
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect(pdfInfo(path).size).toBe('14400 x 7200');
    expect((await colourAt(path, 0.5, 0.5))[1]).toBeGreaterThan(200);
  });

  it('lays a drawing with no size of its own out on an A4 page, as a browser prints it', async () => {
    const markup =
      '<?xml version="1.0"?>\n<!-- no width, height or viewBox -->\n<svg xmlns="http://www.w3.org/2000/svg" width="100%">' +
      '<rect x="0" y="0" width="397" height="200" fill="#ff0000"/></svg>';
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect(pdfInfo(path).size).toBe('595.5 x 842.25');
    expect((await colourAt(path, 0.25, 0.05))[0]).toBeGreaterThan(200);
    expect((await colourAt(path, 0.75, 0.05))[1]).toBeGreaterThan(200);
  });

  it('draws nothing of a document whose root is no SVG element, as a browser', async () => {
    const markup =
      '<svg xmlns="http://www.w3.org/1337/svg" width="128" height="128"><rect width="128" height="128"/></svg>';
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect(pdfInfo(path)).toEqual({ pages: 1, size: '595.28 x 841.89' });
    expect(await colourAt(path, 0.1, 0.1)).toEqual([255, 255, 255]);
  });

  it.each([
    ['an external image', (url: string) => `<image href="${url}/a.png" width="10" height="10"/>`],
    [
      'an xlink image',
      (url: string) =>
        `<image xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="${url}/b.png" width="10" height="10"/>`,
    ],
    ['a file image', () => '<image href="file:///etc/passwd" width="10" height="10"/>'],
    ['a CSS import', (url: string) => `<style>@import url("${url}/c.css");</style>`],
    [
      'a CSS url()',
      (url: string) => `<rect width="5" height="5" style="fill: url(${url}/d.svg#p)"/>`,
    ],
    ['an feImage', (url: string) => `<filter id="f"><feImage href="${url}/e.png"/></filter>`],
    ['a use of another file', (url: string) => `<use href="${url}/f.svg#shape"/>`],
  ])(
    'refuses %s that the sanitiser let through, before librsvg reads it',
    async (_name, vector) => {
      const before = contacted;
      const markup = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">${vector(origin)}</svg>`;
      const error: unknown = await convert({ kind: 'svg', markup }).catch(
        (caught: unknown) => caught,
      );
      expect(isDisarmError(error, 'ERR_INTERNAL')).toBe(true);
      expect(contacted).toBe(before);
    },
  );

  it('refuses a DOCTYPE and a style sheet instruction', async () => {
    for (const markup of [
      `<!DOCTYPE svg SYSTEM "${origin}/svg.dtd"><svg xmlns="http://www.w3.org/2000/svg"/>`,
      `<?xml-stylesheet href="${origin}/s.css"?><svg xmlns="http://www.w3.org/2000/svg"/>`,
    ]) {
      const error: unknown = await convert({ kind: 'svg', markup }).catch(
        (caught: unknown) => caught,
      );
      expect(isDisarmError(error, 'ERR_INTERNAL')).toBe(true);
    }
    expect(contacted).toBe(0);
  });

  it('draws same-document references and inline pictures', async () => {
    const png = await sharp({
      create: { width: 4, height: 4, channels: 3, background: '#0000ff' },
    })
      .png()
      .toBuffer();
    const markup =
      '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100">' +
      '<defs><linearGradient id="g"><stop offset="0" stop-color="#f00"/><stop offset="1" stop-color="#f00"/></linearGradient></defs>' +
      '<rect width="100" height="100" fill="url(#g)"/>' +
      `<image x="100" width="100" height="100" href="data:image/png;base64,${png.toString('base64')}"/></svg>`;
    const path = assertCleanPdf((await convert({ kind: 'svg', markup })).bytes);
    expect((await colourAt(path, 0.25, 0.5))[0]).toBeGreaterThan(200);
    expect((await colourAt(path, 0.75, 0.5))[2]).toBeGreaterThan(200);
  });
});

describe('the built-in renderer, html', () => {
  const imagePng = (): Promise<Buffer> =>
    sharp({ create: { width: 120, height: 60, channels: 3, background: '#00aa00' } })
      .png()
      .toBuffer();

  it('keeps headings, paragraphs, lists, tables and inline pictures', async () => {
    const markup =
      '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Hidden title</title>' +
      '<style>body { color: red }</style></head><body>' +
      '<h1>Quarterly report</h1><p>Revenue grew by <b>12&nbsp;%</b> in the caf&eacute;.</p>' +
      '<ul><li>First point</li><li>Second point<ol><li>Nested one</li></ol></li></ul>' +
      '<table><tr><th>Region</th><th>Sales</th></tr><tr><td>North</td><td>1,200</td></tr>' +
      '<tr><td>South</td><td>980</td></tr></table>' +
      `<p><img alt="chart" src="data:image/png;base64,${(await imagePng()).toString('base64')}"></p>` +
      '<pre>  indented\n    code</pre><p>Greek &#937; and &#x4e2d; are not in WinAnsi.</p></body></html>';
    const path = assertCleanPdf((await convert({ kind: 'html', markup })).bytes);
    const text = textOf(path);
    for (const expected of [
      'Quarterly report',
      'Revenue grew by 12 % in the café.',
      'First point',
      'Nested one',
      'Region',
      'North',
      '1,200',
      '  indented\n    code',
      'Greek ? and ? are not in WinAnsi.',
    ]) {
      expect(text).toContain(expected);
    }
    expect(text).not.toContain('Hidden title');
    expect(text).not.toContain('color: red');
    expect(pdfInfo(path)).toEqual({ pages: 1, size: '595.28 x 841.89' });
    expect(execFileSync('pdfimages', ['-list', path], { encoding: 'utf8' })).toMatch(
      /\n\s+1\s+0 image\s+120\s+60 /,
    );
  });

  it('flows a long document over as many A4 pages as it needs', async () => {
    const paragraphs = Array.from(
      { length: 400 },
      (_, index) => `<p>Paragraph ${index + 1} of the long document.</p>`,
    ).join('');
    const path = assertCleanPdf(
      (await convert({ kind: 'html', markup: `<html><body>${paragraphs}</body></html>` })).bytes,
    );
    expect(pdfInfo(path).pages).toBeGreaterThan(5);
    expect(textOf(path)).toContain('Paragraph 400 of the long document.');
  });

  it('cuts a word wider than the page where it reaches the edge, keeping every character', async () => {
    const word = Array.from({ length: 60_000 }, (_, index) => `w${index}`).join('');
    const path = assertCleanPdf(
      (await convert({ kind: 'html', markup: `<p>before ${word} after</p>` })).bytes,
    );
    const text = execFileSync('pdftotext', [path, '-'], { encoding: 'utf8' }).replace(/\s+/g, '');
    expect(text).toContain(`before${word}after`);
  });

  it('refuses a document of more table cells than it prints, as file_too_large', async () => {
    const row = `<tr>${'<td>x</td>'.repeat(1_000)}</tr>`;
    const markup = `<table>${row.repeat(MAX_HTML_TABLE_CELLS / 1_000 + 1)}</table>`;
    await expect(convert({ kind: 'html', markup })).rejects.toMatchObject({
      reason: 'file_too_large',
    });
  });

  it('fetches nothing a remaining reference names', async () => {
    const markup =
      `<html><body><img src="${origin}/i.png" alt="remote"><p style="background:url(${origin}/b.png)">kept</p>` +
      `<a href="${origin}/page">link</a></body></html>`;
    const path = assertCleanPdf((await convert({ kind: 'html', markup })).bytes);
    expect(textOf(path)).toContain('[remote]');
    expect(contacted).toBe(0);
  });
});

describe('the built-in renderer, spreadsheets and presentations', () => {
  it('prints every sheet from a new page, its used cells only', async () => {
    const bytes = await buildCalcSpreadsheet([
      {
        name: 'Budget',
        rows: [
          { cells: [{ text: 'Item' }, { text: 'Cost' }] },
          { cells: [{ text: 'Paper' }, { text: '12.50' }] },
          { cells: [{}], repeat: 3 },
          { cells: [{ text: 'Total' }, {}, { text: '=sum' }, { repeat: 1020 }] },
        ],
      },
      { name: 'Notes', rows: [{ cells: [{ text: 'Second sheet\nsecond line' }] }] },
    ]);
    const path = assertCleanPdf((await convert({ kind: 'spreadsheet', bytes })).bytes);
    const info = pdfInfo(path);
    expect(info.pages).toBe(2);
    expect(info.size).toBe('841.89 x 595.28');
    const text = textOf(path);
    for (const expected of [
      'Budget',
      'Item',
      'Paper',
      '12.50',
      'Total',
      '=sum',
      'Notes',
      'second line',
    ]) {
      expect(text).toContain(expected);
    }
    // A cell of two paragraphs prints on two lines.
    expect(text).toMatch(/Second sheet *\n *second line/);
  });

  it('prints a wide sheet in bands of columns and repeated cells as often as they repeat', async () => {
    const bytes = await buildCalcSpreadsheet([
      {
        name: 'Wide',
        rows: [
          {
            cells: Array.from({ length: 60 }, (_, index) => ({
              text: `Column heading ${index + 1}`,
            })),
          },
          { cells: [{ text: 'same' }], repeat: 5 },
          { cells: [{ text: 'x', repeat: 4 }] },
        ],
      },
    ]);
    const path = assertCleanPdf((await convert({ kind: 'spreadsheet', bytes })).bytes);
    const text = textOf(path);
    expect(text).toContain('Column heading 1');
    expect(text).toContain('Column heading 60');
    expect(text.match(/same/g)).toHaveLength(5);
    expect(text.match(/\bx\b/g)).toHaveLength(4);
  });

  it('refuses a sheet of more cells than it prints, as file_too_large', async () => {
    const bytes = await buildCalcSpreadsheet([
      {
        name: 'Big',
        rows: [{ cells: [{ text: 'v', repeat: 1000 }], repeat: MAX_SHEET_CELLS / 1000 + 1 }],
      },
    ]);
    await expect(convert({ kind: 'spreadsheet', bytes })).rejects.toMatchObject({
      reason: 'file_too_large',
    });
  });

  it('prints every slide at its size, with its text and pictures, without speaker notes', async () => {
    const picture = await sharp({
      create: { width: 64, height: 32, channels: 3, background: '#cc0000' },
    })
      .png()
      .toBuffer();
    const bytes = await buildImpressPresentation(
      [
        {
          shapes: [
            { x: 1, y: 1, width: 26, height: 3, title: true, lines: ['Opening slide'] },
            { x: 1, y: 5, width: 12, height: 8, lines: ['First bullet', 'Second bullet'] },
            { x: 15, y: 5, width: 12, height: 6, picture: 'Pictures/chart.png' },
          ],
          notes: 'Speaker notes stay private',
        },
        { shapes: [{ x: 1, y: 1, width: 26, height: 3, title: true, lines: ['Middle slide'] }] },
        {
          shapes: [
            {
              x: 1,
              y: 1,
              width: 4,
              height: 1,
              lines: ['A long closing line that has to shrink to fit its small frame'],
            },
          ],
        },
      ],
      new Map([['Pictures/chart.png', picture]]),
    );
    const path = assertCleanPdf((await convert({ kind: 'presentation', bytes })).bytes);
    expect(pdfInfo(path)).toEqual({ pages: 3, size: '793.701 x 446.457' });
    const text = textOf(path).replace(/\s+/g, ' ');
    for (const expected of [
      'Opening slide',
      'First bullet',
      'Second bullet',
      'Middle slide',
      'closing line',
    ]) {
      expect(text).toContain(expected);
    }
    expect(text).not.toContain('Speaker notes');
    const [red, green] = await colourAt(path, (15 + 6) / 28, (5 + 3) / 15.75);
    expect(red).toBeGreaterThan(150);
    expect(green).toBeLessThan(60);
  });
});

describe('choosing a renderer', () => {
  it('asks the configured renderer first and the built-in one for the kinds it does not list', async () => {
    const asked: string[] = [];
    const htmlOnly: Renderer = {
      name: 'html-only',
      kinds: ['html'],
      async render(input, options) {
        asked.push(input.kind);
        return builtinRenderer.render(
          { kind: 'html', markup: '<p>from the other renderer</p>' },
          options,
        );
      },
      status: () => Promise.resolve({ name: 'html-only', kinds: ['html'], ready: true }),
      close: () => Promise.resolve(),
    };
    const engine = context([htmlOnly, builtinRenderer]);
    const html = await convert({ kind: 'html', markup: '<p>original</p>' }, engine);
    expect(textOf(file(html.bytes))).toContain('from the other renderer');
    const svg = await convert(
      { kind: 'svg', markup: '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>' },
      engine,
    );
    expect(pdfInfo(file(svg.bytes)).pages).toBe(1);
    expect(asked).toEqual(['html']);
  });

  it('stops when the document is out of time', async () => {
    const controller = new AbortController();
    controller.abort();
    const error: unknown = await builtinRenderer
      .render({ kind: 'html', markup: '<p>late</p>' }, { signal: controller.signal, timeoutMs: 0 })
      .catch((caught: unknown) => caught);
    expect(isDisarmError(error, 'ERR_TIMEOUT')).toBe(true);
  });

  it('reports itself ready for every kind, with its libraries', async () => {
    const status = await builtinRenderer.status();
    expect(status).toMatchObject({
      name: 'builtin',
      ready: true,
      kinds: ['svg', 'html', 'spreadsheet', 'presentation'],
    });
    expect(status.version).toMatch(/^sharp \d+\.\d+\.\d+, libvips \d+\.\d+\.\d+, librsvg \d+/);
  });
});
