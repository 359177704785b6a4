import { parseCompoundFile } from './cfb/read.ts';
import type { CompoundNode } from './cfb/tree.ts';

/** A compound file opened for reading. */
export interface CompoundFile {
  /** Streams and storages directly under the root, by name. */
  readonly topLevel: ReadonlyMap<string, CompoundNode>;
}

/**
 * Parses a compound file ([MS-CFB]) held in memory with the strict reader (see
 * `cfb/read.ts`). Every sector is claimed by one chain at most, so the streams read can never
 * add up to more than the file itself.
 * @throws {Rejection} `invalid_file` when the structure cannot be read.
 */
export function openCompoundFile(bytes: Uint8Array, what: string): CompoundFile {
  const { root } = parseCompoundFile(bytes, { what, maxBytes: Number.MAX_SAFE_INTEGER });
  return { topLevel: new Map(root.children.map((child) => [child.name, child])) };
}
