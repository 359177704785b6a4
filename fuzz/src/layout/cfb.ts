/**
 * Compound files ([MS-CFB]) at two levels: the container (header, FAT, directory entries,
 * sectors) and the streams inside it, with the record layouts of the three Office kinds: BIFF8
 * records of a Workbook ([MS-XLS] 2.1.4), PowerPoint records ([MS-PPT] 2.3.1) and Word's FIB
 * ([MS-DOC] 2.5.1).
 */
import CFB from 'cfb';

import type { Describe } from './types.ts';
import { LayoutBuilder, u16le, u32le } from './types.ts';

const SIGNATURE = 'd0cf11e0a1b11ae1';
const HEADER_BYTES = 512;
const DIRECTORY_ENTRY_BYTES = 128;
/** Directory sectors walked by the layout (a chain may loop). */
const MAX_DIRECTORY_SECTORS = 64;
/** PowerPoint containers nest; the layout follows them this deep. */
const MAX_RECORD_DEPTH = 6;

/** True when the bytes start with the compound file signature. */
export function isCompoundFile(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.subarray(0, 8)).toString('hex') === SIGNATURE;
}

/**
 * The container: header counts and sector numbers, the DIFAT in the header, every directory
 * entry's links, start sector and size, and every sector as a part (dropping, duplicating or
 * reordering sectors breaks chains the way damaged files do).
 */
export const describeCompoundFile: Describe = (bytes) => {
  if (!isCompoundFile(bytes) || bytes.length < HEADER_BYTES) return undefined;
  const layout = new LayoutBuilder();
  layout.field(30, 2, 'le', 'value');
  layout.field(32, 2, 'le', 'value');
  layout.field(40, 4, 'le', 'count');
  layout.field(44, 4, 'le', 'count');
  layout.field(48, 4, 'le', 'offset');
  layout.field(56, 4, 'le', 'length');
  layout.field(60, 4, 'le', 'offset');
  layout.field(64, 4, 'le', 'count');
  layout.field(68, 4, 'le', 'offset');
  layout.field(72, 4, 'le', 'count');
  for (let at = 76; at < HEADER_BYTES && at < 76 + 8 * 4; at += 4)
    layout.field(at, 4, 'le', 'offset');
  const sectorBytes = 2 ** Math.min(16, u16le(bytes, 30) ?? 9);
  const sectorAt = (sector: number): number => (sector + 1) * sectorBytes;
  // Directory entries of the first directory sectors, following FAT links from the header.
  const fatSector = u32le(bytes, 76) ?? 0;
  let sector = u32le(bytes, 48) ?? 0xfffffffe;
  const seen = new Set<number>();
  for (
    let walked = 0;
    walked < MAX_DIRECTORY_SECTORS && sector < 0xfffffffa && !seen.has(sector);
    walked += 1
  ) {
    seen.add(sector);
    const start = sectorAt(sector);
    for (
      let entry = start;
      entry + DIRECTORY_ENTRY_BYTES <= Math.min(start + sectorBytes, bytes.length);
      entry += DIRECTORY_ENTRY_BYTES
    ) {
      layout.field(entry + 64, 2, 'le', 'length');
      layout.field(entry + 66, 1, 'le', 'value');
      layout.field(entry + 68, 4, 'le', 'offset');
      layout.field(entry + 72, 4, 'le', 'offset');
      layout.field(entry + 76, 4, 'le', 'offset');
      layout.field(entry + 116, 4, 'le', 'offset');
      layout.field(entry + 120, 4, 'le', 'length');
      layout.part(entry, entry + DIRECTORY_ENTRY_BYTES, 'directory');
    }
    sector = u32le(bytes, sectorAt(fatSector) + sector * 4) ?? 0xfffffffe;
  }
  // FAT entries of the first FAT sector.
  for (
    let at = sectorAt(fatSector);
    at < sectorAt(fatSector) + sectorBytes && at + 4 <= bytes.length;
    at += 4
  ) {
    layout.field(at, 4, 'le', 'offset');
  }
  for (let at = HEADER_BYTES; at < bytes.length && !layout.isFull(); at += sectorBytes) {
    layout.part(at, Math.min(at + sectorBytes, bytes.length), 'sector');
  }
  return layout.build();
};

/** One stream of a compound file. */
export interface CompoundStream {
  readonly path: string;
  readonly content: Uint8Array;
}

/** Directory entries the stream reader follows. */
const MAX_DIRECTORY_ENTRIES = 4_096;
const FREE_OR_END = 0xfffffffa;

/**
 * The streams of a compound file, read by a small bounded reader of [MS-CFB] 2.2-2.6 (the `cfb`
 * package builds arrays from counts it trusts, and a hostile count crashes V8 outright), or
 * `undefined` when the file does not read cleanly.
 */
export function readCompoundStreams(bytes: Uint8Array): CompoundStream[] | undefined {
  if (!isCompoundFile(bytes) || bytes.length < HEADER_BYTES) return undefined;
  const shift = u16le(bytes, 30) ?? 0;
  if (shift !== 9 && shift !== 12) return undefined;
  const sectorBytes = 2 ** shift;
  const sectors = Math.floor((bytes.length - HEADER_BYTES) / sectorBytes) + 1;
  const sectorAt = (sector: number): number => (sector + 1) * sectorBytes;
  // The FAT: the header's 109 DIFAT entries, then the DIFAT chain ([MS-CFB] 2.5).
  const fatSectors: number[] = [];
  for (let at = 76; at < HEADER_BYTES; at += 4) {
    const sector = u32le(bytes, at) ?? FREE_OR_END;
    if (sector < sectors) fatSectors.push(sector);
  }
  let difat = u32le(bytes, 68) ?? FREE_OR_END;
  for (let walked = 0; difat < sectors && walked < sectors; walked += 1) {
    const start = sectorAt(difat);
    for (let at = start; at < start + sectorBytes - 4; at += 4) {
      const sector = u32le(bytes, at) ?? FREE_OR_END;
      if (sector < sectors) fatSectors.push(sector);
    }
    difat = u32le(bytes, start + sectorBytes - 4) ?? FREE_OR_END;
  }
  const fat = (sector: number): number => {
    const index = Math.floor((sector * 4) / sectorBytes);
    const fatSector = fatSectors[index];
    return fatSector === undefined
      ? FREE_OR_END
      : (u32le(bytes, sectorAt(fatSector) + ((sector * 4) % sectorBytes)) ?? FREE_OR_END);
  };
  const chain = (first: number): number[] | undefined => {
    const out: number[] = [];
    const seen = new Set<number>();
    for (let sector = first; sector < FREE_OR_END; sector = fat(sector)) {
      if (sector >= sectors || seen.has(sector)) return undefined;
      seen.add(sector);
      out.push(sector);
    }
    return out;
  };
  const read = (first: number, size: number): Uint8Array | undefined => {
    const links = chain(first);
    if (!links || size > links.length * sectorBytes) return undefined;
    return Buffer.concat(
      links.map((sector) => bytes.subarray(sectorAt(sector), sectorAt(sector) + sectorBytes)),
    ).subarray(0, size);
  };
  const directoryChain = chain(u32le(bytes, 48) ?? FREE_OR_END);
  if (!directoryChain) return undefined;
  const directory = Buffer.concat(
    directoryChain.map((sector) =>
      bytes.subarray(sectorAt(sector), sectorAt(sector) + sectorBytes),
    ),
  );
  const entries = Math.min(
    MAX_DIRECTORY_ENTRIES,
    Math.floor(directory.length / DIRECTORY_ENTRY_BYTES),
  );
  const entry = (
    id: number,
  ):
    | {
        name: string;
        type: number;
        left: number;
        right: number;
        child: number;
        start: number;
        size: number;
      }
    | undefined => {
    if (id >= entries) return undefined;
    const at = id * DIRECTORY_ENTRY_BYTES;
    const nameBytes = Math.min(64, directory.readUInt16LE(at + 64));
    return {
      name: directory.subarray(at, at + Math.max(0, nameBytes - 2)).toString('utf16le'),
      type: directory[at + 66] ?? 0,
      left: directory.readUInt32LE(at + 68),
      right: directory.readUInt32LE(at + 72),
      child: directory.readUInt32LE(at + 76),
      start: directory.readUInt32LE(at + 116),
      size: directory.readUInt32LE(at + 120),
    };
  };
  const root = entry(0);
  if (root?.type !== 5) return undefined;
  const cutoff = u32le(bytes, 56) ?? 4096;
  const miniStream = read(root.start, Math.min(root.size, bytes.length));
  const miniFatChain = chain(u32le(bytes, 60) ?? FREE_OR_END) ?? [];
  const miniFat = (sector: number): number => {
    const index = Math.floor((sector * 4) / sectorBytes);
    const fatSector = miniFatChain[index];
    return fatSector === undefined
      ? FREE_OR_END
      : (u32le(bytes, sectorAt(fatSector) + ((sector * 4) % sectorBytes)) ?? FREE_OR_END);
  };
  const readMini = (first: number, size: number): Uint8Array | undefined => {
    if (!miniStream) return undefined;
    const parts: Uint8Array[] = [];
    const seen = new Set<number>();
    for (
      let sector = first;
      sector < FREE_OR_END && parts.length * 64 < size;
      sector = miniFat(sector)
    ) {
      if (seen.has(sector) || (sector + 1) * 64 > miniStream.length) return undefined;
      seen.add(sector);
      parts.push(miniStream.subarray(sector * 64, sector * 64 + 64));
    }
    const content = Buffer.concat(parts);
    return content.length >= size ? content.subarray(0, size) : undefined;
  };
  const streams: CompoundStream[] = [];
  const visited = new Set<number>();
  const walk = (id: number, prefix: string, depth: number): boolean => {
    if (id >= FREE_OR_END) return true;
    const node = entry(id);
    if (!node || visited.has(id) || depth > MAX_DIRECTORY_ENTRIES) return false;
    visited.add(id);
    if (!walk(node.left, prefix, depth + 1) || !walk(node.right, prefix, depth + 1)) return false;
    if (node.type === 1 && !walk(node.child, `${prefix}${node.name}/`, depth + 1)) return false;
    // The `cfb` package's placeholder stream, left in by writers that use it: not content.
    if (node.type === 2 && node.name !== '\u0001Sh33tJ5') {
      if (node.size > bytes.length) return false;
      const content =
        node.size < cutoff ? readMini(node.start, node.size) : read(node.start, node.size);
      if (!content) return false;
      streams.push({ path: `${prefix}${node.name}`, content: new Uint8Array(content) });
    }
    return true;
  };
  return walk(root.child, '', 0) ? streams : undefined;
}

/** A compound file holding `streams`, written by the `cfb` package. */
export function writeCompoundStreams(streams: readonly CompoundStream[]): Uint8Array | undefined {
  try {
    const container = CFB.utils.cfb_new();
    for (const stream of streams)
      CFB.utils.cfb_add(container, `/${stream.path}`, Buffer.from(stream.content));
    CFB.utils.cfb_del(container, '/\u0001Sh33tJ5');
    const written: unknown = CFB.write(container, { type: 'buffer', fileType: 'cfb' });
    return written instanceof Uint8Array ? new Uint8Array(written) : undefined;
  } catch {
    return undefined;
  }
}

/** BIFF8 records: `type` (2 bytes), `size` (2 bytes), data; sizes and common counts. */
export const describeBiffStream: Describe = (bytes) => {
  const layout = new LayoutBuilder();
  for (let offset = 0; offset + 4 <= bytes.length && !layout.isFull();) {
    const size = u16le(bytes, offset + 2) ?? 0;
    layout.field(offset, 2, 'le', 'value');
    layout.field(offset + 2, 2, 'le', 'length');
    // The first fields of most records are indexes, rows, columns or counts.
    if (size >= 4) layout.field(offset + 4, 2, 'le', 'count');
    if (size >= 6) layout.field(offset + 6, 2, 'le', 'count');
    if (size >= 8) layout.field(offset + 4, 4, 'le', 'offset');
    layout.part(offset, Math.min(offset + 4 + size, bytes.length), 'record');
    offset += 4 + size;
  }
  return layout.build();
};

/** PowerPoint records: 8-byte headers, containers (version 0xF) followed to their children. */
export const describePptStream: Describe = (bytes) => {
  const layout = new LayoutBuilder();
  walkPptRecords(bytes, 0, bytes.length, layout, 0);
  return layout.build();
};

function walkPptRecords(
  bytes: Uint8Array,
  from: number,
  to: number,
  layout: LayoutBuilder,
  depth: number,
): void {
  for (let offset = from; offset + 8 <= to && !layout.isFull();) {
    const versionInstance = u16le(bytes, offset) ?? 0;
    const length = u32le(bytes, offset + 4) ?? 0;
    const end = offset + 8 + length;
    layout.field(offset, 2, 'le', 'value');
    layout.field(offset + 2, 2, 'le', 'value');
    layout.field(offset + 4, 4, 'le', 'length');
    if (length >= 4) layout.field(offset + 8, 4, 'le', 'offset');
    layout.part(offset, Math.min(end, to), `level${depth}@${from}`);
    if ((versionInstance & 0xf) === 0xf && depth < MAX_RECORD_DEPTH) {
      walkPptRecords(bytes, offset + 8, Math.min(end, to), layout, depth + 1);
    }
    if (end > to) break;
    offset = end;
  }
}

/** Word's FIB: its counts (`csw`, `cslw`, `cbRgFcLcb`) and every `fc`/`lcb` pair. */
export const describeWordStream: Describe = (bytes) => {
  const layout = new LayoutBuilder();
  if (bytes.length < 34) return undefined;
  layout.field(10, 2, 'le', 'value');
  layout.field(24, 4, 'le', 'offset');
  layout.field(28, 4, 'le', 'offset');
  layout.field(32, 2, 'le', 'count');
  const csw = u16le(bytes, 32) ?? 0;
  const cslwAt = 34 + csw * 2;
  layout.field(cslwAt, 2, 'le', 'count');
  const cslw = u16le(bytes, cslwAt) ?? 0;
  for (let at = cslwAt + 2; at < cslwAt + 2 + cslw * 4; at += 4)
    layout.field(at, 4, 'le', 'length');
  const cbAt = cslwAt + 2 + cslw * 4;
  layout.field(cbAt, 2, 'le', 'count');
  const pairs = u16le(bytes, cbAt) ?? 0;
  for (let pair = 0; pair < pairs && !layout.isFull(); pair += 1) {
    layout.field(cbAt + 2 + pair * 8, 4, 'le', 'offset');
    layout.field(cbAt + 6 + pair * 8, 4, 'le', 'length');
  }
  layout.part(0, Math.min(cbAt + 2 + pairs * 8, bytes.length), 'fib');
  if (bytes.length > cbAt + 2 + pairs * 8) layout.part(cbAt + 2 + pairs * 8, bytes.length, 'text');
  return layout.build();
};

/** The record layout of a stream by its name, or `undefined` for a stream read as bytes. */
export function describeStream(path: string): Describe | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name === 'Workbook' || name === 'Book') return describeBiffStream;
  if (name === 'PowerPoint Document' || name === 'Pictures' || name === 'Current User')
    return describePptStream;
  if (name === 'WordDocument') return describeWordStream;
  if (name === '0Table' || name === '1Table' || name === 'Data') return describeBiffLikeTable;
  return undefined;
}

/** Word's table stream has no record framing; its plcs are runs of 4-byte positions. */
const describeBiffLikeTable: Describe = (bytes) => {
  const layout = new LayoutBuilder();
  for (let at = 0; at + 4 <= bytes.length && !layout.isFull(); at += 4)
    layout.field(at, 4, 'le', 'offset');
  for (let at = 0; at < bytes.length && !layout.isFull(); at += 64)
    layout.part(at, Math.min(at + 64, bytes.length), 'run');
  return layout.build();
};
