import {
  buildGzip,
  buildImage,
  buildOdf,
  buildOoxml,
  buildZip,
  COMPOUND_FIXTURES,
  TEXT_FIXTURES,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { encodeBmp } from '../handlers/image/bmp/encode.ts';
import { Rejection } from '../_internal/rejection.ts';
import { FORMATS } from '../formats.ts';
import type { SupportedExtension } from '../formats.ts';
import { DEFAULT_LIMITS } from '../limits.ts';
import { assertContentMatches } from './detect.ts';
import { sniff } from './sniff.ts';

const bmp = (): Uint8Array =>
  encodeBmp({ width: 2, height: 2, channels: 3, data: new Uint8Array(12).fill(7) });

/** One genuine file per supported extension. */
const RIGHT: Readonly<Record<SupportedExtension, () => Promise<Uint8Array> | Uint8Array>> = {
  doc: COMPOUND_FIXTURES.doc,
  dot: COMPOUND_FIXTURES.doc,
  docx: () => buildOoxml('docx'),
  docm: () => buildOoxml('docm'),
  dotx: () => buildOoxml('docx'),
  dotm: () => buildOoxml('docm'),
  xls: COMPOUND_FIXTURES.xls,
  xlsx: () => buildOoxml('xlsx'),
  xlsb: () => buildOoxml('xlsb'),
  xlsm: () => buildOoxml('xlsx'),
  xltx: () => buildOoxml('xlsx'),
  xltm: () => buildOoxml('xlsx'),
  xlam: () => buildOoxml('xlsx'),
  ppt: COMPOUND_FIXTURES.ppt,
  pps: COMPOUND_FIXTURES.ppt,
  pot: COMPOUND_FIXTURES.ppt,
  ppa: COMPOUND_FIXTURES.ppt,
  pptx: () => buildOoxml('pptx'),
  pptm: () => buildOoxml('pptx'),
  potx: () => buildOoxml('pptx'),
  potm: () => buildOoxml('pptx'),
  ppam: () => buildOoxml('pptx'),
  ppsx: () => buildOoxml('pptx'),
  ppsm: () => buildOoxml('pptx'),
  pdf: () => Buffer.from(TEXT_FIXTURES.pdf),
  fdf: () => Buffer.from(TEXT_FIXTURES.fdf),
  rtf: () => Buffer.from(TEXT_FIXTURES.rtf),
  odt: () => buildOdf('odt'),
  ods: () => buildOdf('ods'),
  odp: () => buildOdf('odp'),
  svg: () => Buffer.from(TEXT_FIXTURES.svg),
  html: () => Buffer.from(TEXT_FIXTURES.html),
  htm: () => Buffer.from(TEXT_FIXTURES.html),
  jpg: () => buildImage('jpeg'),
  jpeg: () => buildImage('jpeg'),
  png: () => buildImage('png'),
  gif: () => buildImage('gif'),
  bmp,
  tif: () => buildImage('tiff'),
  tiff: () => buildImage('tiff'),
  webp: () => buildImage('webp'),
  zip: () => buildZip([{ name: 'a.png', data: 'x' }]),
  gz: () => buildGzip('hello', { fileName: 'a.pdf' }),
};

/** A file of another family for each extension: the content check must refuse it. */
function wrongFor(ext: SupportedExtension): () => Promise<Uint8Array> | Uint8Array {
  const format = FORMATS.find((row) => row.extension === ext);
  switch (format?.family) {
    case 'image':
      return ext === 'png' ? RIGHT.jpg : RIGHT.png;
    case 'archive':
      return RIGHT.pdf;
    case 'ooxml':
      return ext.startsWith('doc') || ext.startsWith('dot') ? RIGHT.xlsx : RIGHT.docx;
    case 'odf':
      return ext === 'odt' ? RIGHT.ods : RIGHT.odt;
    case 'cfb':
      return ext.startsWith('x') ? RIGHT.doc : RIGHT.xls;
    default:
      return ext === 'pdf' || ext === 'fdf' ? RIGHT.rtf : RIGHT.zip;
  }
}

async function check(bytes: Uint8Array, ext: SupportedExtension): Promise<Rejection | undefined> {
  const format = FORMATS.find((row) => row.extension === ext);
  if (!format) throw new Error(ext);
  try {
    await assertContentMatches(bytes, format, DEFAULT_LIMITS);
    return undefined;
  } catch (error) {
    if (error instanceof Rejection) return error;
    throw error;
  }
}

describe('content detection', () => {
  it.each(FORMATS.map((format) => format.extension))('accepts a genuine .%s', async (ext) => {
    expect(await check(await RIGHT[ext](), ext)).toBeUndefined();
  });

  it.each(FORMATS.map((format) => format.extension))(
    'refuses another format named .%s as invalid_file',
    async (ext) => {
      const rejection = await check(await wrongFor(ext)(), ext);
      expect(rejection?.reason).toBe('invalid_file');
      expect(rejection?.message).toContain(`.${ext}`);
    },
  );

  it.each(FORMATS.map((format) => format.extension))(
    'refuses an empty or random .%s as invalid_file',
    async (ext) => {
      expect((await check(new Uint8Array(0), ext))?.reason).toBe('invalid_file');
      const random = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251));
      expect((await check(random, ext))?.reason).toBe('invalid_file');
    },
  );

  it.each(['docx', 'xlsx', 'xlsb', 'pptx', 'docm'] as const)(
    'reports an encrypted .%s (a CFB EncryptedPackage) as password_protected',
    async (ext) => {
      expect((await check(COMPOUND_FIXTURES.encryptedOoxml(), ext))?.reason).toBe(
        'password_protected',
      );
    },
  );

  it.each(['odt', 'ods', 'odp'] as const)(
    'reports an encrypted .%s as password_protected',
    async (ext) => {
      expect((await check(await buildOdf(ext, { encrypted: true }), ext))?.reason).toBe(
        'password_protected',
      );
    },
  );

  it('tells an OOXML package from XPS and from a plain zip', async () => {
    expect((await check(await buildOoxml('xps'), 'docx'))?.reason).toBe('invalid_file');
    expect(
      (await check(await buildZip([{ name: 'a.xml', data: '<a/>' }]), 'docx'))?.message,
    ).toMatch(/plain zip/);
  });

  it('names what is wrong with a broken compound file, not the reader failing on it', async () => {
    // [MS-CFB] 2.2: the directory's first sector (header offset 0x30) past the file, as in
    // Apache POI's fuzzed crash-9bf3cd4b….xlsx; and a FAT sector number (0x4C) pointing nowhere.
    for (const [offset, value, fault] of [
      [0x30, 0x7fff, /the directory points at sector 32767, past the \d+ sectors of the file/],
      [0x4c, 1, /the directory points at sector \d+, past the \d+ sectors of the file/],
    ] as const) {
      const broken = Buffer.from(COMPOUND_FIXTURES.doc());
      broken.writeUInt32LE(value, offset);
      const rejection = await check(broken, 'doc');
      expect(rejection?.reason).toBe('invalid_file');
      expect(rejection?.message).toMatch(/not a readable compound file: /);
      expect(rejection?.message).toMatch(fault);
      expect(rejection?.message).not.toMatch(/undefined|Cannot|properties/);
    }
  });

  it('refuses a compound file that is not the named Office kind', async () => {
    expect((await check(COMPOUND_FIXTURES.msi(), 'doc'))?.message).toMatch(/another kind/);
  });

  it('refuses an OOXML package whose manifest declares a DOCTYPE (entity tricks)', async () => {
    const evil = await buildZip([
      {
        name: '[Content_Types].xml',
        data: '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">&b;</Types>',
      },
      {
        name: '_rels/.rels',
        data: '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
      },
    ]);
    expect((await check(evil, 'docx'))?.message).toMatch(/DOCTYPE/);
  });

  it('finds a PDF header after junk within the first 1024 bytes, not later', async () => {
    const pdf = Buffer.from(TEXT_FIXTURES.pdf);
    expect(await check(Buffer.concat([Buffer.alloc(1000, 0x41), pdf]), 'pdf')).toBeUndefined();
    expect((await check(Buffer.concat([Buffer.alloc(1100, 0x41), pdf]), 'pdf'))?.reason).toBe(
      'invalid_file',
    );
  });

  it('needs an <svg> root for .svg, behind any prolog', async () => {
    const doctype =
      '<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd" [<!ENTITY e "]>">]><svg:svg xmlns:svg="http://www.w3.org/2000/svg"/>';
    expect(await check(Buffer.from(doctype), 'svg')).toBeUndefined();
    expect((await check(Buffer.from('<html><svg/></html>'), 'svg'))?.reason).toBe('invalid_file');
  });

  it('names foreign formats in the detail', () => {
    expect(sniff(Buffer.from('MZ\x90\x00'))).toBe('executable');
    expect(sniff(Buffer.from('AT&TFORM\x00\x00'))).toBe('djvu');
    expect(sniff(Buffer.from('%!PS-Adobe-3.0\n%%BoundingBox'))).toBe('postscript');
    const tar = Buffer.alloc(512);
    tar.write('ustar', 257);
    expect(sniff(tar)).toBe('tar');
  });
});
