import { ascii, startsWithAt, u16le, u32be, u32le } from '../../_internal/bytes.ts';

/** What a container walk finds besides the pixels: the parts a rebuild drops. */
export interface ImageExtras {
  /** Metadata blocks: EXIF, XMP, IPTC, comments, text chunks, foreign application blocks. */
  readonly metadataBlocks: number;
  /** Bytes after the format's end marker (appended payloads, polyglot tails). */
  readonly trailingBytes: number;
}

/** Upper bound on blocks walked in one file; a longer chain is treated as the end. */
const MAX_BLOCKS = 1_000_000;

const NONE: ImageExtras = { metadataBlocks: 0, trailingBytes: 0 };

/**
 * Walks the container structure of a PNG, JPEG, GIF, WebP or TIFF file and counts what is not image
 * data. The walk never decides validity (the codec does); a walk that cannot finish reports what
 * it saw so far.
 */
export function findImageExtras(bytes: Uint8Array, kind: string): ImageExtras {
  switch (kind) {
    case 'png':
      return walkPng(bytes);
    case 'jpeg':
      return walkJpeg(bytes);
    case 'gif':
      return walkGif(bytes);
    case 'webp':
      return walkWebp(bytes);
    case 'tiff':
      return walkTiff(bytes);
    default:
      return NONE;
  }
}

/** PNG spec 11.3: ancillary chunks that carry text, time, EXIF or foreign data. */
const PNG_METADATA_CHUNKS = new Set(['tEXt', 'zTXt', 'iTXt', 'eXIf', 'tIME']);
/** Chunks the rebuild regenerates from pixels and colour information. */
const PNG_KNOWN_CHUNKS = new Set([
  'IHDR',
  'PLTE',
  'IDAT',
  'IEND',
  'tRNS',
  'cHRM',
  'gAMA',
  'iCCP',
  'sBIT',
  'sRGB',
  'cICP',
  'mDCv',
  'cLLi',
  'bKGD',
  'hIST',
  'pHYs',
  'sPLT',
  'acTL',
  'fcTL',
  'fdAT',
]);

function walkPng(bytes: Uint8Array): ImageExtras {
  let offset = 8;
  let metadataBlocks = 0;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset + 12 <= bytes.length; blocks += 1) {
    const length = u32be(bytes, offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    const next = offset + 12 + length;
    if (next > bytes.length) break;
    if (PNG_METADATA_CHUNKS.has(type) || !PNG_KNOWN_CHUNKS.has(type)) metadataBlocks += 1;
    if (type === 'IEND') return { metadataBlocks, trailingBytes: bytes.length - next };
    offset = next;
  }
  return { metadataBlocks, trailingBytes: 0 };
}

/** ITU T.81 B.1.1.3: markers without a length field. */
function isStandaloneMarker(marker: number): boolean {
  return marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9);
}

function walkJpeg(bytes: Uint8Array): ImageExtras {
  let offset = 2;
  let metadataBlocks = 0;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset + 4 <= bytes.length; blocks += 1) {
    if (bytes[offset] !== 0xff) break;
    const marker = bytes[offset + 1] ?? 0;
    if (marker === 0xff) {
      offset += 1; // T.81 B.1.1.2: fill bytes before a marker
      continue;
    }
    if (marker === 0xd9) return { metadataBlocks, trailingBytes: bytes.length - offset - 2 };
    if (isStandaloneMarker(marker)) {
      offset += 2;
      continue;
    }
    const length = ((bytes[offset + 2] ?? 0) << 8) | (bytes[offset + 3] ?? 0);
    if (length < 2) break;
    if (isJpegMetadata(bytes, offset, marker)) metadataBlocks += 1;
    offset += 2 + length;
    if (marker === 0xda) offset = skipEntropyCodedData(bytes, offset);
  }
  return { metadataBlocks, trailingBytes: 0 };
}

/** APP1-APP15 and COM are metadata, except APP2 ICC_PROFILE (kept) and APP14 Adobe (colour). */
function isJpegMetadata(bytes: Uint8Array, offset: number, marker: number): boolean {
  if (marker === 0xfe) return true;
  if (marker < 0xe1 || marker > 0xef) return false;
  if (marker === 0xe2 && startsWithAt(bytes, ascii('ICC_PROFILE\0'), offset + 4)) return false;
  if (marker === 0xee && startsWithAt(bytes, ascii('Adobe'), offset + 4)) return false;
  return true;
}

/** T.81 B.1.1.5: inside scan data 0xFF is followed by 0x00 (stuffing) or a restart marker. */
function skipEntropyCodedData(bytes: Uint8Array, start: number): number {
  for (let i = start; i + 1 < bytes.length; i += 1) {
    if (bytes[i] !== 0xff) continue;
    const next = bytes[i + 1] ?? 0;
    if (next === 0x00 || (next >= 0xd0 && next <= 0xd7) || next === 0xff) continue;
    return i;
  }
  return bytes.length;
}

function walkGif(bytes: Uint8Array): ImageExtras {
  // GIF89a spec 18: logical screen descriptor, then the optional global colour table.
  if (bytes.length < 13) return NONE;
  const packed = bytes[10] ?? 0;
  let offset = 13 + ((packed & 0x80) !== 0 ? 3 * (1 << ((packed & 0x07) + 1)) : 0);
  let metadataBlocks = 0;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset < bytes.length; blocks += 1) {
    const introducer = bytes[offset];
    if (introducer === 0x3b) return { metadataBlocks, trailingBytes: bytes.length - offset - 1 };
    if (introducer === 0x21) {
      const label = bytes[offset + 1] ?? 0;
      if (label === 0xfe || label === 0x01) metadataBlocks += 1;
      if (label === 0xff && !isLoopExtension(bytes, offset + 2)) metadataBlocks += 1;
      offset = skipSubBlocks(bytes, offset + 2);
    } else if (introducer === 0x2c) {
      // Image descriptor (spec 20), local colour table, LZW minimum code size, data sub-blocks.
      if (offset + 10 > bytes.length) break;
      const local = bytes[offset + 9] ?? 0;
      offset += 10 + ((local & 0x80) !== 0 ? 3 * (1 << ((local & 0x07) + 1)) : 0) + 1;
      offset = skipSubBlocks(bytes, offset);
    } else {
      break;
    }
  }
  return { metadataBlocks, trailingBytes: 0 };
}

/** The NETSCAPE2.0/ANIMEXTS1.0 application extension only holds the loop count. */
function isLoopExtension(bytes: Uint8Array, offset: number): boolean {
  return (
    bytes[offset] === 11 &&
    (startsWithAt(bytes, ascii('NETSCAPE2.0'), offset + 1) ||
      startsWithAt(bytes, ascii('ANIMEXTS1.0'), offset + 1))
  );
}

function skipSubBlocks(bytes: Uint8Array, start: number): number {
  let offset = start;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset < bytes.length; blocks += 1) {
    const size = bytes[offset] ?? 0;
    offset += 1 + size;
    if (size === 0) return offset;
  }
  return bytes.length;
}

function walkWebp(bytes: Uint8Array): ImageExtras {
  if (bytes.length < 12) return NONE;
  const end = Math.min(bytes.length, 8 + u32le(bytes, 4));
  let offset = 12;
  let metadataBlocks = 0;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset + 8 <= end; blocks += 1) {
    const type = String.fromCharCode(...bytes.subarray(offset, offset + 4));
    const size = u32le(bytes, offset + 4);
    if (type === 'EXIF' || type === 'XMP ' || !WEBP_KNOWN_CHUNKS.has(type)) metadataBlocks += 1;
    offset += 8 + size + (size & 1); // RIFF chunks are padded to even sizes
  }
  const riffEnd = 8 + u32le(bytes, 4) + (u32le(bytes, 4) & 1);
  return { metadataBlocks, trailingBytes: Math.max(0, bytes.length - riffEnd) };
}

/** WebP container spec: chunks that describe the image itself. */
const WEBP_KNOWN_CHUNKS = new Set(['VP8 ', 'VP8L', 'VP8X', 'ALPH', 'ANIM', 'ANMF', 'ICCP']);

/** True when a WebP file stores lossless (VP8L) image data, so the rebuild stays lossless. */
export function isLosslessWebp(bytes: Uint8Array): boolean {
  const limit = Math.min(bytes.length, 8 + u32le(bytes, 4));
  let offset = 12;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset + 8 <= limit; blocks += 1) {
    const type = String.fromCharCode(...bytes.subarray(offset, offset + 4));
    const size = u32le(bytes, offset + 4);
    if (type === 'VP8L') return true;
    if (type === 'VP8 ') return false;
    // ANMF frames nest their image chunk after a 16-byte frame header.
    offset = type === 'ANMF' ? offset + 8 + 16 : offset + 8 + size + (size & 1);
  }
  return false;
}

/** TIFF 6.0 section 8: tag 259 Compression; 6 (old-style) and 7 are JPEG. */
const TIFF_TAG_COMPRESSION = 259;
/** Entries read from one IFD, and IFDs followed, at most. */
const MAX_IFD_ENTRIES = 4096;
const MAX_IFDS = 4096;

/**
 * TIFF tags that describe the document rather than the pixels (TIFF 6.0 section 8, EXIF 2.3,
 * XMP part 3, IPTC, Photoshop, PrintIM): the rebuild writes none of them.
 */
const TIFF_METADATA_TAGS = new Set([
  269, 270, 271, 272, 285, 305, 306, 315, 316, 700, 33432, 33723, 34377, 34665, 34853, 37724, 42016,
  50341,
]);

/** The tag numbers of each IFD of a classic (non-Big) TIFF, with tag 259's value. */
function readTiffIfds(bytes: Uint8Array): { tags: number[]; compression: number | undefined }[] {
  if (bytes.length < 8 || bytes[2] === 0x2b || bytes[3] === 0x2b) return [];
  const little = bytes[0] === 0x49;
  const read16 = (offset: number): number =>
    little ? u16le(bytes, offset) : ((bytes[offset] ?? 0) << 8) | (bytes[offset + 1] ?? 0);
  const read32 = (offset: number): number => (little ? u32le(bytes, offset) : u32be(bytes, offset));
  const ifds: { tags: number[]; compression: number | undefined }[] = [];
  const seen = new Set<number>();
  let ifd = read32(4);
  while (ifd !== 0 && ifd + 2 <= bytes.length && !seen.has(ifd) && ifds.length < MAX_IFDS) {
    seen.add(ifd);
    const count = Math.min(read16(ifd), MAX_IFD_ENTRIES);
    const tags: number[] = [];
    let compression: number | undefined;
    for (let i = 0; i < count; i += 1) {
      const entry = ifd + 2 + i * 12;
      if (entry + 12 > bytes.length) break;
      const tag = read16(entry);
      tags.push(tag);
      if (tag === TIFF_TAG_COMPRESSION) compression = read16(entry + 8);
    }
    ifds.push({ tags, compression });
    const nextAt = ifd + 2 + count * 12;
    ifd = nextAt + 4 <= bytes.length ? read32(nextAt) : 0;
  }
  return ifds;
}

function walkTiff(bytes: Uint8Array): ImageExtras {
  let metadataBlocks = 0;
  for (const ifd of readTiffIfds(bytes)) {
    metadataBlocks += ifd.tags.filter((tag) => TIFF_METADATA_TAGS.has(tag)).length;
  }
  return { metadataBlocks, trailingBytes: 0 };
}

/** True when the first image of a classic TIFF is JPEG-compressed, so the rebuild keeps it lossy. */
export function tiffUsesJpeg(bytes: Uint8Array): boolean {
  const compression = readTiffIfds(bytes)[0]?.compression;
  return compression === 6 || compression === 7;
}

/** What the decoder must hold of a JPEG: whether it keeps every coefficient until the end. */
export interface JpegScanLayout {
  /** T.81 G: a progressive frame (SOF2, SOF6, SOF10, SOF14). */
  readonly progressive: boolean;
  /** Scans (SOS markers) counted up to EOI; several scans also buffer all coefficients. */
  readonly scans: number;
}

const PROGRESSIVE_SOF_MARKERS: ReadonlySet<number> = new Set([0xc2, 0xc6, 0xca, 0xce]);

/**
 * Walks a JPEG's markers (not its entropy-coded data) to learn its scan layout, so the decode
 * cost is known before libjpeg allocates anything. Never throws.
 */
export function readJpegScanLayout(bytes: Uint8Array): JpegScanLayout {
  let offset = 2;
  let progressive = false;
  let scans = 0;
  for (let blocks = 0; blocks < MAX_BLOCKS && offset + 4 <= bytes.length; blocks += 1) {
    if (bytes[offset] !== 0xff) break;
    const marker = bytes[offset + 1] ?? 0;
    if (marker === 0xff) {
      offset += 1;
      continue;
    }
    if (marker === 0xd9) break;
    if (isStandaloneMarker(marker)) {
      offset += 2;
      continue;
    }
    const length = ((bytes[offset + 2] ?? 0) << 8) | (bytes[offset + 3] ?? 0);
    if (length < 2) break;
    if (PROGRESSIVE_SOF_MARKERS.has(marker)) progressive = true;
    offset += 2 + length;
    if (marker === 0xda) {
      scans += 1;
      offset = skipEntropyCodedData(bytes, offset);
    }
  }
  return { progressive, scans };
}
