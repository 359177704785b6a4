/**
 * Test-only BMP builder: writes exactly the fields it is told, including wrong ones, so every
 * hostile case reads as a spec in the test.
 */

/** DIB header variants, by the structure they follow. */
export type HeaderVariant = 'core' | 'os2' | 'info' | 'v2' | 'v3' | 'v4' | 'v5';

const HEADER_BYTES: Record<HeaderVariant, number> = {
  core: 12,
  os2: 64,
  info: 40,
  v2: 52,
  v3: 56,
  v4: 108,
  v5: 124,
};

/** bV5CSType / bV4CSType values (FOURCCs as little-endian DWORDs). */
export const CS_TYPE = {
  calibratedRgb: 0,
  sRgb: 0x73524742,
  windows: 0x57696e20,
  linked: 0x4c494e4b,
  embedded: 0x4d424544,
} as const;

/** What to write; anything left out gets the value a correct file would have. */
export interface BmpSpec {
  header?: HeaderVariant;
  /** Raw bcSize / biSize, e.g. an OS/2 2.x size from 16 to 64 or a bogus one. */
  headerSize?: number;
  /** Writes this biSize without changing the layout (for absurd sizes). */
  headerSizeField?: number;
  width: number;
  /** Signed for all but the core header; negative means top-down. */
  height: number;
  planes?: number;
  bitCount: number;
  compression?: number;
  sizeImage?: number;
  colorsUsed?: number;
  /** [r, g, b] entries; written as RGBTRIPLE for core headers, RGBQUAD otherwise. */
  palette?: readonly (readonly [number, number, number])[];
  /** Mask fields inside a V2+ header. */
  masks?: { r: number; g: number; b: number; a?: number };
  /** DWORDs written right after the DIB header (BI_BITFIELDS masks of an info header). */
  afterHeader?: readonly number[];
  /** Filler bytes between the palette and the pixel array. */
  gap?: number;
  /** The pixel array, as stored. */
  pixels: Uint8Array | readonly number[];
  /** Overrides bfOffBits. */
  pixelOffset?: number;
  csType?: number;
  /** Profile bytes placed after the pixel array; offset/size override bV5ProfileData/Size. */
  profile?: { bytes: Uint8Array; offset?: number; size?: number };
  /** Bytes appended at the very end. */
  trailing?: readonly number[];
}

/** Builds a BMP file from `spec`. */
export function buildBmp(spec: BmpSpec): Uint8Array {
  const variant = spec.header ?? 'info';
  const headerSize = spec.headerSize ?? HEADER_BYTES[variant];
  const core = variant === 'core';
  const entryBytes = core ? 3 : 4;
  const palette = spec.palette ?? [];
  const afterHeader = spec.afterHeader ?? [];
  const pixels = Uint8Array.from(spec.pixels);
  const gap = spec.gap ?? 0;
  const profile = spec.profile?.bytes ?? new Uint8Array(0);
  const trailing = spec.trailing ?? [];

  const headerEnd = 14 + headerSize;
  const paletteStart = headerEnd + afterHeader.length * 4;
  const pixelStart = paletteStart + palette.length * entryBytes + gap;
  const profileStart = pixelStart + pixels.length;
  const total = profileStart + profile.length + trailing.length;

  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  const put32 = (offset: number, value: number): void => {
    if (offset + 4 <= headerEnd) view.setUint32(offset, value >>> 0, true);
  };
  const put16 = (offset: number, value: number): void => {
    if (offset + 2 <= headerEnd) view.setUint16(offset, value, true);
  };

  out[0] = 0x42;
  out[1] = 0x4d;
  view.setUint32(2, total, true);
  view.setUint32(10, spec.pixelOffset ?? pixelStart, true);
  view.setUint32(14, spec.headerSizeField ?? headerSize, true);

  const h = 14;
  if (core) {
    put16(h + 4, spec.width);
    put16(h + 6, spec.height);
    put16(h + 8, spec.planes ?? 1);
    put16(h + 10, spec.bitCount);
  } else {
    put32(h + 4, spec.width);
    put32(h + 8, spec.height);
    put16(h + 12, spec.planes ?? 1);
    put16(h + 14, spec.bitCount);
    put32(h + 16, spec.compression ?? 0);
    put32(h + 20, spec.sizeImage ?? pixels.length);
    put32(h + 24, 2835);
    put32(h + 28, 2835);
    put32(h + 32, spec.colorsUsed ?? 0);
    if (spec.masks !== undefined && headerSize >= 52) {
      put32(h + 40, spec.masks.r);
      put32(h + 44, spec.masks.g);
      put32(h + 48, spec.masks.b);
      put32(h + 52, spec.masks.a ?? 0);
    }
    if (headerSize >= 108) put32(h + 56, spec.csType ?? CS_TYPE.sRgb);
    if (headerSize >= 124 && spec.profile !== undefined) {
      put32(h + 112, spec.profile.offset ?? profileStart - 14);
      put32(h + 116, spec.profile.size ?? profile.length);
    }
  }

  afterHeader.forEach((value, i) => {
    view.setUint32(headerEnd + i * 4, value >>> 0, true);
  });
  palette.forEach(([r, g, b], i) => {
    const at = paletteStart + i * entryBytes;
    out[at] = b;
    out[at + 1] = g;
    out[at + 2] = r;
  });
  out.fill(0xee, pixelStart - gap, pixelStart);
  out.set(pixels, pixelStart);
  out.set(profile, profileStart);
  out.set(trailing, profileStart + profile.length);
  return out;
}

/**
 * Packs rows of pixel values as a BMP pixel array, each row padded to 4 bytes. Values are
 * palette indexes (1..8 bpp, most significant bits first), 16-bit words, 0xRRGGBB (24 bpp, stored
 * B, G, R) or 32-bit words, all little-endian. Rows are in storage order.
 */
export function packRows(bitCount: number, rows: readonly (readonly number[])[]): number[] {
  const out: number[] = [];
  for (const row of rows) {
    const bytes: number[] = [];
    if (bitCount < 8) {
      const perByte = 8 / bitCount;
      row.forEach((value, x) => {
        const i = Math.floor(x / perByte);
        bytes[i] = (bytes[i] ?? 0) | (value << (8 - bitCount * ((x % perByte) + 1)));
      });
    } else {
      for (const value of row) {
        if (bitCount === 8) bytes.push(value);
        else if (bitCount === 16) bytes.push(value & 0xff, (value >>> 8) & 0xff);
        else if (bitCount === 24) bytes.push(value & 0xff, (value >>> 8) & 0xff, value >>> 16);
        else bytes.push(value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, value >>> 24);
      }
    }
    while (bytes.length % 4 !== 0) bytes.push(0);
    out.push(...bytes);
  }
  return out;
}

/** A minimal ICC-shaped profile: big-endian size at 0, 'acsp' at 36, patterned body. */
export function buildIccProfile(size: number, declaredSize = size): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7) & 0xff;
  const view = new DataView(bytes.buffer);
  view.setUint32(0, declaredSize, false);
  bytes.set([0x61, 0x63, 0x73, 0x70], 36);
  return bytes;
}
