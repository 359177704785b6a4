import {
  buildImage,
  ensureExiftool,
  exiftoolWrite,
  builtInProfile,
  gifExtensions,
  iccJpegSegments,
  iccPngChunk,
  jpegSegment,
  pngChunk,
  polyglotBmp,
  withGifBlocks,
  withJpegSegments,
  withPngChunks,
  withTrailingBytes,
} from '@disarm/fixtures';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { VerifyFailure } from '../types.ts';
import { encodeBmp } from './bmp/encode.ts';
import { canonicalProfile } from './icc.ts';
import { assertPixelsOnly } from './verify.ts';

/** The check name `assertPixelsOnly` fails with, or `undefined` when the bytes pass. */
function failedCheck(bytes: Uint8Array, extension: string): string | undefined {
  try {
    assertPixelsOnly(bytes, extension);
    return undefined;
  } catch (error) {
    if (error instanceof VerifyFailure) return error.check;
    throw error;
  }
}

async function rebuilt(bytes: Uint8Array, extension: string): Promise<Uint8Array> {
  const outcome = await disarm({ bytes, fileName: `a.${extension}` });
  if (outcome.status !== 'cleaned') throw new Error(`not cleaned: ${outcome.status}`);
  return outcome.bytes;
}

describe('image verify before release', () => {
  it('passes our own outputs of every format', async () => {
    for (const [format, extension] of [
      ['jpeg', 'jpg'],
      ['png', 'png'],
      ['gif', 'gif'],
      ['webp', 'webp'],
      ['tiff', 'tif'],
    ] as const) {
      const output = await rebuilt(await buildImage(format, { icc: 'srgb' }), extension);
      expect(failedCheck(output, extension)).toBeUndefined();
    }
  });

  it('JPEG: refuses EXIF, XMP, COM, a JFIF thumbnail, a foreign profile and trailing bytes', async () => {
    const clean = await rebuilt(await buildImage('jpeg'), 'jpg');
    const add = (segment: Buffer): Buffer => withJpegSegments(clean, [segment]);
    expect(failedCheck(add(jpegSegment(0xe1, 'Exif\0\0MM')), 'jpg')).toBe('image.no-metadata');
    expect(failedCheck(add(jpegSegment(0xe1, 'http://ns.adobe.com/xap/1.0/\0<x/>')), 'jpg')).toBe(
      'image.no-metadata',
    );
    expect(failedCheck(add(jpegSegment(0xfe, 'hello')), 'jpg')).toBe('image.no-metadata');
    // T.871 10.1: a JFIF header carrying a 1x1 RGB thumbnail.
    const jfifThumbnail = Buffer.from([
      ...Buffer.from('JFIF\0'),
      1,
      2,
      0,
      0,
      1,
      0,
      1,
      1,
      1,
      255,
      0,
      0,
    ]);
    const noApp0 = Buffer.concat([
      Buffer.from(clean.subarray(0, 2)),
      Buffer.from(clean.subarray(20)),
    ]);
    expect(failedCheck(withJpegSegments(noApp0, [jpegSegment(0xe0, jfifThumbnail)]), 'jpg')).toBe(
      'image.no-metadata',
    );
    expect(failedCheck(add(jpegSegment(0xed, 'Photoshop 3.0\0')), 'jpg')).toBe('image.no-metadata');
    const withSrgb = withJpegSegments(clean, iccJpegSegments(await builtInProfile('srgb')));
    expect(failedCheck(withSrgb, 'jpg')).toBe('image.profile');
    const ours = withJpegSegments(clean, iccJpegSegments(canonicalProfile('srgb')));
    expect(failedCheck(ours, 'jpg')).toBeUndefined();
    expect(failedCheck(withTrailingBytes(clean), 'jpg')).toBe('image.trailing-data');
  });

  it('PNG: refuses text, eXIf and private chunks, a foreign iCCP and trailing bytes', async () => {
    const clean = await rebuilt(await buildImage('png'), 'png');
    for (const type of ['tEXt', 'zTXt', 'iTXt', 'eXIf', 'tIME', 'prVt']) {
      expect(failedCheck(withPngChunks(clean, [pngChunk(type, 'x')]), 'png')).toBe(
        'image.no-metadata',
      );
    }
    const foreign = withPngChunks(clean, [iccPngChunk(await builtInProfile('p3'))]);
    expect(failedCheck(foreign, 'png')).toBe('image.profile');
    expect(failedCheck(withTrailingBytes(clean), 'png')).toBe('image.trailing-data');
  });

  it('GIF: refuses comment, plain-text and application extensions, and trailing bytes', async () => {
    const clean = await rebuilt(await buildImage('gif'), 'gif');
    expect(failedCheck(withGifBlocks(clean, gifExtensions('x')), 'gif')).toBe('image.no-metadata');
    expect(failedCheck(withTrailingBytes(clean), 'gif')).toBe('image.trailing-data');
  });

  it('WebP: refuses EXIF/XMP chunks and flags, a foreign ICCP, and bytes after RIFF', async () => {
    const clean = Buffer.from(await rebuilt(await buildImage('webp'), 'webp'));
    const chunk = Buffer.concat([
      Buffer.from('EXIF'),
      Buffer.from([4, 0, 0, 0]),
      Buffer.from('MM\0*'),
    ]);
    const withExif = Buffer.concat([clean, chunk]);
    withExif.writeUInt32LE(withExif.length - 8, 4);
    expect(failedCheck(withExif, 'webp')).toBe('image.no-metadata');
    const foreign = await sharp(await buildImage('webp'))
      .withIccProfile('p3')
      .webp()
      .toBuffer();
    expect(failedCheck(foreign, 'webp')).toBe('image.profile');
    expect(failedCheck(withTrailingBytes(clean), 'webp')).toBe('image.trailing-data');
  });

  it('TIFF: refuses descriptive tags and a foreign profile', async () => {
    const clean = await rebuilt(await buildImage('tiff'), 'tif');
    expect(failedCheck(clean, 'tif')).toBeUndefined();
    ensureExiftool();
    const described = exiftoolWrite(clean, 'tif', ['-Artist=someone']);
    expect(failedCheck(described, 'tif')).toBe('image.no-metadata');
    const foreign = await sharp(await buildImage('tiff'))
      .withIccProfile('p3')
      .tiff()
      .toBuffer();
    expect(failedCheck(foreign, 'tif')).toBe('image.profile');
  });

  it('BMP: refuses a foreign embedded profile and bytes outside the structures', () => {
    const image = { width: 2, height: 2, channels: 3 as const, data: new Uint8Array(12) };
    expect(failedCheck(encodeBmp(image), 'bmp')).toBeUndefined();
    expect(failedCheck(polyglotBmp(), 'bmp')).toBe('image.profile');
    const trailing = Buffer.from(withTrailingBytes(encodeBmp(image)));
    trailing.writeUInt32LE(trailing.length, 2);
    expect(failedCheck(trailing, 'bmp')).toBe('image.trailing-data');
  });
});
