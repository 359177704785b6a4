/**
 * The little BMP the bench needs: sharp cannot write BMP, so the corpus writes its own, and sharp
 * cannot read it either, so the fidelity check reads dimensions from the header.
 */

const FILE_HEADER_BYTES = 14;
const INFO_HEADER_BYTES = 40;
/** 72 dpi in pixels per metre, the resolution unit of BITMAPINFOHEADER. */
const PIXELS_PER_METRE = 2835;

/**
 * Writes 24-bit BI_RGB BMP: BITMAPFILEHEADER, BITMAPINFOHEADER, bottom-up BGR rows padded to four
 * bytes. `rgb` is top-down, tightly packed RGB.
 */
export function writeBmp24(width: number, height: number, rgb: Uint8Array): Buffer {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const pixelOffset = FILE_HEADER_BYTES + INFO_HEADER_BYTES;
  const out = Buffer.alloc(pixelOffset + stride * height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(pixelOffset, 10);
  out.writeUInt32LE(INFO_HEADER_BYTES, 14);
  out.writeInt32LE(width, 18);
  // A positive height means the rows are stored bottom-up.
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(0, 30);
  out.writeUInt32LE(stride * height, 34);
  out.writeInt32LE(PIXELS_PER_METRE, 38);
  out.writeInt32LE(PIXELS_PER_METRE, 42);
  for (let y = 0; y < height; y += 1) {
    const source = y * width * 3;
    const target = pixelOffset + (height - 1 - y) * stride;
    for (let x = 0; x < width; x += 1) {
      out[target + x * 3] = rgb[source + x * 3 + 2] ?? 0;
      out[target + x * 3 + 1] = rgb[source + x * 3 + 1] ?? 0;
      out[target + x * 3 + 2] = rgb[source + x * 3] ?? 0;
    }
  }
  return out;
}

/** `WIDTHxHEIGHT` from a Windows BMP header (BITMAPINFOHEADER or later), or `null`. */
export function readBmpDimensions(bytes: Uint8Array): string | null {
  if (bytes.length < FILE_HEADER_BYTES + INFO_HEADER_BYTES) return null;
  if (bytes[0] !== 0x42 || bytes[1] !== 0x4d) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(FILE_HEADER_BYTES, true) < INFO_HEADER_BYTES) return null;
  const width = view.getInt32(18, true);
  const height = Math.abs(view.getInt32(22, true));
  return `${width}x${height}`;
}
