/**
 * Metafile pictures: rebuilt record by record, checked with readers that share no code with the
 * rebuild — libEMF's `printemf` (it names every record type it knows and warns with the number
 * of any other) and libwmf's `wmf2svg` (it draws the picture) — and through a Word document whose
 * embedded object is shown by one, converted by LibreOffice.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildEmf, buildWmf, buildWordDocument, seededRandom } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../../../disarm.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import { FindingTally } from '../../../findings.ts';
import { cleaned, findingsOf } from '../../../test-support.ts';
import { checkMetafile, rebuildMetafile, type MetafileKind } from './metafile.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(240_000) });

const LIMITS = { maxPixels: 100_000_000, maxDecodeBytes: 2 ** 30 };
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'disarm-metafile-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function rebuilt(bytes: Uint8Array, kind: MetafileKind): { bytes: Uint8Array; findings: object } {
  const findings = new FindingTally();
  const out = rebuildMetafile(bytes, kind, LIMITS, findings);
  return {
    bytes: out,
    findings: Object.fromEntries(findings.toArray().map((f) => [f.kind, f.count])),
  };
}

function refusal(bytes: Uint8Array, kind: MetafileKind): string {
  try {
    rebuildMetafile(bytes, kind, LIMITS, new FindingTally());
  } catch (error) {
    if (error instanceof Rejection && error.reason === 'invalid_file') return error.message;
    throw error;
  }
  throw new Error('the metafile was rebuilt');
}

/** What libEMF's printemf reads: the records it names, and the types it does not know. */
async function printemf(bytes: Uint8Array): Promise<{ named: string[]; unknown: number[] }> {
  const file = join(dir, `p${Math.random().toString(36).slice(2)}.emf`);
  await writeFile(file, bytes);
  const out = execFileSync('printemf', [file], { encoding: 'utf8', stdio: 'pipe' });
  const errors = execFileSync('sh', ['-c', `printemf "${file}" 2>&1 >/dev/null`], {
    encoding: 'utf8',
  });
  return {
    named: [...out.matchAll(/^\*([A-Z0-9]+)\*$/gm)].map((m) => m[1] ?? ''),
    unknown: [...errors.matchAll(/unknown record type (\d+)/g)].map((m) => Number(m[1])),
  };
}

/** What libwmf's wmf2svg draws: the text, and how many images and rectangles. */
async function wmf2svg(
  bytes: Uint8Array,
): Promise<{ text: string; images: number; rects: number }> {
  const file = join(dir, `w${Math.random().toString(36).slice(2)}.wmf`);
  await writeFile(file, bytes);
  execFileSync('wmf2svg', ['-o', `${file}.svg`, file], { stdio: 'pipe' });
  const svg = await readFile(`${file}.svg`, 'utf8');
  return {
    text: [...svg.matchAll(/>([^<]*)<\/text>/g)].map((m) => m[1]).join(''),
    images: svg.split('<image').length - 1,
    rects: svg.split('<rect').length - 1,
  };
}

const has = (bytes: Uint8Array, text: string): boolean =>
  Buffer.from(bytes).includes(Buffer.from(text, 'latin1')) ||
  Buffer.from(bytes).includes(Buffer.from(text, 'utf16le'));

describe('enhanced metafiles', () => {
  it('keeps the picture Office writes and drops its EMF+ comments and description', async () => {
    const input = buildEmf({ emfPlus: 'dual', description: 'Microsoft Office\0Picture 1' });
    const { bytes, findings } = rebuilt(input, 'emf');
    expect(findings).toEqual({ 'document-metadata': 1, 'hidden-data': 1 });
    const before = await printemf(input);
    const after = await printemf(bytes);
    // libEMF does not know EMR_COMMENT (70) or EMR_STRETCHDIBITS (81); it warns with their numbers.
    expect(before.unknown).toEqual([70, 81]);
    expect(after.unknown).toEqual([81]);
    expect(after.named).toEqual(before.named);
    expect(after.named).toEqual(expect.arrayContaining(['EXTTEXTOUTW', 'POLYGON16', 'RECTANGLE']));
    expect(has(bytes, 'Quarterly report.xlsx')).toBe(true);
    expect(has(bytes, 'Microsoft Office')).toBe(false);
    expect(checkMetafile(bytes, 'emf')).toBeUndefined();
    // A rebuilt picture comes back byte-identical, with nothing to report.
    const again = rebuilt(bytes, 'emf');
    expect(again.findings).toEqual({});
    expect(Buffer.compare(Buffer.from(again.bytes), Buffer.from(bytes))).toBe(0);
  });

  it('removes colour profiles named by path, printer escapes and private comments', async () => {
    const input = buildEmf({
      iccProfile: '\\\\attacker.example\\share\\x.icc',
      linkedBitmapProfile: '\\\\attacker.example\\p.icc',
      escape: 'ESCAPE-PAYLOAD',
      comment: 'PRIVATE-NOTE',
    });
    const { bytes, findings } = rebuilt(input, 'emf');
    expect(findings).toEqual({ 'external-relationship': 2, 'hidden-data': 1 });
    expect((await printemf(input)).unknown).toEqual([113, 81, 70, 106]);
    expect((await printemf(bytes)).unknown).toEqual([81]);
    for (const secret of ['attacker.example', 'ESCAPE-PAYLOAD', 'PRIVATE-NOTE']) {
      expect(has(input, secret)).toBe(true);
      expect(has(bytes, secret)).toBe(false);
    }
    expect(has(bytes, 'Quarterly report.xlsx')).toBe(true);
  });

  it('refuses what it cannot rebuild with confidence', () => {
    expect(refusal(buildEmf({ emfPlus: 'only' }), 'emf')).toMatch(/only with EMF\+/);
    expect(refusal(buildEmf({ bitmapOutsideRecord: true }), 'emf')).toMatch(/past the end/);
    expect(refusal(buildEmf({ handleOutOfRange: true }), 'emf')).toMatch(/handle 9 of 3/);
    const whole = buildEmf();
    expect(refusal(whole.subarray(0, whole.length - 20), 'emf')).toMatch(/no EMR_EOF/);
    expect(refusal(buildWmf(), 'emf')).toMatch(/not an enhanced metafile/);
    // A record type it does not know (EMR_GLSRECORD, OpenGL) refuses the picture.
    const gl = new Uint8Array([
      ...whole.subarray(0, 108),
      102,
      0,
      0,
      0,
      8,
      0,
      0,
      0,
      ...whole.subarray(108),
    ]);
    expect(refusal(gl, 'emf')).toMatch(/record type 102/);
  });
});

describe('Windows metafiles', () => {
  it('keeps the picture and drops escapes, as libwmf draws it', async () => {
    const input = buildWmf({ escape: 'ESCAPE-PAYLOAD' });
    const { bytes, findings } = rebuilt(input, 'wmf');
    expect(findings).toEqual({ 'hidden-data': 1 });
    expect(has(bytes, 'ESCAPE-PAYLOAD')).toBe(false);
    const drawn = await wmf2svg(bytes);
    expect(drawn).toEqual({ text: 'Budget.xls', images: 1, rects: 1 });
    expect(await wmf2svg(input)).toEqual(drawn);
    expect(checkMetafile(bytes, 'wmf')).toBeUndefined();
    expect(Buffer.compare(Buffer.from(rebuilt(bytes, 'wmf').bytes), Buffer.from(bytes))).toBe(0);
  });

  it('refuses truncated files and bitmaps the decoder refuses', () => {
    const whole = buildWmf();
    expect(refusal(whole.subarray(0, whole.length - 8), 'wmf')).toMatch(/META_EOF|runs past|words/);
    // The icon's header says 40x40 pixels: its bits are then far short of what it needs.
    const big = new Uint8Array(whole);
    const at = Buffer.from(big).indexOf(Buffer.from([40, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0]));
    big[at + 4] = 40;
    big[at + 8] = 40;
    expect(refusal(big, 'wmf')).toMatch(/bitmap bits/);
  });
});

describe('hostile mutations', () => {
  it('never crashes: each mutated picture is rebuilt (and reads back) or refused', () => {
    const random = seededRandom(20261126);
    for (const [kind, base] of [
      ['emf', buildEmf({ emfPlus: 'dual', escape: 'x' })],
      ['wmf', buildWmf({ escape: 'x' })],
    ] as const) {
      let kept = 0;
      for (let i = 0; i < 400; i++) {
        const bytes = new Uint8Array(base);
        for (let n = 1 + Math.floor(random() * 4); n > 0; n--) {
          bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
        }
        try {
          const out = rebuildMetafile(bytes, kind, LIMITS, new FindingTally());
          expect(checkMetafile(out, kind)).toBeUndefined();
          kept += 1;
        } catch (error) {
          expect(error).toBeInstanceOf(Rejection);
          expect((error as Rejection).reason).toMatch(/invalid_file|file_too_large/);
        }
      }
      // Most single-byte changes land in coordinates and colours, which stay pictures.
      expect(kept).toBeGreaterThan(100);
    }
  });
});

describe('in a Word document', () => {
  it('keeps an embedded object’s preview picture when the object goes, and LibreOffice shows it', async () => {
    for (const [kind, bytes] of [
      ['emf', buildEmf({ emfPlus: 'dual', escape: 'ESCAPE-PAYLOAD' })],
      ['wmf', buildWmf({ escape: 'ESCAPE-PAYLOAD' })],
    ] as const) {
      const input = await buildWordDocument('docx', {
        texts: ['See the attached workbook.'],
        oleObject: true,
        olePreview: { kind, bytes },
      });
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
      expect(findingsOf(outcome)).toEqual({ 'embedded-object': 1, 'hidden-data': 1 });
      const file = join(dir, `preview-${kind}.docx`);
      await writeFile(file, outcome.bytes);
      const listing = execFileSync('unzip', ['-Z1', file], { encoding: 'utf8' });
      expect(listing).toContain(`word/media/oleObject1.${kind}`);
      expect(listing).not.toContain('embeddings/');
      const picture = execFileSync('unzip', ['-p', file, `word/media/oleObject1.${kind}`]);
      expect(has(picture, 'ESCAPE-PAYLOAD')).toBe(false);
      const document = execFileSync('unzip', ['-p', file, 'word/document.xml'], {
        encoding: 'utf8',
      });
      expect(document).toContain('<v:imagedata r:id="rIdOlePreview"');
      expect(document).not.toContain('OLEObject');
      // LibreOffice lays the document out with the picture.
      execFileSync('soffice', ['--headless', '--convert-to', 'pdf', '--outdir', dir, file], {
        stdio: 'pipe',
        timeout: 120_000,
      });
      const text = execFileSync('pdftotext', [join(dir, `preview-${kind}.pdf`), '-'], {
        encoding: 'utf8',
      });
      expect(text).toContain('See the attached workbook.');
      // The picture's icon bitmap is drawn: poppler lists it among the PDF's images.
      const images = execFileSync('pdfimages', ['-list', join(dir, `preview-${kind}.pdf`)], {
        encoding: 'utf8',
      });
      expect(images.trim().split('\n').slice(2)).toHaveLength(1);
    }
  });
});
