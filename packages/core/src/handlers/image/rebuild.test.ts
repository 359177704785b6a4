import {
  buildImage,
  decodePixels,
  ensureExiftool,
  exiftoolTags,
  exiftoolWrite,
  unexpectedImageTags,
  jpegSegment,
  maxPixelDifference,
  pngChunk,
  pngPixelBomb,
  withGifComment,
  withJpegSegments,
  withPngChunks,
  withTrailingBytes,
} from '@disarm/fixtures';
import type { SharpImageFormat } from '@disarm/fixtures';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { encodeBmp } from './bmp/encode.ts';
import { canonicalProfile } from './icc.ts';
import { findImageExtras } from './structure.ts';
import { cleaned } from '../../test-support.ts';

beforeAll(() => {
  ensureExiftool();
});

const PAYLOAD = '<?php system($_GET["cmd"]); ?>';

const EXTENSION: Readonly<Record<SharpImageFormat, string>> = {
  jpeg: 'jpg',
  png: 'png',
  gif: 'gif',
  webp: 'webp',
  tiff: 'tif',
};

/** Largest pixel difference each re-encode may introduce. */
const TOLERANCE: Readonly<Record<SharpImageFormat, number>> = {
  jpeg: 24,
  png: 0,
  gif: 0,
  webp: 24,
  tiff: 0,
};

/** An image carrying the payload in the metadata its format has (EXIF, a comment, XMP). */
async function withMetadata(format: SharpImageFormat): Promise<Buffer> {
  switch (format) {
    case 'gif':
      return withGifComment(await buildImage('gif'), PAYLOAD);
    case 'tiff':
      return buildImage('tiff', {
        xmp: `<x:xmpmeta xmlns:x="adobe:ns:meta/">${PAYLOAD}</x:xmpmeta>`,
      });
    default:
      return buildImage(format, { exif: { Artist: PAYLOAD } });
  }
}

function containsText(bytes: Uint8Array, text: string): boolean {
  return Buffer.from(bytes).includes(Buffer.from(text));
}

describe.each(Object.keys(EXTENSION) as SharpImageFormat[])('%s rebuild', (format) => {
  const ext = EXTENSION[format];

  it('returns a new file of the same format with the same pixels', async () => {
    const input = await buildImage(format, { width: 40, height: 30 });
    const outcome = cleaned(await disarm({ bytes: input, fileName: `photo.${ext}` }));
    expect(outcome.fileName).toBe(`photo.${ext}`);
    expect(outcome.format).toBe(ext);
    expect(outcome.modifications).toEqual(['rebuilt']);
    expect((await sharp(outcome.bytes).metadata()).format).toBe(
      format === 'jpeg' ? 'jpeg' : format,
    );
    // GIF encoders mark a transparent palette index even when no pixel uses it.
    const dropAlpha = format === 'gif';
    const before = await decodePixels(input, { dropAlpha });
    const after = await decodePixels(outcome.bytes, { dropAlpha });
    expect([after.width, after.height, after.channels]).toEqual([
      before.width,
      before.height,
      before.channels,
    ]);
    expect(maxPixelDifference(before.data, after.data)).toBeLessThanOrEqual(TOLERANCE[format]);
    expect(unexpectedImageTags(exiftoolTags(outcome.bytes, ext))).toEqual([]);
  });

  it('drops EXIF and anything appended after the end of the image', async () => {
    const input = withTrailingBytes(await withMetadata(format), PAYLOAD);
    expect(containsText(input, PAYLOAD)).toBe(true);
    const outcome = cleaned(await disarm({ bytes: input, fileName: `x.${ext}` }));
    expect(containsText(outcome.bytes, PAYLOAD)).toBe(false);
    expect(containsText(outcome.bytes, 'Exif')).toBe(false);
    const metadata = await sharp(outcome.bytes).metadata();
    expect(metadata.exif).toBeUndefined();
    expect(findImageExtras(outcome.bytes, format)).toEqual({ metadataBlocks: 0, trailingBytes: 0 });
    expect(unexpectedImageTags(exiftoolTags(outcome.bytes, ext))).toEqual([]);
    expect(outcome.findings.find((f) => f.kind === 'image-metadata')?.count).toBeGreaterThan(0);
  });

  it('rejects a truncated file as invalid_file', async () => {
    const input = await buildImage(format, { width: 64, height: 64 });
    const outcome = await disarm({
      bytes: input.subarray(0, Math.floor(input.length / 2)),
      fileName: `x.${ext}`,
    });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it.skipIf(format === 'gif')(
    'replaces a recognised profile by our own copy so colours do not shift',
    async () => {
      const input = await buildImage(format, { icc: 'p3' });
      const outcome = cleaned(await disarm({ bytes: input, fileName: `x.${ext}` }));
      const before = await sharp(input).metadata();
      const after = await sharp(outcome.bytes).metadata();
      expect(before.icc).toBeDefined();
      expect(Buffer.from(before.icc ?? []).equals(canonicalProfile('display-p3'))).toBe(false);
      expect(after.icc).toEqual(Buffer.from(canonicalProfile('display-p3')));
      expect(outcome.findings.find((f) => f.kind === 'colour-profile')).toBeUndefined();
    },
  );
});

describe('image specifics', () => {
  it('applies EXIF orientation to the pixels and drops the tag', async () => {
    const input = await buildImage('jpeg', { width: 40, height: 30, orientation: 6 });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'x.jpg' }));
    const metadata = await sharp(outcome.bytes).metadata();
    expect([metadata.width, metadata.height]).toEqual([30, 40]);
    expect(metadata.orientation).toBeUndefined();
  });

  it.each([
    ['gif', 'gif'],
    ['webp', 'webp'],
    ['tiff', 'tif'],
  ] as const)('keeps every frame of a multi-frame %s', async (format, ext) => {
    const input = await buildImage(format, { frames: 3 });
    const outcome = cleaned(await disarm({ bytes: input, fileName: `x.${ext}` }));
    const before = await sharp(input, { pages: -1 }).metadata();
    const after = await sharp(outcome.bytes, { pages: -1 }).metadata();
    expect(after.pages).toBe(3);
    expect(after.pageHeight).toBe(before.pageHeight);
    expect(after.delay).toEqual(before.delay);
    expect(after.loop).toEqual(before.loop);
  });

  it.each([
    ['jpeg', 'jpg', 'File:ColorComponents'],
    ['tiff', 'tif', 'IFD0:SamplesPerPixel'],
  ] as const)('keeps a scanned greyscale %s one grey channel', async (format, ext, tag) => {
    // What a scanner's grey mode writes: one 8-bit channel at 300 dpi (JPEG, or JPEG in TIFF).
    const width = 120;
    const height = 90;
    const grey = Buffer.alloc(width * height);
    for (let i = 0; i < grey.length; i += 1)
      grey[i] = ((i % width) * 2 + Math.floor(i / width)) & 0xff;
    const base = sharp(grey, { raw: { width, height, channels: 1 } }).toColourspace('b-w');
    const encoded =
      format === 'jpeg'
        ? await base.jpeg({ quality: 90 }).toBuffer()
        : await base.tiff({ compression: 'jpeg', quality: 90 }).toBuffer();
    const input = exiftoolWrite(encoded, ext, [
      '-XResolution=300',
      '-YResolution=300',
      '-ResolutionUnit=inches',
    ]);
    expect(exiftoolTags(input, ext)[tag]).toBe(1);
    const outcome = cleaned(await disarm({ bytes: input, fileName: `scan.${ext}` }));
    const tags = exiftoolTags(outcome.bytes, ext);
    expect(tags[tag]).toBe(1);
    expect(Object.entries(tags).filter(([key]) => key.endsWith(':XResolution'))).not.toEqual([]);
    for (const [key, value] of Object.entries(tags)) {
      if (key.endsWith(':XResolution')) expect(value).toBe(300);
    }
    const [before, after] = await Promise.all(
      [input, outcome.bytes].map((bytes) =>
        sharp(bytes).extractChannel(0).raw().toBuffer({ resolveWithObject: true }),
      ),
    );
    expect(
      maxPixelDifference(before?.data ?? Buffer.alloc(0), after?.data ?? Buffer.alloc(1)),
    ).toBeLessThanOrEqual(TOLERANCE.jpeg);
  });

  it('keeps 16-bit PNG depth and lossless WebP losslessness', async () => {
    const png = cleaned(
      await disarm({ bytes: await buildImage('png', { sixteenBit: true }), fileName: 'x.png' }),
    );
    expect((await sharp(png.bytes).metadata()).depth).toBe('ushort');
    const webpIn = await buildImage('webp', { lossless: true, channels: 4 });
    const webp = cleaned(await disarm({ bytes: webpIn, fileName: 'x.webp' }));
    expect(Buffer.from(webp.bytes).includes(Buffer.from('VP8L'))).toBe(true);
    expect(
      maxPixelDifference((await decodePixels(webpIn)).data, (await decodePixels(webp.bytes)).data),
    ).toBe(0);
  });

  it('rebuilds its own output to the same bytes: a 16-bit PNG in Display P3 (fuzz: idempotence)', async () => {
    // Found by `npm run fuzz -- image`: converting to our own copy of a profile again rounded the
    // 16-bit samples on every pass, so a cleaned file disarmed again came back different.
    const input = await buildImage('png', { width: 8, height: 8, sixteenBit: true, icc: 'p3' });
    const once = cleaned(await disarm({ bytes: input, fileName: 'x.png' }));
    const twice = cleaned(await disarm({ bytes: once.bytes, fileName: once.fileName }));
    expect(twice.findings).toEqual([]);
    expect(Buffer.from(twice.bytes).equals(Buffer.from(once.bytes))).toBe(true);
  });

  it('counts PNG text chunks and JPEG comments and XMP as metadata', async () => {
    const png = withPngChunks(await buildImage('png'), [
      pngChunk('tEXt', `Comment\0${PAYLOAD}`),
      pngChunk('iTXt', `XML:com.adobe.xmp\0\0\0\0\0<x:xmpmeta/>`),
    ]);
    const pngOut = cleaned(await disarm({ bytes: png, fileName: 'x.png' }));
    expect(pngOut.findings).toContainEqual({ kind: 'image-metadata', count: 2 });
    expect(containsText(pngOut.bytes, PAYLOAD)).toBe(false);

    const jpeg = withJpegSegments(await buildImage('jpeg'), [
      jpegSegment(0xfe, PAYLOAD),
      jpegSegment(0xe1, `http://ns.adobe.com/xap/1.0/\0<x:xmpmeta>${PAYLOAD}</x:xmpmeta>`),
      jpegSegment(0xed, `Photoshop 3.0\u00008BIM${PAYLOAD}`),
    ]);
    const jpegOut = cleaned(await disarm({ bytes: jpeg, fileName: 'x.jpeg' }));
    expect(jpegOut.findings).toContainEqual({ kind: 'image-metadata', count: 3 });
    expect(containsText(jpegOut.bytes, PAYLOAD)).toBe(false);
  });

  it('rejects a pixel bomb from its header, before decoding', async () => {
    const outcome = await disarm({ bytes: pngPixelBomb(100_000, 100_000), fileName: 'bomb.png' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it('honours a lower pixel limit', async () => {
    const input = await buildImage('png', { width: 100, height: 100 });
    const outcome = await disarm(
      { bytes: input, fileName: 'x.png' },
      { limits: { maxPixels: 9_999 } },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/10000 pixels/);
  });

  it('rebuilds BMP through its own codec and drops appended data', async () => {
    const pixels = new Uint8Array(4 * 3 * 3).map((_, i) => (i * 37) % 256);
    const input = withTrailingBytes(
      encodeBmp({ width: 4, height: 3, channels: 3, data: pixels }),
      PAYLOAD,
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'x.BMP' }));
    expect(outcome.format).toBe('bmp');
    expect(containsText(outcome.bytes, PAYLOAD)).toBe(false);
    expect(outcome.findings).toContainEqual({ kind: 'trailing-data', count: 1 });
  });
});
