import { seededRandom } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';
import { Rejection } from '../../../_internal/rejection.ts';
import type { RejectionReason } from '../../../reasons.ts';
import { buildBmp, buildIccProfile, CS_TYPE, packRows } from './_test/build-bmp.ts';
import type { BmpSpec } from './_test/build-bmp.ts';
import { decodeBmp, MAX_ICC_PROFILE_BYTES } from './decode.ts';
import { encodeBmp } from './encode.ts';
import { probeBmp } from './probe.ts';
import type { BmpDecodeResult, BmpImage } from './types.ts';

const LIMITS = { maxPixels: 10_000_000 };

const BI_RLE8 = 1;
const BI_RLE4 = 2;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;

function decode(bytes: Uint8Array): BmpDecodeResult {
  return decodeBmp(bytes, LIMITS);
}

function rejectionOf(run: () => unknown): Rejection {
  try {
    run();
  } catch (error) {
    if (error instanceof Rejection) return error;
    throw error;
  }
  throw new Error('expected a Rejection, but decoding succeeded');
}

function expectRejected(bytes: Uint8Array, reason: RejectionReason, detail: RegExp): void {
  const rejection = rejectionOf(() => decode(bytes));
  expect(rejection.reason).toBe(reason);
  expect(rejection.message).toMatch(detail);
}

function pixels(result: BmpDecodeResult): number[] {
  return [...result.image.data];
}

type Rgb = readonly [number, number, number];
const BLACK: Rgb = [0, 0, 0];
const RED: Rgb = [255, 0, 0];
const GREEN: Rgb = [0, 255, 0];
const BLUE: Rgb = [0, 0, 255];
const WHITE: Rgb = [255, 255, 255];
/** 16 distinct colours for palette tests. */
const PALETTE_16: Rgb[] = Array.from({ length: 16 }, (_, i) => [i * 16, 255 - i * 16, i * 3]);
const TRANSPARENT = [0, 0, 0, 0];
const opaque = (c: Rgb): number[] => [...c, 255];

/** A small valid 24-bit file used where the variant does not matter. */
function rgb24(spec: Partial<BmpSpec> = {}): Uint8Array {
  return buildBmp({
    width: 2,
    height: 2,
    bitCount: 24,
    pixels: packRows(24, [
      [0x0000ff, 0x00ff00],
      [0xff0000, 0xffffff],
    ]),
    ...spec,
  });
}

describe('decodeBmp: paletted images', () => {
  it('decodes 1 bit per pixel, bottom-up, most significant bit first', () => {
    const result = decode(
      buildBmp({
        width: 3,
        height: 2,
        bitCount: 1,
        palette: [BLACK, WHITE],
        pixels: packRows(1, [
          [1, 0, 1],
          [0, 1, 0],
        ]),
      }),
    );
    expect(result.image).toMatchObject({ width: 3, height: 2, channels: 3 });
    expect(pixels(result)).toEqual([...BLACK, ...WHITE, ...BLACK, ...WHITE, ...BLACK, ...WHITE]);
    expect(result.trailingBytes).toBe(0);
  });

  it('decodes 2 bits per pixel across a byte boundary', () => {
    const result = decode(
      buildBmp({
        width: 5,
        height: 1,
        bitCount: 2,
        palette: [RED, GREEN, BLUE, WHITE],
        pixels: packRows(2, [[0, 1, 2, 3, 1]]),
      }),
    );
    expect(pixels(result)).toEqual([...RED, ...GREEN, ...BLUE, ...WHITE, ...GREEN]);
  });

  it('decodes 4 bits per pixel, high nibble first', () => {
    const result = decode(
      buildBmp({
        width: 3,
        height: 2,
        bitCount: 4,
        palette: PALETTE_16,
        pixels: packRows(4, [
          [15, 14, 13],
          [0, 1, 2],
        ]),
      }),
    );
    const expected = [0, 1, 2, 15, 14, 13].flatMap((i) => PALETTE_16[i]!);
    expect(pixels(result)).toEqual(expected);
  });

  it('decodes 8 bits per pixel with biClrUsed, out-of-range indexes as black', () => {
    const result = decode(
      buildBmp({
        width: 4,
        height: 1,
        bitCount: 8,
        colorsUsed: 3,
        palette: [RED, GREEN, BLUE],
        pixels: packRows(8, [[2, 3, 255, 0]]),
      }),
    );
    expect(pixels(result)).toEqual([...BLUE, ...BLACK, ...BLACK, ...RED]);
  });

  it('keeps a palette shorter than declared when the pixel data starts early', () => {
    const result = decode(
      buildBmp({
        width: 3,
        height: 1,
        bitCount: 8,
        palette: [RED, GREEN],
        pixels: packRows(8, [[1, 0, 2]]),
      }),
    );
    expect(pixels(result)).toEqual([...GREEN, ...RED, ...BLACK]);
  });

  it('reads RGBTRIPLE palettes and WORD dimensions of a BITMAPCOREHEADER', () => {
    const result = decode(
      buildBmp({
        header: 'core',
        width: 2,
        height: 2,
        bitCount: 8,
        palette: [RED, GREEN, BLUE],
        pixels: packRows(8, [
          [0, 1],
          [2, 0],
        ]),
      }),
    );
    expect(pixels(result)).toEqual([...BLUE, ...RED, ...RED, ...GREEN]);
  });

  it('reads a 1-bit core file whose palette is exactly two RGBTRIPLEs', () => {
    const result = decode(
      buildBmp({
        header: 'core',
        width: 2,
        height: 1,
        bitCount: 1,
        palette: [BLUE, WHITE],
        pixels: packRows(1, [[1, 0]]),
      }),
    );
    expect(pixels(result)).toEqual([...WHITE, ...BLUE]);
  });

  it.each([16, 24, 64])(
    'reads an OS/2 2.x header of %i bytes with RGBQUAD-size entries',
    (size) => {
      const result = decode(
        buildBmp({
          header: 'os2',
          headerSize: size,
          width: 2,
          height: 1,
          bitCount: 4,
          palette: PALETTE_16,
          pixels: packRows(4, [[3, 9]]),
        }),
      );
      expect(pixels(result)).toEqual([...PALETTE_16[3]!, ...PALETTE_16[9]!]);
    },
  );

  it('decodes top-down paletted rows', () => {
    const result = decode(
      buildBmp({
        width: 1,
        height: -2,
        bitCount: 8,
        palette: [RED, GREEN],
        pixels: packRows(8, [[0], [1]]),
      }),
    );
    expect(pixels(result)).toEqual([...RED, ...GREEN]);
  });
});

describe('decodeBmp: direct colour', () => {
  it('decodes 16-bit BI_RGB as 5-5-5, ignoring the top bit', () => {
    const result = decode(
      buildBmp({
        width: 5,
        height: 1,
        bitCount: 16,
        pixels: packRows(16, [[0x7c00, 0x03e0, 0x001f, 0x4210, 0xffff]]),
      }),
    );
    // 16 of 31 rounds to 132 of 255.
    expect(pixels(result)).toEqual([...RED, ...GREEN, ...BLUE, 132, 132, 132, ...WHITE]);
    expect(result.image.channels).toBe(3);
  });

  it('decodes 16-bit BI_BITFIELDS 5-6-5 with the masks after an info header', () => {
    const result = decode(
      buildBmp({
        width: 4,
        height: 1,
        bitCount: 16,
        compression: BI_BITFIELDS,
        afterHeader: [0xf800, 0x07e0, 0x001f],
        pixels: packRows(16, [[0xf800, 0x07e0, 0x001f, 0x0400]]),
      }),
    );
    // Green 32 of 63 rounds to 130.
    expect(pixels(result)).toEqual([...RED, ...GREEN, ...BLUE, 0, 130, 0]);
  });

  it('decodes 16-bit 4-4-4-4 with an alpha mask from a V3 header', () => {
    const result = decode(
      buildBmp({
        header: 'v3',
        width: 2,
        height: 1,
        bitCount: 16,
        compression: BI_BITFIELDS,
        masks: { r: 0x0f00, g: 0x00f0, b: 0x000f, a: 0xf000 },
        pixels: packRows(16, [[0xf800, 0x50f0]]),
      }),
    );
    expect(result.image.channels).toBe(4);
    // 8 of 15 rounds to 136, 5 of 15 is 85.
    expect(pixels(result)).toEqual([136, 0, 0, 255, 0, 255, 0, 85]);
  });

  it('decodes 24-bit rows with padding, bottom-up and top-down alike', () => {
    const rows = [[0x112233], [0x445566]];
    const bottomUp = decode(
      buildBmp({ width: 1, height: 2, bitCount: 24, pixels: packRows(24, rows) }),
    );
    const topDown = decode(
      buildBmp({ width: 1, height: -2, bitCount: 24, pixels: packRows(24, rows.toReversed()) }),
    );
    expect(pixels(bottomUp)).toEqual([0x44, 0x55, 0x66, 0x11, 0x22, 0x33]);
    expect(pixels(topDown)).toEqual(pixels(bottomUp));
  });

  it('accepts a pixel array missing only the padding of its last row', () => {
    const bytes = rgb24({ width: 1, height: 2, pixels: packRows(24, [[0x010203], [0x040506]]) });
    const result = decode(bytes.subarray(0, bytes.length - 1));
    expect(pixels(result)).toEqual([4, 5, 6, 1, 2, 3]);
  });

  it('ignores the fourth byte of 32-bit BI_RGB with an info header', () => {
    const result = decode(
      buildBmp({
        width: 2,
        height: 1,
        bitCount: 32,
        pixels: packRows(32, [[0x80ff0000, 0x7f0000ff]]),
      }),
    );
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual([...RED, ...BLUE]);
  });

  it('uses the alpha mask of a V5 header for 32-bit BI_RGB', () => {
    const result = decode(
      buildBmp({
        header: 'v5',
        width: 2,
        height: 1,
        bitCount: 32,
        masks: { r: 0, g: 0, b: 0, a: 0xff000000 },
        pixels: packRows(32, [[0x80ff0000, 0xff00ff00]]),
      }),
    );
    expect(result.image.channels).toBe(4);
    expect(pixels(result)).toEqual([255, 0, 0, 0x80, 0, 255, 0, 255]);
  });

  it('treats an alpha channel that is zero everywhere as no alpha', () => {
    const result = decode(
      buildBmp({
        header: 'v5',
        width: 2,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff0000, g: 0xff00, b: 0xff, a: 0xff000000 },
        pixels: packRows(32, [[0x00ff0000, 0x0000ff00]]),
      }),
    );
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual([...RED, ...GREEN]);
  });

  it('ignores an unusable alpha mask on BI_RGB instead of rejecting', () => {
    const result = decode(
      buildBmp({
        header: 'v3',
        width: 1,
        height: 1,
        bitCount: 32,
        masks: { r: 0, g: 0, b: 0, a: 0x00ff0000 },
        pixels: packRows(32, [[0xffff0000]]),
      }),
    );
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual([...RED]);
  });

  it('scales 10-10-10 BI_BITFIELDS masks to 8 bits', () => {
    const result = decode(
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        afterHeader: [0x3ff00000, 0x000ffc00, 0x000003ff],
        pixels: packRows(32, [[(1023 << 20) | (512 << 10) | 0]]),
      }),
    );
    // 512 of 1023 rounds to 128.
    expect(pixels(result)).toEqual([255, 128, 0]);
  });

  it('scales a 22-bit field without a lookup table', () => {
    const result = decode(
      buildBmp({
        header: 'v5',
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xfffffc00, g: 0x3e0, b: 0x1f },
        pixels: packRows(32, [[0x80000000 | 0x3e0]]),
      }),
    );
    expect(pixels(result)).toEqual([128, 255, 0]);
  });

  it('reads RGBA byte order from V4 BI_BITFIELDS masks', () => {
    const result = decode(
      buildBmp({
        header: 'v4',
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff, g: 0xff00, b: 0xff0000, a: 0xff000000 },
        pixels: [0x11, 0x22, 0x33, 0x44],
      }),
    );
    expect(pixels(result)).toEqual([0x11, 0x22, 0x33, 0x44]);
  });

  it('reads four BI_ALPHABITFIELDS masks after an info header', () => {
    const result = decode(
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_ALPHABITFIELDS,
        afterHeader: [0xff000000, 0xff0000, 0xff00, 0xff],
        pixels: [0x40, 0x30, 0x20, 0x10],
      }),
    );
    expect(result.image.channels).toBe(4);
    expect(pixels(result)).toEqual([0x10, 0x20, 0x30, 0x40]);
    expect(result.trailingBytes).toBe(0);
  });

  it('reads masks from a V2 header, which has no alpha mask', () => {
    const result = decode(
      buildBmp({
        header: 'v2',
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff, g: 0xff00, b: 0xff0000, a: 0xff000000 },
        pixels: [1, 2, 3, 4],
      }),
    );
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual([1, 2, 3]);
  });

  it('decodes top-down BI_BITFIELDS', () => {
    const result = decode(
      buildBmp({
        header: 'v5',
        width: 1,
        height: -2,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff0000, g: 0xff00, b: 0xff, a: 0xff000000 },
        pixels: packRows(32, [[0xffff0000], [0x800000ff]]),
      }),
    );
    expect(pixels(result)).toEqual([255, 0, 0, 255, 0, 0, 255, 0x80]);
  });

  it('decodes a 24-bit BITMAPCOREHEADER file', () => {
    const result = decode(
      buildBmp({
        header: 'core',
        width: 1,
        height: 1,
        bitCount: 24,
        pixels: packRows(24, [[0xabcdef]]),
      }),
    );
    expect(pixels(result)).toEqual([0xab, 0xcd, 0xef]);
  });

  it('decodes a subarray that does not start at byte 0 of its buffer', () => {
    const bytes = rgb24();
    const padded = new Uint8Array(bytes.length + 7);
    padded.set(bytes, 7);
    expect(pixels(decode(padded.subarray(7)))).toEqual(pixels(decode(bytes)));
  });
});

describe('decodeBmp: RLE', () => {
  const palette = [BLACK, RED, GREEN, BLUE, WHITE];

  it('decodes BI_RLE8 runs, absolute runs and every escape; skipped pixels are transparent', () => {
    const result = decode(
      buildBmp({
        width: 4,
        height: 3,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: [
          ...[0x03, 0x01, 0x01, 0x02, 0x00, 0x00], // row 0: 3 red, 1 green, end of line
          ...[0x00, 0x03, 0x03, 0x04, 0x03, 0x00], // row 1: absolute blue white blue + pad
          ...[0x00, 0x02, 0x00, 0x01], // delta: up one row, to (3, 2)
          ...[0x01, 0x04], // one white
          ...[0x00, 0x01], // end of bitmap
        ],
      }),
    );
    expect(result.image.channels).toBe(4);
    expect(pixels(result)).toEqual([
      ...[...TRANSPARENT, ...TRANSPARENT, ...TRANSPARENT, ...opaque(WHITE)],
      ...[...opaque(BLUE), ...opaque(WHITE), ...opaque(BLUE), ...TRANSPARENT],
      ...[...opaque(RED), ...opaque(RED), ...opaque(RED), ...opaque(GREEN)],
    ]);
    expect(result.trailingBytes).toBe(0);
  });

  it('decodes a fully covered BI_RLE8 image as RGB, even-length absolute runs unpadded', () => {
    const result = decode(
      buildBmp({
        width: 4,
        height: 2,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: [
          ...[0x00, 0x04, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00],
          ...[0x04, 0x02, 0x00, 0x00, 0x00, 0x01],
        ],
      }),
    );
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual([
      ...[...GREEN, ...GREEN, ...GREEN, ...GREEN],
      ...[...RED, ...GREEN, ...BLUE, ...WHITE],
    ]);
  });

  it('accepts a missing end-of-bitmap once every row is complete', () => {
    const complete = [0x02, 0x01, 0x00, 0x00, 0x02, 0x02];
    const result = decode(
      buildBmp({
        width: 2,
        height: 2,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: complete,
      }),
    );
    expect(pixels(result)).toEqual([...GREEN, ...GREEN, ...RED, ...RED]);
  });

  it('clips runs at the end of the row instead of wrapping into the next', () => {
    const result = decode(
      buildBmp({
        width: 2,
        height: 2,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: [0xff, 0x01, 0x00, 0x00, 0x00, 0x05, 1, 2, 3, 4, 1, 0, 0x00, 0x01],
      }),
    );
    expect(pixels(result)).toEqual([...RED, ...GREEN, ...RED, ...RED]);
  });

  it('discards writes a delta or end of line moved outside the image', () => {
    const result = decode(
      buildBmp({
        width: 2,
        height: 2,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: [
          ...[0x01, 0x03], // (0, 0) blue
          ...[0x00, 0x02, 0xff, 0xff], // far right and above the image
          ...[0xff, 0x01, 0x00, 0x05, 1, 1, 1, 1, 1, 0], // dropped
          ...[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x04], // still above: dropped
          ...[0x00, 0x01],
        ],
      }),
    );
    expect(result.image.channels).toBe(4);
    expect(pixels(result)).toEqual([
      ...[...TRANSPARENT, ...TRANSPARENT],
      ...[...opaque(BLUE), ...TRANSPARENT],
    ]);
  });

  it('decodes out-of-range RLE palette indexes as black', () => {
    const result = decode(
      buildBmp({
        width: 2,
        height: 1,
        bitCount: 8,
        compression: BI_RLE8,
        colorsUsed: 2,
        palette: [RED, GREEN],
        pixels: [0x01, 0x01, 0x01, 0xc8, 0x00, 0x01],
      }),
    );
    expect(pixels(result)).toEqual([...GREEN, ...BLACK]);
  });

  it('decodes BI_RLE4 runs alternating nibbles, absolute runs, delta and end of bitmap', () => {
    const result = decode(
      buildBmp({
        width: 5,
        height: 2,
        bitCount: 4,
        compression: BI_RLE4,
        palette: PALETTE_16,
        pixels: [
          ...[0x05, 0x12, 0x00, 0x00], // row 0: 1 2 1 2 1, end of line
          ...[0x00, 0x03, 0x34, 0x50], // row 1: absolute 3 4 5 (two bytes, already even)
          ...[0x00, 0x02, 0x01, 0x00], // delta: skip one pixel right
          ...[0x01, 0x60], // 6 at x = 4
          ...[0x00, 0x01],
        ],
      }),
    );
    const p = (i: number): number[] => opaque(PALETTE_16[i]!);
    expect(result.image.channels).toBe(4);
    expect(pixels(result)).toEqual([
      ...[...p(3), ...p(4), ...p(5), ...TRANSPARENT, ...p(6)],
      ...[...p(1), ...p(2), ...p(1), ...p(2), ...p(1)],
    ]);
  });

  it('pads BI_RLE4 absolute runs to 16 bits and clips an odd run at the row end', () => {
    const result = decode(
      buildBmp({
        width: 5,
        height: 2,
        bitCount: 4,
        compression: BI_RLE4,
        palette: PALETTE_16,
        pixels: [
          ...[0x00, 0x05, 0x12, 0x34, 0x50, 0x00, 0x00, 0x00], // 1 2 3 4 5 + pad, end of line
          ...[0x06, 0x9a, 0x00, 0x01], // 9 a 9 a 9 (sixth pixel clipped), end of bitmap
        ],
      }),
    );
    const expected = [9, 10, 9, 10, 9, 1, 2, 3, 4, 5].flatMap((i) => PALETTE_16[i]!);
    expect(result.image.channels).toBe(3);
    expect(pixels(result)).toEqual(expected);
  });

  it.each([
    ['data ending mid-image', [0x02, 0x01, 0x00, 0x00, 0x01, 0x02], /before the end-of-bitmap/],
    ['a truncated absolute run', [0x00, 0x05, 0x01, 0x02], /absolute run of 5 pixels .* truncated/],
    ['an absolute run missing its pad byte', [0x00, 0x03, 0x01, 0x02, 0x03], /truncated/],
    ['a truncated delta', [0x00, 0x02, 0x01], /delta escape .* truncated/],
    ['a single byte', [0x02], /before the end-of-bitmap/],
  ])('rejects BI_RLE8 with %s', (_, stream, detail) => {
    expectRejected(
      buildBmp({ width: 2, height: 2, bitCount: 8, compression: BI_RLE8, palette, pixels: stream }),
      'invalid_file',
      detail,
    );
  });

  it('rejects top-down RLE, which the format does not allow', () => {
    expectRejected(
      buildBmp({
        width: 1,
        height: -1,
        bitCount: 8,
        compression: BI_RLE8,
        palette,
        pixels: [0, 1],
      }),
      'invalid_file',
      /top-down DIBs cannot be compressed/,
    );
  });

  it.each([
    [BI_RLE8, 4],
    [BI_RLE4, 8],
    [BI_RLE8, 24],
  ])('rejects compression %i with %i bits per pixel', (compression, bitCount) => {
    expectRejected(
      buildBmp({ width: 1, height: 1, bitCount, compression, palette, pixels: [0, 1, 0, 0] }),
      'invalid_file',
      /needs \d bits per pixel/,
    );
  });

  it('consumes a long stream of end-of-line escapes past the image without writing', () => {
    const stream = new Array<number>(200_000).fill(0);
    stream.push(0x00, 0x01);
    const result = decode(
      buildBmp({ width: 1, height: 1, bitCount: 8, compression: BI_RLE8, palette, pixels: stream }),
    );
    expect(pixels(result)).toEqual(TRANSPARENT);
  });
});

describe('decodeBmp: ICC profiles', () => {
  function v5(spec: Partial<BmpSpec>): Uint8Array {
    return buildBmp({
      header: 'v5',
      width: 1,
      height: 1,
      bitCount: 24,
      pixels: packRows(24, [[0x102030]]),
      ...spec,
    });
  }

  it('keeps an embedded profile', () => {
    const profile = buildIccProfile(200);
    const result = decode(v5({ csType: CS_TYPE.embedded, profile: { bytes: profile } }));
    expect(result.image.iccProfile).toEqual(profile);
    expect(result.trailingBytes).toBe(0);
  });

  it('trims an embedded profile to its declared size', () => {
    const profile = buildIccProfile(200, 160);
    const result = decode(v5({ csType: CS_TYPE.embedded, profile: { bytes: profile } }));
    expect(result.image.iccProfile).toEqual(profile.subarray(0, 160));
    expect(result.trailingBytes).toBe(40);
  });

  it.each([
    ['without the acsp signature', { bytes: buildIccProfile(200).fill(0, 36, 40) }],
    ['declaring more bytes than bV5ProfileSize', { bytes: buildIccProfile(300), size: 200 }],
    ['shorter than an ICC header', { bytes: buildIccProfile(100) }],
    [
      'larger than the profile limit',
      { bytes: buildIccProfile(200), size: MAX_ICC_PROFILE_BYTES + 1 },
    ],
    ['running past the end of the file', { bytes: buildIccProfile(200), size: 400 }],
    ['at an offset far beyond the file', { bytes: buildIccProfile(200), offset: 0xfffffff0 }],
  ])('drops an embedded profile %s', (_, profile) => {
    const result = decode(v5({ csType: CS_TYPE.embedded, profile }));
    expect(result.image.iccProfile).toBeUndefined();
    expect(result.trailingBytes).toBe(profile.bytes.length);
  });

  it('drops a linked profile, which names a file path', () => {
    const path = new TextEncoder().encode('\\\\attacker\\share\\profile.icc\0');
    const result = decode(v5({ csType: CS_TYPE.linked, profile: { bytes: path } }));
    expect(result.image.iccProfile).toBeUndefined();
    expect(result.trailingBytes).toBe(path.length);
  });

  it.each([
    ['LCS_sRGB', CS_TYPE.sRgb],
    ['LCS_WINDOWS_COLOR_SPACE', CS_TYPE.windows],
    ['LCS_CALIBRATED_RGB', CS_TYPE.calibratedRgb],
  ])('carries no profile for %s', (_, csType) => {
    const result = decode(v5({ csType, profile: { bytes: buildIccProfile(200) } }));
    expect(result.image.iccProfile).toBeUndefined();
  });

  it('ignores PROFILE_EMBEDDED in a V4 header, which has no profile fields', () => {
    const result = decode(
      buildBmp({
        header: 'v4',
        width: 1,
        height: 1,
        bitCount: 24,
        csType: CS_TYPE.embedded,
        pixels: packRows(24, [[0]]),
      }),
    );
    expect(result.image.iccProfile).toBeUndefined();
  });
});

describe('decodeBmp: trailing bytes', () => {
  it('counts data appended after the pixel array', () => {
    expect(decode(rgb24({ trailing: [1, 2, 3, 4, 5] })).trailingBytes).toBe(5);
  });

  it('counts a gap between the palette and the pixel array', () => {
    const result = decode(
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 8,
        colorsUsed: 1,
        palette: [RED],
        gap: 6,
        pixels: [0, 0, 0, 0],
      }),
    );
    expect(pixels(result)).toEqual([...RED]);
    expect(result.trailingBytes).toBe(6);
  });
});

describe('decodeBmp: hostile and malformed input', () => {
  it.each([
    ['empty input', new Uint8Array(0), /shorter than the 14-byte BITMAPFILEHEADER/],
    ['"BM" only', new Uint8Array([0x42, 0x4d]), /shorter than the 14-byte/],
    ['a wrong signature', rgb24().fill(0x41, 0, 2), /"BM" signature/],
    ['a file header only', rgb24().subarray(0, 14), /ends before the DIB header size/],
    ['a truncated info header', rgb24().subarray(0, 30), /40-byte DIB header is truncated/],
    [
      'a truncated V5 header',
      buildBmp({ header: 'v5', width: 1, height: 1, bitCount: 24, pixels: [] }).subarray(0, 100),
      /124-byte DIB header is truncated/,
    ],
    ['an unknown header size', rgb24({ headerSize: 100 }), /unsupported DIB header size 100/],
    [
      'a header size of 4 GiB',
      rgb24({ headerSizeField: 0xffffffff }),
      /unsupported DIB header size/,
    ],
    ['a negative width', rgb24({ width: -2 }), /width is -2/],
    ['a zero width', rgb24({ width: 0 }), /width is 0/],
    ['a zero height', rgb24({ height: 0 }), /height is 0/],
    [
      'a zero core height',
      buildBmp({ header: 'core', width: 1, height: 0, bitCount: 24, pixels: [0, 0, 0, 0] }),
      /1x0/,
    ],
    ['zero planes', rgb24({ planes: 0 }), /planes is 0/],
    ['two planes', rgb24({ planes: 2 }), /planes is 2/],
    ['0 bits per pixel', rgb24({ bitCount: 0 }), /0 bits per pixel/],
    ['3 bits per pixel', rgb24({ bitCount: 3 }), /3 bits per pixel/],
    ['64 bits per pixel', rgb24({ bitCount: 64 }), /64 bits per pixel/],
    [
      '32 bits per pixel in a core header',
      buildBmp({ header: 'core', width: 1, height: 1, bitCount: 32, pixels: [0, 0, 0, 0] }),
      /BITMAPCOREHEADER/,
    ],
    [
      'a pixel offset beyond the end',
      rgb24({ pixelOffset: 10_000 }),
      /offset 10000 is at or beyond the end/,
    ],
    ['a pixel offset at the end', rgb24({ pixelOffset: 70 }), /offset 70 is at or beyond the end/],
    ['a pixel offset inside the headers', rgb24({ pixelOffset: 20 }), /inside the headers/],
    ['truncated pixel data', rgb24().subarray(0, 60), /pixel array is truncated/],
    ['no pixel data', rgb24({ pixels: [] }), /at or beyond the end/],
    [
      'a palette count of 2^31',
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 8,
        colorsUsed: 2 ** 31,
        palette: [RED],
        pixels: [0, 0, 0, 0],
      }),
      /declares 2147483648 colours/,
    ],
    [
      'a palette count above 2^bpp',
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 1,
        colorsUsed: 3,
        palette: [RED, RED, RED],
        pixels: [0, 0, 0, 0],
      }),
      /1 bits per pixel allow 2/,
    ],
    [
      'no palette',
      buildBmp({ width: 1, height: 1, bitCount: 8, pixels: [0, 0, 0, 0] }),
      /palette is missing/,
    ],
  ])('rejects %s as invalid_file', (_, bytes, detail) => {
    expectRejected(bytes, 'invalid_file', detail);
  });

  it.each([
    [4, 'BI_JPEG'],
    [5, 'BI_PNG'],
    [11, 'BI_CMYK'],
    [12, 'BI_CMYKRLE8'],
    [13, 'BI_CMYKRLE4'],
    [7, '7'],
    [0xffffffff, '4294967295'],
  ])('rejects compression %i as unsupported', (compression, name) => {
    expectRejected(
      rgb24({ compression }),
      'invalid_file',
      new RegExp(`unsupported BMP compression ${name}`),
    );
  });

  it.each([
    [3, 'OS/2 Huffman 1D'],
    [4, 'OS/2 RLE24'],
  ])('rejects OS/2 compression %i as %s, not as a Windows value', (compression, name) => {
    expectRejected(
      buildBmp({
        header: 'os2',
        width: 1,
        height: 1,
        bitCount: 24,
        compression,
        pixels: [0, 0, 0, 0],
      }),
      'invalid_file',
      new RegExp(name),
    );
  });

  it('rejects BI_BITFIELDS at 24 bits per pixel', () => {
    expectRejected(
      rgb24({ compression: BI_BITFIELDS, afterHeader: [0xff0000, 0xff00, 0xff] }),
      'invalid_file',
      /need 16 or 32 bits per pixel, not 24/,
    );
  });

  it.each([
    ['a zero red mask', [0, 0xff00, 0xff], /red bit-field mask is zero/],
    ['all-zero masks', [0, 0, 0], /red bit-field mask is zero/],
    ['overlapping masks', [0xf800, 0xffe0, 0x1f], /green mask 0xffe0 overlaps/],
    ['a non-contiguous mask', [0xf800, 0x7e0, 0x11], /blue mask 0x11 is not contiguous/],
    ['a mask beyond 16 bits', [0x1f0000, 0x7e0, 0x1f], /beyond 16 bits per pixel/],
  ])('rejects 16-bit BI_BITFIELDS with %s', (_, masks, detail) => {
    expectRejected(
      buildBmp({
        width: 1,
        height: 1,
        bitCount: 16,
        compression: BI_BITFIELDS,
        afterHeader: masks,
        pixels: [0, 0, 0, 0],
      }),
      'invalid_file',
      detail,
    );
  });

  it('rejects an alpha mask that overlaps a colour mask', () => {
    expectRejected(
      buildBmp({
        header: 'v5',
        width: 1,
        height: 1,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff0000, g: 0xff00, b: 0xff, a: 0xffff0000 },
        pixels: [0, 0, 0, 0],
      }),
      'invalid_file',
      /alpha mask 0xffff0000 overlaps/,
    );
  });

  it('rejects bit-field masks cut off by the end of the file', () => {
    const bytes = buildBmp({
      width: 1,
      height: 1,
      bitCount: 32,
      compression: BI_BITFIELDS,
      afterHeader: [0xff0000, 0xff00, 0xff],
      pixels: [],
    });
    expectRejected(
      bytes.subarray(0, 60),
      'invalid_file',
      /3 bit-field masks after the header are truncated/,
    );
  });

  it.each([
    ['a width of 2^31 - 1', { width: 0x7fffffff }],
    ['a height of 70000', { height: 70_000 }],
    ['a top-down height of INT32_MIN', { height: -0x80000000 }],
    ['65535 x 65535 pixels', { width: 65_535, height: 65_535 }],
  ])('rejects %s as file_too_large before reading pixels', (_, spec) => {
    expectRejected(rgb24(spec), 'file_too_large', /BMP: .*(exceeds|over|needs more than)/);
  });

  it('rejects an image over the caller’s maxPixels', () => {
    const rejection = rejectionOf(() =>
      decodeBmp(rgb24({ width: 1000, height: 1000 }), { maxPixels: 999_999 }),
    );
    expect(rejection.reason).toBe('file_too_large');
    expect(rejection.message).toMatch(/1000000 pixels, over the 999999-pixel limit/);
  });

  it('rejects a width*height beyond the decoded-bytes cap even with no maxPixels limit', () => {
    const rejection = rejectionOf(() =>
      decodeBmp(rgb24({ width: 20_000, height: 20_000 }), { maxPixels: Infinity }),
    );
    expect(rejection.reason).toBe('file_too_large');
    expect(rejection.message).toMatch(/needs more than 1073741824 bytes/);
  });

  it('throws TypeError for a NaN or negative maxPixels (a caller bug)', () => {
    expect(() => decodeBmp(rgb24(), { maxPixels: Number.NaN })).toThrow(TypeError);
    expect(() => decodeBmp(rgb24(), { maxPixels: -1 })).toThrow(TypeError);
  });

  it('throws only Rejections for thousands of mutated files', () => {
    const seeds = [
      rgb24({ trailing: [9, 9] }),
      buildBmp({
        width: 3,
        height: 2,
        bitCount: 4,
        palette: PALETTE_16,
        pixels: packRows(4, [
          [1, 2, 3],
          [4, 5, 6],
        ]),
      }),
      buildBmp({
        header: 'core',
        width: 3,
        height: 1,
        bitCount: 1,
        palette: [RED, BLUE],
        pixels: packRows(1, [[1, 0, 1]]),
      }),
      buildBmp({
        width: 4,
        height: 3,
        bitCount: 8,
        compression: BI_RLE8,
        palette: [RED, GREEN, BLUE],
        pixels: [3, 1, 1, 2, 0, 0, 0, 3, 0, 1, 2, 0, 0, 2, 1, 1, 2, 2, 0, 1],
      }),
      buildBmp({
        width: 5,
        height: 2,
        bitCount: 4,
        compression: BI_RLE4,
        palette: PALETTE_16,
        pixels: [5, 0x12, 0, 0, 0, 3, 0x34, 0x50, 0, 2, 1, 0, 1, 0x60, 0, 1],
      }),
      buildBmp({
        header: 'v5',
        width: 2,
        height: -2,
        bitCount: 32,
        compression: BI_BITFIELDS,
        masks: { r: 0xff0000, g: 0xff00, b: 0xff, a: 0xff000000 },
        csType: CS_TYPE.embedded,
        profile: { bytes: buildIccProfile(160) },
        pixels: packRows(32, [
          [0x80ff0000, 0xff00ff00],
          [0x10000000, 0xffffffff],
        ]),
      }),
      buildBmp({
        width: 2,
        height: 2,
        bitCount: 16,
        compression: BI_BITFIELDS,
        afterHeader: [0xf800, 0x07e0, 0x001f],
        pixels: packRows(16, [
          [1, 2],
          [3, 4],
        ]),
      }),
    ];
    const random = seededRandom(0xb4b);
    let decoded = 0;
    let rejected = 0;
    for (let round = 0; round < 4000; round++) {
      const seed = seeds[round % seeds.length]!;
      const bytes = seed.slice();
      const edits = 1 + Math.floor(random() * 4);
      for (let e = 0; e < edits; e++) {
        // Mostly the headers, where the lengths and offsets live.
        const span = random() < 0.8 ? Math.min(bytes.length, 80) : bytes.length;
        const at = Math.floor(random() * span);
        bytes[at] =
          random() < 0.3
            ? [0, 0xff, 0x80, 0x7f][Math.floor(random() * 4)]!
            : Math.floor(random() * 256);
      }
      const input = random() < 0.2 ? bytes.subarray(0, Math.floor(random() * bytes.length)) : bytes;
      expect(() => probeBmp(input)).not.toThrow();
      try {
        const { image } = decodeBmp(input, { maxPixels: 1_000_000 });
        expect(image.data.length).toBe(image.width * image.height * image.channels);
        decoded++;
      } catch (error) {
        if (!(error instanceof Rejection)) throw error;
        expect(['invalid_file', 'file_too_large']).toContain(error.reason);
        rejected++;
      }
    }
    expect(decoded).toBeGreaterThan(0);
    expect(rejected).toBeGreaterThan(0);
  });
});

describe('encodeBmp', () => {
  function sampleImage(width: number, height: number, channels: 3 | 4): BmpImage {
    const random = seededRandom(width * 1000 + height * 10 + channels);
    const data = Uint8Array.from({ length: width * height * channels }, () =>
      Math.floor(random() * 256),
    );
    if (channels === 4) data[3] = 200; // never all-zero alpha
    return { width, height, channels, data };
  }

  it('writes RGB as a canonical 24-bit BI_RGB BITMAPINFOHEADER file', () => {
    const image = sampleImage(5, 3, 3);
    const bytes = encodeBmp(image);
    const view = new DataView(bytes.buffer);
    const stride = 16; // 15 bytes of pixels padded to a DWORD
    expect(String.fromCharCode(bytes[0]!, bytes[1]!)).toBe('BM');
    expect(view.getUint32(2, true)).toBe(bytes.length);
    expect(bytes.length).toBe(14 + 40 + stride * 3);
    expect(view.getUint32(10, true)).toBe(54);
    expect(view.getUint32(14, true)).toBe(40);
    expect(view.getInt32(18, true)).toBe(5);
    expect(view.getInt32(22, true)).toBe(3); // positive: bottom-up
    expect(view.getUint16(26, true)).toBe(1);
    expect(view.getUint16(28, true)).toBe(24);
    expect(view.getUint32(30, true)).toBe(0);
    expect(view.getUint32(34, true)).toBe(stride * 3);
    expect(view.getInt32(38, true)).toBe(2835);
    expect(view.getInt32(42, true)).toBe(2835);
    expect(view.getUint32(46, true)).toBe(0);
    // The first stored row is the bottom image row, in B, G, R order.
    const bottom = 2 * 5 * 3;
    expect([...bytes.subarray(54, 57)]).toEqual([
      image.data[bottom + 2],
      image.data[bottom + 1],
      image.data[bottom],
    ]);
    const result = decode(bytes);
    expect(result.image).toEqual(image);
    expect(result.trailingBytes).toBe(0);
  });

  it('writes RGBA as a 32-bit BI_BITFIELDS BITMAPV5HEADER file in sRGB', () => {
    const image = sampleImage(3, 2, 4);
    const bytes = encodeBmp(image);
    const view = new DataView(bytes.buffer);
    expect(view.getUint32(14, true)).toBe(124);
    expect(view.getUint32(10, true)).toBe(138);
    expect(bytes.length).toBe(138 + 3 * 2 * 4);
    expect(view.getUint16(28, true)).toBe(32);
    expect(view.getUint32(30, true)).toBe(BI_BITFIELDS);
    expect([54, 58, 62, 66].map((at) => view.getUint32(at, true))).toEqual([
      0x00ff0000, 0x0000ff00, 0x000000ff, 0xff000000,
    ]);
    expect(view.getUint32(70, true)).toBe(CS_TYPE.sRgb);
    expect(view.getUint32(126, true)).toBe(0);
    const result = decode(bytes);
    expect(result.image).toEqual(image);
    expect(result.trailingBytes).toBe(0);
  });

  it.each([3, 4] as const)('embeds an ICC profile after the pixels (%i channels)', (channels) => {
    const image = { ...sampleImage(3, 3, channels), iccProfile: buildIccProfile(300) };
    const bytes = encodeBmp(image);
    const view = new DataView(bytes.buffer);
    const pixelBytes = 36; // three rows of 12 bytes: 9 padded to 12, or 12
    expect(view.getUint32(14, true)).toBe(124);
    expect(view.getUint16(28, true)).toBe(channels * 8);
    expect(view.getUint32(70, true)).toBe(CS_TYPE.embedded);
    expect(view.getUint32(126, true)).toBe(124 + pixelBytes);
    expect(view.getUint32(130, true)).toBe(300);
    expect(bytes.length).toBe(138 + pixelBytes + 300);
    expect(bytes.subarray(138 + pixelBytes)).toEqual(image.iccProfile);
    const result = decode(bytes);
    expect(result.image).toEqual(image);
    expect(result.trailingBytes).toBe(0);
  });

  it.each([
    [1, 1, 3],
    [7, 5, 3],
    [257, 129, 3],
    [1, 1, 4],
    [6, 7, 4],
    [130, 65, 4],
  ] as const)('round-trips %ix%i with %i channels exactly', (width, height, channels) => {
    const image = sampleImage(width, height, channels);
    expect(decode(encodeBmp(image)).image).toEqual(image);
  });

  it('turns RGBA with zero alpha everywhere into opaque RGB, as readers would', () => {
    const image: BmpImage = {
      width: 1,
      height: 1,
      channels: 4,
      data: new Uint8Array([1, 2, 3, 0]),
    };
    expect(decode(encodeBmp(image)).image).toEqual({
      width: 1,
      height: 1,
      channels: 3,
      data: new Uint8Array([1, 2, 3]),
    });
  });

  it.each([
    ['a zero width', { width: 0, height: 1, channels: 3, data: new Uint8Array(0) }],
    ['a fractional height', { width: 1, height: 1.5, channels: 3, data: new Uint8Array(3) }],
    [
      'a width over the limit',
      { width: 70_000, height: 1, channels: 3, data: new Uint8Array(210_000) },
    ],
    ['2 channels', { width: 1, height: 1, channels: 2 as 3, data: new Uint8Array(2) }],
    ['short data', { width: 2, height: 2, channels: 3, data: new Uint8Array(11) }],
    [
      'a non-ICC profile',
      {
        width: 1,
        height: 1,
        channels: 3,
        data: new Uint8Array(3),
        iccProfile: new Uint8Array(200),
      },
    ],
  ] satisfies [string, BmpImage][])('throws TypeError for %s', (_, image) => {
    expect(() => encodeBmp(image)).toThrow(TypeError);
  });
});

describe('probeBmp', () => {
  const valid: [string, Uint8Array][] = [
    ['info', rgb24()],
    ['top-down info', rgb24({ height: -2 })],
    ['core', buildBmp({ header: 'core', width: 1, height: 1, bitCount: 24, pixels: [0, 0, 0, 0] })],
    [
      'OS/2 16',
      buildBmp({
        header: 'os2',
        headerSize: 16,
        width: 1,
        height: 1,
        bitCount: 24,
        pixels: [0, 0, 0, 0],
      }),
    ],
    [
      'OS/2 64',
      buildBmp({ header: 'os2', width: 1, height: 1, bitCount: 24, pixels: [0, 0, 0, 0] }),
    ],
    ['V2', rgb24({ header: 'v2' })],
    ['V3', rgb24({ header: 'v3' })],
    ['V4', rgb24({ header: 'v4' })],
    ['V5', rgb24({ header: 'v5' })],
    [
      'encoder output',
      encodeBmp({ width: 1, height: 1, channels: 4, data: new Uint8Array([1, 2, 3, 4]) }),
    ],
    ['an oversized image (the decoder rejects it)', rgb24({ width: 0x7fffffff })],
  ];
  it.each(valid)('accepts %s', (_, bytes) => {
    expect(probeBmp(bytes)).toBe(true);
  });

  const invalidCases: [string, Uint8Array][] = [
    ['empty input', new Uint8Array(0)],
    ['"BM" only', new Uint8Array([0x42, 0x4d])],
    ['a wrong signature', rgb24().fill(0x50, 0, 1)],
    ['a truncated DIB header', rgb24().subarray(0, 40)],
    ['an unknown header size', rgb24({ headerSize: 100 })],
    ['a header size of 4 GiB', rgb24({ headerSizeField: 0xffffffff })],
    ['a zero width', rgb24({ width: 0 })],
    ['a negative width', rgb24({ width: -1 })],
    ['a zero height', rgb24({ height: 0 })],
    ['two planes', rgb24({ planes: 2 })],
    ['3 bits per pixel', rgb24({ bitCount: 3 })],
    [
      '32 bits per pixel in a core header',
      buildBmp({ header: 'core', width: 1, height: 1, bitCount: 32, pixels: [0, 0, 0, 0] }),
    ],
    ['a pixel offset beyond the file', rgb24({ pixelOffset: 4096 })],
    ['a pixel offset inside the header', rgb24({ pixelOffset: 30 })],
    [
      'a PNG signature',
      new Uint8Array([
        0x89,
        0x50,
        0x4e,
        0x47,
        0x0d,
        0x0a,
        0x1a,
        0x0a,
        ...new Array<number>(40).fill(0),
      ]),
    ],
  ];
  it.each(invalidCases)('rejects %s', (_, bytes) => {
    expect(probeBmp(bytes)).toBe(false);
  });
});
