import { sourceIncludes } from '../_internal/byte-source.ts';
import type { ByteSource } from '../_internal/byte-source.ts';
import { Rejection } from '../_internal/rejection.ts';
import type { ContentKind, FormatRow } from '../formats.ts';
import type { Limits } from '../limits.ts';
import { openCompoundFile } from '../_internal/cfb-reader.ts';
import { probePdfEncryption } from '../handlers/pdf/encryption.ts';
import { classifyCompoundFile, compoundEncryption, probeCompoundFile } from './cfb-probe.ts';
import { probeImage } from './image-probe.ts';
import { sniff, SNIFF_WINDOW_BYTES } from './sniff.ts';
import type { Sniffed } from './sniff.ts';
import { hasSvgRoot } from './text-probe.ts';
import { probeZip } from './zip-probe.ts';

const DESCRIPTIONS: Readonly<Record<Sniffed | ContentKind, string>> = {
  cfb: 'an OLE compound file',
  zip: 'a zip archive',
  pdf: 'a PDF document',
  fdf: 'an FDF form-data file',
  rtf: 'an RTF document',
  jpeg: 'a JPEG image',
  png: 'a PNG image',
  gif: 'a GIF image',
  bmp: 'a BMP image',
  tiff: 'a TIFF image',
  webp: 'a WebP image',
  gzip: 'gzip-compressed data',
  text: 'plain text',
  empty: 'nothing (the file is empty)',
  executable: 'an executable program',
  tar: 'a tar archive',
  '7z': 'a 7-Zip archive',
  rar: 'a RAR archive',
  bzip2: 'bzip2-compressed data',
  xz: 'xz-compressed data',
  zstd: 'zstd-compressed data',
  djvu: 'a DjVu document',
  postscript: 'a PostScript document',
  wordperfect: 'a WordPerfect document',
  'unknown-binary': 'unrecognised binary data',
  'word-binary': 'a Word 97-2003 document',
  'excel-binary': 'an Excel 97-2003 workbook',
  'powerpoint-binary': 'a PowerPoint 97-2003 presentation',
  'word-ooxml': 'a Word (OOXML) document',
  'excel-ooxml': 'an Excel (OOXML) workbook',
  'excel-binary-ooxml': 'an Excel binary (xlsb) workbook',
  'powerpoint-ooxml': 'a PowerPoint (OOXML) presentation',
  'odf-text': 'an OpenDocument text',
  'odf-spreadsheet': 'an OpenDocument spreadsheet',
  'odf-presentation': 'an OpenDocument presentation',
  svg: 'an SVG image',
  html: 'an HTML document',
};

function mismatch(format: FormatRow, actual: string): Rejection {
  return new Rejection(
    'invalid_file',
    `the file is named .${format.extension}, which must be ${DESCRIPTIONS[format.kind]}, but its content is ${actual}`,
  );
}

/**
 * Checks that the bytes really are what the extension's allowlist row says: magic numbers first,
 * then a structural probe (OOXML vs ODF vs plain zip, the compound file's streams, the image's
 * first header, the SVG root element).
 * @throws {Rejection} `invalid_file` on a mismatch; `password_protected` for encrypted packages.
 */
export async function assertContentMatches(
  bytes: Uint8Array,
  format: FormatRow,
  limits: Limits,
): Promise<void> {
  const sniffed = sniff(bytes);
  if (sniffed === 'empty') throw new Rejection('invalid_file', 'the file is empty');
  const what = `the .${format.extension} file`;
  switch (format.kind) {
    case 'word-binary':
    case 'excel-binary':
    case 'powerpoint-binary': {
      if (sniffed !== 'cfb') throw mismatch(format, DESCRIPTIONS[sniffed]);
      const file = openCompoundFile(bytes, what);
      const kind = classifyCompoundFile(file);
      if (kind === 'encrypted-ooxml') throw encryptedOoxml();
      const encrypted = compoundEncryption(file, kind);
      if (encrypted !== undefined && kind === format.kind) {
        throw new Rejection('password_protected', encrypted);
      }
      if (kind !== format.kind) {
        throw mismatch(
          format,
          kind === 'other' ? 'another kind of compound file' : DESCRIPTIONS[kind],
        );
      }
      return;
    }
    case 'word-ooxml':
    case 'excel-ooxml':
    case 'excel-binary-ooxml':
    case 'powerpoint-ooxml': {
      if (sniffed === 'cfb' && probeCompoundFile(bytes, what) === 'encrypted-ooxml') {
        throw encryptedOoxml();
      }
      if (sniffed !== 'zip') throw mismatch(format, DESCRIPTIONS[sniffed]);
      const content = await probeZip(bytes, limits.maxEntries);
      if (content.container !== 'ooxml') throw mismatch(format, containerDescription(content));
      if (content.kind !== format.kind) {
        throw mismatch(
          format,
          content.kind === 'other' ? 'an unknown OOXML package' : DESCRIPTIONS[content.kind],
        );
      }
      return;
    }
    case 'odf-text':
    case 'odf-spreadsheet':
    case 'odf-presentation': {
      if (sniffed !== 'zip') throw mismatch(format, DESCRIPTIONS[sniffed]);
      const content = await probeZip(bytes, limits.maxEntries);
      if (content.container !== 'odf') throw mismatch(format, containerDescription(content));
      if (content.kind !== format.kind) {
        throw mismatch(
          format,
          content.kind === 'other' ? 'an unknown OpenDocument package' : DESCRIPTIONS[content.kind],
        );
      }
      if (content.encrypted) {
        throw new Rejection(
          'password_protected',
          'the OpenDocument package is encrypted (manifest encryption-data); it cannot be opened without its password',
        );
      }
      return;
    }
    case 'pdf':
    case 'fdf': {
      if (sniffed !== format.kind) throw mismatch(format, DESCRIPTIONS[sniffed]);
      // Before the rebuild: a PDF that needs a user password is the file's property, not a fault.
      const encryption = probePdfEncryption(bytes);
      if (encryption.state === 'password') {
        throw new Rejection('password_protected', encryption.detail);
      }
      if (encryption.state === 'corrupt') throw new Rejection('invalid_file', encryption.detail);
      return;
    }
    case 'rtf':
    case 'zip':
    case 'gzip':
      if (sniffed !== format.kind) throw mismatch(format, DESCRIPTIONS[sniffed]);
      return;
    case 'svg':
      if (sniffed !== 'text' || !hasSvgRoot(bytes)) {
        throw mismatch(
          format,
          sniffed === 'text' ? 'text without an <svg> root element' : DESCRIPTIONS[sniffed],
        );
      }
      return;
    case 'html':
      if (sniffed !== 'text') throw mismatch(format, DESCRIPTIONS[sniffed]);
      return;
    case 'jpeg':
    case 'png':
    case 'gif':
    case 'bmp':
    case 'tiff':
    case 'webp':
      if (sniffed !== format.kind) throw mismatch(format, DESCRIPTIONS[sniffed]);
      if (!probeImage(bytes, format.kind)) {
        throw new Rejection('invalid_file', `${DESCRIPTIONS[format.kind]} with a broken header`);
      }
      return;
  }
}

/** Kinds whose check reads only the signatures at the head of the file. */
const HEAD_CHECKED_KINDS: ReadonlySet<ContentKind> = new Set(['zip', 'gzip', 'rtf']);

/**
 * {@link assertContentMatches} for a file read by range: kinds checked by their head read only
 * that, a PDF is searched chunk by chunk for an encryption dictionary (read whole only when it has
 * one), any other kind is read whole.
 * @throws {Rejection} as {@link assertContentMatches}.
 */
export async function assertSourceMatches(
  source: ByteSource,
  format: FormatRow,
  limits: Limits,
): Promise<void> {
  if (source.bytes !== undefined) return assertContentMatches(source.bytes, format, limits);
  const head = source.read(0, SNIFF_WINDOW_BYTES);
  if (HEAD_CHECKED_KINDS.has(format.kind)) return assertContentMatches(head, format, limits);
  if (format.kind === 'pdf' || format.kind === 'fdf') {
    // Not a PDF at all: the head says what it is.
    if (sniff(head) !== format.kind) return assertContentMatches(head, format, limits);
    // The encryption probe looks for `/Encrypt`: where there is none, the PDF opens.
    if (!(await sourceIncludes(source, '/Encrypt'))) return;
  }
  return assertContentMatches(await source.readAll(), format, limits);
}

function encryptedOoxml(): Rejection {
  return new Rejection(
    'password_protected',
    'the Office document is encrypted ([MS-OFFCRYPTO] EncryptedPackage); it cannot be opened without its password',
  );
}

function containerDescription(content: Awaited<ReturnType<typeof probeZip>>): string {
  switch (content.container) {
    case 'ooxml':
      return content.kind === 'other'
        ? 'an OOXML package of another kind'
        : DESCRIPTIONS[content.kind];
    case 'odf':
      return content.kind === 'other'
        ? 'an OpenDocument package of another kind'
        : DESCRIPTIONS[content.kind];
    case 'zip':
      return 'a plain zip archive';
  }
}
