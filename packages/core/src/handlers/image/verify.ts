import { inflateSync } from 'node:zlib';

import { u16le, u32be, u32le } from '../../_internal/bytes.ts';
import { VerifyFailure } from '../types.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { isCanonicalProfile } from './icc.ts';

/**
 * Image checks of verify before release: the output is re-read by structural walkers written for
 * this check alone (not the encoder, not the walkers that count findings) and must carry pixels
 * only. Each walker is an allowlist of the format's structural blocks; anything else fails:
 *
 * - `image.no-metadata`: a block outside the allowlist (EXIF, XMP, IPTC, comments, text chunks,
 *   foreign application blocks, descriptive TIFF tags);
 * - `image.profile`: an ICC profile that is not byte-identical to one of our canonical profiles;
 * - `image.trailing-data`: bytes after the format's end;
 * - `image.structure`: the walk cannot make sense of the file.
 */
export function verifyImage(
  output: HandlerOutput,
  input: DetectedFile,
  _context: EngineContext,
): Promise<void> {
  assertPixelsOnly(output.bytes, input.format.outputExtension);
  return Promise.resolve();
}

/**
 * The checks of {@link verifyImage} on bytes of the given file extension.
 * @throws {VerifyFailure} naming the first failed check.
 */
export function assertPixelsOnly(bytes: Uint8Array, extension: string): void {
  switch (extension) {
    case 'jpg':
    case 'jpeg': {
      verifyJpeg(bytes);
      return;
    }
    case 'png': {
      verifyPng(bytes);
      return;
    }
    case 'gif': {
      verifyGif(bytes);
      return;
    }
    case 'webp': {
      verifyWebp(bytes);
      return;
    }
    case 'tif':
    case 'tiff': {
      verifyTiff(bytes);
      return;
    }
    case 'bmp': {
      verifyBmp(bytes);
      return;
    }
    default:
      return fail('image.structure', `no image verifier for .${extension}`);
  }
}

function fail(check: string, message: string): never {
  throw new VerifyFailure(check, message);
}

function checkProfile(profile: Uint8Array, where: string): void {
  if (!isCanonicalProfile(profile)) {
    fail('image.profile', `the ${where} ICC profile is not one of our canonical profiles`);
  }
}

/** Upper bound on blocks walked; our encoders never come near it. */
const MAX_BLOCKS = 1_000_000;

// JPEG (ITU T.81 B.1.1). Allowed: SOI, JFIF APP0 (no thumbnail), ICC_PROFILE APP2, Adobe APP14,
// DQT, DHT, DRI, SOF0-2, SOS with its entropy-coded data and RSTn, EOI at the very end.
const JPEG_TABLE_MARKERS: ReadonlySet<number> = new Set([0xdb, 0xc4, 0xdd, 0xc0, 0xc1, 0xc2]);

function verifyJpeg(bytes: Uint8Array): void {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) fail('image.structure', 'the JPEG has no SOI');
  const iccChunks: Uint8Array[] = [];
  let offset = 2;
  for (let blocks = 0; blocks < MAX_BLOCKS; blocks += 1) {
    if (offset + 2 > bytes.length) fail('image.structure', 'the JPEG ends before EOI');
    if (bytes[offset] !== 0xff) fail('image.structure', `no marker at byte ${offset}`);
    const marker = bytes[offset + 1] ?? 0;
    if (marker === 0xd9) {
      if (offset + 2 !== bytes.length) {
        fail('image.trailing-data', `${bytes.length - offset - 2} bytes follow EOI`);
      }
      if (iccChunks.length > 0) checkProfile(Buffer.concat(iccChunks), 'JPEG APP2');
      return;
    }
    if (offset + 4 > bytes.length) fail('image.structure', 'a JPEG segment is truncated');
    const length = ((bytes[offset + 2] ?? 0) << 8) | (bytes[offset + 3] ?? 0);
    const body = bytes.subarray(offset + 4, offset + 2 + length);
    if (length < 2 || offset + 2 + length > bytes.length) {
      fail('image.structure', `a JPEG segment at byte ${offset} overruns the file`);
    }
    if (marker === 0xe0) {
      // T.871 10.1: 'JFIF\0' + version + units + densities + a 0x0 thumbnail.
      if (length !== 16 || latin1(body, 0, 5) !== 'JFIF\0' || body[12] !== 0 || body[13] !== 0) {
        fail('image.no-metadata', 'an APP0 segment other than a thumbnail-free JFIF header');
      }
    } else if (marker === 0xe2) {
      // ICC.1 B.4: 'ICC_PROFILE\0', sequence number, count, then the profile's bytes.
      if (latin1(body, 0, 12) !== 'ICC_PROFILE\0') {
        fail('image.no-metadata', 'an APP2 segment other than ICC_PROFILE');
      }
      iccChunks.push(body.subarray(14));
    } else if (marker === 0xee) {
      if (latin1(body, 0, 5) !== 'Adobe' || length !== 14) {
        fail('image.no-metadata', 'an APP14 segment other than the Adobe colour transform');
      }
    } else if (marker === 0xda) {
      offset = skipScan(bytes, offset + 2 + length);
      continue;
    } else if (!JPEG_TABLE_MARKERS.has(marker)) {
      fail('image.no-metadata', `JPEG marker 0x${marker.toString(16)} is not allowed`);
    }
    offset += 2 + length;
  }
  fail('image.structure', 'too many JPEG segments');
}

/** T.81 B.1.1.5: scan data ends at the first marker other than stuffing (FF00) or RSTn. */
function skipScan(bytes: Uint8Array, start: number): number {
  for (let i = start; i + 1 < bytes.length; i += 1) {
    if (bytes[i] !== 0xff) continue;
    const next = bytes[i + 1] ?? 0;
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) continue;
    return i;
  }
  return fail('image.structure', 'the JPEG scan data never ends');
}

// PNG (PNG spec 3rd ed. 5.6): critical chunks and the colour/animation ancillaries, nothing else.
const PNG_ALLOWED = new Set([
  'IHDR',
  'PLTE',
  'IDAT',
  'IEND',
  'tRNS',
  'pHYs',
  'gAMA',
  'cHRM',
  'sRGB',
  'iCCP',
  'sBIT',
  'acTL',
  'fcTL',
  'fdAT',
]);
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
/** Largest decompressed iCCP profile looked at; ours are a few KiB. */
const MAX_PROFILE_BYTES = 1024 * 1024;

function verifyPng(bytes: Uint8Array): void {
  if (PNG_SIGNATURE.some((value, i) => bytes[i] !== value)) {
    fail('image.structure', 'the PNG signature is missing');
  }
  let offset = 8;
  for (let blocks = 0; blocks < MAX_BLOCKS; blocks += 1) {
    if (offset + 12 > bytes.length) fail('image.structure', 'the PNG ends before IEND');
    const length = u32be(bytes, offset);
    const type = latin1(bytes, offset + 4, 4);
    const end = offset + 12 + length;
    if (end > bytes.length) fail('image.structure', `the ${type} chunk overruns the file`);
    if (!PNG_ALLOWED.has(type)) fail('image.no-metadata', `PNG chunk ${type} is not allowed`);
    if (type === 'iCCP') {
      const data = bytes.subarray(offset + 8, offset + 8 + length);
      const nul = data.indexOf(0);
      if (nul < 1 || data[nul + 1] !== 0) fail('image.structure', 'a malformed iCCP chunk');
      let profile: Uint8Array;
      try {
        profile = inflateSync(data.subarray(nul + 2), { maxOutputLength: MAX_PROFILE_BYTES });
      } catch {
        return fail('image.profile', 'the iCCP profile does not inflate');
      }
      checkProfile(profile, 'PNG iCCP');
    }
    if (type === 'IEND') {
      if (end !== bytes.length)
        fail('image.trailing-data', `${bytes.length - end} bytes follow IEND`);
      return;
    }
    offset = end;
  }
  fail('image.structure', 'too many PNG chunks');
}

// GIF89a: header, screen, colour tables, graphic control and NETSCAPE2.0 loop extensions, images,
// the trailer at the very end.
function verifyGif(bytes: Uint8Array): void {
  const version = latin1(bytes, 0, 6);
  if ((version !== 'GIF89a' && version !== 'GIF87a') || bytes.length < 13) {
    fail('image.structure', 'the GIF header is missing');
  }
  const packed = bytes[10] ?? 0;
  let offset = 13 + ((packed & 0x80) !== 0 ? 3 * (1 << ((packed & 0x07) + 1)) : 0);
  for (let blocks = 0; blocks < MAX_BLOCKS; blocks += 1) {
    const introducer = bytes[offset];
    if (introducer === 0x3b) {
      if (offset + 1 !== bytes.length) {
        fail('image.trailing-data', `${bytes.length - offset - 1} bytes follow the GIF trailer`);
      }
      return;
    }
    if (introducer === 0x21) {
      const label = bytes[offset + 1];
      if (label === 0xf9) {
        if (bytes[offset + 2] !== 4 || bytes[offset + 7] !== 0) {
          fail('image.structure', 'a malformed graphic control extension');
        }
        offset += 8;
      } else if (label === 0xff) {
        const loop =
          bytes[offset + 2] === 11 &&
          latin1(bytes, offset + 3, 11) === 'NETSCAPE2.0' &&
          bytes[offset + 14] === 3 &&
          bytes[offset + 15] === 1 &&
          bytes[offset + 18] === 0;
        if (!loop) fail('image.no-metadata', 'an application extension other than the loop count');
        offset += 19;
      } else {
        fail('image.no-metadata', `GIF extension 0x${(label ?? 0).toString(16)} is not allowed`);
      }
    } else if (introducer === 0x2c) {
      if (offset + 11 > bytes.length) fail('image.structure', 'a truncated image descriptor');
      const local = bytes[offset + 9] ?? 0;
      offset += 10 + ((local & 0x80) !== 0 ? 3 * (1 << ((local & 0x07) + 1)) : 0) + 1;
      offset = skipSubBlocks(bytes, offset);
    } else {
      fail('image.structure', `unexpected GIF block 0x${(introducer ?? 0).toString(16)}`);
    }
  }
  fail('image.structure', 'too many GIF blocks');
}

function skipSubBlocks(bytes: Uint8Array, start: number): number {
  let offset = start;
  for (let blocks = 0; blocks < MAX_BLOCKS; blocks += 1) {
    if (offset >= bytes.length) break;
    const size = bytes[offset] ?? 0;
    offset += 1 + size;
    if (size === 0) return offset;
  }
  return fail('image.structure', 'GIF data sub-blocks run past the end');
}

// WebP (RFC 9649): RIFF exactly the file's length; chunks VP8X, VP8, VP8L, ALPH, ANIM, ANMF (with
// ALPH/VP8/VP8L inside) and ICCP; the VP8X EXIF and XMP flags clear.
const WEBP_TOP_CHUNKS = new Set(['VP8 ', 'VP8L', 'VP8X', 'ALPH', 'ANIM', 'ANMF', 'ICCP']);
const WEBP_FRAME_CHUNKS = new Set(['VP8 ', 'VP8L', 'ALPH']);
const VP8X_EXIF_FLAG = 0x08;
const VP8X_XMP_FLAG = 0x04;
const ANMF_HEADER_BYTES = 16;

function verifyWebp(bytes: Uint8Array): void {
  if (latin1(bytes, 0, 4) !== 'RIFF' || latin1(bytes, 8, 4) !== 'WEBP') {
    fail('image.structure', 'the RIFF WEBP header is missing');
  }
  const riffEnd = 8 + u32le(bytes, 4);
  if (riffEnd < bytes.length)
    fail('image.trailing-data', `${bytes.length - riffEnd} bytes follow RIFF`);
  if (riffEnd > bytes.length) fail('image.structure', 'the RIFF size overruns the file');
  walkRiffChunks(bytes, 12, riffEnd, WEBP_TOP_CHUNKS, (type, data) => {
    if (type === 'VP8X' && ((data[0] ?? 0) & (VP8X_EXIF_FLAG | VP8X_XMP_FLAG)) !== 0) {
      fail('image.no-metadata', 'the VP8X header announces EXIF or XMP');
    }
    if (type === 'ICCP') checkProfile(data, 'WebP ICCP');
    if (type === 'ANMF') {
      const start = data.byteOffset - bytes.byteOffset + ANMF_HEADER_BYTES;
      walkRiffChunks(bytes, start, start + data.length - ANMF_HEADER_BYTES, WEBP_FRAME_CHUNKS);
    }
  });
}

function walkRiffChunks(
  bytes: Uint8Array,
  start: number,
  end: number,
  allowed: ReadonlySet<string>,
  visit?: (type: string, data: Uint8Array) => void,
): void {
  let offset = start;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset < end; blocks += 1) {
    if (offset + 8 > end) fail('image.structure', 'a truncated RIFF chunk header');
    const type = latin1(bytes, offset, 4);
    const size = u32le(bytes, offset + 4);
    const next = offset + 8 + size + (size & 1);
    if (next > end) fail('image.structure', `the ${type} chunk overruns its container`);
    if (!allowed.has(type)) fail('image.no-metadata', `WebP chunk "${type}" is not allowed`);
    visit?.(type, bytes.subarray(offset + 8, offset + 8 + size));
    offset = next;
  }
}

// TIFF 6.0: the structural baseline and extension tags our encoder writes, nothing descriptive.
const TIFF_ALLOWED_TAGS: ReadonlySet<number> = new Set([
  254, // NewSubfileType
  256, // ImageWidth
  257, // ImageLength
  258, // BitsPerSample
  259, // Compression
  262, // PhotometricInterpretation
  266, // FillOrder
  273, // StripOffsets
  274, // Orientation (always 1 after the rebuild; pixels are upright)
  277, // SamplesPerPixel
  278, // RowsPerStrip
  279, // StripByteCounts
  282, // XResolution
  283, // YResolution
  284, // PlanarConfiguration
  296, // ResolutionUnit
  297, // PageNumber
  317, // Predictor
  320, // ColorMap
  322, // TileWidth
  323, // TileLength
  324, // TileOffsets
  325, // TileByteCounts
  338, // ExtraSamples
  339, // SampleFormat
  347, // JPEGTables
  529, // YCbCrCoefficients
  530, // YCbCrSubSampling
  531, // YCbCrPositioning
  532, // ReferenceBlackWhite
  34675, // InterColorProfile (checked against our profiles)
]);
const TIFF_TAG_ICC = 34675;
const TIFF_TYPE_BYTES: Readonly<Record<number, number>> = {
  1: 1,
  2: 1,
  3: 2,
  4: 4,
  5: 8,
  6: 1,
  7: 1,
  8: 2,
  9: 4,
  10: 8,
  11: 4,
  12: 8,
  13: 4,
};
const MAX_IFDS = 65_536;
const MAX_IFD_ENTRIES = 4096;

function verifyTiff(bytes: Uint8Array): void {
  const little = bytes[0] === 0x49 && bytes[1] === 0x49;
  if (!little && !(bytes[0] === 0x4d && bytes[1] === 0x4d))
    fail('image.structure', 'no TIFF header');
  const read16 = (at: number): number =>
    little ? u16le(bytes, at) : ((bytes[at] ?? 0) << 8) | (bytes[at + 1] ?? 0);
  const read32 = (at: number): number => (little ? u32le(bytes, at) : u32be(bytes, at));
  if (read16(2) !== 42) fail('image.structure', 'not a classic TIFF');
  // Every byte must belong to the header, an IFD, an out-of-line value or image data.
  let covered = 8;
  const seen = new Set<number>();
  let ifd = read32(4);
  for (let count = 0; ifd !== 0; count += 1) {
    if (count >= MAX_IFDS || seen.has(ifd) || ifd + 2 > bytes.length) {
      fail('image.structure', 'a broken IFD chain');
    }
    seen.add(ifd);
    const entries = read16(ifd);
    if (entries > MAX_IFD_ENTRIES || ifd + 2 + entries * 12 + 4 > bytes.length) {
      fail('image.structure', 'an IFD overruns the file');
    }
    covered = Math.max(covered, ifd + 2 + entries * 12 + 4);
    const offsets: number[][] = [];
    const counts: number[][] = [];
    for (let i = 0; i < entries; i += 1) {
      const entry = ifd + 2 + i * 12;
      const tag = read16(entry);
      if (!TIFF_ALLOWED_TAGS.has(tag)) fail('image.no-metadata', `TIFF tag ${tag} is not allowed`);
      const type = read16(entry + 2);
      const valueCount = read32(entry + 4);
      const unit = TIFF_TYPE_BYTES[type];
      if (unit === undefined) fail('image.structure', `TIFF tag ${tag} has unknown type ${type}`);
      const size = unit * valueCount;
      const valueAt = size <= 4 ? entry + 8 : read32(entry + 8);
      if (valueAt + size > bytes.length)
        fail('image.structure', `TIFF tag ${tag} overruns the file`);
      covered = Math.max(covered, valueAt + size);
      const values = (): number[] =>
        Array.from({ length: valueCount }, (_, k) =>
          type === 3 ? read16(valueAt + k * 2) : read32(valueAt + k * 4),
        );
      if (tag === 273 || tag === 324) offsets.push(values());
      if (tag === 279 || tag === 325) counts.push(values());
      if (tag === TIFF_TAG_ICC) checkProfile(bytes.subarray(valueAt, valueAt + size), 'TIFF');
    }
    const dataOffsets = offsets.flat();
    const dataCounts = counts.flat();
    dataOffsets.forEach((start, k) => {
      const end = start + (dataCounts[k] ?? 0);
      if (end > bytes.length) fail('image.structure', 'TIFF image data overruns the file');
      covered = Math.max(covered, end);
    });
    ifd = read32(ifd + 2 + entries * 12);
  }
  // TIFF 6.0 section 2: values start on word boundaries, so one pad byte may end the file.
  if (bytes.length > covered + 1) {
    fail('image.trailing-data', `${bytes.length - covered} bytes follow the last TIFF structure`);
  }
}

// BMP as our encoder writes it: BITMAPFILEHEADER, a BITMAPINFOHEADER or BITMAPV5HEADER, the pixel
// array, and for V5 only our own embedded profile after it; bfSize is the file's length.
const BMP_INFO_HEADER_BYTES = 40;
const BMP_V5_HEADER_BYTES = 124;
const PROFILE_EMBEDDED = 0x4d424544;
const PROFILE_LINKED = 0x4c494e4b;

function verifyBmp(bytes: Uint8Array): void {
  if (bytes[0] !== 0x42 || bytes[1] !== 0x4d || bytes.length < 54) {
    fail('image.structure', 'no BMP header');
  }
  if (u32le(bytes, 2) !== bytes.length)
    fail('image.trailing-data', 'bfSize is not the file length');
  const headerBytes = u32le(bytes, 14);
  if (headerBytes !== BMP_INFO_HEADER_BYTES && headerBytes !== BMP_V5_HEADER_BYTES) {
    fail('image.structure', `unexpected DIB header size ${headerBytes}`);
  }
  const width = u32le(bytes, 18);
  const height = Math.abs(u32le(bytes, 22) | 0);
  const bitCount = u16le(bytes, 28);
  const rowBytes = Math.ceil((width * bitCount) / 32) * 4;
  const pixelOffset = u32le(bytes, 10);
  let end = pixelOffset + rowBytes * height;
  if (headerBytes === BMP_V5_HEADER_BYTES) {
    const colourSpace = u32le(bytes, 14 + 56);
    if (colourSpace === PROFILE_LINKED) fail('image.profile', 'a linked colour profile');
    if (colourSpace === PROFILE_EMBEDDED) {
      const profileAt = 14 + u32le(bytes, 14 + 112);
      const profileBytes = u32le(bytes, 14 + 116);
      if (profileAt !== end || profileAt + profileBytes > bytes.length) {
        fail('image.structure', 'the embedded profile is not where our encoder puts it');
      }
      checkProfile(bytes.subarray(profileAt, profileAt + profileBytes), 'BMP');
      end = profileAt + profileBytes;
    }
  }
  if (end !== bytes.length)
    fail('image.trailing-data', 'bytes outside the headers, pixels and profile');
}

function latin1(bytes: Uint8Array, offset: number, length: number): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(
    'latin1',
    Math.min(offset, bytes.length),
    Math.min(offset + length, bytes.length),
  );
}
