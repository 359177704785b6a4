/**
 * Layouts of the raster formats on the allowlist (`packages/core/src/formats.ts`: jpeg, png, gif,
 * bmp, tiff, webp): their chunks, segments, blocks and directory entries, and the lengths,
 * offsets, counts and dimensions the decoders trust.
 */
import { crc32 } from 'node:zlib';

import type { Describe, Layout } from './types.ts';
import { fourcc, LayoutBuilder, u16be, u16le, u32be, u32le } from './types.ts';

const PNG_SIGNATURE_BYTES = 8;
/** TIFF directories walked (a chain of IFDs may loop). */
const MAX_TIFF_DIRECTORIES = 16;
/** RIFF chunks nest one level in WebP (`ANIM`'s `ANMF` frames). */
const MAX_RIFF_DEPTH = 2;

/** PNG (PNG spec 5.3): chunks, their lengths, IHDR's dimensions; fixup recomputes the CRCs. */
export const describePng: Describe = (bytes) => {
  if (bytes.length < PNG_SIGNATURE_BYTES || bytes[0] !== 0x89 || bytes[1] !== 0x50)
    return undefined;
  const layout = new LayoutBuilder();
  for (let offset = PNG_SIGNATURE_BYTES; offset + 12 <= bytes.length && !layout.isFull();) {
    const length = u32be(bytes, offset) ?? 0;
    const end = offset + 12 + length;
    layout.part(offset, Math.min(end, bytes.length), 'chunk');
    layout.field(offset, 4, 'be', 'length');
    if (fourcc(bytes, offset + 4) === 'IHDR') {
      layout.field(offset + 8, 4, 'be', 'dimension');
      layout.field(offset + 12, 4, 'be', 'dimension');
      layout.field(offset + 16, 1, 'be', 'value');
      layout.field(offset + 17, 1, 'be', 'value');
      layout.field(offset + 20, 1, 'be', 'value');
    }
    if (fourcc(bytes, offset + 4) === 'acTL' || fourcc(bytes, offset + 4) === 'fcTL') {
      layout.field(offset + 8, 4, 'be', 'count');
      layout.field(offset + 12, 4, 'be', 'dimension');
    }
    if (end > bytes.length) break;
    offset = end;
  }
  return layout.build({ fixup: fixPngCrcs, dictionary: PNG_DICTIONARY });
};

const PNG_DICTIONARY = ['tEXt', 'iTXt', 'zTXt', 'eXIf', 'iCCP', 'acTL', 'fcTL', 'fdAT', 'IEND'].map(
  (name) => Buffer.from(name, 'latin1'),
);

/** Recomputes every PNG chunk's CRC-32 (over type and data). */
export function fixPngCrcs(input: Uint8Array): Uint8Array {
  const bytes = Buffer.from(input);
  for (let offset = PNG_SIGNATURE_BYTES; offset + 12 <= bytes.length;) {
    const length = bytes.readUInt32BE(offset);
    const end = offset + 12 + length;
    if (end > bytes.length) break;
    bytes.writeUInt32BE(crc32(bytes.subarray(offset + 4, offset + 8 + length)) >>> 0, end - 4);
    offset = end;
  }
  return bytes;
}

/** JPEG (ITU T.81 B.1): marker segments before the scan, their lengths, SOF's geometry. */
export const describeJpeg: Describe = (bytes) => {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) return undefined;
  const layout = new LayoutBuilder();
  let offset = 2;
  while (offset + 4 <= bytes.length && !layout.isFull()) {
    if (bytes[offset] !== 0xff) break;
    const marker = bytes[offset + 1] ?? 0;
    if (marker === 0xd9) break;
    const length = u16be(bytes, offset + 2) ?? 0;
    const end = offset + 2 + length;
    layout.field(offset + 2, 2, 'be', 'length');
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      layout.field(offset + 4, 1, 'be', 'value');
      layout.field(offset + 5, 2, 'be', 'dimension');
      layout.field(offset + 7, 2, 'be', 'dimension');
      layout.field(offset + 9, 1, 'be', 'count');
    }
    if (marker === 0xda) {
      layout.field(offset + 4, 1, 'be', 'count');
      // The scan runs to the next marker that is not a stuffed byte or a restart.
      let scanEnd = end;
      while (scanEnd + 1 < bytes.length) {
        const next = bytes[scanEnd + 1] ?? 0;
        if (bytes[scanEnd] === 0xff && next !== 0 && (next < 0xd0 || next > 0xd7)) break;
        scanEnd += 1;
      }
      layout.part(offset, scanEnd, 'segment');
      offset = scanEnd;
      continue;
    }
    layout.part(offset, Math.min(end, bytes.length), 'segment');
    offset = end;
  }
  return layout.build({ dictionary: JPEG_DICTIONARY });
};

const JPEG_DICTIONARY = [
  Buffer.from('ffe1000a457869660000', 'hex'),
  Buffer.from('ffe2000e4943435f50524f46494c4500', 'hex'),
  Buffer.from('fffe0005413c', 'hex'),
  Buffer.from('ffdd00040001', 'hex'),
  Buffer.from('ffd9', 'hex'),
];

/** GIF (GIF89a): screen and image descriptors, extension and data sub-blocks. */
export const describeGif: Describe = (bytes) => {
  if (fourcc(bytes, 0) !== 'GIF8' || bytes.length < 13) return undefined;
  const layout = new LayoutBuilder();
  layout.field(6, 2, 'le', 'dimension');
  layout.field(8, 2, 'le', 'dimension');
  layout.field(10, 1, 'le', 'value');
  const flags = bytes[10] ?? 0;
  let offset = 13 + ((flags & 0x80) !== 0 ? 3 * 2 ** ((flags & 7) + 1) : 0);
  while (offset < bytes.length && !layout.isFull()) {
    const start = offset;
    const introducer = bytes[offset];
    if (introducer === 0x3b) break;
    if (introducer === 0x21) {
      offset += 2;
    } else if (introducer === 0x2c) {
      for (let at = 1; at < 9; at += 2) layout.field(offset + at, 2, 'le', 'dimension');
      layout.field(offset + 9, 1, 'le', 'value');
      const local = bytes[offset + 9] ?? 0;
      offset += 10 + ((local & 0x80) !== 0 ? 3 * 2 ** ((local & 7) + 1) : 0);
      layout.field(offset, 1, 'le', 'value');
      offset += 1;
    } else {
      break;
    }
    while (offset < bytes.length && !layout.isFull()) {
      const size = bytes[offset] ?? 0;
      layout.field(offset, 1, 'le', 'length');
      offset += 1 + size;
      if (size === 0) break;
    }
    layout.part(start, Math.min(offset, bytes.length), 'block');
  }
  return layout.build({ dictionary: GIF_DICTIONARY });
};

const GIF_DICTIONARY = [
  Buffer.from('21fe033c733e00', 'hex'),
  Buffer.from('21ff0b4e45545343415045322e300301000000', 'hex'),
  Buffer.from('21f90405000000000000', 'hex'),
  Buffer.from('3b', 'hex'),
];

/** BMP: file and info headers, palette, pixels; sizes, offsets, dimensions, compression. */
export const describeBmp: Describe = (bytes) => {
  if (bytes[0] !== 0x42 || bytes[1] !== 0x4d || bytes.length < 26) return undefined;
  const layout = new LayoutBuilder();
  layout.field(2, 4, 'le', 'length');
  layout.field(10, 4, 'le', 'offset');
  layout.field(14, 4, 'le', 'length');
  const infoSize = u32le(bytes, 14) ?? 0;
  if (infoSize === 12) {
    layout.field(18, 2, 'le', 'dimension');
    layout.field(20, 2, 'le', 'dimension');
    layout.field(24, 2, 'le', 'value');
  } else {
    layout.field(18, 4, 'le', 'dimension');
    layout.field(22, 4, 'le', 'dimension');
    layout.field(28, 2, 'le', 'value');
    layout.field(30, 4, 'le', 'value');
    layout.field(34, 4, 'le', 'length');
    layout.field(46, 4, 'le', 'count');
    if (infoSize >= 108) for (let at = 54; at < 66; at += 4) layout.field(at, 4, 'le', 'value');
  }
  const pixels = Math.min(u32le(bytes, 10) ?? bytes.length, bytes.length);
  layout.part(0, 14, 'header');
  layout.part(14, Math.min(14 + infoSize, bytes.length), 'header');
  if (pixels > 14 + infoSize) layout.part(14 + infoSize, pixels, 'palette');
  layout.part(pixels, bytes.length, 'pixels');
  return layout.build();
};

/** TIFF (TIFF 6.0 section 2): the IFD chain, each entry's type, count and value offset. */
export const describeTiff: Describe = (bytes) => {
  const little = bytes[0] === 0x49 && bytes[1] === 0x49;
  if (!little && !(bytes[0] === 0x4d && bytes[1] === 0x4d)) return undefined;
  const u16 = little ? u16le : u16be;
  const u32 = little ? u32le : u32be;
  const endian = little ? 'le' : 'be';
  const layout = new LayoutBuilder();
  layout.field(4, 4, endian, 'offset');
  let ifd = u32(bytes, 4) ?? 0;
  const seen = new Set<number>();
  for (
    let directory = 0;
    directory < MAX_TIFF_DIRECTORIES && ifd > 0 && !seen.has(ifd);
    directory += 1
  ) {
    seen.add(ifd);
    const count = u16(bytes, ifd);
    if (count === undefined) break;
    layout.field(ifd, 2, endian, 'count');
    for (let entry = 0; entry < count && !layout.isFull(); entry += 1) {
      const at = ifd + 2 + entry * 12;
      if (at + 12 > bytes.length) break;
      layout.part(at, at + 12, `ifd${directory}`);
      layout.field(at, 2, endian, 'value');
      layout.field(at + 2, 2, endian, 'value');
      layout.field(at + 4, 4, endian, 'count');
      layout.field(at + 8, 4, endian, 'offset');
    }
    const next = ifd + 2 + count * 12;
    layout.field(next, 4, endian, 'offset');
    ifd = u32(bytes, next) ?? 0;
  }
  return layout.build();
};

/** WebP (RIFF): chunks and their sizes, VP8X's canvas, ANMF frames. */
export const describeWebp: Describe = (bytes) => {
  if (fourcc(bytes, 0) !== 'RIFF' || fourcc(bytes, 8) !== 'WEBP') return undefined;
  const layout = new LayoutBuilder();
  layout.field(4, 4, 'le', 'length');
  walkRiff(bytes, 12, bytes.length, layout, 0);
  return layout.build({ dictionary: WEBP_DICTIONARY });
};

function walkRiff(
  bytes: Uint8Array,
  from: number,
  to: number,
  layout: LayoutBuilder,
  depth: number,
): void {
  for (let offset = from; offset + 8 <= to && !layout.isFull();) {
    const size = u32le(bytes, offset + 4) ?? 0;
    const end = offset + 8 + size + (size % 2);
    const name = fourcc(bytes, offset);
    layout.part(offset, Math.min(end, to), `riff${depth}`);
    layout.field(offset + 4, 4, 'le', 'length');
    if (name === 'VP8X') {
      layout.field(offset + 8, 1, 'le', 'value');
      layout.field(offset + 12, 3, 'le', 'dimension');
      layout.field(offset + 15, 3, 'le', 'dimension');
    }
    if (name === 'ANMF' && depth < MAX_RIFF_DEPTH) {
      layout.field(offset + 14, 3, 'le', 'dimension');
      walkRiff(bytes, offset + 24, Math.min(end, to), layout, depth + 1);
    }
    if (end > to) break;
    offset = end;
  }
}

const WEBP_DICTIONARY = ['EXIF', 'XMP ', 'ICCP', 'ANIM', 'ANMF', 'ALPH'].map((name) =>
  Buffer.from(`${name}\x04\x00\x00\x00abcd`, 'latin1'),
);

/** The image describers, tried in order. */
export const IMAGE_DESCRIBERS: readonly Describe[] = [
  describePng,
  describeJpeg,
  describeGif,
  describeBmp,
  describeTiff,
  describeWebp,
];

/** The layout of any raster image on the allowlist. */
export function describeImage(bytes: Uint8Array): Layout | undefined {
  for (const describe of IMAGE_DESCRIBERS) {
    const layout = describe(bytes);
    if (layout) return layout;
  }
  return undefined;
}
