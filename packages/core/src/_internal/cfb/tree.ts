/**
 * The in-memory model of a compound file ([MS-CFB]): a tree of storages and streams, as
 * {@link parseCompoundFile} reads it and {@link writeCompoundFile} writes it. Nothing of the
 * container's layout (sectors, FAT, directory order, free space, timestamps) survives in it, so a
 * file written from this model holds only what the model holds.
 */

/** [MS-CFB] 2.6.1: a CLSID is 16 bytes; all zero means none. */
export const CLSID_BYTES = 16;

/** A stream: a named run of bytes. */
export interface CompoundStream {
  readonly kind: 'stream';
  /** 1 to 31 UTF-16 code units, none of them NUL ([MS-CFB] 2.6.1). */
  readonly name: string;
  /**
   * The stream's bytes. As `parseCompoundFile` reads them, a stream whose sectors follow
   * one another is a view of the file's own bytes: copy it before changing it.
   */
  readonly content: Uint8Array;
}

/** A storage: a named folder of storages and streams, with its class and state bits. */
export interface CompoundStorage {
  readonly kind: 'storage';
  /** The root is always `Root Entry`. */
  readonly name: string;
  /** [MS-CFB] 2.6.3 object class GUID, {@link CLSID_BYTES} long; all zero for none. */
  readonly clsid: Uint8Array;
  /** [MS-CFB] 2.6.3 user-defined state bits; 0 unless the application needs them. */
  readonly stateBits: number;
  readonly children: readonly CompoundNode[];
}

/** A storage or a stream. */
export type CompoundNode = CompoundStorage | CompoundStream;

/** The all-zero CLSID. */
export const NO_CLSID: Uint8Array = new Uint8Array(CLSID_BYTES);

/**
 * The child of `storage` named `name`, compared as [MS-CFB] 2.6.4 compares names (case-insensitive
 * after simple upper-casing), or `undefined`.
 */
export function childNamed(storage: CompoundStorage, name: string): CompoundNode | undefined {
  const wanted = upperName(name);
  return storage.children.find((child) => upperName(child.name) === wanted);
}

/** The stream child of `storage` named `name` (see {@link childNamed}), or `undefined`. */
export function streamNamed(storage: CompoundStorage, name: string): CompoundStream | undefined {
  const child = childNamed(storage, name);
  return child?.kind === 'stream' ? child : undefined;
}

/**
 * [MS-CFB] 2.6.4: siblings are ordered by name length in UTF-16 code units first, then by the
 * upper-cased names code unit by code unit. The directory's red-black trees follow this order.
 */
export function compareEntryNames(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  const upperA = upperName(a);
  const upperB = upperName(b);
  if (upperA === upperB) return 0;
  return upperA < upperB ? -1 : 1;
}

/**
 * [MS-CFB] 2.6.4 upper-cases each UTF-16 code unit on its own; a code unit whose upper case is
 * longer than one unit (German sharp s) stays as it is, so names keep their length.
 */
function upperName(name: string): string {
  let upper = '';
  for (const unit of name) {
    const mapped = unit.toUpperCase();
    upper += mapped.length === unit.length ? mapped : unit;
  }
  return upper;
}
