import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

import { PDFDocument, ParseSpeeds, PDFRawStream } from '@cantoo/pdf-lib';
import type { PDFContext } from '@cantoo/pdf-lib';
import {
  buildMemoPdf,
  buildPdfWithAttachment,
  buildRawPdf,
  buildScannedPage,
  buildTextPdf,
  encryptPdf,
} from '@disarm/fixtures';
import type { RawPdfObject } from '@disarm/fixtures';
import { beforeAll, describe, expect, it } from 'vitest';

import { memorySink } from '../../_internal/byte-sink.ts';
import { FileSource, memorySource } from '../../_internal/byte-source.ts';
import { formatForFileName } from '../../formats.ts';
import { CountingSource, engineContext } from '../../test-support.ts';
import type { SourcedFile } from '../types.ts';
import { rebuildPdf } from './handler.ts';
import { buildSkeleton, StreamRanges } from './source.ts';

const PDF_FORMAT = formatForFileName('x.pdf');
if (PDF_FORMAT === undefined) throw new Error('pdf is not on the allowlist');

/** A PDF written by hand, every byte as given (no /Length added), with a classic table. */
function handMade(objects: readonly string[]): Buffer {
  let text = '%PDF-1.7\n';
  const offsets: number[] = [];
  for (const [index, object] of objects.entries()) {
    offsets.push(Buffer.byteLength(text, 'latin1'));
    text += `${index + 1} 0 obj\n${object}\nendobj\n`;
  }
  const xref = Buffer.byteLength(text, 'latin1');
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  text += offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`).join('');
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(text, 'latin1');
}

const CATALOG = '<< /Type /Catalog /Pages 2 0 R >>';
const PAGES = '<< /Type /Pages /Kids [3 0 R] /Count 1 >>';
const page = (contents: string, resources = ''): string =>
  `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents ${contents} /Resources << ${resources} >> >>`;
const DRAW = 'BT /F1 12 Tf 20 100 Td (streams and endstream words) Tj ET';

/** pdf-lib's own reading of the whole file, as the handler asks for it. */
async function parseWhole(bytes: Uint8Array): Promise<PDFContext> {
  return (
    await PDFDocument.load(bytes, {
      password: '',
      updateMetadata: false,
      throwOnInvalidObject: false,
      parseSpeed: ParseSpeeds.Fastest,
    })
  ).context;
}

/** Every indirect object as text; stream data by its hash, read from the source if left there. */
function describeObjects(context: PDFContext, ranges?: StreamRanges): Map<string, string> {
  const described = new Map<string, string>();
  for (const [ref, object] of context.enumerateIndirectObjects()) {
    if (object instanceof PDFRawStream) {
      const data = ranges?.contentsOf(object.contents) ?? object.contents;
      const hash = createHash('sha256').update(data).digest('hex');
      described.set(ref.toString(), `${object.dict.toString()} stream ${hash}`);
    } else {
      described.set(ref.toString(), object.toString());
    }
  }
  return described;
}

let jpeg: Buffer;
const cases: [string, () => Buffer][] = [];

beforeAll(async () => {
  jpeg = (await buildScannedPage({ width: 300, height: 420, seed: 3 })).jpeg;
  const image = `<< /Type /XObject /Subtype /Image /Width 300 /Height 420 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length ${jpeg.length} >>`;
  const withData = (dict: string, data: Uint8Array | string): string =>
    `${dict}\nstream\n${Buffer.from(data).toString('latin1')}\nendstream`;
  cases.push(
    ['a text PDF', () => buildTextPdf({ pages: ['one', 'two (2)', 'three'] })],
    [
      'object and cross-reference streams',
      () =>
        buildTextPdf({ pages: ['a', 'b'], layout: { xref: 'stream', compressed: [3, 10, 12] } }),
    ],
    ['an incremental update', () => buildMemoPdf({ lines: ['x', 'y'], splitAtLines: [1] })],
    ['damaged content', () => buildMemoPdf({ lines: ['x', 'y', 'z'], damageAfterLine: 1 })],
    ['an attachment', () => buildPdfWithAttachment('a.bin', Buffer.alloc(4000, 7))],
    ['junk before the header', () => buildTextPdf({ layout: { prefix: 'junk (\n' } })],
    [
      'a scanned page, direct /Length',
      () =>
        handMade([
          CATALOG,
          PAGES,
          page('4 0 R', '/XObject << /Im0 5 0 R >>'),
          withData(`<< /Length ${DRAW.length} >>`, DRAW),
          withData(image, jpeg),
        ]),
    ],
    [
      'a /Length by reference, none at all, and one that lies',
      () =>
        handMade([
          CATALOG,
          PAGES,
          page('[4 0 R 5 0 R 6 0 R]'),
          withData('<< /Length 7 0 R >>', DRAW),
          withData('<< /Filter /FlateDecode >>', deflateSync(DRAW)),
          withData('<< /Length 3 >>', DRAW),
          String(DRAW.length),
        ]),
    ],
    [
      'stream keywords inside data found by pdf-lib’s fallback',
      () =>
        handMade([
          CATALOG,
          PAGES,
          page('4 0 R'),
          withData('<< >>', `${DRAW}\nstream\nnested\nendstream\n${DRAW}`),
        ]),
    ],
    [
      'strings, names, comments and line ends a scan must follow',
      () =>
        handMade([
          CATALOG,
          PAGES,
          page('4 0 R'),
          `<< /A (x>>y \\) (z)) /B <ab cd> /C [<< /D 1 >>] /Len#67th ${DRAW.length} % c\n>> % note\nstream\r\n${DRAW}\r\nendstream`,
        ]),
    ],
    [
      'permissions-only encryption',
      () =>
        encryptPdf(buildTextPdf({ pages: ['a', 'b'] }), {
          user: '',
          owner: 'o',
          bits: 128,
          aes: true,
        }),
    ],
  );
});

describe('the skeleton of a PDF', () => {
  it('is read by pdf-lib as the whole file is, with every stream left in the source', async () => {
    for (const [name, build] of cases) {
      const bytes = build();
      const skeleton = buildSkeleton(memorySource(bytes), 1);
      const expected = describeObjects(await parseWhole(bytes));
      const encrypted = name.includes('encryption');
      expect(skeleton.ranges.count > 0, name).toBe(!encrypted);
      const parsed = await parseWhole(skeleton.bytes);
      expect(skeleton.ranges.adopt(parsed), name).toBe(true);
      expect(describeObjects(parsed, skeleton.ranges), name).toEqual(expected);
    }
  });

  it('keeps streams below the threshold, object streams and a file with /Encrypt as they are', () => {
    const text = buildTextPdf({ pages: ['a'], layout: { xref: 'stream', compressed: [3] } });
    expect(buildSkeleton(memorySource(text)).ranges.count).toBe(0);
    expect(buildSkeleton(memorySource(text)).bytes).toBe(text);
    // Past the threshold: bytes that do not compress.
    const big = createHash('sha512').update('seed').digest();
    const random = Buffer.concat(Array.from({ length: 2000 }, () => big));
    const objects: RawPdfObject[] = [
      { num: 1, body: CATALOG },
      { num: 2, body: '<< /Type /Pages /Kids [] /Count 0 >>' },
      { num: 4, body: '<< /Type /ObjStm /N 0 /First 0 >>', stream: random },
      { num: 5, body: '<< /Type /XRef /Size 1 >>', stream: random },
      { num: 6, body: '<< /Type 9 0 R >>', stream: random },
      { num: 7, body: '<< /Subtype /Image >>', stream: random },
    ];
    // Only the image stays in the source.
    const kept = buildSkeleton(memorySource(buildRawPdf({ objects, trailer: '/Root 1 0 R' })));
    expect(kept.ranges.count).toBe(1);
    const encrypted = Buffer.concat([
      handMade([
        CATALOG,
        PAGES,
        page('4 0 R'),
        `<< /Length ${random.length} >>\nstream\n${random.toString('latin1')}\nendstream`,
      ]),
      Buffer.from('trailer\n<< /Encrypt 9 0 R >>\n', 'latin1'),
    ]);
    expect(buildSkeleton(memorySource(encrypted)).ranges.count).toBe(0);
  });

  it('names its stand-ins with a nonce no file can forge', () => {
    const source = memorySource(Buffer.alloc(10));
    const ranges = new StreamRanges(source);
    const standIn = ranges.add({ start: 2, end: 6, length: 4 });
    expect(ranges.rangeOf(standIn)).toEqual({ start: 2, end: 6, length: 4 });
    const forged = new StreamRanges(source).add({ start: 0, end: 10, length: 10 });
    expect(forged.length).toBe(standIn.length);
    expect(ranges.rangeOf(forged)).toBeUndefined();
    expect(ranges.contentsOf(Buffer.from('plain'))).toEqual(Buffer.from('plain'));
  });

  it('is not adopted when pdf-lib reads it otherwise: the file is then parsed whole', async () => {
    const bytes = handMade([
      CATALOG,
      PAGES,
      page('4 0 R'),
      `<< /Length ${DRAW.length} >>\nstream\n${DRAW}\nendstream`,
    ]);
    const skeleton = buildSkeleton(memorySource(bytes), 1);
    // A skeleton whose stand-in pdf-lib never sees as a stream's data: our scan and its reading disagree.
    const parsed = await parseWhole(Buffer.from(bytes));
    expect(skeleton.ranges.adopt(parsed)).toBe(false);
  });
});

describe('a PDF rebuilt from a source', () => {
  it('gives the same output whatever streams stay in the source while it is parsed', async () => {
    for (const [name, build] of cases) {
      const input: SourcedFile = {
        source: memorySource(build()),
        fileName: 'x.pdf',
        format: PDF_FORMAT,
      };
      const rebuild = async (minBytes: number): Promise<Buffer | string> => {
        try {
          const output = await rebuildPdf(input, engineContext(), memorySink(), minBytes);
          return Buffer.from(await output.content.readAll());
        } catch (error) {
          return String(error);
        }
      };
      expect(await rebuild(1), name).toEqual(await rebuild(Number.POSITIVE_INFINITY));
    }
  });

  it('never reads a file of scanned pages whole: the writer copies each page from it', async () => {
    const pages = 40;
    const objects = [
      CATALOG,
      `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${3 + 3 * i} 0 R`).join(' ')}] /Count ${pages} >>`,
    ];
    for (let i = 0; i < pages; i += 1) {
      const base = 3 + 3 * i;
      objects.push(
        page(`${base + 1} 0 R`, `/XObject << /Im0 ${base + 2} 0 R >>`),
        `<< /Length ${DRAW.length} >>\nstream\n${DRAW}\nendstream`,
        `<< /Type /XObject /Subtype /Image /Width 300 /Height 420 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length ${jpeg.length + i} >>\nstream\n${Buffer.concat([jpeg, Buffer.alloc(i, 0xd9)]).toString('latin1')}\nendstream`,
      );
    }
    const bytes = handMade(objects);
    const path = join(mkdtempSync(join(tmpdir(), 'pdf-source-')), 'scan.pdf');
    writeFileSync(path, bytes);
    const source = new CountingSource(FileSource.open(path, bytes.length));
    const input: SourcedFile = { source, fileName: 'scan.pdf', format: PDF_FORMAT };
    const output = await rebuildPdf(input, engineContext(), memorySink(), 1024);
    const whole: SourcedFile = {
      source: memorySource(bytes),
      fileName: 'scan.pdf',
      format: PDF_FORMAT,
    };
    const expected = await rebuildPdf(
      whole,
      engineContext(),
      memorySink(),
      Number.POSITIVE_INFINITY,
    );
    expect(
      Buffer.from(await output.content.readAll()).equals(
        Buffer.from(await expected.content.readAll()),
      ),
    ).toBe(true);
    // One page's image, or one window of the scan: never the file (readAll would have thrown).
    const bound = Math.max(jpeg.length + pages, 64 * 1024);
    expect(bytes.length).toBeGreaterThan(10 * bound);
    expect(source.largestRead).toBeLessThanOrEqual(bound);
  });
});
