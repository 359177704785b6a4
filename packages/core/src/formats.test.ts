import { describe, expect, it } from 'vitest';

import { extensionOf, FORMATS, formatForFileName, outputFileName } from './formats.ts';

/** The v1 API's supported extensions (README "What it handles"), verbatim. */
const V1_EXTENSIONS = [
  ...'doc, dot, docx, docm, dotx, dotm'.split(', '),
  ...'xls, xlsx, xlsb, xlsm, xltx, xltm, xlam'.split(', '),
  ...'ppt, pps, pot, ppa, pptx, pptm, potx, potm, ppam, ppsx, ppsm'.split(', '),
  ...'pdf, fdf, rtf, odt, ods, odp, svg, html, htm'.split(', '),
  ...'jpg, jpeg, png, gif, bmp, tif, tiff, webp'.split(', '),
  ...'zip, gz'.split(', '),
];

/** The formats returned as another (README "What it handles", "returned as"). */
const CONVERTED: Readonly<Record<string, string>> = {
  svg: 'pdf',
  html: 'pdf',
  htm: 'pdf',
  ods: 'pdf',
  odp: 'pdf',
  gz: 'zip',
};

describe('the allowlist', () => {
  it('is exactly the v1 API list', () => {
    expect(FORMATS.map((format) => format.extension).sort()).toEqual([...V1_EXTENSIONS].sort());
  });

  it.each(V1_EXTENSIONS)('maps .%s case-insensitively to its row and output format', (ext) => {
    for (const name of [`a.${ext}`, `A.${ext.toUpperCase()}`, `dir/x.y.${ext}`]) {
      const format = formatForFileName(name);
      expect(format?.extension).toBe(ext);
      expect(format?.outputExtension).toBe(CONVERTED[ext] ?? ext);
    }
  });

  it.each([
    'a.txt',
    'a.xlt',
    'a.xla',
    'a.exe',
    'a.tar',
    'a.tgz',
    'a.epub',
    'a.xps',
    'noext',
    '.pdf',
    'a.',
    'a.pdf.',
  ])('refuses %s', (name) => {
    expect(formatForFileName(name)).toBeUndefined();
  });

  it('reads the extension of the last path segment only', () => {
    expect(extensionOf('dir.zip/file')).toBe('');
    expect(extensionOf('dir\\x.PNG')).toBe('png');
  });

  it('renames converted files and keeps the others', () => {
    const html = formatForFileName('page.HTML');
    const png = formatForFileName('a.PNG');
    expect(html && outputFileName('page.HTML', html)).toBe('page.pdf');
    expect(png && outputFileName('a.PNG', png)).toBe('a.PNG');
  });
});
