import { CLSID_BYTES, compareEntryNames } from './tree.ts';
import type { CompoundNode, CompoundStorage } from './tree.ts';

const SECTOR_BYTES = 512;
const SECTOR_SHIFT = 9;
const MINI_SECTOR_BYTES = 64;
const MINI_STREAM_CUTOFF_BYTES = 4096;
const HEADER_DIFAT_ENTRIES = 109;
const ENTRIES_PER_SECTOR = SECTOR_BYTES / 4;
const DIRECTORY_ENTRY_BYTES = 128;
const DIRECTORY_ENTRIES_PER_SECTOR = SECTOR_BYTES / DIRECTORY_ENTRY_BYTES;
/** [MS-CFB] 2.1 special sector numbers. */
const DIFAT_SECTOR = 0xfffffffc;
const FAT_SECTOR = 0xfffffffd;
const END_OF_CHAIN = 0xfffffffe;
const FREE_SECTOR = 0xffffffff;
const NO_STREAM = 0xffffffff;
const MAX_NAME_UNITS = 31;
const OBJECT_STORAGE = 1;
const OBJECT_STREAM = 2;
const OBJECT_ROOT = 5;
const COLOR_RED = 0;
const COLOR_BLACK = 1;

/** One directory entry as it will be written, with its place in the file. */
interface PlannedEntry {
  readonly node: CompoundNode;
  readonly type: number;
  left: number;
  right: number;
  child: number;
  color: number;
  start: number;
  size: number;
}

/**
 * Writes a compound file ([MS-CFB] version 3, 512-byte sectors) holding exactly the storages and
 * streams of `root`, in a layout of its own: stream data, the mini stream, the mini FAT, the
 * directory, the FAT, then DIFAT sectors, each stream's last sector padded with zeros, nothing
 * after the last sector. Siblings form balanced red-black trees in [MS-CFB] 2.6.4 order;
 * timestamps are zero, and CLSIDs and state bits are what `root` holds. The same tree always
 * gives the same bytes.
 * @throws {TypeError} for a tree no compound file can hold (a name empty, over 31 code units or
 *   holding `/ \ : !` or NUL; two siblings with one name): a caller's fault, not the input's.
 */
export function writeCompoundFile(root: CompoundStorage): Uint8Array {
  const entries: PlannedEntry[] = [];
  planStorage(root, OBJECT_ROOT, entries);

  // Streams under the cutoff live in the mini stream ([MS-CFB] 2.6.3), the rest in sectors.
  let miniSectors = 0;
  let sectors = 0;
  const miniStreams: PlannedEntry[] = [];
  const bigStreams: PlannedEntry[] = [];
  for (const entry of entries) {
    if (entry.node.kind !== 'stream') continue;
    const size = entry.node.content.length;
    entry.size = size;
    if (size === 0) continue;
    if (size < MINI_STREAM_CUTOFF_BYTES) {
      entry.start = miniSectors;
      miniSectors += Math.ceil(size / MINI_SECTOR_BYTES);
      miniStreams.push(entry);
    } else {
      entry.start = sectors;
      sectors += Math.ceil(size / SECTOR_BYTES);
      bigStreams.push(entry);
    }
  }
  const rootEntry = entries[0];
  if (rootEntry === undefined) throw new TypeError('a compound file needs a root storage');
  const miniStreamBytes = miniSectors * MINI_SECTOR_BYTES;
  const miniStreamStart = sectors;
  const miniStreamSectors = Math.ceil(miniStreamBytes / SECTOR_BYTES);
  if (miniStreamSectors > 0) {
    rootEntry.start = miniStreamStart;
    rootEntry.size = miniStreamBytes;
  }
  sectors += miniStreamSectors;
  const miniFatStart = sectors;
  const miniFatSectors = Math.ceil(miniSectors / ENTRIES_PER_SECTOR);
  sectors += miniFatSectors;
  const directoryStart = sectors;
  const directorySectors = Math.ceil(entries.length / DIRECTORY_ENTRIES_PER_SECTOR);
  sectors += directorySectors;

  // The FAT covers itself and the DIFAT sectors that list it: grow both until they fit.
  let fatSectors = 0;
  let difatSectors = 0;
  for (;;) {
    const total = sectors + fatSectors + difatSectors;
    const neededFat = Math.ceil(total / ENTRIES_PER_SECTOR);
    const neededDifat = Math.max(
      0,
      Math.ceil((neededFat - HEADER_DIFAT_ENTRIES) / (ENTRIES_PER_SECTOR - 1)),
    );
    if (neededFat === fatSectors && neededDifat === difatSectors) break;
    fatSectors = neededFat;
    difatSectors = neededDifat;
  }
  const fatStart = sectors;
  const difatStart = fatStart + fatSectors;
  const totalSectors = difatStart + difatSectors;

  const out = new Uint8Array((totalSectors + 1) * SECTOR_BYTES);
  const view = new DataView(out.buffer);
  const sectorOffset = (sector: number): number => (sector + 1) * SECTOR_BYTES;

  // FAT: chains for each big stream, the mini stream, the mini FAT and the directory.
  const fat = new Uint32Array(fatSectors * ENTRIES_PER_SECTOR).fill(FREE_SECTOR);
  const chain = (start: number, count: number): void => {
    for (let i = 0; i < count; i += 1) {
      fat[start + i] = i === count - 1 ? END_OF_CHAIN : start + i + 1;
    }
  };
  for (const entry of bigStreams) chain(entry.start, Math.ceil(entry.size / SECTOR_BYTES));
  chain(miniStreamStart, miniStreamSectors);
  chain(miniFatStart, miniFatSectors);
  chain(directoryStart, directorySectors);
  fat.fill(FAT_SECTOR, fatStart, fatStart + fatSectors);
  fat.fill(DIFAT_SECTOR, difatStart, difatStart + difatSectors);

  const miniFat = new Uint32Array(miniFatSectors * ENTRIES_PER_SECTOR).fill(FREE_SECTOR);
  for (const entry of miniStreams) {
    const count = Math.ceil(entry.size / MINI_SECTOR_BYTES);
    for (let i = 0; i < count; i += 1) {
      miniFat[entry.start + i] = i === count - 1 ? END_OF_CHAIN : entry.start + i + 1;
    }
  }

  for (const entry of bigStreams) {
    if (entry.node.kind === 'stream') out.set(entry.node.content, sectorOffset(entry.start));
  }
  const miniBase = sectorOffset(miniStreamStart);
  for (const entry of miniStreams) {
    if (entry.node.kind === 'stream') {
      out.set(entry.node.content, miniBase + entry.start * MINI_SECTOR_BYTES);
    }
  }
  miniFat.forEach((value, i) => {
    view.setUint32(sectorOffset(miniFatStart) + i * 4, value, true);
  });
  entries.forEach((entry, i) => {
    writeEntry(view, sectorOffset(directoryStart) + i * 128, entry);
  });
  for (let i = entries.length; i < directorySectors * DIRECTORY_ENTRIES_PER_SECTOR; i += 1) {
    writeEmptyEntry(view, sectorOffset(directoryStart) + i * DIRECTORY_ENTRY_BYTES);
  }
  fat.forEach((value, i) => {
    view.setUint32(sectorOffset(fatStart) + i * 4, value, true);
  });

  // DIFAT: the first 109 FAT sector numbers in the header, the rest in a chain of sectors.
  const fatNumber = (i: number): number => (i < fatSectors ? fatStart + i : FREE_SECTOR);
  for (let i = 0; i < HEADER_DIFAT_ENTRIES; i += 1) view.setUint32(76 + i * 4, fatNumber(i), true);
  for (let d = 0; d < difatSectors; d += 1) {
    const base = sectorOffset(difatStart + d);
    for (let i = 0; i < ENTRIES_PER_SECTOR - 1; i += 1) {
      const index = HEADER_DIFAT_ENTRIES + d * (ENTRIES_PER_SECTOR - 1) + i;
      view.setUint32(base + i * 4, fatNumber(index), true);
    }
    const next = d === difatSectors - 1 ? END_OF_CHAIN : difatStart + d + 1;
    view.setUint32(base + (ENTRIES_PER_SECTOR - 1) * 4, next, true);
  }

  // [MS-CFB] 2.2 header.
  out.set([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], 0);
  view.setUint16(24, 0x003e, true);
  view.setUint16(26, 3, true);
  view.setUint16(28, 0xfffe, true);
  view.setUint16(30, SECTOR_SHIFT, true);
  view.setUint16(32, 6, true);
  view.setUint32(44, fatSectors, true);
  view.setUint32(48, directoryStart, true);
  view.setUint32(56, MINI_STREAM_CUTOFF_BYTES, true);
  view.setUint32(60, miniFatSectors > 0 ? miniFatStart : END_OF_CHAIN, true);
  view.setUint32(64, miniFatSectors, true);
  view.setUint32(68, difatSectors > 0 ? difatStart : END_OF_CHAIN, true);
  view.setUint32(72, difatSectors, true);
  return out;
}

/** Lists `storage` and everything under it, giving each storage's children a balanced tree. */
function planStorage(storage: CompoundStorage, type: number, entries: PlannedEntry[]): void {
  const own = plan(storage, type, entries);
  const children = [...storage.children].sort((a, b) => compareEntryNames(a.name, b.name));
  for (let i = 1; i < children.length; i += 1) {
    if (compareEntryNames(children[i - 1]?.name ?? '', children[i]?.name ?? '') === 0) {
      throw new TypeError(
        `storage "${storage.name}" has two children named "${children[i]?.name ?? ''}"`,
      );
    }
  }
  const indices = children.map((child) => {
    const index = entries.length;
    if (child.kind === 'stream') plan(child, OBJECT_STREAM, entries);
    else planStorage(child, OBJECT_STORAGE, entries);
    return index;
  });
  own.child = balancedTree(indices, entries, 0, indices.length - 1, 0, treeDepth(indices.length));
}

function plan(node: CompoundNode, type: number, entries: PlannedEntry[]): PlannedEntry {
  checkName(node.name);
  const entry: PlannedEntry = {
    node,
    type,
    left: NO_STREAM,
    right: NO_STREAM,
    child: NO_STREAM,
    color: COLOR_BLACK,
    start: END_OF_CHAIN,
    size: 0,
  };
  entries.push(entry);
  return entry;
}

/** The depth of the deepest level of a tree of `count` nodes split at the middle. */
function treeDepth(count: number): number {
  return count <= 1 ? 0 : Math.floor(Math.log2(count));
}

/**
 * Builds a tree of sorted `indices[low..high]` split at the middle and returns its root. Leaf
 * depths then differ by one at most: nodes on the deepest level are red, all others black, so
 * every path holds as many black nodes and no red node has a red child ([MS-CFB] 2.6.4).
 */
function balancedTree(
  indices: readonly number[],
  entries: readonly PlannedEntry[],
  low: number,
  high: number,
  depth: number,
  deepest: number,
): number {
  if (low > high) return NO_STREAM;
  const middle = Math.floor((low + high) / 2);
  const index = indices[middle] ?? NO_STREAM;
  const entry = entries[index];
  if (entry === undefined) return NO_STREAM;
  entry.left = balancedTree(indices, entries, low, middle - 1, depth + 1, deepest);
  entry.right = balancedTree(indices, entries, middle + 1, high, depth + 1, deepest);
  entry.color = depth === deepest && depth > 0 ? COLOR_RED : COLOR_BLACK;
  return index;
}

function checkName(name: string): void {
  if (name.length === 0 || name.length > MAX_NAME_UNITS || /[/\\:!\0]/.test(name)) {
    throw new TypeError(`"${name}" cannot name a compound file entry ([MS-CFB] 2.6.1)`);
  }
}

function writeEntry(view: DataView, offset: number, entry: PlannedEntry): void {
  const { node } = entry;
  for (let i = 0; i < node.name.length; i += 1) {
    view.setUint16(offset + i * 2, node.name.charCodeAt(i), true);
  }
  view.setUint16(offset + 64, (node.name.length + 1) * 2, true);
  view.setUint8(offset + 66, entry.type);
  view.setUint8(offset + 67, entry.color);
  view.setUint32(offset + 68, entry.left, true);
  view.setUint32(offset + 72, entry.right, true);
  view.setUint32(offset + 76, entry.child, true);
  if (node.kind === 'storage') {
    new Uint8Array(view.buffer).set(node.clsid.subarray(0, CLSID_BYTES), offset + 80);
    view.setUint32(offset + 96, node.stateBits, true);
  }
  // Creation and modification times (offsets 100 and 108) stay zero, as [MS-CFB] 2.6.3 allows.
  // [MS-CFB] 2.6.3: a storage's start and size are zero; an empty stream or mini stream has none.
  const start = entry.type === OBJECT_STORAGE ? 0 : entry.size === 0 ? END_OF_CHAIN : entry.start;
  view.setUint32(offset + 116, start, true);
  view.setUint32(offset + 120, entry.size, true);
}

/** [MS-CFB] 2.6.3: an unused entry has no name, no siblings and no child. */
function writeEmptyEntry(view: DataView, offset: number): void {
  view.setUint32(offset + 68, NO_STREAM, true);
  view.setUint32(offset + 72, NO_STREAM, true);
  view.setUint32(offset + 76, NO_STREAM, true);
}
