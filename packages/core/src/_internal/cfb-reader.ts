import CFB from 'cfb';
import type { CFB$Container, CFB$Entry } from 'cfb';

import { faultOf, Rejection } from './rejection.ts';

/** [MS-CFB] 2.6.1: object types in a directory entry. */
const CFB_STREAM = 2;
const CFB_STORAGE = 1;

/** A compound file opened for reading. */
export interface CompoundFile {
  readonly container: CFB$Container;
  /** Streams and storages directly under the root, by name. */
  readonly topLevel: ReadonlyMap<string, CFB$Entry>;
}

/**
 * Parses a compound file ([MS-CFB]) held in memory.
 * @throws {Rejection} `invalid_file` when the structure cannot be read.
 */
export function openCompoundFile(bytes: Uint8Array, what: string): CompoundFile {
  let container: CFB$Container;
  try {
    container = CFB.read(bytes, { type: 'buffer' });
  } catch (error) {
    const fault = faultOf(error, 'its header, sector chains or directory do not hold together');
    throw new Rejection('invalid_file', `${what} is not a readable compound file: ${fault}`);
  }
  const topLevel = new Map<string, CFB$Entry>();
  container.FullPaths.forEach((path, index) => {
    const entry = container.FileIndex[index];
    if (!entry || (entry.type !== CFB_STREAM && entry.type !== CFB_STORAGE)) return;
    const parts = path.split('/').filter((part) => part.length > 0);
    if (parts.length === 2 && parts[1] !== undefined) topLevel.set(parts[1], entry);
  });
  return { container, topLevel };
}
