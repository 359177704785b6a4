import { crc32 } from 'node:zlib';

import { u32be } from '../../_internal/bytes.ts';

/** A resolution as the rebuild carries it: pixels per inch, as sharp reports `density`. */
export interface Resolution {
  readonly pixelsPerInch: number;
  /** The unit the input declared it in, kept so the output says it the same way. */
  readonly unit: 'inch' | 'cm';
}

const CM_PER_INCH = 2.54;
const MAX_JFIF_DENSITY = 0xffff;

/**
 * Writes a JFIF APP0 segment (JFIF 1.02, ITU T.871 10.1) right after SOI of our own encoder's
 * JPEG, which carries no APP0 of its own: the resolution lives in its structural density field
 * and no EXIF block is ever needed for it. Without a resolution the segment says "aspect ratio
 * 1:1, no unit". The JPEG must be our encoder's output (SOI followed by a marker other than APP0).
 */
export function withJfifDensity(jpeg: Uint8Array, resolution: Resolution | undefined): Uint8Array {
  if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8 || (jpeg[2] === 0xff && jpeg[3] === 0xe0)) {
    throw new TypeError('withJfifDensity expects an encoder JPEG without APP0');
  }
  let units = 0;
  let density = 1;
  if (resolution !== undefined) {
    const perUnit =
      resolution.unit === 'cm' ? resolution.pixelsPerInch / CM_PER_INCH : resolution.pixelsPerInch;
    const rounded = Math.round(perUnit);
    if (rounded >= 1 && rounded <= MAX_JFIF_DENSITY) {
      units = resolution.unit === 'cm' ? 2 : 1;
      density = rounded;
    }
  }
  // T.871 10.1: 'JFIF\0', version 1.02, units, Xdensity, Ydensity, no thumbnail.
  const segment = Buffer.from([
    0xff,
    0xe0,
    0x00,
    0x10,
    0x4a,
    0x46,
    0x49,
    0x46,
    0x00,
    0x01,
    0x02,
    units,
    density >> 8,
    density & 0xff,
    density >> 8,
    density & 0xff,
    0x00,
    0x00,
  ]);
  return Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]);
}

const PNG_SIGNATURE_BYTES = 8;
const METRES_PER_INCH = 0.0254;

/**
 * Re-serialises our own encoder's PNG with exactly one resolution statement: its pHYs chunk (PNG
 * 11.3.5.3) replaced by one holding `resolution`, or removed when the input declared none (the
 * encoder otherwise invents 1 pixel per millimetre). Every other chunk is copied as written.
 */
export function withPngResolution(png: Uint8Array, resolution: Resolution | undefined): Uint8Array {
  const parts: Uint8Array[] = [png.subarray(0, PNG_SIGNATURE_BYTES)];
  let offset = PNG_SIGNATURE_BYTES;
  while (offset + 12 <= png.length) {
    const length = u32be(png, offset);
    const type = String.fromCharCode(...png.subarray(offset + 4, offset + 8));
    const end = offset + 12 + length;
    if (end > png.length) throw new TypeError('withPngResolution: truncated encoder output');
    if (type !== 'pHYs') parts.push(png.subarray(offset, end));
    if (type === 'IHDR' && resolution !== undefined) parts.push(physChunk(resolution));
    offset = end;
    if (type === 'IEND') break;
  }
  return Buffer.concat(parts);
}

/**
 * Whether a PNG states a resolution: a pHYs chunk (PNG 11.3.5.3) before its image data. libvips
 * reports 72 dpi for a PNG without one, which a rebuild must not write as if it were stated.
 */
export function pngHasResolution(png: Uint8Array): boolean {
  let offset = PNG_SIGNATURE_BYTES;
  // PNG 5.6: pHYs comes before the first IDAT; every chunk is at least 12 bytes.
  while (offset + 12 <= png.length) {
    const type = String.fromCharCode(...png.subarray(offset + 4, offset + 8));
    if (type === 'pHYs') return true;
    if (type === 'IDAT' || type === 'IEND') return false;
    offset += 12 + u32be(png, offset);
  }
  return false;
}

function physChunk(resolution: Resolution): Uint8Array {
  const perMetre = Math.round(resolution.pixelsPerInch / METRES_PER_INCH);
  const data = Buffer.alloc(9);
  data.writeUInt32BE(perMetre, 0);
  data.writeUInt32BE(perMetre, 4);
  data[8] = 1; // unit: the metre
  return pngChunk('pHYs', data);
}

/** A PNG chunk (PNG 5.3): length, type, data, CRC over type and data. */
export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  body.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(body), 8 + data.length);
  return chunk;
}
