/**
 * A bitmap as pixels: what {@link decodeBmp} produces from an untrusted file and what
 * {@link encodeBmp} writes into a fresh one.
 */
export interface BmpImage {
  /** Width in pixels, at least 1. */
  width: number;
  /** Height in pixels, at least 1. */
  height: number;
  /** 3 = RGB, 4 = RGBA; rows top-down, tightly packed, 8 bits per sample */
  channels: 3 | 4;
  /** `width * height * channels` samples, straight (not premultiplied) alpha when present. */
  data: Uint8Array;
  /**
   * Embedded ICC profile (BITMAPV5HEADER, PROFILE_EMBEDDED). The decoder reports the file's own;
   * the image handler replaces it by our canonical copy or drops it before encoding.
   */
  iccProfile?: Uint8Array;
}

/** What {@link decodeBmp} found in a file. */
export interface BmpDecodeResult {
  /** The pixels (and embedded ICC profile, if valid) the rebuild keeps. */
  image: BmpImage;
  /**
   * Bytes of the file that no structure the decoder read accounts for: data appended after the
   * pixel array, gaps between the headers, palette and pixel array, and an embedded profile that
   * was dropped. The rebuild drops them; a non-zero count is worth reporting (appended payloads,
   * polyglots).
   */
  trailingBytes: number;
}

/** Limits {@link decodeBmp} enforces from the header, before it allocates pixel memory. */
export interface BmpDecodeLimits {
  /**
   * Largest `width * height` accepted; a larger image is rejected as `file_too_large`. The
   * decoder's own hard caps (`MAX_DIMENSION_PX`, `MAX_DECODED_BYTES`) apply on top.
   */
  maxPixels: number;
  /**
   * Ceiling on the memory to decode, colour-convert and re-encode the image (`width * height * 4`
   * bytes, four times), checked from the header. @default 1_073_741_824
   */
  maxDecodeBytes?: number;
  /**
   * Largest expansion of RLE data into pixels accepted (never below what RLE runs can reach, 510).
   * @default 1_000
   */
  maxExpansionRatio?: number;
}
