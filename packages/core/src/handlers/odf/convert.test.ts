import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildOdf,
  buildOdp,
  buildOds,
  buildTextPdf,
  buildZip,
  ODF_MEDIA_TYPES,
} from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import type { RenderInput, Renderer } from '../../render/renderer.ts';
import { cleaned, findingsOf } from '../../test-support.ts';
import { MAX_PRINTED_CELLS, MAX_SHAPES, MAX_SHEETS, MAX_SLIDES } from './budget.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'odf-convert-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A renderer that keeps what it was handed and draws a one-page PDF. */
function recordingRenderer(): Renderer & { readonly inputs: RenderInput[] } {
  const inputs: RenderInput[] = [];
  return {
    name: 'recording',
    kinds: ['spreadsheet', 'presentation'],
    inputs,
    render: (input) => {
      inputs.push(input);
      return Promise.resolve(buildTextPdf({ pages: ['drawn'] }));
    },
    status: () => Promise.resolve({ name: 'recording', kinds: [], ready: true }),
    close: () => Promise.resolve(),
  };
}

/** What the renderer was handed: its member names (Info-ZIP) and its content.xml. */
async function handed(renderer: { inputs: RenderInput[] }): Promise<{
  kind: string;
  members: string[];
  content: string;
}> {
  const input = renderer.inputs[0];
  if (input?.kind !== 'spreadsheet' && input?.kind !== 'presentation') {
    throw new Error('the renderer was handed no package');
  }
  const path = join(dir, `${Math.random().toString(36).slice(2)}.zip`);
  await writeFile(path, input.bytes);
  execFileSync('unzip', ['-tqq', path]);
  const members = execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).trim().split('\n');
  const content = execFileSync('unzip', ['-p', path, 'content.xml'], { encoding: 'utf8' });
  return { kind: input.kind, members, content };
}

const SERVER = 'http://127.0.0.1:9';

describe('ODS and ODP converted to PDF', () => {
  it('hands the renderer a spreadsheet without macros, DDE, links or fetching formulas, cached values kept', async () => {
    const input = await buildOds({
      sheets: [
        { name: 'Budget', rows: [['Quarter', 'Sales']] },
        { name: 'Notes', rows: [['second sheet']] },
      ],
      macros: `${SERVER}/macro`,
      webservice: `${SERVER}/ws`,
      dde: `${SERVER}/dde.ods`,
      externalReference: `${SERVER}/ext.ods`,
      linkedSheet: `${SERVER}/linked.ods`,
      linkedRange: `${SERVER}/range.html`,
      linkedImage: `${SERVER}/img.png`,
      hyperlinks: ['https://example.com/', 'file:///etc/passwd'],
    });
    const renderer = recordingRenderer();
    const outcome = cleaned(
      await disarm({ bytes: input, fileName: 'budget.ods' }, { renderers: [renderer] }),
    );
    expect(outcome.fileName).toBe('budget.pdf');
    expect(outcome.format).toBe('pdf');
    expect(findingsOf(outcome)).toMatchObject({
      // The DDE link and the DDE() formula.
      'dde-link': 2,
      // WEBSERVICE, FILTERXML, the external reference, the linked sheet, range and picture, the
      // file: hyperlink.
      'external-relationship': 7,
      // The Basic library, the load event, the validity check's macro and its event.
      'odf-macro': 4,
    });
    const { kind, members, content } = await handed(renderer);
    expect(kind).toBe('spreadsheet');
    expect(members.some((name) => name.startsWith('Basic/'))).toBe(false);
    expect(content).not.toMatch(
      /127\.0\.0\.1|WEBSERVICE|FILTERXML|DDE\(|table-source|cell-range-source|dde-link|error-macro|event-listener|vnd\.sun\.star\.script|file:\/\/\//,
    );
    for (const text of [
      'cached quote',
      'cached price',
      'dde cached',
      'external cached',
      'range cached',
      'linked copy',
      'second sheet',
      'https://example.com/',
    ]) {
      expect(content).toContain(text);
    }
  });

  it('hands the renderer a presentation without macros, actions, linked media or sounds', async () => {
    const input = await buildOdp({
      slides: [{ title: 'First slide', texts: ['body'] }, { title: 'Second slide' }],
      macros: `${SERVER}/macro`,
      linkedMedia: SERVER,
      sounds: SERVER,
      hyperlinks: ['https://example.com/', 'file:///etc/passwd'],
    });
    const renderer = recordingRenderer();
    const outcome = cleaned(
      await disarm({ bytes: input, fileName: 'deck.odp' }, { renderers: [renderer] }),
    );
    expect(outcome.fileName).toBe('deck.pdf');
    expect(findingsOf(outcome)).toMatchObject({
      // The linked video (a plugin frame).
      'embedded-object': 1,
      // The linked picture, the animation's and the transition's sounds, the file: hyperlink.
      'external-relationship': 4,
      // The Basic library, the load event and the shape's two click actions (one listener list).
      'odf-macro': 3,
    });
    const { kind, members, content } = await handed(renderer);
    expect(kind).toBe('presentation');
    expect(members.some((name) => name.startsWith('Basic/'))).toBe(false);
    expect(content).not.toMatch(
      /127\.0\.0\.1|event-listener|vnd\.sun\.star\.script|\/usr\/bin|draw:plugin|anim:audio|presentation:sound|file:\/\/\//,
    );
    for (const text of ['First slide', 'body', 'Second slide', 'https://example.com/']) {
      expect(content).toContain(text);
    }
  });
});

/** A spreadsheet package whose content.xml body is `spreadsheet` (inside office:spreadsheet). */
function spreadsheet(body: string): Promise<Buffer> {
  return odfPackage('ods', `<office:spreadsheet>${body}</office:spreadsheet>`);
}

function odfPackage(kind: 'ods' | 'odp', body: string): Promise<Buffer> {
  const mediaType = ODF_MEDIA_TYPES[kind];
  return buildZip([
    { name: 'mimetype', data: mediaType, compress: false },
    {
      name: 'META-INF/manifest.xml',
      data: `<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="${mediaType}"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
    },
    {
      name: 'content.xml',
      data: `<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" office:version="1.3"><office:body>${body}</office:body></office:document-content>`,
    },
  ]);
}

const cell = (text: string, attributes = ''): string =>
  `<table:table-cell office:value-type="string"${attributes}><text:p>${text}</text:p></table:table-cell>`;

describe('ODS and ODP refused before rendering', () => {
  it('refuses an encrypted spreadsheet or presentation as password protected', async () => {
    for (const extension of ['ods', 'odp'] as const) {
      const renderer = recordingRenderer();
      const outcome = await disarm(
        { bytes: await buildOdf(extension, { encrypted: true }), fileName: `a.${extension}` },
        { renderers: [renderer] },
      );
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'password_protected' });
      expect(renderer.inputs).toEqual([]);
    }
  });
});

describe('ODS and ODP render budgets', () => {
  const convert = async (
    bytes: Buffer,
    fileName: string,
  ): Promise<{ outcome: Awaited<ReturnType<typeof disarm>>; rendered: number }> => {
    const renderer = recordingRenderer();
    const outcome = await disarm({ bytes, fileName }, { renderers: [renderer] });
    return { outcome, rendered: renderer.inputs.length };
  };

  it('refuses repeated rows of values past the printed-cell budget before rendering', async () => {
    const rows = Math.ceil(MAX_PRINTED_CELLS / 4) + 1;
    const input = await spreadsheet(
      `<table:table table:name="S"><table:table-row table:number-rows-repeated="${rows}">${cell('x', ' table:number-columns-repeated="4"')}</table:table-row></table:table>`,
    );
    const { outcome, rendered } = await convert(input, 'big.ods');
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    expect(outcome.status === 'rejected' && outcome.detail).toContain(
      `more than ${MAX_PRINTED_CELLS} cells`,
    );
    expect(rendered).toBe(0);
  });

  it('counts the area from A1 to the last cell used: two far cells are as large as the block between', async () => {
    const input = await spreadsheet(
      `<table:table table:name="S"><table:table-row>${cell('a')}</table:table-row>` +
        `<table:table-row table:number-rows-repeated="${Math.ceil(MAX_PRINTED_CELLS / 100)}"><table:table-cell table:number-columns-repeated="99"/></table:table-row>` +
        `<table:table-row><table:table-cell table:number-columns-repeated="99"/>${cell('far')}</table:table-row></table:table>`,
    );
    const { outcome } = await convert(input, 'far.ods');
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it('renders the empty rows and columns LibreOffice writes after the data, repeated to the sheet end', async () => {
    const input = await spreadsheet(
      `<table:table table:name="S"><table:table-column table:number-columns-repeated="16384"/>` +
        `<table:table-row>${cell('data')}<table:table-cell table:number-columns-repeated="16383"/></table:table-row>` +
        '<table:table-row table:number-rows-repeated="1048575"><table:table-cell table:number-columns-repeated="16384"/></table:table-row></table:table>',
    );
    const { outcome, rendered } = await convert(input, 'trailing.ods');
    expect(outcome.status).toBe('cleaned');
    expect(rendered).toBe(1);
  });

  it('refuses too many shapes, on one slide or spread over several', async () => {
    const frame = '<draw:frame><draw:text-box><text:p>x</text:p></draw:text-box></draw:frame>';
    const half = Math.ceil((MAX_SHAPES + 1) / 2);
    for (const pages of [
      `<draw:page>${frame.repeat(MAX_SHAPES + 1)}</draw:page>`,
      `<draw:page>${frame.repeat(half)}</draw:page>`.repeat(2),
    ]) {
      const slides = await odfPackage('odp', `<office:presentation>${pages}</office:presentation>`);
      expect((await convert(slides, 'shapes.odp')).outcome).toMatchObject({
        status: 'rejected',
        reason: 'file_too_large',
        detail: expect.stringContaining(`more than ${MAX_SHAPES} shapes`) as unknown,
      });
    }
    const within = await odfPackage(
      'odp',
      `<office:presentation><draw:page>${frame.repeat(MAX_SHAPES)}</draw:page></office:presentation>`,
    );
    expect((await convert(within, 'within.odp')).outcome.status).toBe('cleaned');
  });

  it('refuses too many sheets and too many slides', async () => {
    const sheets = await spreadsheet(`<table:table table:name="S"/>`.repeat(MAX_SHEETS + 1));
    expect((await convert(sheets, 'sheets.ods')).outcome).toMatchObject({
      status: 'rejected',
      reason: 'file_too_large',
      detail: expect.stringContaining(`more than ${MAX_SHEETS} sheets`) as unknown,
    });
    const slides = await odfPackage(
      'odp',
      `<office:presentation>${'<draw:page/>'.repeat(MAX_SLIDES + 1)}</office:presentation>`,
    );
    expect((await convert(slides, 'slides.odp')).outcome).toMatchObject({
      status: 'rejected',
      reason: 'file_too_large',
      detail: expect.stringContaining(`more than ${MAX_SLIDES} slides`) as unknown,
    });
  });
});
