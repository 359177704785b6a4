import { ascii, indexOfBytes, startsWithAt, u32le } from '../_internal/bytes.ts';

/**
 * What the first bytes of a file say it is, whatever its name claims. Families we accept are
 * told apart further by structural probes; the others are named so a rejection can say what the
 * file really is.
 */
export type Sniffed =
  | 'cfb'
  | 'zip'
  | 'pdf'
  | 'fdf'
  | 'rtf'
  | 'jpeg'
  | 'png'
  | 'gif'
  | 'bmp'
  | 'tiff'
  | 'webp'
  | 'gzip'
  | 'text'
  | 'empty'
  | ForeignKind;

/** Well-known formats that are not on the allowlist, named in rejection details. */
export type ForeignKind =
  | 'executable'
  | 'tar'
  | '7z'
  | 'rar'
  | 'bzip2'
  | 'xz'
  | 'zstd'
  | 'djvu'
  | 'postscript'
  | 'wordperfect'
  | 'unknown-binary';

/** ISO 32000-2 7.5.2 allows bytes before the header; Acrobat looks within the first 1024. */
export const PDF_HEADER_WINDOW_BYTES = 1024;

const CFB_SIGNATURE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Identifies the content of `bytes` by its signatures. Never throws. */
export function sniff(bytes: Uint8Array): Sniffed {
  if (bytes.length === 0) return 'empty';
  if (startsWithAt(bytes, CFB_SIGNATURE)) return 'cfb';
  if (startsWithAt(bytes, ascii('PK\x03\x04')) || startsWithAt(bytes, ascii('PK\x05\x06'))) {
    return 'zip';
  }
  if (startsWithAt(bytes, [0x1f, 0x8b])) return 'gzip';
  if (startsWithAt(bytes, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWithAt(bytes, PNG_SIGNATURE)) return 'png';
  if (startsWithAt(bytes, ascii('GIF87a')) || startsWithAt(bytes, ascii('GIF89a'))) return 'gif';
  if (startsWithAt(bytes, ascii('BM'))) return 'bmp';
  if (
    startsWithAt(bytes, [0x49, 0x49, 0x2a, 0x00]) ||
    startsWithAt(bytes, [0x4d, 0x4d, 0x00, 0x2a]) ||
    startsWithAt(bytes, [0x49, 0x49, 0x2b, 0x00]) ||
    startsWithAt(bytes, [0x4d, 0x4d, 0x00, 0x2b])
  ) {
    return 'tiff';
  }
  if (startsWithAt(bytes, ascii('RIFF')) && startsWithAt(bytes, ascii('WEBP'), 8)) return 'webp';
  if (startsWithAt(bytes, ascii('{\\rtf'))) return 'rtf';
  // Readers accept junk before the PDF header (a tar header, an AppleSingle wrapper, a ROM); the
  // rebuild keeps only the PDF, so the header wins over whatever the junk looks like.
  const pdf = indexOfBytes(bytes, ascii('%PDF-'), 0, PDF_HEADER_WINDOW_BYTES + 5);
  const fdf = indexOfBytes(bytes, ascii('%FDF-'), 0, PDF_HEADER_WINDOW_BYTES + 5);
  if (pdf >= 0 && (fdf < 0 || pdf < fdf)) return 'pdf';
  if (fdf >= 0) return 'fdf';
  const foreign = sniffForeign(bytes);
  if (foreign) return foreign;
  return looksLikeText(bytes) ? 'text' : 'unknown-binary';
}

function sniffForeign(bytes: Uint8Array): ForeignKind | undefined {
  if (startsWithAt(bytes, ascii('MZ')) || startsWithAt(bytes, [0x7f, 0x45, 0x4c, 0x46])) {
    return 'executable';
  }
  if (
    startsWithAt(bytes, [0xfe, 0xed, 0xfa, 0xce]) ||
    startsWithAt(bytes, [0xfe, 0xed, 0xfa, 0xcf]) ||
    startsWithAt(bytes, [0xcf, 0xfa, 0xed, 0xfe]) ||
    startsWithAt(bytes, [0xce, 0xfa, 0xed, 0xfe])
  ) {
    return 'executable';
  }
  // POSIX ustar magic at offset 257 (IEEE 1003.1 "ustar Interchange Format").
  if (startsWithAt(bytes, ascii('ustar'), 257)) return 'tar';
  if (startsWithAt(bytes, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return '7z';
  if (startsWithAt(bytes, ascii('Rar!\x1a\x07'))) return 'rar';
  if (startsWithAt(bytes, ascii('BZh'))) return 'bzip2';
  if (startsWithAt(bytes, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return 'xz';
  if (u32le(bytes, 0) === 0xfd2fb528 && bytes.length >= 4) return 'zstd';
  if (startsWithAt(bytes, ascii('AT&TFORM'))) return 'djvu';
  if (startsWithAt(bytes, ascii('%!PS')) || startsWithAt(bytes, [0xc5, 0xd0, 0xd3, 0xc6])) {
    return 'postscript';
  }
  if (startsWithAt(bytes, [0xff, 0x57, 0x50, 0x43])) return 'wordperfect';
  return undefined;
}

const TEXT_PROBE_BYTES = 8192;

/**
 * Bytes {@link sniff} reads at most (the text probe's; every signature lies within them): the
 * head of a file on disk is sniffed as the whole file would be.
 */
export const SNIFF_WINDOW_BYTES = TEXT_PROBE_BYTES;

/**
 * True when the start of `bytes` reads as text: UTF-16 with a byte-order mark, or 8-bit text
 * without NUL bytes and with few control characters.
 */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (startsWithAt(bytes, [0xff, 0xfe]) || startsWithAt(bytes, [0xfe, 0xff])) return true;
  const end = Math.min(bytes.length, TEXT_PROBE_BYTES);
  let control = 0;
  for (let i = 0; i < end; i += 1) {
    const byte = bytes[i] ?? 0;
    if (byte === 0) return false;
    if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c) {
      control += 1;
    }
  }
  return control * 100 <= end;
}
