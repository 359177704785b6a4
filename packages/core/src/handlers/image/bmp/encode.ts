import { isIccProfile, MAX_DECODED_BYTES, MAX_DIMENSION_PX } from './decode.ts';
import type { BmpImage } from './types.ts';

const FILE_HEADER_BYTES = 14;
const INFO_HEADER_BYTES = 40;
const V5_HEADER_BYTES = 124;
/** 72 dpi expressed in pixels per metre, the resolution unit of BITMAPINFOHEADER. */
const PIXELS_PER_METRE = 2835;
const BI_RGB = 0;
const BI_BITFIELDS = 3;
const LCS_SRGB = 0x73524742; // 'sRGB'
const PROFILE_EMBEDDED = 0x4d424544; // 'MBED'
const LCS_GM_IMAGES = 4; // perceptual rendering intent

/**
 * Writes `image` as a fresh, canonical BMP: BITMAPFILEHEADER, then for RGB a BITMAPINFOHEADER with
 * 24-bit BI_RGB rows, for RGBA (or any image with an ICC profile) a BITMAPV5HEADER with 32-bit
 * BI_BITFIELDS rows (masks R 0x00FF0000, G 0x0000FF00, B 0x000000FF, A 0xFF000000) or 24-bit
 * BI_RGB rows. Rows are bottom-up, 72 dpi; no palette, gaps or trailing data. The colour space is
 * LCS_sRGB, or PROFILE_EMBEDDED with the profile appended after the pixel array.
 *
 * `decodeBmp(encodeBmp(image)).image` equals `image`, except that an RGBA image whose alpha is
 * zero everywhere decodes as opaque RGB (readers treat all-zero BMP alpha as absent).
 *
 * @throws {TypeError} when `image` is not a valid {@link BmpImage} within the decoder's limits
 *   (dimensions, `data` length, an ICC profile that `decodeBmp` would not keep).
 * @example
 * const bytes = encodeBmp({ width: 1, height: 1, channels: 3, data: new Uint8Array([255, 0, 0]) });
 */
export function encodeBmp(image: BmpImage): Uint8Array {
  assertEncodable(image);
  const { width, height, channels, data, iccProfile } = image;
  const useV5 = channels === 4 || iccProfile !== undefined;
  const headerBytes = useV5 ? V5_HEADER_BYTES : INFO_HEADER_BYTES;
  const bitCount = channels * 8;
  // BITMAPINFOHEADER: rows are padded to a DWORD boundary.
  const stride = Math.ceil((width * channels) / 4) * 4;
  const pixelBytes = stride * height;
  const pixelOffset = FILE_HEADER_BYTES + headerBytes;
  const profileOffset = pixelOffset + pixelBytes;
  const fileBytes = profileOffset + (iccProfile?.length ?? 0);

  const out = new Uint8Array(fileBytes);
  const view = new DataView(out.buffer);
  // BITMAPFILEHEADER
  out[0] = 0x42; // 'B'
  out[1] = 0x4d; // 'M'
  view.setUint32(2, fileBytes, true);
  view.setUint32(10, pixelOffset, true);
  // BITMAPINFOHEADER fields, shared by BITMAPV5HEADER; a positive height means bottom-up.
  const h = FILE_HEADER_BYTES;
  view.setUint32(h, headerBytes, true);
  view.setInt32(h + 4, width, true);
  view.setInt32(h + 8, height, true);
  view.setUint16(h + 12, 1, true);
  view.setUint16(h + 14, bitCount, true);
  view.setUint32(h + 16, channels === 4 ? BI_BITFIELDS : BI_RGB, true);
  view.setUint32(h + 20, pixelBytes, true);
  view.setInt32(h + 24, PIXELS_PER_METRE, true);
  view.setInt32(h + 28, PIXELS_PER_METRE, true);
  if (useV5) {
    if (channels === 4) {
      view.setUint32(h + 40, 0x00ff0000, true);
      view.setUint32(h + 44, 0x0000ff00, true);
      view.setUint32(h + 48, 0x000000ff, true);
      view.setUint32(h + 52, 0xff000000, true);
    }
    view.setUint32(h + 56, iccProfile === undefined ? LCS_SRGB : PROFILE_EMBEDDED, true);
    view.setUint32(h + 108, LCS_GM_IMAGES, true);
    if (iccProfile !== undefined) {
      // BITMAPV5HEADER bV5ProfileData is relative to the start of the V5 header.
      view.setUint32(h + 112, profileOffset - FILE_HEADER_BYTES, true);
      view.setUint32(h + 116, iccProfile.length, true);
      out.set(iccProfile, profileOffset);
    }
  }

  const rowSamples = width * channels;
  for (let y = 0; y < height; y++) {
    let src = y * rowSamples;
    let dst = pixelOffset + (height - 1 - y) * stride;
    for (let x = 0; x < width; x++, src += channels, dst += channels) {
      out[dst] = data[src + 2] ?? 0;
      out[dst + 1] = data[src + 1] ?? 0;
      out[dst + 2] = data[src] ?? 0;
      if (channels === 4) out[dst + 3] = data[src + 3] ?? 0;
    }
  }
  return out;
}

function assertEncodable(image: BmpImage): void {
  const { width, height, channels, data, iccProfile } = image;
  for (const [name, value] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > MAX_DIMENSION_PX) {
      throw new TypeError(`BMP ${name} must be an integer from 1 to ${MAX_DIMENSION_PX}`);
    }
  }
  if (width * height * 4 > MAX_DECODED_BYTES) {
    throw new TypeError(`a ${width}x${height} BMP is larger than the decoder accepts`);
  }
  // Guards callers outside the type system (plain JavaScript, casts).
  if ((channels as number) !== 3 && (channels as number) !== 4) {
    throw new TypeError(`BMP channels must be 3 or 4, got ${channels}`);
  }
  if (data.length !== width * height * channels) {
    throw new TypeError(
      `BMP data has ${data.length} samples; ${width}x${height}x${channels} needs ${width * height * channels}`,
    );
  }
  if (iccProfile !== undefined && !isIccProfile(iccProfile)) {
    throw new TypeError('BMP iccProfile is not an ICC profile decodeBmp would keep');
  }
}
