const FILE_HEADER_BYTES = 14;
const CORE_HEADER_BYTES = 12;
const OS2_MIN_HEADER_BYTES = 16;
const OS2_MAX_HEADER_BYTES = 64;
const WINDOWS_HEADER_SIZES: ReadonlySet<number> = new Set([40, 52, 56, 108, 124]);
const CORE_BIT_COUNTS: ReadonlySet<number> = new Set([1, 2, 4, 8, 24]);
const BIT_COUNTS: ReadonlySet<number> = new Set([1, 2, 4, 8, 16, 24, 32]);

/**
 * Cheap structural check for format detection: the 'BM' signature, a complete BITMAPFILEHEADER
 * and DIB header of a known size (12 core, 16..64 OS/2 2.x, 40, 52, 56, 108, 124), a positive
 * width, a non-zero height, one plane, a valid bit count, and a pixel-data offset past the headers
 * and inside the file. Does not check image size limits: an oversized BMP is still a BMP, and the
 * decoder rejects it. Never throws.
 *
 * @example
 * if (probeBmp(bytes)) handler = 'bmp';
 */
export function probeBmp(bytes: Uint8Array): boolean {
  if (bytes.length < FILE_HEADER_BYTES + CORE_HEADER_BYTES) return false;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== 0x42 || view.getUint8(1) !== 0x4d) return false;
  const headerBytes = view.getUint32(FILE_HEADER_BYTES, true);
  const core = headerBytes === CORE_HEADER_BYTES;
  const known =
    core ||
    WINDOWS_HEADER_SIZES.has(headerBytes) ||
    (headerBytes >= OS2_MIN_HEADER_BYTES && headerBytes <= OS2_MAX_HEADER_BYTES);
  if (!known || FILE_HEADER_BYTES + headerBytes > bytes.length) return false;

  const at = FILE_HEADER_BYTES;
  // BITMAPCOREHEADER has WORD dimensions; the later headers LONGs (negative height = top-down).
  const width = core ? view.getUint16(at + 4, true) : view.getInt32(at + 4, true);
  const height = core ? view.getUint16(at + 6, true) : view.getInt32(at + 8, true);
  const planes = view.getUint16(at + (core ? 8 : 12), true);
  const bitCount = view.getUint16(at + (core ? 10 : 14), true);
  const bitCounts = core ? CORE_BIT_COUNTS : BIT_COUNTS;
  if (width <= 0 || height === 0 || planes !== 1 || !bitCounts.has(bitCount)) return false;

  // BITMAPFILEHEADER bfOffBits
  const pixelOffset = view.getUint32(10, true);
  return pixelOffset >= FILE_HEADER_BYTES + headerBytes && pixelOffset < bytes.length;
}
