import {
  buildImage,
  ensureExiftool,
  exiftoolTags,
  exiftoolWrite,
  unexpectedImageTags,
  buildPaletteGif,
  builtInProfile,
  decodePixels,
  gifExtensions,
  hostileProfile,
  iccJpegSegments,
  iccPngChunk,
  jpegSegment,
  maxPixelDifference,
  pngTextChunks,
  polyglotBmp,
  progressiveCmykJpeg,
  rleBmpBomb,
  SCRIPT_PAYLOAD,
  withGifBlocks,
  withJpegSegments,
  withMovedRedColourant,
  withPngChunks,
  zipPayload,
} from '@disarm/fixtures';
import sharp from 'sharp';
import { beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../../disarm.ts';
import type { CleanedOutcome } from '../../outcome.ts';
import { decodeBmp } from './bmp/decode.ts';
import { canonicalProfile } from './icc.ts';
import { assertPixelsOnly } from './verify.ts';
import { cleaned } from '../../test-support.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(120_000) });

beforeAll(() => {
  ensureExiftool();
});

function count(outcome: CleanedOutcome, kind: string): number {
  return outcome.findings.find((finding) => finding.kind === kind)?.count ?? 0;
}

const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/** Asserts that an image output carries pixels only, with exiftool as the independent reader. */
function expectPixelsOnly(bytes: Uint8Array, extension: string, input: Uint8Array): void {
  const output = Buffer.from(bytes);
  expect(output.equals(Buffer.from(input))).toBe(false);
  expect(output.includes(SCRIPT_PAYLOAD)).toBe(false);
  expect(output.includes(ZIP_SIGNATURE)).toBe(false);
  expect(unexpectedImageTags(exiftoolTags(bytes, extension))).toEqual([]);
  assertPixelsOnly(bytes, extension);
}

/** Camera/editor metadata exiftool writes: EXIF with GPS and a thumbnail, XMP, IPTC, comment. */
const CAMERA_TAGS = [
  '-Make=Canon',
  '-Model=EOS 5D',
  '-DateTimeOriginal=2026:01:02 03:04:05',
  '-GPSLatitude=51.5',
  '-GPSLatitudeRef=N',
  '-GPSLongitude=0.12',
  '-GPSLongitudeRef=W',
  `-ImageDescription=${SCRIPT_PAYLOAD}`,
  `-XMP-dc:Description=${SCRIPT_PAYLOAD}`,
  `-IPTC:Caption-Abstract=${SCRIPT_PAYLOAD}`,
  '-ThumbnailImage<={thumb}',
];

async function thumbnail(): Promise<Buffer> {
  return withJpegSegments(await buildImage('jpeg', { width: 16, height: 12 }), [
    jpegSegment(0xfe, SCRIPT_PAYLOAD),
  ]);
}

describe('a camera JPEG (density, EXIF+GPS+thumbnail, XMP, IPTC, COM, hostile ICC)', () => {
  it.each([72, 300])('keeps %i dpi in JFIF and nothing else but pixels', async (dpi) => {
    const base = await sharp(await buildImage('jpeg', { width: 64, height: 48 }))
      .withDensity(dpi)
      .jpeg()
      .toBuffer();
    const withProfile = withJpegSegments(base, [
      jpegSegment(0xfe, SCRIPT_PAYLOAD),
      ...iccJpegSegments(hostileProfile(await builtInProfile('srgb'))),
    ]);
    const input = exiftoolWrite(withProfile, 'jpg', CAMERA_TAGS, { thumb: await thumbnail() });
    const before = exiftoolTags(input, 'jpg');
    expect(before['GPS:GPSLatitude']).toBeDefined();
    expect(before['IFD1:ThumbnailLength']).toBeGreaterThan(0);

    const outcome = cleaned(await disarm({ bytes: input, fileName: 'camera.jpg' }));
    expectPixelsOnly(outcome.bytes, 'jpg', input);
    const after = exiftoolTags(outcome.bytes, 'jpg');
    expect(after['JFIF:XResolution']).toBe(dpi);
    expect(after['JFIF:ResolutionUnit']).toBe(1);
    expect((await sharp(outcome.bytes).metadata()).icc).toEqual(
      Buffer.from(canonicalProfile('srgb')),
    );
    expect(count(outcome, 'image-metadata')).toBeGreaterThan(0);
  });

  it('converts a custom profile to sRGB, drops it and reports it', async () => {
    const profile = hostileProfile(withMovedRedColourant(await builtInProfile('srgb')));
    const input = withJpegSegments(await buildImage('jpeg', { width: 64, height: 48 }), [
      ...iccJpegSegments(profile),
    ]);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'custom.jpg' }));
    expectPixelsOnly(outcome.bytes, 'jpg', input);
    expect((await sharp(outcome.bytes).metadata()).icc).toBeUndefined();
    expect(count(outcome, 'colour-profile')).toBe(1);
    // The pixels were converted: the moved red colourant shifts red noticeably.
    const before = await decodePixels(await sharp(input).jpeg().toBuffer());
    const after = await decodePixels(outcome.bytes);
    expect(maxPixelDifference(before.data, after.data)).toBeGreaterThan(8);
  });

  it('adds no EXIF block to a JPEG that had none', async () => {
    const input = await buildImage('jpeg', { width: 32, height: 24 });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'plain.jpg' }));
    expectPixelsOnly(outcome.bytes, 'jpg', input);
    expect(Buffer.from(outcome.bytes).includes('Exif\0')).toBe(false);
    expect(outcome.findings).toEqual([]);
  });

  it('applies EXIF orientation to the pixels', async () => {
    const input = exiftoolWrite(await buildImage('jpeg', { width: 40, height: 20 }), 'jpg', [
      '-Orientation#=6',
    ]);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'rotated.jpg' }));
    expectPixelsOnly(outcome.bytes, 'jpg', input);
    const metadata = await sharp(outcome.bytes).metadata();
    expect([metadata.width, metadata.height, metadata.orientation]).toEqual([20, 40, undefined]);
  });
});

describe('PNG, WebP, TIFF, GIF and BMP as editors and attackers write them', () => {
  it('PNG: pHYs kept as our own chunk; text, eXIf, private chunks and custom iCCP dropped', async () => {
    const base = await sharp(await buildImage('png', { width: 32, height: 24 }))
      .withDensity(300)
      .png()
      .toBuffer();
    const profile = hostileProfile(withMovedRedColourant(await builtInProfile('srgb')));
    const input = exiftoolWrite(
      withPngChunks(base, [iccPngChunk(profile), ...pngTextChunks(SCRIPT_PAYLOAD)]),
      'png',
      ['-EXIF:Make=Canon', `-EXIF:ImageDescription=${SCRIPT_PAYLOAD}`, '-GPSLatitude=51.5'],
    );
    expect(exiftoolTags(input, 'png')['GPS:GPSLatitude']).toBeDefined();
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'editor.png' }));
    expectPixelsOnly(outcome.bytes, 'png', input);
    const after = exiftoolTags(outcome.bytes, 'png');
    expect(after['PNG-pHYs:PixelsPerUnitX']).toBe(11811);
    expect(count(outcome, 'colour-profile')).toBe(1);
    expect(count(outcome, 'image-metadata')).toBeGreaterThanOrEqual(4);
  });

  it('PNG without a resolution gets no invented pHYs', async () => {
    const input = await buildImage('png', { width: 8, height: 8 });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.png' }));
    expect(exiftoolTags(outcome.bytes, 'png')['PNG-pHYs:PixelsPerUnitX']).toBeUndefined();
    // Nor does our own output, which has no pHYs at all: it rebuilds to the same bytes.
    const again = cleaned(await disarm({ bytes: outcome.bytes, fileName: 'a.png' }));
    expect(Buffer.from(again.bytes).equals(Buffer.from(outcome.bytes))).toBe(true);
  });

  it.each([false, true])(
    'WebP (lossless: %s): EXIF, XMP and hostile ICCP dropped',
    async (lossless) => {
      const base = await buildImage('webp', { width: 32, height: 24, lossless });
      const input = exiftoolWrite(
        base,
        'webp',
        [
          ...CAMERA_TAGS.filter((tag) => !tag.startsWith('-Thumbnail') && !tag.startsWith('-IPTC')),
          '-ICC_Profile<={icc}',
        ],
        { icc: hostileProfile(await builtInProfile('p3')) },
      );
      const tags = exiftoolTags(input, 'webp');
      expect(tags['GPS:GPSLatitude']).toBeDefined();
      expect(tags['ICC_Profile:ProfileDescription']).toBeDefined();
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'photo.webp' }));
      expectPixelsOnly(outcome.bytes, 'webp', input);
      expect((await sharp(outcome.bytes).metadata()).icc).toEqual(
        Buffer.from(canonicalProfile('display-p3')),
      );
    },
  );

  it('TIFF: EXIF IFD, GPS, XMP, IPTC/Photoshop tags and hostile ICC dropped', async () => {
    const base = await sharp(await buildImage('tiff', { width: 32, height: 24 }))
      .withDensity(300)
      .tiff({ compression: 'lzw' })
      .toBuffer();
    const input = exiftoolWrite(
      base,
      'tif',
      [
        ...CAMERA_TAGS.filter((tag) => !tag.startsWith('-Thumbnail')),
        '-Artist=Someone',
        '-Software=Editor 1.0',
        '-ICC_Profile<={icc}',
      ],
      { icc: hostileProfile(await builtInProfile('srgb')) },
    );
    const tags = exiftoolTags(input, 'tif');
    expect(tags['GPS:GPSLatitude']).toBeDefined();
    expect(tags['IFD0:Artist']).toBeDefined();
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'scan.tif' }));
    expectPixelsOnly(outcome.bytes, 'tif', input);
    const after = exiftoolTags(outcome.bytes, 'tif');
    expect(after['IFD0:XResolution']).toBeCloseTo(300, 0);
    expect((await sharp(outcome.bytes).metadata()).icc).toEqual(
      Buffer.from(canonicalProfile('srgb')),
    );
  });

  it('GIF: comment, plain-text and foreign application extensions dropped', async () => {
    const base = await buildImage('gif', { width: 16, height: 16, frames: 2 });
    const input = withGifBlocks(base, gifExtensions(SCRIPT_PAYLOAD));
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'anim.gif' }));
    expectPixelsOnly(outcome.bytes, 'gif', input);
    expect(count(outcome, 'image-metadata')).toBeGreaterThanOrEqual(3);
  });

  it('BMP V5 whose profile is a JavaScript/ZIP polyglot: not identical, no payload', async () => {
    const input = polyglotBmp();
    expect(input.includes(SCRIPT_PAYLOAD)).toBe(true);
    expect(input.includes(zipPayload())).toBe(true);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'poly.bmp' }));
    expectPixelsOnly(outcome.bytes, 'bmp', input);
    expect(count(outcome, 'colour-profile')).toBe(1);
    const limits = { maxPixels: 1_000_000 };
    expect(decodeBmp(outcome.bytes, limits).image.data).toEqual(
      decodeBmp(input, limits).image.data,
    );
  });

  it('BMP V5 with a custom profile is converted to sRGB through it and loses it', async () => {
    const profile = hostileProfile(withMovedRedColourant(await builtInProfile('srgb')));
    const polyglot = polyglotBmp();
    const pixelsEnd = polyglot.length - polyglot.readUInt32LE(14 + 116);
    const input = Buffer.concat([polyglot.subarray(0, pixelsEnd), profile]);
    input.writeUInt32LE(input.length, 2);
    input.writeUInt32LE(profile.length, 14 + 116);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'custom.bmp' }));
    expectPixelsOnly(outcome.bytes, 'bmp', input);
    expect(count(outcome, 'colour-profile')).toBe(1);
    const limits = { maxPixels: 1_000_000 };
    const before = decodeBmp(input, limits).image;
    const after = decodeBmp(outcome.bytes, limits).image;
    expect(after.iccProfile).toBeUndefined();
    // Unconverted pixels would be identical (see the polyglot case, whose profile is unusable).
    expect(maxPixelDifference(before.data, after.data)).toBeGreaterThan(2);
  });

  it('BMP V5 with an sRGB profile gets our copy of it', async () => {
    const profile = hostileProfile(await builtInProfile('srgb'));
    const polyglot = polyglotBmp();
    // Same layout, a recognisable (but hostile) sRGB profile in place of the polyglot.
    const pixelsEnd = polyglot.length - polyglot.readUInt32LE(14 + 116);
    const input = Buffer.concat([polyglot.subarray(0, pixelsEnd), profile]);
    input.writeUInt32LE(input.length, 2);
    input.writeUInt32LE(profile.length, 14 + 116);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'srgb.bmp' }));
    expectPixelsOnly(outcome.bytes, 'bmp', input);
    expect(Buffer.from(outcome.bytes).includes(Buffer.from(canonicalProfile('srgb')))).toBe(true);
    expect(count(outcome, 'colour-profile')).toBe(0);
  });
});

describe('every output shape passes verify and exiftool', () => {
  const shapes: [string, string, () => Promise<Buffer>][] = [
    [
      'JPEG-in-TIFF',
      'tif',
      async () =>
        sharp(await buildImage('png', { width: 24, height: 16 }))
          .tiff({ compression: 'jpeg' })
          .toBuffer(),
    ],
    ['multi-page TIFF', 'tif', () => buildImage('tiff', { width: 24, height: 16, frames: 3 })],
    ['RGBA TIFF', 'tif', () => buildImage('tiff', { width: 24, height: 16, channels: 4 })],
    ['16-bit PNG', 'png', () => buildImage('png', { width: 24, height: 16, sixteenBit: true })],
    [
      'palette PNG with alpha',
      'png',
      async () =>
        sharp(await buildImage('png', { width: 24, height: 16, channels: 4 }))
          .png({ palette: true })
          .toBuffer(),
    ],
    ['animated WebP', 'webp', () => buildImage('webp', { width: 24, height: 16, frames: 3 })],
    ['WebP with alpha', 'webp', () => buildImage('webp', { width: 24, height: 16, channels: 4 })],
    [
      'progressive JPEG',
      'jpg',
      async () =>
        sharp(await buildImage('png', { width: 24, height: 16 }))
          .jpeg({ progressive: true })
          .toBuffer(),
    ],
  ];

  it.each(shapes)('%s', async (_, extension, build) => {
    const input = await build();
    const outcome = cleaned(await disarm({ bytes: input, fileName: `shape.${extension}` }));
    expect(unexpectedImageTags(exiftoolTags(outcome.bytes, extension))).toEqual([]);
    assertPixelsOnly(outcome.bytes, extension);
  });
});

describe('colour spaces', () => {
  it('converts CMYK to sRGB and drops its profile', async () => {
    const input = await sharp(await buildImage('jpeg', { width: 32, height: 24 }))
      .withIccProfile('cmyk')
      .toColourspace('cmyk')
      .jpeg()
      .toBuffer();
    expect((await sharp(input).metadata()).space).toBe('cmyk');
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'print.jpg' }));
    expectPixelsOnly(outcome.bytes, 'jpg', input);
    const after = await sharp(outcome.bytes).metadata();
    expect([after.space, after.channels, after.icc]).toEqual(['srgb', 3, undefined]);
    expect(count(outcome, 'colour-profile')).toBe(1);
  });

  it('replaces a recognised grey profile (hostile private tag included) by our grey copy', async () => {
    const grey = await sharp(await buildImage('png', { width: 16, height: 16 }))
      .toColourspace('b-w')
      .png()
      .toBuffer();
    const input = withPngChunks(grey, [
      iccPngChunk(hostileProfile(canonicalProfile('grey-gamma-2.2'))),
    ]);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'grey.png' }));
    expectPixelsOnly(outcome.bytes, 'png', input);
    const after = await sharp(outcome.bytes).metadata();
    expect(after.channels).toBe(1);
    expect(after.icc).toEqual(Buffer.from(canonicalProfile('grey-gamma-2.2')));
  });
});

describe('decode budget from the headers', () => {
  it('refuses a progressive CMYK JPEG of 100 MP before decoding it', async () => {
    const input = await progressiveCmykJpeg(10_000, 10_000);
    expect(input.length).toBeLessThan(4 * 1024 * 1024);
    const outcome = await disarm({ bytes: input, fileName: 'bomb.jpg' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (outcome.status === 'rejected') expect(outcome.detail).toMatch(/needs about/);
  });

  it('refuses a 1 KiB RLE8 BMP declaring 9999x9999 from its header', async () => {
    const input = rleBmpBomb();
    expect(input.length).toBeLessThan(2048);
    const outcome = await disarm({ bytes: input, fileName: 'rle.bmp' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });

  it('refuses RLE data declaring far more pixels than runs can paint, under the memory ceiling', async () => {
    const input = rleBmpBomb(4000, 4000);
    const outcome = await disarm({ bytes: input, fileName: 'rle.bmp' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (outcome.status === 'rejected') expect(outcome.detail).toMatch(/RLE data declare/);
  });

  it('honours a lower maxDecodeBytes for a baseline image', async () => {
    const input = await buildImage('png', { width: 200, height: 200 });
    const outcome = await disarm(
      { bytes: input, fileName: 'a.png' },
      { limits: { maxDecodeBytes: 100_000 } },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });
});

describe('GIF exactness', () => {
  /** 256 distinct colours, as a palette-optimising editor leaves them. */
  const PALETTE = Array.from(
    { length: 256 },
    (_, i) => [(i * 37) & 0xff, (i * 91 + 3) & 0xff, (i * 13 + 7) & 0xff] as const,
  );

  function frame(shift: number): Uint8Array {
    return Uint8Array.from({ length: 32 * 16 }, (_, i) => (i + shift) & 0xff);
  }

  function readFrames(bytes: Uint8Array): Promise<Buffer> {
    return sharp(bytes, { pages: -1 }).ensureAlpha().raw().toBuffer();
  }

  it('gives back a GIF using all 256 colours pixel for pixel', async () => {
    const input = buildPaletteGif({ width: 32, height: 16, palette: PALETTE, frames: [frame(0)] });
    const before = await sharp(input).removeAlpha().raw().toBuffer();
    const colours = new Set(Array.from({ length: 32 * 16 }, (_, i) => before.readUIntBE(i * 3, 3)));
    expect(colours.size).toBe(256);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'palette.gif' }));
    expect(await readFrames(outcome.bytes)).toEqual(await readFrames(input));
  });

  it('gives back every frame of an animated 256-colour GIF pixel for pixel, with timing', async () => {
    const input = buildPaletteGif({
      width: 32,
      height: 16,
      palette: PALETTE,
      frames: [frame(0), frame(101), frame(7)],
      delayCs: 25,
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'anim.gif' }));
    expect(await readFrames(outcome.bytes)).toEqual(await readFrames(input));
    const [before, after] = await Promise.all([
      sharp(input).metadata(),
      sharp(outcome.bytes).metadata(),
    ]);
    expect([after.pages, after.delay, after.loop]).toEqual([
      before.pages,
      before.delay,
      before.loop,
    ]);
  });
});

describe('deterministic and idempotent', () => {
  const cases: [string, () => Promise<Buffer>][] = [
    ['jpg', () => buildImage('jpeg', { width: 40, height: 30, icc: 'p3' })],
    ['png', () => buildImage('png', { width: 40, height: 30, channels: 4 })],
    ['gif', () => buildImage('gif', { width: 40, height: 30, frames: 2 })],
    ['webp', () => buildImage('webp', { width: 40, height: 30, lossless: true })],
    ['webp', () => buildImage('webp', { width: 40, height: 30 })],
    ['tif', () => buildImage('tiff', { width: 40, height: 30, icc: 'srgb' })],
    ['bmp', () => Promise.resolve(polyglotBmp())],
  ];

  it.each(cases)(
    '%s: same input, same bytes; the output disarms with no findings',
    async (extension, build) => {
      const input = await build();
      const first = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      const second = cleaned(await disarm({ bytes: input, fileName: `a.${extension}` }));
      expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
      const again = cleaned(await disarm({ bytes: first.bytes, fileName: `a.${extension}` }));
      expect(again.findings).toEqual([]);
      expect(unexpectedImageTags(exiftoolTags(again.bytes, extension))).toEqual([]);
      assertPixelsOnly(again.bytes, extension);
    },
  );
});
