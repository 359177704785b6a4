import { ascii, startsWithAt, u32be, u32le } from '../_internal/bytes.ts';
import { probeBmp } from '../handlers/image/bmp/probe.ts';

/** The image kinds on the allowlist. */
export type ImageKind = 'jpeg' | 'png' | 'gif' | 'bmp' | 'tiff' | 'webp';

/**
 * Structural check beyond the signature: the first header of each format is present and points
 * inside the file. The codec decides the rest while decoding.
 */
export function probeImage(bytes: Uint8Array, kind: ImageKind): boolean {
  switch (kind) {
    case 'jpeg':
      // ITU T.81 B.1.1.2: SOI is followed by another marker.
      return bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
    case 'png':
      // PNG spec 5.6: IHDR is the first chunk and is 13 bytes long.
      return bytes.length >= 33 && u32be(bytes, 8) === 13 && startsWithAt(bytes, ascii('IHDR'), 12);
    case 'gif':
      // GIF89a spec 17-18: header and logical screen descriptor.
      return bytes.length >= 13;
    case 'bmp':
      return probeBmp(bytes);
    case 'tiff':
      return probeTiff(bytes);
    case 'webp':
      return probeWebp(bytes);
  }
}

function probeTiff(bytes: Uint8Array): boolean {
  if (bytes.length < 16) return false;
  const little = bytes[0] === 0x49;
  const version = little ? (bytes[2] ?? 0) : (bytes[3] ?? 0);
  if (version === 0x2b) return true; // BigTIFF: 64-bit offsets, libtiff validates them.
  const offset = little ? u32le(bytes, 4) : u32be(bytes, 4);
  // TIFF 6.0 section 2: the first IFD offset points inside the file, past the header.
  return offset >= 8 && offset + 2 <= bytes.length;
}

function probeWebp(bytes: Uint8Array): boolean {
  if (bytes.length < 20) return false;
  // RIFF container: the size field counts the bytes after it.
  const riffSize = u32le(bytes, 4);
  if (riffSize < 12 || riffSize + 8 > bytes.length + 1) return false;
  return (
    startsWithAt(bytes, ascii('VP8 '), 12) ||
    startsWithAt(bytes, ascii('VP8L'), 12) ||
    startsWithAt(bytes, ascii('VP8X'), 12)
  );
}
