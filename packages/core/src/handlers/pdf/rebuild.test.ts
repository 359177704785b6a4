import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

import { PDFDocument } from '@cantoo/pdf-lib';

import {
  buildFdf,
  buildMemoPdf,
  buildPayloadWrapperPdf,
  buildRawPdf,
  buildTextPdf,
  encryptPdf,
  findPdfActiveContent,
  qpdfObjects,
} from '@disarm/fixtures';
import type { RawPdfObject } from '@disarm/fixtures';
import { beforeAll, describe, expect, it } from 'vitest';

import { memorySource } from '../../_internal/byte-source.ts';
import { disarm } from '../../disarm.ts';
import type { FindingKind } from '../../findings.ts';
import type { CleanedOutcome, Outcome } from '../../outcome.ts';
import { VerifyFailure } from '../types.ts';
import type { EngineContext, SourcedFile } from '../types.ts';
import { verifyPdf } from './verify.ts';
import { cleaned } from '../../test-support.ts';

const DIR = mkdtempSync(join(tmpdir(), 'disarm-pdf-'));
let counter = 0;

beforeAll(() => {
  // The independent readers (Debian qpdf and poppler-utils) are installed by this script.
  execFileSync('bash', [join(import.meta.dirname, '../../../../../scripts/ensure-system-deps.sh')]);
});

function file(bytes: Uint8Array, suffix = '.pdf'): string {
  counter += 1;
  const path = join(DIR, `${counter}${suffix}`);
  writeFileSync(path, bytes);
  return path;
}

const kinds = (outcome: CleanedOutcome): Partial<Record<FindingKind, number>> =>
  Object.fromEntries(outcome.findings.map((finding) => [finding.kind, finding.count]));

/** `qpdf --check` exit status: 0 clean, 3 warnings only; 2 is an error. */
function qpdfCheck(bytes: Uint8Array): number {
  return spawnSync('qpdf', ['--check', file(bytes)]).status ?? -1;
}

/** What qpdf (an independent reader) still finds of the removed content; empty when none. */
const activeContent = (bytes: Uint8Array): string[] => findPdfActiveContent(file(bytes));

function text(bytes: Uint8Array): string {
  return execFileSync('pdftotext', ['-layout', file(bytes), '-']).toString();
}

/** Fraction of pixels that differ between the renders of every page of two PDFs. */
function pixelDifference(a: Uint8Array, b: Uint8Array): number {
  const render = (bytes: Uint8Array): Buffer[] => {
    const prefix = join(DIR, `render-${(counter += 1)}`);
    execFileSync('pdftoppm', ['-r', '36', '-gray', file(bytes), prefix]);
    return execFileSync('bash', ['-c', `ls ${prefix}*.pgm`])
      .toString()
      .trim()
      .split('\n')
      .map((path) => readFileSync(path));
  };
  const pagesA = render(a);
  const pagesB = render(b);
  expect(pagesB.length).toBe(pagesA.length);
  let differing = 0;
  let total = 0;
  pagesA.forEach((page, index) => {
    const other = pagesB[index] ?? Buffer.alloc(0);
    expect(other.length).toBe(page.length);
    for (let i = 0; i < page.length; i += 1) if (page[i] !== other[i]) differing += 1;
    total += page.length;
  });
  return differing / total;
}

const run = (bytes: Uint8Array, name = 'f.pdf', limits = {}): Promise<Outcome> =>
  disarm({ bytes, fileName: name }, { limits });

/** Asserts what every rebuilt PDF must satisfy, read by independent tools. */
async function expectSafeRebuild(input: Uint8Array, output: Uint8Array): Promise<void> {
  expect(activeContent(output)).toEqual([]);
  expect([0, 3]).toContain(qpdfCheck(output));
  expect(text(output)).toBe(text(input));
  expect(pixelDifference(input, output)).toBeLessThanOrEqual(0.01);
  const again = cleaned(await run(output));
  expect(again.findings).toEqual([]);
  expect(Buffer.compare(Buffer.from(again.bytes), Buffer.from(output))).toBe(0);
}

const JS =
  '<< /S /JavaScript /JS (app.alert\\(1\\); this.exportDataObject\\({cName: "x", nLaunch: 2}\\)) >>';
const link = (action: string): string =>
  `<< /Type /Annot /Subtype /Link /Rect [72 600 300 650] /Border [0 0 0] /A ${action} >>`;
const annots = (...nums: number[]): string =>
  `/Annots [${nums.map((num) => `${num} 0 R`).join(' ')}]`;

interface ActiveCase {
  readonly name: string;
  readonly pdf: () => Buffer;
  readonly kinds: Partial<Record<FindingKind, number>>;
}

const ACTIVE: readonly ActiveCase[] = [
  {
    name: 'document JavaScript in /OpenAction',
    pdf: () => buildTextPdf({ catalog: `/OpenAction ${JS}` }),
    kinds: { 'pdf-javascript': 1 },
  },
  {
    name: 'the /Names JavaScript tree',
    pdf: () =>
      buildTextPdf({
        catalog: '/Names << /JavaScript 100 0 R >>',
        objects: [
          { num: 100, body: `<< /Names [(init) ${JS} (two) 101 0 R] >>` },
          { num: 101, body: JS },
        ],
      }),
    kinds: { 'pdf-javascript': 2 },
  },
  {
    name: 'catalogue, page, annotation and field /AA',
    pdf: () =>
      buildTextPdf({
        catalog: `/AA << /WC ${JS} /WS ${JS} >> /AcroForm << /Fields [100 0 R] >>`,
        page: `/AA << /O ${JS} >> ${annots(100)}`,
        objects: [
          {
            num: 100,
            body: `<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Alice) /Rect [72 500 300 520] /AA << /K ${JS} /F << /S /Launch /F (cmd.exe) >> >> >>`,
          },
        ],
      }),
    kinds: { 'pdf-javascript': 4, 'pdf-action': 1 },
  },
  {
    name: 'Launch, SubmitForm, ImportData, GoToR, GoToE and a javascript: URI on links',
    pdf: () =>
      buildTextPdf({
        page: annots(100, 101, 102, 103, 104, 105, 106),
        objects: [
          { num: 100, body: link('<< /S /Launch /Win << /F (cmd.exe) /P (/c calc) >> >>') },
          {
            num: 101,
            body: link('<< /S /SubmitForm /F << /FS /URL /F (https://evil.test/) >> >>'),
          },
          { num: 102, body: link('<< /S /ImportData /F (data.fdf) >>') },
          { num: 103, body: link('<< /S /GoToR /F (other.pdf) /D [0 /Fit] >>') },
          { num: 104, body: link('<< /S /GoToE /T << /R /C /N (x) >> >>') },
          { num: 105, body: link('<< /S /URI /URI (javascript:alert\\(1\\)) >>') },
          { num: 106, body: link('<< /S /URI /URI (https://example.com/ok) >>') },
        ],
      }),
    kinds: { 'pdf-action': 6 },
  },
  {
    name: 'actions hidden in /Next chains and arrays, behind a kept go-to',
    pdf: () =>
      buildTextPdf({
        page: annots(100),
        objects: [
          {
            num: 100,
            body: link(
              `<< /S /GoTo /D [10 0 R /Fit] /Next [${JS} << /S /Hide /T (x) /Next << /S /SetOCGState /State [] >> >> 101 0 R] >>`,
            ),
          },
          { num: 101, body: '<< /S /Rendition /OP 0 >>' },
        ],
      }),
    kinds: { 'pdf-javascript': 1, 'pdf-action': 2 },
  },
  {
    name: 'embedded files and a file attachment annotation',
    pdf: () =>
      buildTextPdf({
        catalog: '/Names << /EmbeddedFiles << /Names [(evil.exe) 100 0 R] >> >>',
        page: annots(102),
        objects: [
          { num: 100, body: '<< /Type /Filespec /F (evil.exe) /EF << /F 101 0 R >> >>' },
          { num: 101, body: '<< /Type /EmbeddedFile >>', stream: 'MZ payload' },
          {
            num: 102,
            body: '<< /Type /Annot /Subtype /FileAttachment /Rect [0 0 10 10] /FS 100 0 R >>',
          },
        ],
      }),
    kinds: { 'pdf-embedded-file': 2 },
  },
  {
    name: 'RichMedia, 3D, Screen, Movie and Sound annotations',
    pdf: () =>
      buildTextPdf({
        page: annots(100, 101, 102, 103, 104),
        objects: ['RichMedia', '3D', 'Screen', 'Movie', 'Sound'].map((subtype, index) => ({
          num: 100 + index,
          body: `<< /Type /Annot /Subtype /${subtype} /Rect [0 0 10 10] >>`,
        })),
      }),
    kinds: { 'pdf-action': 5 },
  },
  {
    name: 'XFA (AcroForm fields, values and appearances kept)',
    pdf: () =>
      buildTextPdf({
        catalog: '/AcroForm << /Fields [100 0 R] /XFA 101 0 R >> /NeedsRendering true',
        page: annots(100),
        objects: [
          {
            num: 100,
            body: '<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Alice) /Rect [72 500 300 520] /AP << /N 102 0 R >> >>',
          },
          { num: 101, body: '<< >>', stream: '<xdp:xdp><script>app.alert(1)</script></xdp:xdp>' },
          {
            num: 102,
            body: '<< /Type /XObject /Subtype /Form /BBox [0 0 228 20] >>',
            stream: '0 0 1 rg 0 0 228 20 re f',
          },
        ],
      }),
    kinds: { 'pdf-xfa': 1, 'hidden-data': 1 },
  },
  {
    name: 'names written with #xx escapes',
    pdf: () =>
      buildTextPdf({
        catalog: '/Open#41ction << /#53 /Java#53cript /J#53 (app.alert\\(1\\)) >>',
        page: `/#41A << /O << /S /#4caunch /F (calc.exe) >> >>`,
      }),
    kinds: { 'pdf-javascript': 1, 'pdf-action': 1 },
  },
  {
    name: 'indirect action dictionaries and an indirect action type',
    pdf: () =>
      buildTextPdf({
        catalog: '/OpenAction 100 0 R',
        page: annots(102),
        objects: [
          { num: 100, body: '<< /S 101 0 R /JS 103 0 R >>' },
          { num: 101, body: '/JavaScript' },
          { num: 102, body: link('100 0 R') },
          { num: 103, body: '<< >>', stream: deflateSync('app.alert(1)') },
        ],
      }),
    kinds: { 'pdf-javascript': 2 },
  },
  {
    name: 'JavaScript inside a compressed object stream with a cross-reference stream',
    pdf: () =>
      buildTextPdf({
        catalog: `/OpenAction 100 0 R`,
        objects: [{ num: 100, body: JS }],
        layout: { compressed: [1, 100], xref: 'stream' },
      }),
    kinds: { 'pdf-javascript': 1 },
  },
  {
    name: 'JavaScript added by an incremental update',
    pdf: () =>
      buildTextPdf({
        layout: {
          updates: [
            { objects: [{ num: 1, body: `<< /Type /Catalog /Pages 2 0 R /OpenAction ${JS} >>` }] },
          ],
        },
      }),
    kinds: { 'pdf-javascript': 1 },
  },
];

describe('the PDF rebuild', () => {
  it('rebuilds a clean PDF unchanged in text and pixels, with nothing to report', async () => {
    const input = buildTextPdf({ pages: ['First page', 'Second page (with parentheses)'] });
    const outcome = cleaned(await run(input));
    expect(outcome.findings).toEqual([]);
    await expectSafeRebuild(input, outcome.bytes);
  });

  describe.each(ACTIVE)('removes $name', ({ pdf, kinds: expected }) => {
    it('and counts it; qpdf finds none of it; text, pixels and idempotence hold', async () => {
      const input = pdf();
      expect(activeContent(input).length + (input.includes('ObjStm') ? 1 : 0)).toBeGreaterThan(0);
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toMatchObject(expected);
      await expectSafeRebuild(input, outcome.bytes);
    });
  });

  it('keeps plain go-to links, https links, field values and appearances', async () => {
    const input = buildTextPdf({
      catalog: '/OpenAction [10 0 R /Fit] /AcroForm << /Fields [100 0 R] /XFA (x) >>',
      page: annots(100, 101, 102),
      objects: [
        {
          num: 100,
          body: '<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Alice) /Rect [72 500 300 520] >>',
        },
        { num: 101, body: link('<< /S /GoTo /D [10 0 R /Fit] >>') },
        { num: 102, body: link('<< /S /URI /URI (https://example.com/) >>') },
      ],
    });
    const output = cleaned(await run(input)).bytes;
    const json = JSON.stringify(qpdfObjects(file(output)));
    expect(json).toContain('"/OpenAction"');
    expect(json).toContain('"/V":"u:Alice"');
    expect(json).toContain('"/S":"/GoTo"');
    expect(json).toContain('"/URI":"u:https://example.com/"');
  });

  it('keeps only the allowlisted keys of pages, annotations and kept actions', async () => {
    const input = buildTextPdf({
      page: `/PZ 1 /Tabs /S /AppPrivate (page secret) ${annots(100, 101)}`,
      objects: [
        {
          num: 100,
          body: '<< /Type /Annot /Subtype /Text /Rect [72 500 90 520] /Contents (note) /Open false /ExData << /Type /ExData /Subtype /Markup3D >> /Vendor (annot secret) >>',
        },
        {
          // No /Type: an annotation by its subtype and /Rect; the action has no /Type either.
          num: 101,
          body: '<< /Subtype /Link /Rect [72 600 300 650] /Border [0 0 0] /A << /S /URI /URI (https://example.com/) /Payload (action secret) >> >>',
        },
      ],
    });
    const outcome = cleaned(await run(input));
    expect(kinds(outcome)).toEqual({ 'hidden-data': 4 });
    const output = Buffer.from(outcome.bytes);
    for (const secret of ['page secret', 'annot secret', 'action secret', 'Markup3D']) {
      expect(output.includes(secret)).toBe(false);
    }
    const json = JSON.stringify(qpdfObjects(file(output)));
    for (const kept of ['"/PZ":1', '"/Tabs":"/S"', '"/Contents":"u:note"', '"/Open":false']) {
      expect(json).toContain(kept);
    }
    expect(json).toContain('"/URI":"u:https://example.com/"');
    await expectSafeRebuild(input, output);
  });

  it('is deterministic: the same input gives the same bytes, with a content-derived /ID', async () => {
    const input = buildTextPdf({
      catalog: `/OpenAction ${JS}`,
      trailer: '/ID [<01> <02>] /Info << /Author (me) >>',
    });
    const first = cleaned(await run(input));
    const second = cleaned(await run(input));
    expect(Buffer.compare(Buffer.from(first.bytes), Buffer.from(second.bytes))).toBe(0);
    const trailer = Buffer.from(first.bytes).toString('latin1');
    expect(trailer).toMatch(/\/ID \[<[0-9a-f]{32}> <[0-9a-f]{32}>\]/);
    expect(trailer).not.toContain('/Info');
    expect(kinds(first)).toMatchObject({ 'document-metadata': 1 });
  });

  it('writes only reachable objects, no history and nothing around the file', async () => {
    const input = buildTextPdf({
      objects: [{ num: 100, body: '<< /Orphan (secret) >>' }],
      layout: {
        prefix: 'MZ\0\0junk before the header',
        suffix: 'trailing payload',
        updates: [
          { objects: [{ num: 3, body: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>' }] },
        ],
      },
    });
    const output = Buffer.from(cleaned(await run(input)).bytes);
    expect(output.subarray(0, 5).toString()).toBe('%PDF-');
    expect(output.toString('latin1').endsWith('%%EOF\n')).toBe(true);
    expect(output.toString('latin1').match(/%%EOF/g)).toHaveLength(1);
    expect(output.includes('secret')).toBe(false);
    expect(output.includes('trailing payload')).toBe(false);
    expect(qpdfCheck(output)).toBe(0);
  });

  describe('encryption', () => {
    const plain = buildTextPdf({ pages: ['Encrypted text'], catalog: `/OpenAction ${JS}` });
    /** The rebuild of an encrypted copy of `plain`: its script gone, unencrypted, same text. */
    const expectDecryptedRebuild = async (encrypted: Uint8Array): Promise<void> => {
      const outcome = cleaned(await run(encrypted));
      expect(kinds(outcome)).toEqual({ 'pdf-javascript': 1 });
      expect(execFileSync('qpdf', ['--show-encryption', file(outcome.bytes)]).toString()).toContain(
        'File is not encrypted',
      );
      expect(text(outcome.bytes)).toBe(text(plain));
      expect(activeContent(outcome.bytes)).toEqual([]);
    };
    it.each([
      ['RC4 40-bit', ['--allow-weak-crypto', '--encrypt', '', 'owner', '40']],
      ['RC4 128-bit', ['--allow-weak-crypto', '--encrypt', '', 'owner', '128', '--use-aes=n']],
      ['AES-128', ['--encrypt', '', 'owner', '128', '--use-aes=y']],
      ['AES-256', ['--encrypt', '', 'owner', '256']],
    ])('decrypts %s with an empty user password and rebuilds unencrypted', async (_, args) => {
      const encrypted = file(new Uint8Array());
      execFileSync('qpdf', [...args, '--', file(plain), encrypted]);
      const input = readFileSync(encrypted);
      await expectDecryptedRebuild(input);
    });

    it.each([
      ['', false],
      [' in object streams', true],
    ])(
      'opens AES-256 whose owner password is empty%s (the user password is not) and rebuilds it unencrypted',
      async (_, objectStreams) => {
        // PDF 2.0 has no fallback from an empty owner password to the user's (ISO 32000-2
        // 7.6.4.4.8), so any reader opens this file without asking; qpdf calls it insecure.
        const encrypted = encryptPdf(plain, {
          user: 'secret',
          owner: '',
          bits: 256,
          objectStreams,
        });
        expect(execFileSync('qpdf', ['--show-encryption', file(encrypted)]).toString()).toContain(
          'Supplied password is owner password',
        );
        await expectDecryptedRebuild(encrypted);
      },
    );

    it.each(['RC4-40', 'RC4-128', 'AES-128'] as const)(
      'opens %s whose owner password is empty (the user password is not) and rebuilds it unencrypted',
      async (algorithm) => {
        // Writers fall back to the user password when given no owner password (ISO 32000-1
        // 7.6.3.4 Algorithm 3 step a), so no tool writes this on request; the padded empty
        // password (Algorithm 2 step a: the padding string itself) is what a reader tries.
        const pad = '28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a';
        const document = await PDFDocument.load(plain, { updateMetadata: false });
        document.encrypt({
          userPassword: 'secret',
          ownerPassword: Buffer.from(pad, 'hex').toString('latin1'),
          algorithm,
          allowWeakCryptography: true,
        });
        const encrypted = await document.save({ useObjectStreams: false });
        const shown = execFileSync('qpdf', ['--show-encryption', file(encrypted)]).toString();
        expect(shown).toContain('Supplied password is owner password');
        expect(shown).toContain('User password = secret');
        await expectDecryptedRebuild(encrypted);
      },
    );

    it('refuses an empty owner password whose strings and streams use different crypt filters', async () => {
      // Strings left unencrypted (/StrF /Identity) while streams are AES-256; /AuthEvent /DocOpen
      // (the default) makes room for it, so every offset after the dictionary stays right.
      const original = encryptPdf(plain, { user: 'secret', owner: '', bits: 256 }).toString(
        'latin1',
      );
      const edited = original
        .replace('/AuthEvent /DocOpen ', '')
        .replace('/StrF /StdCF', `/StrF /Identity${' '.repeat(17)}`);
      expect(edited).not.toBe(original);
      expect(edited.length).toBe(original.length);
      const bytes = Buffer.from(edited, 'latin1');
      const outcome = await run(bytes);
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'password_protected' });
      expect(outcome.status === 'rejected' && outcome.detail).toContain(
        'strings (Identity) and streams (AESV3) differently',
      );
    });

    it('rejects a PDF that needs a user password as password_protected', async () => {
      const encrypted = file(new Uint8Array());
      execFileSync('qpdf', ['--encrypt', 'secret', 'owner', '256', '--', file(plain), encrypted]);
      const outcome = await run(readFileSync(encrypted));
      expect(outcome).toMatchObject({ status: 'rejected' });
      expect(['password_protected']).toContain((outcome as { reason?: string }).reason);
    });
  });

  describe('unencrypted wrappers around an encrypted payload (ISO 32000-2 7.6.7)', () => {
    const expectWrapperRefused = async (input: Uint8Array, filter = 'MicrosoftIRMServices') => {
      const outcome = await run(input);
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'password_protected' });
      expect(outcome.status === 'rejected' && outcome.detail).toBe(
        `the PDF is an unencrypted wrapper (ISO 32000-2 7.6.7) around an encrypted payload document "MicrosoftIRMServices Protected PDF.pdf", protected with the /${filter} cryptographic filter; its pages are only a cover, and the document cannot be opened without the filter's key`,
      );
    };

    it('refuses a protected PDF as Purview writes it, whose pages are only a cover', async () => {
      const input = buildPayloadWrapperPdf();
      // What a reader without the filter shows, and what a rebuild would have returned.
      expect(text(input)).toContain('This PDF file is protected.');
      await expectWrapperRefused(input);
    });

    it.each([
      ['listed only in /AF', { listedIn: 'af' }],
      ['listed only under /Names /EmbeddedFiles', { listedIn: 'embedded-files' }],
      ['with /EP and /AF as indirect objects', { indirect: true }],
      [
        'in an object stream with a cross-reference stream',
        { layout: { compressed: [1, 6, 8, 9], xref: 'stream' }, indirect: true },
      ],
    ] as const)('refuses the wrapper %s', async (_, options) => {
      await expectWrapperRefused(buildPayloadWrapperPdf(options));
    });

    it('names the cryptographic filter the payload uses', async () => {
      await expectWrapperRefused(
        buildPayloadWrapperPdf({ cryptoFilter: 'ACME_Rights' }),
        'ACME_Rights',
      );
    });

    it('reads the newest revision: an update that makes an attachment the payload, or drops it', async () => {
      const spec =
        '<< /Type /Filespec /F (MicrosoftIRMServices Protected PDF.pdf) /EF << /F 7 0 R >> /AFRelationship /EncryptedPayload /EP << /Type /EncryptedPayload /Subtype /MicrosoftIRMServices >> >>';
      await expectWrapperRefused(
        buildPayloadWrapperPdf({
          relationship: 'Data',
          layout: { updates: [{ objects: [{ num: 6, body: spec }] }] },
        }),
      );
      const unwrapped = buildPayloadWrapperPdf({
        layout: {
          updates: [{ objects: [{ num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' }] }],
        },
      });
      expect(cleaned(await run(unwrapped)).findings).toEqual([]);
    });

    it.each(['Data', 'Source', 'Alternative'])(
      'cleans an ordinary attachment (/AFRelationship /%s), removing it',
      async (relationship) => {
        const input = buildPayloadWrapperPdf({ relationship });
        const outcome = cleaned(await run(input));
        expect(kinds(outcome)).toMatchObject({ 'pdf-embedded-file': 1 });
        expect(text(outcome.bytes)).toContain('This PDF file is protected.');
        expect(execFileSync('pdfdetach', ['-list', file(outcome.bytes)]).toString()).toMatch(
          /^0 embedded files/,
        );
      },
    );
  });

  describe('page content damaged part-way', () => {
    const intact = buildMemoPdf();
    /** The decoded content stream of the rebuilt file's only page, as qpdf reads it. */
    const pageContent = (bytes: Uint8Array): string => {
      const path = file(bytes);
      const json = JSON.parse(
        execFileSync('qpdf', ['--json', '--json-key=pages', path]).toString(),
      ) as {
        pages: { contents: string[] }[];
      };
      const refs = json.pages[0]?.contents ?? [];
      expect(refs).toHaveLength(1);
      const ref = refs[0] ?? '';
      const object = `--show-object=${ref.split(' ')[0] ?? ''}`;
      return execFileSync('qpdf', [object, '--filtered-stream-data', path]).toString('latin1');
    };
    const balance = (content: string, open: string, close: string): number =>
      content.split(/\s+/).filter((token) => token === open).length -
      content.split(/\s+/).filter((token) => token === close).length;

    it.each([
      'string',
      'hex-string',
      'array',
      'dictionary',
      'inline-image',
      'stray-parenthesis',
    ] as const)(
      'keeps what readers draw before damage of kind %s, closed well-formed, and counts it',
      async (damage) => {
        const input = buildMemoPdf({ damageAfterLine: 3, damage });
        // poppler, an independent reader, draws the lines before the damage.
        const shown = text(input);
        for (const line of ['Quarterly review', 'Returns fell after'])
          expect(shown).toContain(line);
        const outcome = cleaned(await run(input));
        expect(kinds(outcome)).toEqual({ 'damaged-content': 1 });
        expect(qpdfCheck(outcome.bytes)).toBe(0);
        const rebuiltText = text(outcome.bytes);
        for (const line of ['Quarterly review', 'Sales rose', 'Two new', 'Returns fell after']) {
          expect(rebuiltText).toContain(line);
        }
        expect(rebuiltText).not.toMatch(/Staff turnover|sentence was cut|Kerned/);
        // poppler reads the input with syntax errors, the copy without any.
        expect(spawnSync('pdftotext', [file(outcome.bytes), '-']).stderr.toString()).toBe('');
        const content = pageContent(outcome.bytes);
        expect(balance(content, 'q', 'Q')).toBe(0);
        expect(balance(content, 'BT', 'ET')).toBe(0);
        expect(balance(content, 'BDC', 'EMC')).toBe(0);
        // The salvaged copy is intact: a second pass finds nothing and changes nothing.
        const again = cleaned(await run(outcome.bytes));
        expect(again.findings).toEqual([]);
        expect(Buffer.compare(Buffer.from(again.bytes), Buffer.from(outcome.bytes))).toBe(0);
      },
    );

    it('closes the text object, marked content and graphics state the cut left open, innermost first', async () => {
      const outcome = cleaned(await run(buildMemoPdf({ damageAfterLine: 3, damage: 'string' })));
      expect(pageContent(outcome.bytes)).toMatch(/72 648 Td\nET\nEMC\nQ\n$/);
    });

    it('salvages a cut after several KiB as readers do, and leaves an intact page alone', async () => {
      const lines = Array.from(
        { length: 36 },
        (_, index) => `Line ${index + 1}: ${'the minutes of the meeting continue '.repeat(5)}`,
      );
      const input = buildMemoPdf({ lines, damageAfterLine: 33 });
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toEqual({ 'damaged-content': 1 });
      expect(pageContent(outcome.bytes).length).toBeGreaterThan(7_000);
      expect(text(outcome.bytes)).toContain('Line 34: the minutes');
      expect(text(outcome.bytes)).not.toContain('Line 35');
      expect(cleaned(await run(intact)).findings).toEqual([]);
    });

    it('reads a page split over several streams as one: a dictionary may span two', async () => {
      const input = buildMemoPdf({ splitAtLines: [2, 5] });
      const outcome = cleaned(await run(input));
      expect(outcome.findings).toEqual([]);
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      expect(text(outcome.bytes)).toBe(text(intact));
    });

    it('salvages a page split over several streams up to the damage, into one stream', async () => {
      const input = buildMemoPdf({ splitAtLines: [2, 5], damageAfterLine: 3, damage: 'array' });
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toEqual({ 'damaged-content': 1 });
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      expect(spawnSync('pdftotext', [file(outcome.bytes), '-']).stderr.toString()).toBe('');
      const shown = text(outcome.bytes);
      expect(shown).toContain('Returns fell after');
      expect(shown).not.toContain('Kerned');
      expect(pageContent(outcome.bytes)).toMatch(/^q 1 0 0 1 0 0 cm\n[^]*\nET\nEMC\nQ\n$/);
    });

    it('bounds a page that lists one stream many times by the content ceiling', async () => {
      const content = deflateSync(Buffer.from('0 0 m 10 10 l S\n'.repeat(65_536), 'latin1'));
      const input = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
          { num: 2, body: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>' },
          {
            num: 3,
            body: `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [${'4 0 R '.repeat(200)}] >>`,
          },
          { num: 4, body: '<< /Filter /FlateDecode >>', stream: content },
        ],
        trailer: '/Root 1 0 R',
      });
      const outcome = await run(input, 'f.pdf', { maxBytes: 16 * 1024 * 1024 });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
      if (outcome.status === 'rejected') expect(outcome.detail).toMatch(/past the 16 MiB ceiling/);
    });

    it('refuses a page with no complete operator before the damage as invalid_file', async () => {
      const outcome = await run(buildMemoPdf({ damageFirst: true }));
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
      expect(outcome.status === 'rejected' && outcome.detail).toBe(
        'a PDF page content stream is damaged (an unterminated string at byte 0) before any complete operator: nothing of it can be drawn',
      );
    });
  });

  describe('damage and abuse', () => {
    it('repairs a broken or missing cross-reference table', async () => {
      for (const xref of ['broken', 'none'] as const) {
        const input = buildTextPdf({ layout: { xref } });
        const output = cleaned(await run(input)).bytes;
        expect(qpdfCheck(output)).toBe(0);
        expect(text(output)).toContain('Hello, world');
      }
    });

    it('recovers a catalogue written into the trailer, a direct page and a missing /Type', async () => {
      const content = 'BT /F1 24 Tf 72 700 Td (Sloppy) Tj ET';
      const input = buildRawPdf({
        version: '1.4',
        objects: [
          {
            num: 1,
            body: '<< /Kids [<< /Parent 1 0 R /MediaBox [0 0 612 792] /Contents 2 0 R /Resources << /Font << /F1 3 0 R >> >> >>] /Count 1 >>',
          },
          { num: 2, body: '<< >>', stream: content },
          { num: 3, body: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>' },
        ],
        trailer: '/Root << /Pages 1 0 R /OpenAction << /S /JavaScript /JS (app.alert\\(1\\)) >> >>',
        xref: 'none',
      });
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toMatchObject({ 'pdf-javascript': 1 });
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      expect(text(outcome.bytes)).toContain('Sloppy');
    });

    it('rebuilds a proof of concept without a page tree as one blank page, its script gone', async () => {
      // The corkami shape: an empty direct /Pages, the script on the catalogue's /AA, no xref.
      const input = Buffer.from(
        "%PDF-\nobj<<>>trailer<</Root<</Pages<<>>/AA<</WC<</S//JS(app.alert('x');)>>>>>>>>",
        'latin1',
      );
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toEqual({ 'pdf-javascript': 1 });
      expect(activeContent(outcome.bytes)).toEqual([]);
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      const info = execFileSync('pdfinfo', [file(outcome.bytes)]).toString();
      expect(info).toMatch(/Pages:\s+1\n/);
      expect(info).toMatch(/612 x 792/);
      expect(
        Buffer.compare(
          Buffer.from(cleaned(await run(outcome.bytes)).bytes),
          Buffer.from(outcome.bytes),
        ),
      ).toBe(0);
    });

    it('replaces a page tree that is an action by one blank page, counting the action', async () => {
      const input = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R /OpenAction 2 0 R >>' },
          { num: 2, body: '<< /S /JavaScript /JS (app.alert\\(1\\)) >>' },
        ],
        trailer: '/Root 1 0 R',
      });
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toEqual({ 'pdf-javascript': 2 });
      expect(activeContent(outcome.bytes)).toEqual([]);
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      expect(execFileSync('pdfinfo', [file(outcome.bytes)]).toString()).toMatch(/Pages:\s+1\n/);
    });

    it('drops an action standing among the kids and rewrites every wrong /Count', async () => {
      const page = (num: number, contents: number, label: string): RawPdfObject[] => [
        {
          num,
          body: `<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] /Contents ${contents} 0 R /Resources << /Font << /F1 9 0 R >> >> >>`,
        },
        { num: contents, body: '<< >>', stream: `BT /F1 24 Tf 72 700 Td (${label}) Tj ET` },
      ];
      const input = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
          // Counts that lie: readers trusting them would show 7 pages, or 1.
          { num: 2, body: '<< /Type /Pages /Kids [3 0 R 8 0 R] /Count 7 >>' },
          { num: 3, body: '<< /Type /Pages /Parent 2 0 R /Kids [4 0 R 6 0 R] /Count 1 >>' },
          ...page(4, 5, 'Page one'),
          ...page(6, 7, 'Page two'),
          { num: 8, body: '<< /S /Launch /F (calc.exe) >>' },
          { num: 9, body: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>' },
        ],
        trailer: '/Root 1 0 R',
      });
      const outcome = cleaned(await run(input));
      expect(kinds(outcome)).toEqual({ 'pdf-action': 1 });
      expect(activeContent(outcome.bytes)).toEqual([]);
      expect(qpdfCheck(outcome.bytes)).toBe(0);
      expect(execFileSync('pdfinfo', [file(outcome.bytes)]).toString()).toMatch(/Pages:\s+2\n/);
      const pages = text(outcome.bytes);
      expect(pages).toContain('Page one');
      expect(pages).toContain('Page two');
      const counts = Object.values(qpdfObjects(file(outcome.bytes)))
        .map((object) => (object as { value?: unknown }).value)
        .filter(
          (value): value is Record<string, unknown> =>
            typeof value === 'object' &&
            value !== null &&
            (value as Record<string, unknown>)['/Type'] === '/Pages',
        )
        .map((value) => value['/Count']);
      expect(counts.sort()).toEqual([2, 2]);
    });

    it('keeps inline image data as it is, whatever bytes it holds', async () => {
      // Inline image data may hold any byte, ")" included (ISO 32000-1 8.9.7).
      const inlineImage = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
          { num: 2, body: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>' },
          {
            num: 3,
            body: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
          },
          {
            num: 4,
            body: '<< >>',
            stream: 'q 10 0 0 10 72 700 cm BI /W 2 /H 1 /CS /G /BPC 8 ID )( EI Q',
          },
        ],
        trailer: '/Root 1 0 R',
      });
      expect(cleaned(await run(inlineImage)).findings).toEqual([]);
    });

    it('reads a file whose last startxref lost its offset (a botched tail)', async () => {
      const input = buildTextPdf({ pages: ['The tail was cut'] });
      const at = input.lastIndexOf('startxref');
      const damaged = input.subarray(0, at + 'startxref\n'.length);
      const outcome = cleaned(await run(damaged));
      expect(text(outcome.bytes)).toBe(text(input));
      expect(qpdfCheck(outcome.bytes)).toBe(0);
    });

    it('writes hex strings as digits only, and refuses a damaged dictionary read as one', async () => {
      // ISO 32000-1 7.3.4.3: white space inside is ignored; a missing last digit is 0.
      const spaced = buildTextPdf({
        page: annots(100),
        objects: [
          {
            num: 100,
            body: '<< /Type /Annot /Subtype /Text /Rect [72 500 90 520] /Contents <48 65 6C\n6C 6F 2> >>',
          },
        ],
      });
      const output = Buffer.from(cleaned(await run(spaced)).bytes);
      expect(output.toString('latin1')).toContain('<48656C6C6F20>');
      expect(qpdfCheck(output)).toBe(0);
      // A flipped byte turns a font's `<<` into `<`: the parser reads `< /Type ... >` as a hex
      // string. Such a file is invalid_file, never an output our own verify refuses.
      const damaged = Buffer.from(
        buildTextPdf().toString('latin1').replace('<< /Type /Font', '<  /Type /Font'),
        'latin1',
      );
      expect(await run(damaged)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    });

    it('rejects a file cut before its catalogue and pages as invalid_file', async () => {
      const input = buildTextPdf();
      const outcome = await run(input.subarray(0, 40));
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    });

    it('rejects a flate bomb inside a stream as file_too_large', async () => {
      const bomb = deflateSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
      const input = buildTextPdf({
        page: '/Resources << /XObject << /X 100 0 R >> >>',
        objects: [
          {
            num: 100,
            body: '<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Filter /FlateDecode >>',
            stream: bomb,
          },
        ],
      });
      const outcome = await run(input, 'f.pdf', { maxBytes: 4 * 1024 * 1024 });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    });

    it('keeps a stream that expands a thousandfold to a few MiB: a ratio alone is not a bomb', async () => {
      // A blank page scanned to PDF: a white 2550 x 3300 greyscale image (8 MiB) that Flate
      // stores about 1030 times smaller, as the PDF/A files of scanners and archives do.
      const pixels = Buffer.alloc(2550 * 3300, 0xff);
      const image = deflateSync(pixels, { level: 9 });
      expect(pixels.length / image.length).toBeGreaterThan(1000);
      const input = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
          { num: 2, body: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>' },
          {
            num: 3,
            body: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>',
          },
          {
            num: 4,
            body: '<< /Type /XObject /Subtype /Image /Width 2550 /Height 3300 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode >>',
            stream: image,
          },
          { num: 5, body: '<< >>', stream: 'q 612 0 0 792 0 0 cm /Im0 Do Q\n' },
        ],
        trailer: '/Root 1 0 R',
      });
      const outcome = cleaned(await run(input));
      expect([0, 3]).toContain(qpdfCheck(outcome.bytes));
      const images = execFileSync('pdfimages', ['-list', file(outcome.bytes)]).toString();
      expect(images).toMatch(/\s2550\s+3300\s+gray\s/);
    });

    it('bounds streams that each stay under the expansion-ratio floor by the content ceiling', async () => {
      const bomb = deflateSync(Buffer.alloc(8 * 1024 * 1024), { level: 9 });
      const forms = [100, 101, 102, 103, 104];
      const input = buildTextPdf({
        page: `/Resources << /XObject << ${forms.map((num) => `/X${num} ${num} 0 R`).join(' ')} >> >>`,
        objects: forms.map((num) => ({
          num,
          body: '<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Filter /FlateDecode >>',
          stream: bomb,
        })),
      });
      const outcome = await run(input, 'f.pdf', { maxBytes: 32 * 1024 * 1024 });
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
      if (outcome.status === 'rejected') expect(outcome.detail).toMatch(/past the 32 MiB ceiling/);
    });

    it('rejects a stream past the expansion ratio once it decodes past 64 MiB', async () => {
      const bomb = deflateSync(Buffer.alloc(80 * 1024 * 1024), { level: 9 });
      const input = buildTextPdf({
        page: '/Resources << /XObject << /X 100 0 R >> >>',
        objects: [
          {
            num: 100,
            body: '<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Filter /FlateDecode >>',
            stream: bomb,
          },
        ],
      });
      const outcome = await run(input);
      expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
      if (outcome.status === 'rejected') {
        expect(outcome.detail).toMatch(/a PDF stream expands \d+ times to 80 MiB/);
      }
    });

    it('rejects a recursive page tree and absurd nesting as invalid_file, without hanging', async () => {
      const recursive = buildRawPdf({
        objects: [
          { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
          { num: 2, body: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>' },
          { num: 3, body: '<< /Type /Pages /Kids [2 0 R] /Count 1 >>' },
        ],
        trailer: '/Root 1 0 R',
      });
      expect(await run(recursive)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
      const deep = buildTextPdf({
        catalog: `/Deep ${'['.repeat(5000)}${']'.repeat(5000)}`,
        page: `/X ${'['.repeat(5000)}${']'.repeat(5000)}`,
      });
      expect(await run(deep)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    });

    it('survives reference cycles between actions', async () => {
      const input = buildTextPdf({
        page: annots(100),
        objects: [
          { num: 100, body: link('101 0 R') },
          { num: 101, body: '<< /S /GoTo /D [10 0 R /Fit] /Next 102 0 R >>' },
          { num: 102, body: '<< /S /GoTo /D [10 0 R /Fit] /Next 101 0 R >>' },
        ] satisfies RawPdfObject[],
      });
      const output = cleaned(await run(input)).bytes;
      expect(qpdfCheck(output)).toBe(0);
    });

    it('rejects a stream with an unknown filter as invalid_file (README rule)', async () => {
      const input = buildTextPdf({
        page: '/Resources << /XObject << /X 100 0 R >> >>',
        objects: [
          {
            num: 100,
            body: '<< /Type /XObject /Subtype /Form /BBox [0 0 1 1] /Filter /Evil >>',
            stream: 'x',
          },
        ],
      });
      expect(await run(input)).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    });
  });

  it('honours an organisation policy that rejects a kind', async () => {
    const outcome = await disarm(
      { bytes: buildTextPdf({ catalog: `/OpenAction ${JS}` }), fileName: 'f.pdf' },
      { policy: { 'pdf-javascript': 'reject' } },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });
});

describe('PDF structures the fuzzer found (npm run fuzz -- pdf)', () => {
  it('refuses a catalogue listed among the page tree kids instead of writing it as a page', async () => {
    // The rebuild retyped the catalogue into a page and wrote a root that was a /Page; verify
    // then refused its own output (ERR_VERIFY_FAILED) where the file deserves a rejection.
    const input = buildRawPdf({
      objects: [
        { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
        { num: 2, body: '<< /Type /Pages /Kids [1 0 R] /Count 1 >>' },
      ],
      trailer: '/Root 1 0 R',
    });
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toBe(
      'a PDF page tree node is a /Catalog dictionary',
    );
  });

  it('refuses a trailer whose /Root is a page, not a catalogue', async () => {
    // With no catalogue anywhere for the parser to recover, the page became the root.
    const input = buildRawPdf({
      objects: [
        { num: 2, body: '<< /Type /Pages /Kids [3 0 R] /Count 1 >>' },
        { num: 3, body: '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>' },
      ],
      trailer: '/Root 3 0 R',
    });
    const outcome = await run(input);
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toBe(
      "the PDF trailer's /Root is a /Page dictionary, not a document catalogue",
    );
  });
});

describe('the FDF rebuild', () => {
  it('keeps field values and removes script, actions, embedded FDFs and attachments', async () => {
    const input = buildFdf({
      fields: { name: 'Alice', city: 'Paris' },
      field: `/AA << /K ${JS} >> /A << /S /Launch /F (calc.exe) >>`,
      fdf: `/JavaScript << /Before (app.alert\\(1\\)) /Doc [(x) ${JS}] >> /EmbeddedFDFs [100 0 R] /Annots [101 0 R]`,
      objects: [
        { num: 100, body: '<< /Type /Filespec /F (x.fdf) /EF << /F 102 0 R >> >>' },
        {
          num: 101,
          body: '<< /Type /Annot /Subtype /FileAttachment /Page 0 /Rect [0 0 9 9] /FS 100 0 R >>',
        },
        { num: 102, body: '<< /Type /EmbeddedFile >>', stream: '%FDF-1.2 payload' },
      ],
    });
    expect(findPdfActiveContent(file(input, '.fdf')).length).toBeGreaterThan(0);
    const outcome = cleaned(await run(input, 'f.fdf'));
    expect(kinds(outcome)).toMatchObject({
      'pdf-javascript': 3,
      'pdf-action': 2,
      'pdf-embedded-file': 2,
    });
    const output = Buffer.from(outcome.bytes);
    expect(output.subarray(0, 9).toString()).toBe('%FDF-1.2\n');
    expect(findPdfActiveContent(file(output, '.fdf'))).toEqual([]);
    const json = JSON.stringify(qpdfObjects(file(output, '.fdf')));
    expect(json).toContain('"/V":"u:Alice"');
    expect(json).toContain('"/V":"u:Paris"');
    const again = cleaned(await run(output, 'f.fdf'));
    expect(again.findings).toEqual([]);
    expect(Buffer.compare(Buffer.from(again.bytes), output)).toBe(0);
  });

  it('rejects an FDF without its catalogue as invalid_file', async () => {
    const input = buildFdf();
    const outcome = await run(input.subarray(0, input.indexOf('1 0 obj')), 'f.fdf');
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });
});

describe('verify before release for PDF', () => {
  const context = {} as EngineContext;
  const input = {} as SourcedFile;
  const checkOf = async (bytes: Uint8Array): Promise<string | undefined> => {
    try {
      await verifyPdf({ content: memorySource(bytes), findings: [] }, input, context);
      return undefined;
    } catch (error) {
      if (error instanceof VerifyFailure) return error.check;
      throw error;
    }
  };

  it('accepts what the rebuild writes', async () => {
    const output = cleaned(await run(buildTextPdf())).bytes;
    expect(await checkOf(output)).toBeUndefined();
  });

  it('fails an output with script, actions, embedded files, XFA or bytes after the end', async () => {
    const output = Buffer.from(cleaned(await run(buildTextPdf())).bytes);
    const edit = (from: string, to: string): Buffer =>
      Buffer.from(output.toString('latin1').replace(from, to.padEnd(from.length, ' ')), 'latin1');
    const withFont = (replacement: string): Buffer => edit('/BaseFont /Helvetica', replacement);
    expect(await checkOf(withFont('/JS (x)'))).toBe('pdf.no-javascript');
    expect(await checkOf(withFont('/S /Launch'))).toBe('pdf.no-actions');
    expect(await checkOf(withFont('/AA << >>'))).toBe('pdf.no-actions');
    expect(await checkOf(withFont('/EF << >>'))).toBe('pdf.no-embedded-files');
    expect(await checkOf(withFont('/XFA 0'))).toBe('pdf.no-xfa');
    expect(await checkOf(withFont('/Java#53cript 0'))).toBe('pdf.no-javascript');
    expect(await checkOf(edit('/Type /Font', '/Type /3D'))).toBe('pdf.no-active-annotations');
    expect(await checkOf(edit('/Subtype /Type1', '/Subtype /Sound'))).toBe(
      'pdf.no-active-annotations',
    );
    expect(await checkOf(edit('/MediaBox', '/MediaBoy'))).toBe('pdf.allowlist');
    expect(await checkOf(Buffer.concat([output, Buffer.from('tail')]))).toBe('pdf.structure');
    expect(await checkOf(output.subarray(0, output.length - 30))).toBe('pdf.structure');
  });
});
