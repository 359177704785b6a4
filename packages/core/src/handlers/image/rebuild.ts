import sharp from 'sharp';
import type { Metadata, Sharp } from 'sharp';

import { Rejection } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import type { DetectedFile, EngineContext, FormatHandler, HandlerOutput } from '../types.ts';
import { decodeBmp } from './bmp/decode.ts';
import { encodeBmp } from './bmp/encode.ts';
import { verifyImage } from './verify.ts';
import { findImageExtras, isLosslessWebp, tiffUsesJpeg } from './structure.ts';

/** Quality of re-encoded lossy images (JPEG, lossy WebP, JPEG-in-TIFF): visually lossless. */
export const LOSSY_QUALITY = 92;

// The engine runs one file at a time per process; libvips' operation cache would only hold on to
// memory of files already returned.
sharp.cache(false);

type SharpKind = 'jpeg' | 'png' | 'gif' | 'tiff' | 'webp';

/**
 * Images: decode to pixels and encode a new file of the same format. Everything that is not pixels
 * (EXIF, XMP, IPTC, comments, text chunks, thumbnails, trailing bytes) is left behind; orientation
 * is applied to the pixels; the ICC profile is kept so colours do not shift; animation (GIF,
 * WebP) and multi-page TIFF are preserved. BMP goes through our own codec (libvips has none).
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

function rebuildBmp(input: DetectedFile, context: EngineContext): HandlerOutput {
  const decoded = decodeBmp(input.bytes, { maxPixels: context.limits.maxPixels });
  const findings = new FindingTally();
  findings.add('trailing-data', decoded.trailingBytes > 0 ? 1 : 0);
  return { bytes: encodeBmp(decoded.image), findings: findings.toArray() };
}

async function rebuildWithSharp(
  input: DetectedFile,
  kind: SharpKind,
  context: EngineContext,
): Promise<HandlerOutput> {
  const multiFrame = kind === 'gif' || kind === 'webp' || kind === 'tiff';
  const metadata = await readMetadata(input.bytes, kind, multiFrame);
  const frames = multiFrame ? Math.max(1, metadata.pages ?? 1) : 1;
  const frameHeight = multiFrame ? (metadata.pageHeight ?? metadata.height) : metadata.height;
  const pixels = metadata.width * frameHeight * frames;
  if (pixels > context.limits.maxPixels) {
    throw new Rejection(
      'file_too_large',
      `the image has ${pixels} pixels (${metadata.width}x${frameHeight}, ${frames} frame(s)); the limit is ${context.limits.maxPixels}`,
    );
  }

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
  pipeline = pipeline.keepIccProfile();
  if (metadata.density !== undefined && metadata.density > 0) {
    pipeline = pipeline.withDensity(metadata.density);
  }
  if (metadata.depth === 'ushort' && (kind === 'png' || kind === 'tiff')) {
    pipeline = pipeline.toColourspace(isGrey(metadata) ? 'grey16' : 'rgb16');
  } else if (metadata.space === 'cmyk' && (kind === 'jpeg' || kind === 'tiff')) {
    pipeline = pipeline.toColourspace('cmyk');
  }
  pipeline = encode(pipeline, kind, metadata, input.bytes);
  try {
    const bytes = await pipeline.toBuffer();
    return { bytes, findings: findings.toArray() };
  } catch (error) {
    throw toImageRejection(error, kind);
  }
}

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
      // A fresh 256-colour quantisation without dithering reproduces an image that already has
      // at most 256 colours exactly; reusing the decoded palette shifted colours slightly.
      return pipeline.gif({ reuse: false, colours: 256, dither: 0, effort: 7 });
    case 'webp':
      return isLosslessWebp(bytes)
        ? pipeline.webp({ lossless: true, effort: 4 })
        : pipeline.webp({ quality: LOSSY_QUALITY, alphaQuality: 100, effort: 4 });
    case 'tiff':
      return tiffUsesJpeg(bytes)
        ? pipeline.tiff({ compression: 'jpeg', quality: LOSSY_QUALITY })
        : pipeline.tiff({ compression: 'lzw', predictor: 'horizontal' });
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
