import { deflateSync } from 'node:zlib';

import sharp from 'sharp';
import type { Metadata, Sharp } from 'sharp';

import { Rejection } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import type { DetectedFile, EngineContext, FormatHandler, HandlerOutput } from '../types.ts';
import { formatBytes } from '../../_internal/bytes.ts';
import { decodeBmp } from './bmp/decode.ts';
import { encodeBmp } from './bmp/encode.ts';
import type { BmpImage } from './bmp/types.ts';
import { encodeExactGif } from './gif-encode.ts';
import {
  canonicalProfile,
  canonicalProfilePath,
  isCanonicalProfile,
  recogniseProfile,
} from './icc.ts';
import { pngChunk, pngHasResolution, withJfifDensity, withPngResolution } from './resolution.ts';
import type { Resolution } from './resolution.ts';
import { findImageExtras, isLosslessWebp, readJpegScanLayout, tiffUsesJpeg } from './structure.ts';
import { verifyImage } from './verify.ts';

/** Quality of re-encoded lossy images (JPEG, lossy WebP, JPEG-in-TIFF): visually lossless. */
export const LOSSY_QUALITY = 92;

// The engine runs one file at a time per process; libvips' operation cache would only hold on to
// memory of files already returned.
sharp.cache(false);

type SharpKind = 'jpeg' | 'png' | 'gif' | 'tiff' | 'webp';

/**
 * Images: decode to pixels and encode a new file of the same format. Everything that is not pixels
 * (EXIF, XMP, IPTC, comments, text chunks, thumbnails, private chunks, trailing bytes) is left
 * behind and the encoder adds none; orientation is applied to the pixels; the resolution is
 * written only in the format's structural field (JFIF density, pHYs, TIFF resolution tags); a
 * colour profile recognised as sRGB, Display P3, Adobe RGB (1998) or grey gamma 2.2 is replaced by
 * our own copy, any other (and CMYK) is converted to sRGB. Animation (GIF, WebP) and multi-page
 * TIFF are preserved; GIF frames come back pixel-exact. BMP goes through our own codec.
 */
export const imageHandler: FormatHandler = {
  family: 'image',
  async rebuild(input: DetectedFile, context: EngineContext): Promise<HandlerOutput> {
    const kind = input.format.kind;
    if (kind === 'bmp') return rebuildBmp(input, context);
    if (kind !== 'jpeg' && kind !== 'png' && kind !== 'gif' && kind !== 'tiff' && kind !== 'webp') {
      throw new TypeError(`the image handler cannot rebuild ${kind}`);
    }
    return context.deadline.race(rebuildWithSharp(input, kind, context));
  },
  verify: verifyImage,
};

async function rebuildBmp(input: DetectedFile, context: EngineContext): Promise<HandlerOutput> {
  const { limits } = context;
  const decoded = decodeBmp(input.bytes, {
    maxPixels: limits.maxPixels,
    maxDecodeBytes: limits.maxDecodeBytes,
    maxExpansionRatio: limits.maxExpansionRatio,
  });
  const findings = new FindingTally();
  findings.add('trailing-data', decoded.trailingBytes > 0 ? 1 : 0);
  // Same rule as the other formats: a recognised profile is replaced by our own copy; any other
  // is used to convert the pixels to sRGB and dropped.
  const { iccProfile, ...pixels } = decoded.image;
  const recognised = iccProfile === undefined ? undefined : recogniseProfile(iccProfile);
  if (recognised !== undefined) {
    return {
      bytes: encodeBmp({ ...pixels, iccProfile: canonicalProfile(recognised) }),
      findings: findings.toArray(),
    };
  }
  if (iccProfile === undefined) return { bytes: encodeBmp(pixels), findings: findings.toArray() };
  findings.add('colour-profile');
  const converted = await context.deadline.race(convertToSrgb(pixels, iccProfile));
  return { bytes: encodeBmp(converted), findings: findings.toArray() };
}

/**
 * Converts pixels described by a foreign profile to sRGB with libvips' colour management: the
 * pixels go into a PNG carrying the profile, which sharp's default pipeline converts to sRGB.
 * A profile the colour engine cannot use (malformed, or of another colour space) describes
 * nothing usable: those pixels are kept as they are, taken as sRGB.
 */
async function convertToSrgb(image: BmpImage, profile: Uint8Array): Promise<BmpImage> {
  const { width, height, channels } = image;
  const png = await sharp(image.data, { raw: { width, height, channels } })
    .png({ compressionLevel: 0 })
    .toBuffer();
  // PNG 11.3.3.3 iCCP: name, NUL, compression method 0, zlib stream; right after IHDR.
  const iccp = pngChunk(
    'iCCP',
    Buffer.concat([Buffer.from('profile\0\0', 'latin1'), deflateSync(profile)]),
  );
  const tagged = Buffer.concat([png.subarray(0, PNG_IHDR_END), iccp, png.subarray(PNG_IHDR_END)]);
  try {
    const { data, info } = await sharp(tagged, { failOn: 'error' })
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== channels || info.width !== width || info.height !== height) return image;
    return { width, height, channels, data };
  } catch {
    return image;
  }
}

/** PNG signature (8 bytes) and the IHDR chunk (25 bytes). */
const PNG_IHDR_END = 33;

async function rebuildWithSharp(
  input: DetectedFile,
  kind: SharpKind,
  context: EngineContext,
): Promise<HandlerOutput> {
  const multiFrame = kind === 'gif' || kind === 'webp' || kind === 'tiff';
  const metadata = await readMetadata(input.bytes, kind, multiFrame);
  const frames = multiFrame ? Math.max(1, metadata.pages ?? 1) : 1;
  const frameHeight = multiFrame ? (metadata.pageHeight ?? metadata.height) : metadata.height;
  const cost = checkDecodeCost(
    { bytes: input.bytes, kind, metadata, frames, frameHeight },
    context.limits,
  );
  // Images of one document decode side by side as long as their estimates fit the ceiling.
  const release = await context.decodes.acquire(cost);
  try {
    return await decodeAndEncode(input, kind, metadata, frames, context);
  } finally {
    release();
  }
}

async function decodeAndEncode(
  input: DetectedFile,
  kind: SharpKind,
  metadata: Metadata,
  frames: number,
  context: EngineContext,
): Promise<HandlerOutput> {
  const multiFrame = kind === 'gif' || kind === 'webp' || kind === 'tiff';

  const findings = new FindingTally();
  const extras = findImageExtras(input.bytes, kind);
  findings.add('image-metadata', Math.max(extras.metadataBlocks, countSharpMetadata(metadata)));
  findings.add('trailing-data', extras.trailingBytes > 0 ? 1 : 0);

  let pipeline = sharp(input.bytes, {
    failOn: 'error',
    limitInputPixels: context.limits.maxPixels,
    sequentialRead: true,
    ...(multiFrame ? { pages: -1 } : {}),
  });
  // EXIF orientation is applied to the pixels, since the tag itself is not carried over.
  if (!multiFrame || frames === 1) pipeline = pipeline.autoOrient();
  // Nothing of the input's profile is copied: a recognised colour space gets our own copy of its
  // profile (sharp converts to it, a no-op but for rounding); any other profile, and CMYK, is
  // converted to sRGB by sharp's default pipeline and dropped.
  const recognised = metadata.icc === undefined ? undefined : recogniseProfile(metadata.icc);
  if (metadata.icc !== undefined && recognised === undefined) findings.add('colour-profile');
  if (recognised !== undefined && metadata.space !== 'cmyk') {
    // A profile that is already our own copy is kept as it is: converting to it again would only
    // round the pixels once more (16-bit samples drift on every pass), and a rebuilt file must
    // rebuild to itself.
    pipeline =
      metadata.icc !== undefined && isCanonicalProfile(metadata.icc)
        ? pipeline.keepIccProfile()
        : pipeline.withIccProfile(canonicalProfilePath(recognised));
  }
  if (metadata.depth === 'ushort' && (kind === 'png' || kind === 'tiff')) {
    pipeline = pipeline.toColourspace(isGrey(metadata) ? 'grey16' : 'rgb16');
  } else if (
    recognised === 'grey-gamma-2.2' ||
    (isGrey(metadata) && (kind === 'jpeg' || kind === 'tiff'))
  ) {
    // libvips' profile transform widens to three bands, and sharp writes JPEG (and JPEG in
    // TIFF) as sRGB by default: grey pixels stay one grey band, as PNG keeps them anyway.
    pipeline = pipeline.toColourspace('b-w');
  }
  try {
    if (kind === 'gif') {
      const exact = await encodeGifExactly(pipeline, metadata, frames, context);
      if (exact !== undefined) return { bytes: exact, findings: findings.toArray() };
      pipeline = sharp(input.bytes, {
        failOn: 'error',
        limitInputPixels: context.limits.maxPixels,
        pages: -1,
      });
    }
    const encoded = await encode(pipeline, kind, metadata, input.bytes).toBuffer();
    return {
      bytes: withResolution(encoded, kind, metadata, input.bytes),
      findings: findings.toArray(),
    };
  } catch (error) {
    throw toImageRejection(error, kind);
  }
}

/**
 * GIF89a frames hold at most 256 colours, so the decoded frames normally fit an exact palette:
 * our own encoder then writes them back pixel for pixel. Only frames that do not fit (none a
 * conforming decoder produces, short of partial transparency) fall back to quantisation.
 */
async function encodeGifExactly(
  pipeline: Sharp,
  metadata: Metadata,
  frames: number,
  context: EngineContext,
): Promise<Uint8Array | undefined> {
  const { data, info } = await context.deadline.race(
    pipeline.ensureAlpha().raw().toBuffer({ resolveWithObject: true }),
  );
  return encodeExactGif({
    width: info.width,
    height: info.height / frames,
    rgba: data,
    frames,
    delaysMs: metadata.delay ?? [],
    loop: frames > 1 ? (metadata.loop ?? 0) : undefined,
  });
}

/** The input's resolution, written only through the output format's own structural field. */
function withResolution(
  encoded: Uint8Array,
  kind: SharpKind,
  metadata: Metadata,
  source: Uint8Array,
): Uint8Array {
  const resolution: Resolution | undefined =
    metadata.density !== undefined &&
    metadata.density > 0 &&
    (kind !== 'png' || pngHasResolution(source))
      ? { pixelsPerInch: metadata.density, unit: metadata.resolutionUnit === 'cm' ? 'cm' : 'inch' }
      : undefined;
  if (kind === 'jpeg') return withJfifDensity(encoded, resolution);
  if (kind === 'png') return withPngResolution(encoded, resolution);
  // TIFF: libvips writes XResolution/YResolution/ResolutionUnit from the decoded image; WebP and
  // GIF have no resolution field.
  return encoded;
}

interface DecodeCostInput {
  readonly bytes: Uint8Array;
  readonly kind: SharpKind;
  readonly metadata: Metadata;
  readonly frames: number;
  readonly frameHeight: number;
}

/**
 * Refuses from the headers alone an image whose decode would cost more than the limits allow:
 * pixels of all frames against `maxPixels`, and the estimated memory (decoded samples, the
 * re-encoded copy, and for progressive or multi-scan JPEG the coefficient buffers libjpeg keeps
 * for the whole image, T.81 G.1.2, on the decoding and, when progressive, the encoding side)
 * against `maxDecodeBytes`, and returns the estimate. Measured (bench/adversarial-images.ts): a 25 MP progressive CMYK
 * JPEG, estimated at 600 MB, peaked 355 to 600 MiB above the process floor across runs.
 */
function checkDecodeCost(input: DecodeCostInput, limits: EngineContext['limits']): number {
  const { metadata, frames, frameHeight, kind } = input;
  const pixels = metadata.width * frameHeight * frames;
  if (pixels > limits.maxPixels) {
    throw new Rejection(
      'file_too_large',
      `the image has ${pixels} pixels (${metadata.width}x${frameHeight}, ${frames} frame(s)); the limit is ${limits.maxPixels}`,
    );
  }
  const channels = Math.max(1, metadata.channels);
  const sampleBytes = SAMPLE_BYTES[metadata.depth] ?? 1;
  let estimate = pixels * channels * sampleBytes + pixels * Math.max(3, channels) * sampleBytes;
  if (kind === 'jpeg') {
    const layout = readJpegScanLayout(input.bytes);
    const paddedPixels = Math.ceil(metadata.width / 8) * 8 * Math.ceil(metadata.height / 8) * 8;
    if (layout.progressive || layout.scans > 1) {
      estimate += paddedPixels * channels * COEFFICIENT_BYTES;
    }
    // A progressive output (the input's mode is kept) is buffered whole by the encoder too.
    if (layout.progressive) estimate += paddedPixels * Math.max(3, channels) * COEFFICIENT_BYTES;
  }
  if (estimate > limits.maxDecodeBytes) {
    throw new Rejection(
      'file_too_large',
      `decoding the ${metadata.width}x${frameHeight} ${kind} image (${frames} frame(s), ${channels} channel(s)) needs about ${formatBytes(estimate)}; the ceiling is ${formatBytes(limits.maxDecodeBytes)}`,
    );
  }
  return estimate;
}

const MM_PER_INCH = 25.4;

/** Bytes of one DCT coefficient (T.81 F.1.1.2: 16-bit in libjpeg's JCOEF). */
const COEFFICIENT_BYTES = 2;

/** Bytes per sample of each libvips band format sharp reports as `depth`. */
const SAMPLE_BYTES: Readonly<Record<string, number>> = {
  uchar: 1,
  char: 1,
  ushort: 2,
  short: 2,
  uint: 4,
  int: 4,
  float: 4,
  double: 8,
  complex: 8,
  dpcomplex: 16,
};

async function readMetadata(
  bytes: Uint8Array,
  kind: SharpKind,
  multiFrame: boolean,
): Promise<Metadata> {
  try {
    // Header only: no pixels are decoded here, so a decompression bomb costs nothing yet.
    return await sharp(bytes, {
      failOn: 'error',
      limitInputPixels: false,
      pages: multiFrame ? -1 : 1,
    }).metadata();
  } catch (error) {
    throw toImageRejection(error, kind);
  }
}

function isGrey(metadata: Metadata): boolean {
  return (
    metadata.space === 'b-w' ||
    metadata.space === 'grey16' ||
    metadata.channels === 1 ||
    metadata.channels === 2
  );
}

function countSharpMetadata(metadata: Metadata): number {
  let count = 0;
  if (metadata.exif) count += 1;
  if (metadata.xmp) count += 1;
  if (metadata.iptc) count += 1;
  if (metadata.tifftagPhotoshop) count += 1;
  count += metadata.comments?.length ?? 0;
  return count;
}

function encode(pipeline: Sharp, kind: SharpKind, metadata: Metadata, bytes: Uint8Array): Sharp {
  switch (kind) {
    case 'jpeg':
      return pipeline.jpeg({
        quality: LOSSY_QUALITY,
        progressive: metadata.isProgressive,
        chromaSubsampling: metadata.chromaSubsampling === '4:4:4' ? '4:4:4' : '4:2:0',
        mozjpeg: false,
      });
    case 'png':
      return pipeline.png({ compressionLevel: 6, adaptiveFiltering: true, palette: false });
    case 'gif':
      // Only frames that do not fit one exact palette get here (see encodeGifExactly).
      return pipeline.gif({ reuse: false, colours: 256, dither: 0, effort: 7 });
    case 'webp':
      return isLosslessWebp(bytes)
        ? pipeline.webp({ lossless: true, effort: 4 })
        : pipeline.webp({ quality: LOSSY_QUALITY, alphaQuality: 100, effort: 4 });
    case 'tiff': {
      // TIFF 6.0 section 8: XResolution/YResolution/ResolutionUnit are baseline fields; sharp
      // writes them from these options (pixels per millimetre), 1/mm when the input had none.
      const resolution =
        metadata.density !== undefined && metadata.density > 0
          ? {
              xres: metadata.density / MM_PER_INCH,
              yres: metadata.density / MM_PER_INCH,
              resolutionUnit:
                metadata.resolutionUnit === 'cm' ? ('cm' as const) : ('inch' as const),
            }
          : {};
      return tiffUsesJpeg(bytes)
        ? pipeline.tiff({ compression: 'jpeg', quality: LOSSY_QUALITY, ...resolution })
        : pipeline.tiff({ compression: 'lzw', predictor: 'horizontal', ...resolution });
    }
  }
}

/** libvips messages that mean "the image is bigger than allowed" rather than "corrupt". */
const PIXEL_LIMIT = /pixel limit|exceeds? (?:the )?(?:pixel|dimension)|too large|out of memory/i;

function toImageRejection(error: unknown, kind: string): Rejection {
  if (error instanceof Rejection) return error;
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
  if (PIXEL_LIMIT.test(message)) {
    return new Rejection('file_too_large', `the ${kind} image is too large to decode: ${message}`);
  }
  return new Rejection('invalid_file', `the ${kind} image cannot be decoded: ${message}`);
}
