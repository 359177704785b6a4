/**
 * Device-independent bitmaps inside metafile records ([MS-WMF] 2.2.2.9 DeviceIndependentBitmap,
 * [MS-EMF] 2.2.2 "bitmap header and bits"): a header, a colour table and the bits, each located
 * by the record. A bitmap is kept only when the engine's own BMP decoder reads it whole; what is
 * kept is a fresh copy of exactly the header, masks, colour table and bits the decoder read.
 */
import { decodeBmp } from '../bmp/decode.ts';
import { metafileFault, type MetafileFindings, type MetafileLimits } from './types.ts';

const FILE_HEADER_BYTES = 14;
const CORE_HEADER_BYTES = 12;
const INFO_HEADER_BYTES = 40;
const HEADER_SIZES: ReadonlySet<number> = new Set([CORE_HEADER_BYTES, 40, 52, 56, 108, 124]);
const BI_RGB = 0;
const BI_RLE8 = 1;
const BI_RLE4 = 2;
const BI_BITFIELDS = 3;
const BI_ALPHABITFIELDS = 6;
/** BITMAPV4HEADER bV4CSType (wingdi.h LCS_* and PROFILE_* values, big-endian four-character codes). */
const CS_TYPE_OFFSET = 56;
const LCS_SRGB = 0x73524742; // 'sRGB'
const PROFILE_LINKED = 0x4c494e4b; // 'LINK'
const PROFILE_EMBEDDED = 0x4d424544; // 'MBED'
/** BITMAPV5HEADER bV5ProfileData and bV5ProfileSize. */
const PROFILE_DATA_OFFSET = 112;

/**
 * How a bitmap's colour table is to be read ([MS-EMF] 2.1.9 DIBColors, [MS-WMF] 2.1.1.3
 * ColorUsage): colours, 16-bit indices into the current palette, or no table at all.
 */
export const DIB_RGB_COLORS = 0;
export const DIB_PAL_COLORS = 1;
export const DIB_PAL_INDICES = 2;

/** Where a bitmap's parts lie, read from its header. */
interface DibLayout {
  readonly core: boolean;
  readonly bitCount: number;
  readonly compression: number;
  /** Where the colour table starts (after the header and any bit masks). */
  readonly tableAt: number;
  readonly entries: number;
  /** The header, masks and colour table together. */
  readonly infoBytes: number;
}

/**
 * Reads a bitmap's header: its size, bit count, compression and colour table.
 *
 * @throws {Rejection} `invalid_file` when the header is not one of the known sizes or its table
 *   runs past `info`.
 */
export function dibLayout(info: Uint8Array, usage: number): DibLayout {
  if (usage !== DIB_RGB_COLORS && usage !== DIB_PAL_COLORS && usage !== DIB_PAL_INDICES) {
    metafileFault(`a bitmap of colour usage ${usage}`);
  }
  if (info.length < CORE_HEADER_BYTES) metafileFault(`a bitmap header of ${info.length} bytes`);
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  const headerBytes = view.getUint32(0, true);
  if (!HEADER_SIZES.has(headerBytes) || headerBytes > info.length) {
    metafileFault(`a bitmap header of unknown size ${headerBytes}`);
  }
  const core = headerBytes === CORE_HEADER_BYTES;
  const bitCount = view.getUint16(core ? 10 : 14, true);
  const compression = core ? BI_RGB : view.getUint32(16, true);

  // Bit masks follow a 40-byte header (they are inside the larger ones).
  let tableAt = headerBytes;
  if (headerBytes === INFO_HEADER_BYTES && compression === BI_BITFIELDS) tableAt += 12;
  if (headerBytes === INFO_HEADER_BYTES && compression === BI_ALPHABITFIELDS) tableAt += 16;
  const used = core ? 0 : view.getUint32(32, true);
  const entries = bitCount <= 8 ? (used === 0 ? 2 ** bitCount : used) : used;
  const entryBytes = usage === DIB_PAL_INDICES ? 0 : usage === DIB_PAL_COLORS ? 2 : core ? 3 : 4;
  const infoBytes = tableAt + entries * entryBytes;
  // A table beside direct colours only optimises a palette device's output: 256 at most.
  if (entries > 2 ** Math.min(bitCount, 8)) {
    metafileFault(`a colour table of ${entries} entries for ${bitCount}-bit pixels`);
  }
  if (infoBytes > info.length) metafileFault('a bitmap colour table past its header block');

  return { core, bitCount, compression, tableAt, entries, infoBytes };
}

/** A bitmap as kept: its header and colour table, and its bits. */
export interface KeptDib {
  readonly info: Uint8Array;
  readonly bits: Uint8Array;
}

/**
 * Checks one bitmap and returns the part of it a renderer reads.
 *
 * @param monochrome the record needs a 1-bit bitmap (a mask, a monochrome brush).
 * @throws {Rejection} `invalid_file` when the decoder refuses it or it is not what the record needs.
 */
export function keptDib(
  info: Uint8Array,
  bits: Uint8Array,
  usage: number,
  limits: MetafileLimits,
  findings: MetafileFindings,
  monochrome = false,
): KeptDib {
  const { core, bitCount, compression, tableAt, entries, infoBytes } = dibLayout(info, usage);
  const view = new DataView(info.buffer, info.byteOffset, info.byteLength);
  if (monochrome && bitCount !== 1) metafileFault(`a ${bitCount}-bit bitmap where a mask belongs`);
  const header = new Uint8Array(info.subarray(0, infoBytes));
  if (tableAt >= 108) neutraliseColourSpace(header, findings);

  let bitsBytes = bits.length;
  if (compression !== BI_RLE8 && compression !== BI_RLE4) {
    const width = core ? view.getUint16(4, true) : view.getInt32(4, true);
    const height = core ? view.getUint16(6, true) : view.getInt32(8, true);
    const stride = Math.ceil((width * bitCount) / 32) * 4;
    bitsBytes = stride * Math.abs(height);
    if (!(bitsBytes > 0) || bitsBytes > bits.length) {
      metafileFault(`bitmap bits of ${bits.length} bytes for ${bitsBytes} needed`);
    }
  }
  const kept = { info: header, bits: new Uint8Array(bits.subarray(0, bitsBytes)) };
  // The decoder reads colours; a table of palette indices (or none) is read as a grey ramp.
  const decodable =
    usage === DIB_RGB_COLORS
      ? kept
      : { info: withGreyTable(header, tableAt, entries, core), bits: kept.bits };
  decodeBmp(dibAsBmpFile(decodable), {
    maxPixels: limits.maxPixels,
    maxDecodeBytes: limits.maxDecodeBytes,
  });
  return kept;
}

/**
 * A colour space given by a linked profile names a file the renderer opens (a path, or a UNC
 * share that hands the user's credentials to its host); an embedded one lies outside the header.
 * Both become sRGB, and the profile fields are cleared.
 */
function neutraliseColourSpace(header: Uint8Array, findings: MetafileFindings): void {
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  const type = view.getUint32(CS_TYPE_OFFSET, true);
  if (type !== PROFILE_LINKED && type !== PROFILE_EMBEDDED) return;
  findings.add(type === PROFILE_LINKED ? 'external-relationship' : 'colour-profile');
  view.setUint32(CS_TYPE_OFFSET, LCS_SRGB, true);
  if (header.length >= PROFILE_DATA_OFFSET + 8) {
    view.setUint32(PROFILE_DATA_OFFSET, 0, true);
    view.setUint32(PROFILE_DATA_OFFSET + 4, 0, true);
  }
}

/** The header with a colour table of `entries` greys in place of palette indices. */
function withGreyTable(
  header: Uint8Array,
  tableAt: number,
  entries: number,
  core: boolean,
): Uint8Array {
  const entryBytes = core ? 3 : 4;
  const out = new Uint8Array(tableAt + entries * entryBytes);
  out.set(header.subarray(0, tableAt));
  for (let i = 0; i < entries; i++) {
    const grey = entries > 1 ? Math.round((i * 255) / (entries - 1)) : 0;
    out.fill(grey, tableAt + i * entryBytes, tableAt + i * entryBytes + 3);
  }
  return out;
}

/** A bitmap as a BMP file (its 14-byte file header added), for the decoder. */
export function dibAsBmpFile({ info, bits }: KeptDib): Uint8Array {
  const file = new Uint8Array(FILE_HEADER_BYTES + info.length + bits.length);
  const view = new DataView(file.buffer);
  file[0] = 0x42;
  file[1] = 0x4d;
  view.setUint32(2, file.length, true);
  view.setUint32(10, FILE_HEADER_BYTES + info.length, true);
  file.set(info, FILE_HEADER_BYTES);
  file.set(bits, FILE_HEADER_BYTES + info.length);
  return file;
}
