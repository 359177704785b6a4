import { Rejection } from '../../../_internal/rejection.ts';
import type { BmpDecodeLimits, BmpDecodeResult, BmpImage } from './types.ts';

// References, cited below by structure name (Microsoft Learn, wingdi.h):
// BITMAPFILEHEADER, BITMAPCOREHEADER, BITMAPINFOHEADER, BITMAPV4HEADER, BITMAPV5HEADER, and
// "Bitmap Compression" (RLE8/RLE4 escapes). OS/2 2.x BITMAPINFOHEADER2 per the OS/2 PM reference.

/** Largest width or height accepted, in pixels (the range of a BITMAPCOREHEADER WORD). */
export const MAX_DIMENSION_PX = 65_535;

/**
 * Largest decoded pixel buffer, in bytes (1 GiB). Checked against the worst case of 4 channels,
 * so at most 268,435,456 pixels decode whatever `maxPixels` says.
 */
export const MAX_DECODED_BYTES = 2 ** 30;

/** Default of {@link BmpDecodeLimits.maxDecodeBytes}: the engine's default (1 GiB). */
const DEFAULT_MAX_DECODE_BYTES = 1024 * 1024 * 1024;
/** Default of {@link BmpDecodeLimits.maxExpansionRatio}: the engine's default. */
const DEFAULT_MAX_EXPANSION_RATIO = 1000;

/** Largest embedded ICC profile kept, in bytes; a larger one is dropped. */
export const MAX_ICC_PROFILE_BYTES = 4 * 1024 * 1024;

const FILE_HEADER_BYTES = 14;
const DIB_SIZE_FIELD_BYTES = 4;
const CORE_HEADER_BYTES = 12;
const INFO_HEADER_BYTES = 40;
const V2_HEADER_BYTES = 52;
const V3_HEADER_BYTES = 56;
const V4_HEADER_BYTES = 108;
const V5_HEADER_BYTES = 124;
const OS2_MIN_HEADER_BYTES = 16;
const OS2_MAX_HEADER_BYTES = 64;
const ICC_HEADER_BYTES = 128;
const ICC_SIGNATURE_OFFSET_BYTES = 36;
const MAX_PALETTE_ENTRIES = 256;
/** Widest bit field scaled through a lookup table (65,536 entries); wider ones are computed. */
const MAX_LUT_FIELD_BITS = 16;
const RGB_BYTES = 3;
const RGBA_BYTES = 4;
const OPAQUE = 255;

// biCompression values (wingdi.h).
const BI_RGB = 0;
const BI_RLE8 = 1;
const BI_RLE4 = 2;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;
const UNSUPPORTED_COMPRESSION_NAMES: ReadonlyMap<number, string> = new Map([
  [4, 'BI_JPEG'],
  [5, 'BI_PNG'],
  [11, 'BI_CMYK'],
  [12, 'BI_CMYKRLE8'],
  [13, 'BI_CMYKRLE4'],
]);
// OS/2 2.x reuses 3 and 4 for other codecs, so a Windows reading would decode garbage.
const OS2_UNSUPPORTED_COMPRESSION_NAMES: ReadonlyMap<number, string> = new Map([
  [3, 'OS/2 Huffman 1D'],
  [4, 'OS/2 RLE24'],
]);

// bV5CSType values, FOURCCs read as little-endian DWORDs.
const PROFILE_EMBEDDED = 0x4d424544; // 'MBED'

const CORE_BIT_COUNTS: ReadonlySet<number> = new Set([1, 2, 4, 8, 24]);
const INFO_BIT_COUNTS: ReadonlySet<number> = new Set([1, 2, 4, 8, 16, 24, 32]);

type HeaderKind = 'core' | 'os2' | 'windows';

interface DibHeader {
  kind: HeaderKind;
  /** DIB header size in bytes, as declared (bounded by the known sizes). */
  size: number;
  width: number;
  /** Absolute height; direction is in `topDown`. */
  height: number;
  topDown: boolean;
  bitCount: number;
  compression: number;
  colorsUsed: number;
}

interface ChannelMask {
  mask: number;
  shift: number;
  /** Largest value of the field after shifting. */
  max: number;
  /** Field value to 8-bit sample, when the field is narrow enough to tabulate. */
  lut: Uint8Array | undefined;
}

interface PixelMasks {
  red: ChannelMask;
  green: ChannelMask;
  blue: ChannelMask;
  alpha: ChannelMask | undefined;
}

interface DecodedPixels {
  data: Uint8Array;
  channels: 3 | 4;
  /** Offset just past the last byte of the pixel array that was read. */
  end: number;
}

/**
 * Decodes an untrusted BMP file (BITMAPFILEHEADER followed by a core, OS/2 2.x, info, V2, V3, V4
 * or V5 header) into top-down 8-bit RGB or RGBA pixels.
 *
 * Supports 1, 2, 4, 8 bits per pixel with a palette, 16 and 32 with default or BI_BITFIELDS /
 * BI_ALPHABITFIELDS masks, 24, and BI_RLE8 / BI_RLE4. The result has 4 channels only when the
 * file really carries alpha: a V3+ alpha mask with at least one non-zero alpha value, or RLE
 * pixels left unwritten by a delta / end-of-line / end-of-bitmap escape (those are transparent
 * black, as browsers show them). Palette indexes beyond the palette decode as opaque black, as
 * browsers show them. An embedded ICC profile (V5, PROFILE_EMBEDDED) is kept when it looks like
 * ICC; linked profiles (a file path) and anything malformed are dropped.
 *
 * Every size, count and offset is checked before use; image size is checked against
 * `limits.maxPixels`, {@link MAX_DIMENSION_PX} and {@link MAX_DECODED_BYTES} from the header,
 * before any pixel memory is allocated. Time is linear in input plus output size.
 *
 * @throws {Rejection} `invalid_file` for malformed, truncated or unsupported files;
 *   `file_too_large` when the image exceeds the limits.
 * @throws {TypeError} when `limits.maxPixels` is NaN or negative (a caller bug).
 * @example
 * const { image, trailingBytes } = decodeBmp(bytes, { maxPixels: 100_000_000 });
 */
export function decodeBmp(bytes: Uint8Array, limits: BmpDecodeLimits): BmpDecodeResult {
  if (Number.isNaN(limits.maxPixels) || limits.maxPixels < 0) {
    throw new TypeError(`maxPixels must be a non-negative number, got ${limits.maxPixels}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const header = readHeaders(view);
  checkImageSize(header, limits.maxPixels);
  checkDecodeCost(header, view, limits);

  let cursor = FILE_HEADER_BYTES + header.size;
  let masks: PixelMasks | undefined;
  if (header.bitCount === 16 || header.bitCount === 32) {
    const read = readMasks(view, header, cursor);
    masks = read.masks;
    cursor += read.bytesAfterHeader;
  }

  // BITMAPFILEHEADER bfOffBits: the pixel array's offset from the start of the file.
  const pixelOffset = view.getUint32(10, true);
  if (pixelOffset < cursor) {
    invalid(`pixel data offset ${pixelOffset} points inside the headers, which end at ${cursor}`);
  }
  if (pixelOffset >= view.byteLength) {
    invalid(
      `pixel data offset ${pixelOffset} is at or beyond the end of the ${view.byteLength}-byte file`,
    );
  }

  let paletteBytes = 0;
  let pixels: DecodedPixels;
  if (header.bitCount <= 8) {
    const palette = readPalette(view, header, cursor, pixelOffset);
    paletteBytes = palette.bytes;
    pixels =
      header.compression === BI_RLE8 || header.compression === BI_RLE4
        ? decodeRle(view, header, pixelOffset, palette.colors)
        : decodeIndexed(view, header, pixelOffset, palette.colors);
  } else if (masks === undefined) {
    pixels = decodeRgb24(view, header, pixelOffset);
  } else {
    pixels = decodeMasked(view, header, pixelOffset, masks);
  }

  const profile = readEmbeddedProfile(bytes, view, header);
  const covered: [number, number][] = [
    [0, cursor + paletteBytes],
    [pixelOffset, pixels.end],
  ];
  if (profile !== undefined) covered.push([profile.start, profile.start + profile.bytes.length]);

  const image: BmpImage = {
    width: header.width,
    height: header.height,
    channels: pixels.channels,
    data: pixels.data,
  };
  if (profile !== undefined) image.iccProfile = profile.bytes;
  return { image, trailingBytes: view.byteLength - coveredLength(covered, view.byteLength) };
}

function invalid(detail: string): never {
  throw new Rejection('invalid_file', `BMP: ${detail}`);
}

function readHeaders(view: DataView): DibHeader {
  const length = view.byteLength;
  if (length < FILE_HEADER_BYTES) {
    invalid(`file is ${length} bytes, shorter than the 14-byte BITMAPFILEHEADER`);
  }
  if (view.getUint8(0) !== 0x42 || view.getUint8(1) !== 0x4d) {
    invalid('missing the "BM" signature');
  }
  if (length < FILE_HEADER_BYTES + DIB_SIZE_FIELD_BYTES) {
    invalid('file ends before the DIB header size');
  }
  const size = view.getUint32(FILE_HEADER_BYTES, true);
  const kind = headerKind(size);
  if (kind === undefined) invalid(`unsupported DIB header size ${size}`);
  if (FILE_HEADER_BYTES + size > length) {
    invalid(`the ${size}-byte DIB header is truncated: the file is ${length} bytes`);
  }
  // Offsets below are relative to the DIB header, as in the structure definitions.
  const at = (offset: number): number => FILE_HEADER_BYTES + offset;

  if (kind === 'core') {
    // BITMAPCOREHEADER: bcWidth and bcHeight are unsigned WORDs, so always bottom-up.
    const width = view.getUint16(at(4), true);
    const height = view.getUint16(at(6), true);
    const planes = view.getUint16(at(8), true);
    const bitCount = view.getUint16(at(10), true);
    checkPlanesAndBitCount(planes, bitCount, CORE_BIT_COUNTS, 'BITMAPCOREHEADER');
    if (width === 0 || height === 0) invalid(`image is ${width}x${height} pixels`);
    return {
      kind,
      size,
      width,
      height,
      topDown: false,
      bitCount,
      compression: BI_RGB,
      colorsUsed: 0,
    };
  }

  // OS/2 2.x headers may stop after any field; missing fields are zero.
  const optionalU32 = (offset: number): number =>
    offset + 4 <= size ? view.getUint32(at(offset), true) : 0;
  const width = view.getInt32(at(4), true);
  const signedHeight = view.getInt32(at(8), true);
  const planes = view.getUint16(at(12), true);
  const bitCount = view.getUint16(at(14), true);
  const compression = optionalU32(16);
  const colorsUsed = optionalU32(32);
  checkPlanesAndBitCount(planes, bitCount, INFO_BIT_COUNTS, 'BITMAPINFOHEADER');
  if (width <= 0) invalid(`width is ${width}; it must be positive`);
  if (signedHeight === 0) invalid('height is 0');
  // BITMAPINFOHEADER biHeight: negative means a top-down DIB. Math.abs of INT32_MIN is exact in
  // a double, so the size check below rejects it instead of overflowing.
  const topDown = signedHeight < 0;
  const height = Math.abs(signedHeight);
  checkCompression(kind, compression, bitCount, topDown);
  return { kind, size, width, height, topDown, bitCount, compression, colorsUsed };
}

function headerKind(size: number): HeaderKind | undefined {
  switch (size) {
    case CORE_HEADER_BYTES:
      return 'core';
    case INFO_HEADER_BYTES:
    case V2_HEADER_BYTES:
    case V3_HEADER_BYTES:
    case V4_HEADER_BYTES:
    case V5_HEADER_BYTES:
      return 'windows';
    default:
      return size >= OS2_MIN_HEADER_BYTES && size <= OS2_MAX_HEADER_BYTES ? 'os2' : undefined;
  }
}

function checkPlanesAndBitCount(
  planes: number,
  bitCount: number,
  allowed: ReadonlySet<number>,
  structure: string,
): void {
  if (planes !== 1) invalid(`planes is ${planes}; it must be 1`);
  if (!allowed.has(bitCount)) invalid(`${bitCount} bits per pixel is not valid in a ${structure}`);
}

function checkCompression(
  kind: HeaderKind,
  compression: number,
  bitCount: number,
  topDown: boolean,
): void {
  const unsupported =
    kind === 'os2'
      ? OS2_UNSUPPORTED_COMPRESSION_NAMES.get(compression)
      : UNSUPPORTED_COMPRESSION_NAMES.get(compression);
  if (unsupported !== undefined) {
    invalid(`unsupported BMP compression ${unsupported} (${compression})`);
  }
  switch (compression) {
    case BI_RGB:
      return;
    case BI_RLE8:
    case BI_RLE4: {
      const expected = compression === BI_RLE8 ? 8 : 4;
      const name = compression === BI_RLE8 ? 'BI_RLE8' : 'BI_RLE4';
      if (bitCount !== expected)
        invalid(`${name} needs ${expected} bits per pixel, not ${bitCount}`);
      // BITMAPINFOHEADER biHeight: "Top-down DIBs cannot be compressed."
      if (topDown)
        invalid(`${name} image has a negative height; top-down DIBs cannot be compressed`);
      return;
    }
    case BI_BITFIELDS:
    case BI_ALPHABITFIELDS:
      if (kind !== 'windows' || (bitCount !== 16 && bitCount !== 32)) {
        invalid(`bit-field masks need 16 or 32 bits per pixel, not ${bitCount}`);
      }
      return;
    default:
      invalid(`unsupported BMP compression ${compression}`);
  }
}

function checkImageSize(header: DibHeader, maxPixels: number): void {
  const { width, height } = header;
  if (width > MAX_DIMENSION_PX || height > MAX_DIMENSION_PX) {
    throw new Rejection(
      'file_too_large',
      `BMP: ${width}x${height} pixels exceeds ${MAX_DIMENSION_PX} pixels per side`,
    );
  }
  const pixelCount = width * height;
  if (pixelCount > maxPixels) {
    throw new Rejection(
      'file_too_large',
      `BMP: ${width}x${height} is ${pixelCount} pixels, over the ${maxPixels}-pixel limit`,
    );
  }
  if (pixelCount * RGBA_BYTES > MAX_DECODED_BYTES) {
    throw new Rejection(
      'file_too_large',
      `BMP: ${width}x${height} needs more than ${MAX_DECODED_BYTES} bytes decoded`,
    );
  }
}

/** Copies of the pixel buffer a rebuild may hold at once (see checkDecodeCost). */
const PIXEL_COPIES = 4;

/** Bytes of output RLE can produce per input byte: a 2-byte run of 255 RGBA pixels. */
const RLE_MAX_EXPANSION = (255 * RGBA_BYTES) / 2;
/**
 * RLE expansion allowed without question: below this, decoding costs little. Not the engine's
 * expansion-ratio floor for compressed streams (64 MiB): RLE runs alone never pass the ratio, so
 * what this catches is a header declaring a canvas its data leaves almost wholly unpainted, checked
 * against the declaration before the canvas is allocated.
 */
const RLE_EXPANSION_FLOOR_BYTES = 1024 * 1024;

/**
 * Decode memory from the header, before allocation: the decoded pixels and the re-encoded copy
 * against `maxDecodeBytes`; for RLE, the declared image against what the compressed bytes can
 * paint. RLE runs expand at most {@link RLE_MAX_EXPANSION} times; more is only reachable through
 * delta and end-of-line/end-of-bitmap escapes ("Bitmap Compression") that leave pixels unwritten:
 * a tiny file declaring a huge, mostly empty canvas, refused here as an expansion bomb.
 */
function checkDecodeCost(header: DibHeader, view: DataView, limits: BmpDecodeLimits): void {
  const decodedBytes = header.width * header.height * RGBA_BYTES;
  const maxDecodeBytes = limits.maxDecodeBytes ?? DEFAULT_MAX_DECODE_BYTES;
  // Decoded pixels, a colour-converted copy and its staging, and the re-encoded file.
  const neededBytes = decodedBytes * PIXEL_COPIES;
  if (neededBytes > maxDecodeBytes) {
    throw new Rejection(
      'file_too_large',
      `BMP: ${header.width}x${header.height} needs about ${neededBytes} bytes to decode, convert and re-encode, over the ${maxDecodeBytes}-byte ceiling`,
    );
  }
  if (header.compression !== BI_RLE8 && header.compression !== BI_RLE4) return;
  const compressedBytes = Math.max(1, view.byteLength - FILE_HEADER_BYTES - header.size);
  const ratio = Math.max(
    RLE_MAX_EXPANSION,
    limits.maxExpansionRatio ?? DEFAULT_MAX_EXPANSION_RATIO,
  );
  if (decodedBytes > RLE_EXPANSION_FLOOR_BYTES && decodedBytes > compressedBytes * ratio) {
    throw new Rejection(
      'file_too_large',
      `BMP: ${compressedBytes} bytes of RLE data declare a ${header.width}x${header.height} image (${decodedBytes} bytes decoded), more than ${ratio} times their size`,
    );
  }
}

function readMasks(
  view: DataView,
  header: DibHeader,
  headerEnd: number,
): { masks: PixelMasks; bytesAfterHeader: number } {
  const { bitCount, compression, size } = header;
  const at = (offset: number): number => view.getUint32(FILE_HEADER_BYTES + offset, true);
  // V3+ headers carry an alpha mask field (BITMAPV4HEADER bV4AlphaMask).
  const headerAlpha = header.kind === 'windows' && size >= V3_HEADER_BYTES ? at(52) : 0;

  if (compression !== BI_BITFIELDS && compression !== BI_ALPHABITFIELDS) {
    // BITMAPINFOHEADER biBitCount: BI_RGB 16-bit is 5-5-5 (top bit unused), 32-bit is 8-8-8
    // with the high byte unused. The red/green/blue mask fields of V4/V5 are "valid only if
    // BI_BITFIELDS", but the alpha mask is not so restricted, so a V3+ alpha mask applies; a
    // nonsensical one is ignored here rather than rejected, as it was never required to be set.
    const rgb: [number, number, number] =
      bitCount === 16 ? [0x7c00, 0x03e0, 0x001f] : [0x00ff0000, 0x0000ff00, 0x000000ff];
    const usable = headerAlpha !== 0 && maskProblem([...rgb, headerAlpha], bitCount) === undefined;
    return {
      masks: {
        red: channelMask(rgb[0]),
        green: channelMask(rgb[1]),
        blue: channelMask(rgb[2]),
        alpha: usable ? channelMask(headerAlpha) : undefined,
      },
      bytesAfterHeader: 0,
    };
  }

  let values: [number, number, number, number];
  let bytesAfterHeader = 0;
  if (size === INFO_HEADER_BYTES) {
    // BITMAPINFOHEADER: with BI_BITFIELDS the three DWORD masks follow the header (four with
    // BI_ALPHABITFIELDS).
    const count = compression === BI_ALPHABITFIELDS ? 4 : 3;
    bytesAfterHeader = count * 4;
    if (headerEnd + bytesAfterHeader > view.byteLength) {
      invalid(`the ${count} bit-field masks after the header are truncated`);
    }
    const after = (i: number): number => view.getUint32(headerEnd + i * 4, true);
    values = [after(0), after(1), after(2), count === 4 ? after(3) : 0];
  } else {
    values = [at(40), at(44), at(48), headerAlpha];
  }
  const problem = maskProblem(values, bitCount);
  if (problem !== undefined) invalid(problem);
  const [red, green, blue, alpha] = values;
  return {
    masks: {
      red: channelMask(red),
      green: channelMask(green),
      blue: channelMask(blue),
      alpha: alpha === 0 ? undefined : channelMask(alpha),
    },
    bytesAfterHeader,
  };
}

/** Why a set of [red, green, blue, alpha?] masks cannot be decoded, or undefined if it can. */
function maskProblem(masks: readonly number[], bitCount: number): string | undefined {
  const names = ['red', 'green', 'blue', 'alpha'];
  const limit = bitCount === 16 ? 0xffff : 0xffffffff;
  let union = 0;
  for (const [i, mask] of masks.entries()) {
    const name = names[i] ?? 'mask';
    const hex = `0x${mask.toString(16)}`;
    if (mask === 0) {
      if (i < 3) return `${name} bit-field mask is zero`;
      continue;
    }
    if (mask > limit) return `${name} mask ${hex} has bits beyond ${bitCount} bits per pixel`;
    const field = mask >>> trailingZeros(mask);
    if ((field & (field + 1)) !== 0) return `${name} mask ${hex} is not contiguous`;
    if ((union & mask) !== 0) return `${name} mask ${hex} overlaps another mask`;
    union |= mask;
  }
  return undefined;
}

function trailingZeros(value: number): number {
  return 31 - Math.clz32(value & -value);
}

function channelMask(mask: number): ChannelMask {
  const shift = trailingZeros(mask);
  const max = mask >>> shift;
  const bits = 32 - Math.clz32(max);
  let lut: Uint8Array | undefined;
  if (bits <= MAX_LUT_FIELD_BITS) {
    lut = new Uint8Array(max + 1);
    for (let v = 0; v <= max; v++) lut[v] = scaleTo8Bits(v, max);
  }
  return { mask, shift, max, lut };
}

/** Rounds `value / max` to the nearest 8-bit sample; exact in doubles for 32-bit fields. */
function scaleTo8Bits(value: number, max: number): number {
  return Math.floor((value * 510 + max) / (2 * max));
}

function sample(channel: ChannelMask, pixel: number): number {
  const value = (pixel & channel.mask) >>> channel.shift;
  return channel.lut === undefined ? scaleTo8Bits(value, channel.max) : (channel.lut[value] ?? 0);
}

/**
 * Reads the colour table into a 256-entry RGB table; entries past the palette stay black so any
 * index is safe to look up.
 */
function readPalette(
  view: DataView,
  header: DibHeader,
  start: number,
  pixelOffset: number,
): { colors: Uint8Array; bytes: number } {
  const maxEntries = 1 << header.bitCount;
  // BITMAPINFOHEADER biClrUsed: zero means the maximum for the bit depth.
  const declared = header.colorsUsed === 0 ? maxEntries : header.colorsUsed;
  if (declared > maxEntries) {
    invalid(
      `palette declares ${header.colorsUsed} colours; ${header.bitCount} bits per pixel allow ${maxEntries}`,
    );
  }
  // BITMAPCOREHEADER palettes are RGBTRIPLEs; the others are RGBQUADs (OS/2 2.x RGB2 too).
  const entryBytes = header.kind === 'core' ? 3 : 4;
  // Some writers declare a full palette but store fewer entries before the pixel array; keep
  // what is there, and the missing indexes read as black like any out-of-range index.
  const entries = Math.min(declared, Math.floor((pixelOffset - start) / entryBytes));
  if (entries === 0) invalid('the palette is missing: pixel data starts right after the headers');
  const colors = new Uint8Array(MAX_PALETTE_ENTRIES * RGB_BYTES);
  for (let i = 0; i < entries; i++) {
    const offset = start + i * entryBytes;
    colors[i * 3] = view.getUint8(offset + 2);
    colors[i * 3 + 1] = view.getUint8(offset + 1);
    colors[i * 3 + 2] = view.getUint8(offset);
  }
  return { colors, bytes: entries * entryBytes };
}

/** BITMAPINFOHEADER: each row is padded to a multiple of 4 bytes (a DWORD boundary). */
function rowStride(header: DibHeader): number {
  return Math.floor((header.width * header.bitCount + 31) / 32) * 4;
}

/** Checks an uncompressed pixel array fits in the file; returns its end offset. */
function checkPixelArray(view: DataView, header: DibHeader, offset: number): number {
  const stride = rowStride(header);
  // The padding of the last row carries no pixels, so only its pixel bytes are required.
  const needed = stride * (header.height - 1) + Math.ceil((header.width * header.bitCount) / 8);
  if (offset + needed > view.byteLength) {
    invalid(
      `pixel array is truncated: ${needed} bytes needed at offset ${offset}, the file is ${view.byteLength} bytes`,
    );
  }
  return Math.min(offset + stride * header.height, view.byteLength);
}

function sourceRowOffset(header: DibHeader, offset: number, y: number): number {
  const row = header.topDown ? y : header.height - 1 - y;
  return offset + row * rowStride(header);
}

function decodeIndexed(
  view: DataView,
  header: DibHeader,
  offset: number,
  colors: Uint8Array,
): DecodedPixels {
  const end = checkPixelArray(view, header, offset);
  const { width, height, bitCount } = header;
  const data = new Uint8Array(width * height * RGB_BYTES);
  const pixelsPerByte = 8 / bitCount;
  const indexMask = (1 << bitCount) - 1;
  let out = 0;
  for (let y = 0; y < height; y++) {
    const row = sourceRowOffset(header, offset, y);
    for (let x = 0; x < width; x++) {
      const byte = view.getUint8(row + Math.floor(x / pixelsPerByte));
      // Sub-byte pixels are packed most significant bits first.
      const shift = 8 - bitCount * ((x % pixelsPerByte) + 1);
      const color = ((byte >> shift) & indexMask) * 3;
      data[out++] = colors[color] ?? 0;
      data[out++] = colors[color + 1] ?? 0;
      data[out++] = colors[color + 2] ?? 0;
    }
  }
  return { data, channels: 3, end };
}

function decodeRgb24(view: DataView, header: DibHeader, offset: number): DecodedPixels {
  const end = checkPixelArray(view, header, offset);
  const { width, height } = header;
  const data = new Uint8Array(width * height * RGB_BYTES);
  let out = 0;
  for (let y = 0; y < height; y++) {
    let pos = sourceRowOffset(header, offset, y);
    for (let x = 0; x < width; x++, pos += 3) {
      data[out++] = view.getUint8(pos + 2);
      data[out++] = view.getUint8(pos + 1);
      data[out++] = view.getUint8(pos);
    }
  }
  return { data, channels: 3, end };
}

function decodeMasked(
  view: DataView,
  header: DibHeader,
  offset: number,
  masks: PixelMasks,
): DecodedPixels {
  const end = checkPixelArray(view, header, offset);
  const { width, height, bitCount } = header;
  const pixelBytes = bitCount / 8;
  const read =
    bitCount === 16
      ? (pos: number): number => view.getUint16(pos, true)
      : (pos: number): number => view.getUint32(pos, true);

  const { alpha } = masks;
  // An alpha channel that is zero everywhere means the writer did not use alpha (browsers show
  // such files opaque), so it is decoded as RGB.
  let hasAlpha = false;
  if (alpha !== undefined) {
    scan: for (let y = 0; y < height; y++) {
      let pos = sourceRowOffset(header, offset, y);
      for (let x = 0; x < width; x++, pos += pixelBytes) {
        if ((read(pos) & alpha.mask) !== 0) {
          hasAlpha = true;
          break scan;
        }
      }
    }
  }

  const channels = hasAlpha ? RGBA_BYTES : RGB_BYTES;
  const data = new Uint8Array(width * height * channels);
  let out = 0;
  for (let y = 0; y < height; y++) {
    let pos = sourceRowOffset(header, offset, y);
    for (let x = 0; x < width; x++, pos += pixelBytes) {
      const pixel = read(pos);
      data[out++] = sample(masks.red, pixel);
      data[out++] = sample(masks.green, pixel);
      data[out++] = sample(masks.blue, pixel);
      if (hasAlpha && alpha !== undefined) data[out++] = sample(alpha, pixel);
    }
  }
  return { data, channels, end };
}

/**
 * BI_RLE8 / BI_RLE4 per "Bitmap Compression": pairs of (count, value) are encoded runs; a zero
 * count is an escape: 0 end of line, 1 end of bitmap, 2 delta (dx, dy), 3+ an absolute run
 * padded to a 16-bit boundary. Pixels no escape writes stay transparent black. Writes outside
 * the image are clipped, so every pixel is written at most once and each step consumes input:
 * time is bounded by input plus output size.
 */
function decodeRle(
  view: DataView,
  header: DibHeader,
  offset: number,
  colors: Uint8Array,
): DecodedPixels {
  const { width, height } = header;
  const nibbles = header.compression === BI_RLE4;
  const length = view.byteLength;
  const data = new Uint8Array(width * height * RGBA_BYTES);
  let written = 0;
  // (x, y) counts from the bottom-left: RLE bitmaps are always bottom-up.
  let x = 0;
  let y = 0;
  let pos = offset;

  const put = (px: number, index: number): void => {
    const out = ((height - 1 - y) * width + px) * RGBA_BYTES;
    const color = index * 3;
    data[out] = colors[color] ?? 0;
    data[out + 1] = colors[color + 1] ?? 0;
    data[out + 2] = colors[color + 2] ?? 0;
    data[out + 3] = OPAQUE;
    written++;
  };
  const visibleCount = (count: number): number =>
    y < height ? Math.max(0, Math.min(count, width - x)) : 0;

  for (;;) {
    if (pos + 2 > length) {
      // Some writers omit the end-of-bitmap escape once every row is complete.
      if (y >= height || (y === height - 1 && x >= width)) break;
      invalid(`RLE data ends at offset ${pos}, before the end-of-bitmap escape`);
    }
    const count = view.getUint8(pos);
    const value = view.getUint8(pos + 1);
    pos += 2;
    if (count > 0) {
      // Encoded run; RLE4 alternates the high and low nibble of the value.
      const visible = visibleCount(count);
      for (let i = 0; i < visible; i++) {
        put(x + i, nibbles ? (i % 2 === 0 ? value >> 4 : value & 0x0f) : value);
      }
      x += count;
      continue;
    }
    if (value === 0) {
      x = 0;
      y++;
    } else if (value === 1) {
      break;
    } else if (value === 2) {
      if (pos + 2 > length) invalid(`RLE delta escape at offset ${pos - 2} is truncated`);
      // The delta bytes are unsigned offsets right and up from the current position.
      x += view.getUint8(pos);
      y += view.getUint8(pos + 1);
      pos += 2;
    } else {
      const dataBytes = nibbles ? Math.ceil(value / 2) : value;
      const paddedBytes = dataBytes + (dataBytes % 2);
      if (pos + paddedBytes > length) {
        invalid(`RLE absolute run of ${value} pixels at offset ${pos - 2} is truncated`);
      }
      const visible = visibleCount(value);
      for (let i = 0; i < visible; i++) {
        const index = nibbles
          ? (view.getUint8(pos + (i >> 1)) >> (i % 2 === 0 ? 4 : 0)) & 0x0f
          : view.getUint8(pos + i);
        put(x + i, index);
      }
      x += value;
      pos += paddedBytes;
    }
  }

  const pixelCount = width * height;
  if (written < pixelCount) return { data, channels: 4, end: pos };
  return { data: dropAlpha(data, pixelCount), channels: 3, end: pos };
}

function dropAlpha(rgba: Uint8Array, pixelCount: number): Uint8Array {
  const rgb = new Uint8Array(pixelCount * RGB_BYTES);
  for (let i = 0, o = 0; o < rgb.length; i += 4, o += 3) {
    rgb[o] = rgba[i] ?? 0;
    rgb[o + 1] = rgba[i + 1] ?? 0;
    rgb[o + 2] = rgba[i + 2] ?? 0;
  }
  return rgb;
}

/**
 * The profile of a BITMAPV5HEADER with bV5CSType PROFILE_EMBEDDED: bV5ProfileSize bytes at
 * bV5ProfileData, an offset from the start of the V5 header. Kept only when it is plausibly ICC
 * (ICC.1 7.2: 128-byte header, 'acsp' at byte 36, big-endian size at byte 0), trimmed to its
 * declared size. PROFILE_LINKED names a file path and is never followed or kept.
 */
function readEmbeddedProfile(
  bytes: Uint8Array,
  view: DataView,
  header: DibHeader,
): { start: number; bytes: Uint8Array } | undefined {
  if (header.kind !== 'windows' || header.size < V5_HEADER_BYTES) return undefined;
  const field = (offset: number): number => view.getUint32(FILE_HEADER_BYTES + offset, true);
  if (field(56) !== PROFILE_EMBEDDED) return undefined;
  const start = FILE_HEADER_BYTES + field(112);
  const size = field(116);
  if (size < ICC_HEADER_BYTES || size > MAX_ICC_PROFILE_BYTES) return undefined;
  if (start + size > bytes.length) return undefined;
  const declared = view.getUint32(start, false);
  if (declared > size) return undefined;
  const profile = bytes.subarray(start, start + declared);
  return isIccProfile(profile) ? { start, bytes: profile.slice() } : undefined;
}

/**
 * True when `profile` has the shape of an ICC profile this codec carries: 128 bytes to
 * {@link MAX_ICC_PROFILE_BYTES}, the 'acsp' signature at byte 36, and a declared size (big-endian,
 * byte 0) equal to its length.
 */
export function isIccProfile(profile: Uint8Array): boolean {
  if (profile.length < ICC_HEADER_BYTES || profile.length > MAX_ICC_PROFILE_BYTES) return false;
  const view = new DataView(profile.buffer, profile.byteOffset, profile.byteLength);
  return (
    view.getUint32(0, false) === profile.length &&
    view.getUint32(ICC_SIGNATURE_OFFSET_BYTES, false) === 0x61637370 // 'acsp'
  );
}

/** Total length of the union of `[start, end)` ranges, clipped to `[0, limit)`. */
function coveredLength(ranges: [number, number][], limit: number): number {
  const sorted = ranges
    .map(([start, end]): [number, number] => [Math.max(0, start), Math.min(limit, end)])
    .filter(([start, end]) => end > start)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let reached = 0;
  for (const [start, end] of sorted) {
    const from = Math.max(start, reached);
    if (end > from) {
      total += end - from;
      reached = end;
    }
  }
  return total;
}
