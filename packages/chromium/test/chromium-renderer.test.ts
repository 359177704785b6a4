import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { disarm, isDisarmError } from '@disarm/core';
import type { CleanedOutcome, Renderer } from '@disarm/core';
import {
  buildHtmlPage,
  buildSvgDrawing,
  buildZip,
  EXECUTION_MARKER,
  findPdfActiveContent,
  markupVectors,
  qpdfObjects,
} from '@disarm/fixtures';
import { chromium } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createChromiumRenderer } from '../src/index.ts';

let renderer: Renderer;
let server: Server;
let origin: string;
/** Every request the local server received: none may come. */
const contacted: string[] = [];
let work: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    contacted.push(request.url ?? '');
    response.end('<script>document.write("PW"+"NED")</script>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  renderer = createChromiumRenderer();
  work = mkdtempSync(join(tmpdir(), 'disarm-chromium-'));
});

afterAll(async () => {
  await renderer.close();
  await new Promise((resolve) => server.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

function options(): { signal: AbortSignal; timeoutMs: number } {
  return { signal: new AbortController().signal, timeoutMs: 30_000 };
}

/** Writes `bytes` to a file of the test's directory and returns its path. */
function saved(bytes: Uint8Array, name: string): string {
  const path = join(work, name.replace(/[^\w.-]/g, '_'));
  writeFileSync(path, bytes);
  return path;
}

function pdfText(path: string): string {
  return execFileSync('pdftotext', ['-layout', path, '-']).toString();
}

function pdfPages(path: string): { pages: number; size: string } {
  const info = execFileSync('pdfinfo', [path]).toString();
  return {
    pages: Number(/Pages:\s+(\d+)/.exec(info)?.[1]),
    size: /Page size:\s+([\d.]+ x [\d.]+)/.exec(info)?.[1] ?? '',
  };
}

/** `qpdf --check` (exit 0: no errors, no warnings). */
function qpdfCheck(path: string): number | null {
  return spawnSync('qpdf', ['--check', path]).status;
}

function cleanedPdf(outcome: Awaited<ReturnType<typeof disarm>>): CleanedOutcome {
  if (outcome.status !== 'cleaned') throw new Error(`${outcome.reason}: ${outcome.detail}`);
  return outcome;
}

describe('the chromium renderer', () => {
  it('reports the browser and its version', async () => {
    const status = await renderer.status();
    expect(status).toMatchObject({ name: 'chromium', kinds: ['html', 'svg'], ready: true });
    expect(status.version).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  });

  describe('every vector, through the engine', () => {
    it.each(markupVectors('http://127.0.0.1:1').map((vector) => [vector.name] as const))(
      '%s: no script ran, the PDF is clean and keeps the text',
      async (name) => {
        const vector = markupVectors(origin).find((candidate) => candidate.name === name);
        if (vector === undefined) throw new Error(name);
        const extension = vector.kind === 'svg' ? 'svg' : 'html';
        const outcome = cleanedPdf(
          await disarm(
            { bytes: vector.bytes, fileName: `v.${extension}` },
            { renderers: [renderer] },
          ),
        );
        expect(outcome).toMatchObject({ fileName: 'v.pdf', format: 'pdf' });
        const path = saved(outcome.bytes, `${name}.pdf`);
        expect(qpdfCheck(path)).toBe(0);
        expect(findPdfActiveContent(path)).toEqual([]);
        const text = pdfText(path);
        expect(text).not.toContain(EXECUTION_MARKER);
        if (!/mglyph|svg-style-mxss/.test(name)) expect(text).toContain('Quarterly');
      },
    );
  });

  describe('every vector, unsanitised, straight to the browser', () => {
    // The browser's own walls alone (JavaScript off, a policy that allows only inline images,
    // every request aborted, no proxy, no resolver) must hold too.
    it.each(markupVectors('http://127.0.0.1:1').map((vector) => [vector.name] as const))(
      '%s: no script ran',
      async (name) => {
        const vector = markupVectors(origin).find((candidate) => candidate.name === name);
        if (vector === undefined) throw new Error(name);
        const markup = vector.bytes
          .toString('utf8')
          .replace(/^<\?xml[^>]*>\s*/, '')
          .replace(/^<!DOCTYPE svg[^>]*>\s*/, '');
        // A page that navigates itself away (meta refresh to an address every request to which
        // is aborted) may leave Chromium nothing to print: a fault, failed closed, never a leak.
        const pdf = await renderer
          .render({ kind: vector.kind, markup }, options())
          .catch((error: unknown) => {
            if (name === 'html/meta-refresh' && isDisarmError(error, 'ERR_INTERNAL')) return;
            throw error;
          });
        if (pdf !== undefined) {
          expect(pdfText(saved(pdf, `raw-${name}.pdf`))).not.toContain(EXECUTION_MARKER);
        }
      },
    );
  });

  it('contacted the local server for none of them', () => {
    expect(contacted).toEqual([]);
  });

  it('keeps the page text, the page count and the @page size, A4 by default', async () => {
    const rows = Array.from({ length: 120 }, (_, index) => `<tr><td>row ${index + 1}</td></tr>`);
    const page = buildHtmlPage(`<h1>Annual report</h1><table>${rows.join('')}</table>`);
    const a4 = saved(
      cleanedPdf(
        await disarm({ bytes: Buffer.from(page), fileName: 'r.html' }, { renderers: [renderer] }),
      ).bytes,
      'a4.pdf',
    );
    expect(pdfPages(a4)).toEqual({ pages: 3, size: '595.92 x 842.88' });
    const text = pdfText(a4);
    expect(text).toContain('Annual report');
    expect(text).toContain('row 120');
    const a5 = saved(
      await renderer.render(
        {
          kind: 'html',
          markup: buildHtmlPage('<p>small</p>', '<style>@page { size: A5 }</style>'),
        },
        options(),
      ),
      'a5.pdf',
    );
    expect(pdfPages(a5)).toEqual({ pages: 1, size: '420 x 594.96' });
  });

  it('keeps links to the web and to mail as links of the PDF', async () => {
    const page = buildHtmlPage(
      '<a href="https://example.com/q3">source</a> <a href="mailto:desk@example.com">desk</a>',
    );
    const outcome = cleanedPdf(
      await disarm({ bytes: Buffer.from(page), fileName: 'l.html' }, { renderers: [renderer] }),
    );
    const uris = JSON.stringify(qpdfObjects(saved(outcome.bytes, 'links.pdf'))).match(
      /"\/URI":"[^"]*"/g,
    );
    expect(uris?.sort()).toEqual([
      '"/URI":"u:https://example.com/q3"',
      '"/URI":"u:mailto:desk@example.com"',
    ]);
  });

  it('draws an SVG on a page of its size, as vectors', async () => {
    const outcome = cleanedPdf(
      await disarm(
        { bytes: Buffer.from(buildSvgDrawing('')), fileName: 'd.svg' },
        { renderers: [renderer] },
      ),
    );
    const path = saved(outcome.bytes, 'drawing.pdf');
    // 400x200 CSS pixels are 300x150 points.
    expect(pdfPages(path)).toEqual({ pages: 1, size: '300 x 150' });
    expect(pdfText(path)).toContain('Quarterly figures');
    const images = execFileSync('pdfimages', ['-list', path]).toString().trim().split('\n');
    expect(images.length).toBe(2);
  });

  it('converts an SVG inside a zip and lists it under its .pdf name', async () => {
    const zip = await buildZip([
      { name: 'art/drawing.svg', data: Buffer.from(buildSvgDrawing('<script>x()</script>')) },
    ]);
    const outcome = cleanedPdf(
      await disarm({ bytes: zip, fileName: 'a.zip' }, { renderers: [renderer] }),
    );
    const listing = execFileSync('unzip', ['-Z1', saved(outcome.bytes, 'out.zip')]).toString();
    expect(listing.trim().split('\n')).toEqual(['art/drawing.pdf']);
    expect(outcome.findings.map((finding) => finding.kind)).toContain('script');
  });

  /**
   * Mean difference per channel (0..1) between the PDF the engine returns for `markup`, drawn by
   * poppler at 96 dpi, and a screenshot of `page` in Chromium at `width` x `height` CSS pixels.
   */
  async function differenceFromScreenshot(
    file: { bytes: Buffer; fileName: string },
    page: string,
    [width, height]: readonly [number, number],
  ): Promise<number> {
    const outcome = cleanedPdf(await disarm(file, { renderers: [renderer] }));
    const pdf = saved(outcome.bytes, `visual-${file.fileName}.pdf`);
    const stem = join(work, `visual-${file.fileName}`);
    execFileSync('pdftoppm', ['-r', '96', '-png', '-singlefile', pdf, stem]);
    const printed = await sharp(`${stem}.png`)
      .removeAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
    try {
      const tab = await browser.newPage({ viewport: { width, height }, javaScriptEnabled: false });
      await tab.setContent(page);
      const shot = await sharp(await tab.screenshot())
        .removeAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true });
      expect([printed.info.width, printed.info.height]).toEqual([width, height]);
      expect([shot.info.width, shot.info.height]).toEqual([width, height]);
      let difference = 0;
      for (let index = 0; index < shot.data.length; index += 1) {
        difference += Math.abs((shot.data[index] ?? 0) - (printed.data[index] ?? 0));
      }
      return difference / shot.data.length / 255;
    } finally {
      await browser.close();
    }
  }

  // Anti-aliasing of text and edges differs between printing and the screen: a few per cent.
  const CLOSE = 0.02;

  it('renders an HTML page close to what the browser shows of it', async () => {
    const markup = buildHtmlPage(
      '<h1 style="color:#036">Figures</h1><table border="1"><tr><td style="background:#fc0">Q1</td><td>12</td></tr></table>',
      '<style>@page { size: 800px 600px; margin: 0 } body { margin: 20px; font: 24px sans-serif }</style>',
    );
    const file = { bytes: Buffer.from(markup), fileName: 'visual.html' };
    expect(await differenceFromScreenshot(file, markup, [800, 600])).toBeLessThan(CLOSE);
  });

  it('renders an SVG drawing close to what the browser shows of it', async () => {
    const svg = buildSvgDrawing(
      '<defs><linearGradient id="g"><stop offset="0" stop-color="#fc0"/><stop offset="1" stop-color="#c30"/></linearGradient></defs><circle cx="320" cy="60" r="40" fill="url(#g)"/>',
    );
    const file = { bytes: Buffer.from(svg), fileName: 'visual.svg' };
    const page = `<body style="margin:0">${svg.replace(/^<\?xml[^>]*>\s*/, '')}</body>`;
    expect(await differenceFromScreenshot(file, page, [400, 200])).toBeLessThan(CLOSE);
  });

  it('stops a render whose time is up with ERR_TIMEOUT, and renders the next one', async () => {
    const controller = new AbortController();
    const pending = renderer.render(
      { kind: 'html', markup: buildHtmlPage('<p>x</p>'.repeat(20_000)) },
      { signal: controller.signal, timeoutMs: 30_000 },
    );
    controller.abort();
    const error: unknown = await pending.catch((caught: unknown) => caught);
    expect(isDisarmError(error, 'ERR_TIMEOUT')).toBe(true);
    const next = await renderer.render({ kind: 'html', markup: buildHtmlPage('') }, options());
    expect(pdfText(saved(next, 'after-timeout.pdf'))).toContain('Quarterly figures');
  });

  it('starts a new browser when the browser dies', async () => {
    await renderer.render({ kind: 'html', markup: buildHtmlPage('') }, options());
    const children = execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)])
      .toString()
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([, command]) => command?.startsWith('chrom'));
    expect(children.length).toBe(1);
    process.kill(Number(children[0]?.[0]), 'SIGKILL');
    let pdf: Uint8Array | undefined;
    // The render that meets the dying browser may fail as a fault; the one after works.
    for (let attempt = 0; attempt < 2 && pdf === undefined; attempt += 1) {
      pdf = await renderer
        .render({ kind: 'html', markup: buildHtmlPage('') }, options())
        .catch(() => undefined);
    }
    expect(pdf).toBeDefined();
    expect(pdfText(saved(pdf ?? new Uint8Array(), 'after-crash.pdf'))).toContain(
      'Quarterly figures',
    );
  });
});

describe('the chromium renderer and its owner’s signals', () => {
  it('leaves SIGINT to the process that owns it: the process lives on and the renderer still draws', async () => {
    const script = `
      import { disarm } from '@disarm/core';
      import { buildSvgDrawing } from '@disarm/fixtures';
      import { createChromiumRenderer } from ${JSON.stringify(new URL('../src/index.ts', import.meta.url).href)};
      const renderer = createChromiumRenderer();
      const draw = async () => (await disarm({ bytes: new TextEncoder().encode(buildSvgDrawing()), fileName: 'a.svg' }, { renderers: [renderer] })).status;
      process.on('SIGINT', () => {
        void draw().then(async (status) => {
          process.stdout.write('after SIGINT: ' + status + '\\n');
          await renderer.close();
        });
      });
      process.stdout.write('before: ' + (await draw()) + '\\n');
    `;
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const child = spawn(
      process.execPath,
      ['--import', tsx, '--conditions=@disarm/source', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        output += chunk;
        if (output.includes('before:')) resolve();
      });
      void exited.then((code) => {
        reject(new Error(`the owner exited (${String(code)}) before drawing: ${output}`));
      });
    });
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(output).toBe('before: cleaned\nafter SIGINT: cleaned\n');
  });
});
