import { u16le, u32le } from '../bytes.ts';
import { Rejection } from '../rejection.ts';
import { CLSID_BYTES, compareEntryNames } from './tree.ts';
import type { CompoundNode, CompoundStorage } from './tree.ts';

/** [MS-CFB] 2.2: the header signature. */
const SIGNATURE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1] as const;
/** [MS-CFB] 2.2: the header's fixed part; version 4 files pad it to one 4096-byte sector. */
const HEADER_BYTES = 512;
const HEADER_DIFAT_ENTRIES = 109;
const BYTE_ORDER_MARK = 0xfffe;
const MINI_SECTOR_SHIFT = 6;
const MINI_SECTOR_BYTES = 1 << MINI_SECTOR_SHIFT;
const MINI_STREAM_CUTOFF_BYTES = 4096;
/** [MS-CFB] 2.1 special sector numbers. */
const MAX_REGULAR_SECTOR = 0xfffffffa;
const END_OF_CHAIN = 0xfffffffe;
const FREE_SECTOR = 0xffffffff;
/** [MS-CFB] 2.6.1: stream ids; NOSTREAM marks an absent sibling or child. */
const NO_STREAM = 0xffffffff;
const DIRECTORY_ENTRY_BYTES = 128;
const NAME_FIELD_BYTES = 64;
const OBJECT_STORAGE = 1;
const OBJECT_STREAM = 2;
const OBJECT_ROOT = 5;

/**
 * Directory entries read from one file. Office files hold a few dozen; a Word document with
 * thousands of embedded objects a few thousand. 65,536 entries are 8 MiB of directory.
 */
export const MAX_CFB_ENTRIES = 65_536;
/** Storages nested inside one another below the root; Office nests three or four deep. */
export const MAX_CFB_STORAGE_DEPTH = 32;

/** What {@link parseCompoundFile} reads, and the bounds it holds the file to. */
export interface ParseCompoundOptions {
  /** Names the file in rejection details, e.g. "the Word document". */
  readonly what: string;
  /** Ceiling on the streams' bytes together; past it the file is `file_too_large`. */
  readonly maxBytes: number;
}

/** A compound file as read: its version and its tree. */
export interface CompoundFileTree {
  /** [MS-CFB] 2.2 major version: 3 (512-byte sectors) or 4 (4096-byte sectors). */
  readonly version: 3 | 4;
  readonly root: CompoundStorage;
}

/**
 * Reads a compound file ([MS-CFB]) held in memory into a tree of storages and streams, holding
 * every structure to the specification: header fields, FAT, DIFAT and mini-FAT chains (no
 * cycles, no sector out of range or shared by two streams, DIFAT length as the header counts
 * it), the directory's trees (indices in range, no entry reached twice, names as their length
 * fields say, no duplicate sibling names), and every stream's size against its chain. Free
 * sectors, slack after a stream's end, unreachable directory entries and bytes past the last
 * sector are never read into the tree.
 * @throws {Rejection} `invalid_file` naming the first structure that does not hold together;
 *   `file_too_large` when the streams exceed `maxBytes`; `policy_violation` past
 *   {@link MAX_CFB_ENTRIES} or {@link MAX_CFB_STORAGE_DEPTH}.
 */
export function parseCompoundFile(
  bytes: Uint8Array,
  options: ParseCompoundOptions,
): CompoundFileTree {
  return new CompoundReader(bytes, options).read();
}

interface DirectoryEntry {
  readonly index: number;
  readonly name: string;
  readonly type: number;
  readonly left: number;
  readonly right: number;
  readonly child: number;
  readonly clsid: Uint8Array;
  readonly stateBits: number;
  readonly start: number;
  readonly size: number;
}

class CompoundReader {
  readonly #bytes: Uint8Array;
  readonly #what: string;
  readonly #maxBytes: number;
  #version: 3 | 4 = 3;
  #sectorBytes = 512;
  #sectorCount = 0;
  #fat: Uint32Array = new Uint32Array(0);
  #miniFat: Uint32Array = new Uint32Array(0);
  #miniStream: Uint8Array = new Uint8Array(0);
  /** Sectors already claimed by a chain, so no two chains share one. */
  #claimed: Uint8Array = new Uint8Array(0);
  #miniClaimed: Uint8Array = new Uint8Array(0);
  #streamBytes = 0;

  constructor(bytes: Uint8Array, options: ParseCompoundOptions) {
    // A plain view, never a Buffer: a stream is handed out as a view of these bytes when its
    // sectors are consecutive, and a Buffer's slice() is a view too, so a caller that copies a
    // stream with slice() before patching it would write into the submitted file.
    this.#bytes = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#what = options.what;
    this.#maxBytes = options.maxBytes;
  }

  read(): CompoundFileTree {
    const header = this.#readHeader();
    this.#fat = this.#readFat(header);
    const directory = this.#readDirectory(header.firstDirectorySector);
    const rootEntry = directory[0];
    if (rootEntry?.type !== OBJECT_ROOT) this.#invalid('its first directory entry is not the root');
    // [MS-CFB] 2.6.2: the root entry's stream is the mini stream, held in regular sectors.
    this.#miniStream = this.#readChain(rootEntry.start, rootEntry.size, 'the mini stream');
    this.#miniClaimed = new Uint8Array(Math.ceil(this.#miniStream.length / MINI_SECTOR_BYTES));
    this.#miniFat = this.#readMiniFat(header);
    const root: CompoundStorage = {
      kind: 'storage',
      name: rootEntry.name,
      clsid: rootEntry.clsid,
      stateBits: rootEntry.stateBits,
      children: this.#readChildren(directory, rootEntry, new Uint8Array(directory.length), 0),
    };
    return { version: this.#version, root };
  }

  #readHeader(): {
    firstDirectorySector: number;
    fatSectors: number;
    firstMiniFatSector: number;
    miniFatSectors: number;
    firstDifatSector: number;
    difatSectors: number;
  } {
    const bytes = this.#bytes;
    if (bytes.length < HEADER_BYTES) this.#invalid('it is shorter than its header');
    if (!SIGNATURE.every((value, i) => bytes[i] === value)) {
      this.#invalid('its header signature is wrong');
    }
    const major = u16le(bytes, 26);
    if (major !== 3 && major !== 4) this.#invalid(`its major version ${major} is neither 3 nor 4`);
    this.#version = major;
    if (u16le(bytes, 28) !== BYTE_ORDER_MARK) this.#invalid('its byte order mark is not 0xFFFE');
    const sectorShift = u16le(bytes, 30);
    if (sectorShift !== (major === 3 ? 9 : 12)) {
      this.#invalid(`its sector shift ${sectorShift} does not fit version ${major}`);
    }
    if (u16le(bytes, 32) !== MINI_SECTOR_SHIFT) this.#invalid('its mini sector size is not 64');
    if (u32le(bytes, 56) !== MINI_STREAM_CUTOFF_BYTES) {
      this.#invalid('its mini stream cutoff is not 4096');
    }
    this.#sectorBytes = 1 << sectorShift;
    // [MS-CFB] 2.2: sector 0 starts one sector in; version 4 pads the header to 4096 bytes.
    this.#sectorCount = Math.ceil((bytes.length - this.#sectorBytes) / this.#sectorBytes);
    if (this.#sectorCount < 1) this.#invalid('it holds no sector after its header');
    this.#claimed = new Uint8Array(this.#sectorCount);
    return {
      fatSectors: u32le(bytes, 44),
      firstDirectorySector: u32le(bytes, 48),
      firstMiniFatSector: u32le(bytes, 60),
      miniFatSectors: u32le(bytes, 64),
      firstDifatSector: u32le(bytes, 68),
      difatSectors: u32le(bytes, 72),
    };
  }

  /** [MS-CFB] 2.5: the FAT sectors are listed by the header's 109 DIFAT slots, then a chain. */
  #readFat(header: {
    fatSectors: number;
    firstDifatSector: number;
    difatSectors: number;
  }): Uint32Array {
    const { fatSectors, difatSectors } = header;
    if (fatSectors < 1 || fatSectors > this.#sectorCount) {
      this.#invalid(
        `its header counts ${fatSectors} FAT sectors in a file of ${this.#sectorCount}`,
      );
    }
    const perDifatSector = this.#sectorBytes / 4 - 1;
    const needed = Math.max(0, Math.ceil((fatSectors - HEADER_DIFAT_ENTRIES) / perDifatSector));
    if (difatSectors < needed || difatSectors > this.#sectorCount) {
      this.#invalid(
        `its header counts ${difatSectors} DIFAT sectors where ${fatSectors} FAT sectors need ${needed}`,
      );
    }
    const fatList: number[] = [];
    for (let i = 0; i < HEADER_DIFAT_ENTRIES && fatList.length < fatSectors; i += 1) {
      fatList.push(u32le(this.#bytes, 76 + i * 4));
    }
    let difat = header.firstDifatSector;
    for (let count = 0; count < difatSectors; count += 1) {
      const offset = this.#sectorOffset(difat, 'the DIFAT chain');
      this.#claim(difat, 'the DIFAT chain');
      for (let i = 0; i < perDifatSector && fatList.length < fatSectors; i += 1) {
        fatList.push(u32le(this.#bytes, offset + i * 4));
      }
      difat = u32le(this.#bytes, offset + perDifatSector * 4);
    }
    // [MS-CFB] 2.5: the last DIFAT sector ends with ENDOFCHAIN; writers also leave FREESECT.
    if (difatSectors > 0 && difat !== END_OF_CHAIN && difat !== FREE_SECTOR) {
      this.#invalid('its DIFAT chain is longer than its header counts');
    }
    if (
      difatSectors === 0 &&
      header.firstDifatSector !== END_OF_CHAIN &&
      header.firstDifatSector !== FREE_SECTOR
    ) {
      this.#invalid('its header names a DIFAT sector but counts none');
    }
    const entriesPerSector = this.#sectorBytes / 4;
    const fat = new Uint32Array(fatSectors * entriesPerSector);
    fatList.forEach((sector, i) => {
      const offset = this.#sectorOffset(sector, 'the FAT');
      this.#claim(sector, 'the FAT');
      for (let j = 0; j < entriesPerSector; j += 1) {
        fat[i * entriesPerSector + j] = u32le(this.#bytes, offset + j * 4);
      }
    });
    return fat;
  }

  #readDirectory(firstSector: number): DirectoryEntry[] {
    const chain = this.#chainOf(firstSector, Number.POSITIVE_INFINITY, 'the directory');
    const perSector = this.#sectorBytes / DIRECTORY_ENTRY_BYTES;
    if (chain.length * perSector > MAX_CFB_ENTRIES) {
      throw new Rejection(
        'policy_violation',
        `${this.#what} has ${chain.length * perSector} directory entries, more than the limit of ${MAX_CFB_ENTRIES}`,
      );
    }
    const entries: DirectoryEntry[] = [];
    for (const sector of chain) {
      const base = this.#sectorOffset(sector, 'the directory');
      for (let i = 0; i < perSector; i += 1) {
        entries.push(this.#readEntry(base + i * DIRECTORY_ENTRY_BYTES, entries.length));
      }
    }
    return entries;
  }

  #readEntry(offset: number, index: number): DirectoryEntry {
    const bytes = this.#bytes;
    const type = bytes[offset + 66] ?? 0;
    const nameBytes = u16le(bytes, offset + NAME_FIELD_BYTES);
    let name = '';
    // The root's name is never looked up; Excel 5 and some PowerPoint writers leave it empty.
    const rootWithoutName = type === OBJECT_ROOT && nameBytes <= 2;
    if (type !== 0 && !rootWithoutName) {
      // [MS-CFB] 2.6.1: the length counts the terminating NUL; names are 1 to 31 code units.
      if (nameBytes < 4 || nameBytes > NAME_FIELD_BYTES || nameBytes % 2 !== 0) {
        this.#invalid(`directory entry ${index} has a name length of ${nameBytes} bytes`);
      }
      const units = nameBytes / 2 - 1;
      if (u16le(bytes, offset + units * 2) !== 0) {
        this.#invalid(`directory entry ${index} has a name not ended by NUL where its length says`);
      }
      for (let i = 0; i < units; i += 1) {
        const unit = u16le(bytes, offset + i * 2);
        if (unit === 0) this.#invalid(`directory entry ${index} has a NUL inside its name`);
        name += String.fromCharCode(unit);
      }
    }
    const low = u32le(bytes, offset + 120);
    const high = u32le(bytes, offset + 124);
    // [MS-CFB] 2.6.3: version 3 writers may leave garbage in the high 32 bits; readers ignore it.
    if (this.#version === 4 && high !== 0 && type === OBJECT_STREAM) {
      this.#invalid(`stream "${name}" declares a size of 4 GiB or more`);
    }
    return {
      index,
      name,
      type,
      left: u32le(bytes, offset + 68),
      right: u32le(bytes, offset + 72),
      child: u32le(bytes, offset + 76),
      clsid: bytes.slice(offset + 80, offset + 80 + CLSID_BYTES),
      stateBits: u32le(bytes, offset + 96),
      start: u32le(bytes, offset + 116),
      size: low,
    };
  }

  #readMiniFat(header: { firstMiniFatSector: number; miniFatSectors: number }): Uint32Array {
    if (header.miniFatSectors === 0) return new Uint32Array(0);
    const chain = this.#chainOf(header.firstMiniFatSector, header.miniFatSectors, 'the mini FAT');
    if (chain.length !== header.miniFatSectors) {
      this.#invalid(
        `its mini FAT chain has ${chain.length} sectors where the header counts ${header.miniFatSectors}`,
      );
    }
    const perSector = this.#sectorBytes / 4;
    const miniFat = new Uint32Array(chain.length * perSector);
    chain.forEach((sector, i) => {
      const offset = this.#sectorOffset(sector, 'the mini FAT');
      for (let j = 0; j < perSector; j += 1)
        miniFat[i * perSector + j] = u32le(this.#bytes, offset + j * 4);
    });
    return miniFat;
  }

  /**
   * The children of a storage: its red-black tree walked in order with an explicit stack, so a
   * deep or cyclic tree costs neither recursion nor time; `seen` catches an entry reached twice.
   */
  #readChildren(
    directory: readonly DirectoryEntry[],
    storage: DirectoryEntry,
    seen: Uint8Array,
    depth: number,
  ): CompoundNode[] {
    if (depth > MAX_CFB_STORAGE_DEPTH) {
      throw new Rejection(
        'policy_violation',
        `${this.#what} nests storages more than ${MAX_CFB_STORAGE_DEPTH} deep`,
      );
    }
    const children: CompoundNode[] = [];
    const stack: number[] = [];
    const visit = (index: number): void => {
      if (index === NO_STREAM) return;
      const entry = directory[index];
      if (entry === undefined)
        this.#invalid(
          `storage "${storage.name}" points at directory entry ${index}, past the directory`,
        );
      if (seen[index] === 1)
        this.#invalid(`directory entry ${index} is reached twice (a cycle or a shared entry)`);
      seen[index] = 1;
      stack.push(index);
    };
    visit(storage.child);
    while (stack.length > 0) {
      const index = stack.pop() ?? NO_STREAM;
      const entry = directory[index];
      if (entry === undefined) break;
      visit(entry.left);
      visit(entry.right);
      if (entry.type === OBJECT_STREAM) {
        children.push({ kind: 'stream', name: entry.name, content: this.#streamContent(entry) });
      } else if (entry.type === OBJECT_STORAGE) {
        children.push({
          kind: 'storage',
          name: entry.name,
          clsid: entry.clsid,
          stateBits: entry.stateBits,
          children: this.#readChildren(directory, entry, seen, depth + 1),
        });
      } else {
        this.#invalid(
          `directory entry ${index} in storage "${storage.name}" has object type ${entry.type}`,
        );
      }
    }
    children.sort((a, b) => compareEntryNames(a.name, b.name));
    for (let i = 1; i < children.length; i += 1) {
      if (compareEntryNames(children[i - 1]?.name ?? '', children[i]?.name ?? '') === 0) {
        this.#invalid(
          `storage "${storage.name}" holds two entries named "${children[i]?.name ?? ''}"`,
        );
      }
    }
    return children;
  }

  #streamContent(entry: DirectoryEntry): Uint8Array {
    this.#streamBytes += entry.size;
    if (this.#streamBytes > this.#maxBytes) {
      throw new Rejection(
        'file_too_large',
        `${this.#what} holds more than ${this.#maxBytes} bytes of streams`,
      );
    }
    if (entry.size === 0) return new Uint8Array(0);
    return entry.size < MINI_STREAM_CUTOFF_BYTES
      ? this.#readMiniChain(entry.start, entry.size, `stream "${entry.name}"`)
      : this.#readChain(entry.start, entry.size, `stream "${entry.name}"`);
  }

  /** A stream of `size` bytes in regular sectors; zero-copy when its sectors are consecutive. */
  #readChain(start: number, size: number, what: string): Uint8Array {
    if (size === 0) return new Uint8Array(0);
    const needed = Math.ceil(size / this.#sectorBytes);
    const chain = this.#chainOf(start, needed, what);
    if (chain.length < needed) {
      this.#invalid(
        `${what} declares ${size} bytes but its sector chain holds ${chain.length * this.#sectorBytes}`,
      );
    }
    const consecutive = chain.every((sector, i) => sector === start + i);
    const first = (start + 1) * this.#sectorBytes;
    if (consecutive) {
      if (first + size > this.#bytes.length) this.#invalid(`${what} runs past the end of the file`);
      return this.#bytes.subarray(first, first + size);
    }
    const content = new Uint8Array(size);
    chain.forEach((sector, i) => {
      const offset = (sector + 1) * this.#sectorBytes;
      const length = Math.min(this.#sectorBytes, size - i * this.#sectorBytes);
      // Only the file's last sector may be cut short, and only where a stream ends in it.
      if (offset + length > this.#bytes.length)
        this.#invalid(`${what} runs past the end of the file`);
      content.set(this.#bytes.subarray(offset, offset + length), i * this.#sectorBytes);
    });
    return content;
  }

  /**
   * The sectors of a FAT chain from `start`, at most `limit` of them; a sector out of range, one
   * claimed by another chain (which is also how a cycle shows) or a chain ending in anything but
   * ENDOFCHAIN is `invalid_file`.
   */
  #chainOf(start: number, limit: number, what: string): number[] {
    const chain: number[] = [];
    let sector = start;
    while (sector !== END_OF_CHAIN && chain.length < limit) {
      this.#claim(sector, what);
      chain.push(sector);
      sector = this.#fat[sector] ?? FREE_SECTOR;
    }
    if (chain.length === 0) this.#invalid(`${what} has no sectors`);
    return chain;
  }

  #readMiniChain(start: number, size: number, what: string): Uint8Array {
    const needed = Math.ceil(size / MINI_SECTOR_BYTES);
    const content = new Uint8Array(size);
    let sector = start;
    for (let i = 0; i < needed; i += 1) {
      if (sector === END_OF_CHAIN) {
        this.#invalid(
          `${what} declares ${size} bytes but its mini sector chain holds ${i * MINI_SECTOR_BYTES}`,
        );
      }
      if (sector >= this.#miniClaimed.length || sector >= this.#miniFat.length) {
        this.#invalid(`${what} points at mini sector ${sector}, past the mini stream`);
      }
      if (this.#miniClaimed[sector] === 1) {
        this.#invalid(
          `${what} reaches mini sector ${sector} twice or shares it with another stream`,
        );
      }
      this.#miniClaimed[sector] = 1;
      const offset = sector * MINI_SECTOR_BYTES;
      const length = Math.min(MINI_SECTOR_BYTES, size - i * MINI_SECTOR_BYTES);
      if (offset + length > this.#miniStream.length)
        this.#invalid(`${what} runs past the mini stream`);
      content.set(this.#miniStream.subarray(offset, offset + length), i * MINI_SECTOR_BYTES);
      sector = this.#miniFat[sector] ?? FREE_SECTOR;
    }
    return content;
  }

  #claim(sector: number, what: string): void {
    if (sector > MAX_REGULAR_SECTOR || sector >= this.#sectorCount) {
      this.#invalid(
        `${what} points at sector ${sector}, past the ${this.#sectorCount} sectors of the file`,
      );
    }
    if (this.#claimed[sector] === 1) {
      this.#invalid(`${what} reaches sector ${sector} twice or shares it with another structure`);
    }
    this.#claimed[sector] = 1;
  }

  #sectorOffset(sector: number, what: string): number {
    const offset = (sector + 1) * this.#sectorBytes;
    if (sector > MAX_REGULAR_SECTOR || offset + this.#sectorBytes > this.#bytes.length) {
      this.#invalid(`${what} points at sector ${sector}, past the end of the file`);
    }
    return offset;
  }

  #invalid(fault: string): never {
    throw new Rejection('invalid_file', `${this.#what} is not a readable compound file: ${fault}`);
  }
}
