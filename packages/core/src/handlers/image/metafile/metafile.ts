/**
 * Vector pictures inside Office and OpenDocument packages: enhanced metafiles (EMF) and Windows
 * metafiles (WMF). They are not a file type of their own here; a package's pictures come through
 * {@link rebuildMetafile}, and verify reads each written one back with {@link checkMetafile},
 * a walk of its own that shares only the lists of record types with the rebuild.
 */
import { FindingTally } from '../../../findings.ts';
import { KEPT_EMF_RECORDS, isEmf, rebuildEmf } from './emf.ts';
import type { MetafileLimits } from './types.ts';
import { KEPT_WMF_RECORDS, isWmf, rebuildWmf } from './wmf.ts';

export type MetafileKind = 'emf' | 'wmf';

/** The metafile kind a picture's extension names, if any. */
export function metafileKindOf(extension: string): MetafileKind | undefined {
  const folded = extension.toLowerCase();
  return folded === 'emf' || folded === 'wmf' ? folded : undefined;
}

/** The metafile kind `bytes` begin as, for a picture stored without an extension. */
export function metafileKindOfBytes(bytes: Uint8Array): MetafileKind | undefined {
  if (isEmf(bytes)) return 'emf';
  return isWmf(bytes) ? 'wmf' : undefined;
}

/**
 * Rebuilds a metafile picture. Its findings are added only when it is rebuilt.
 *
 * @throws {Rejection} `invalid_file` when the bytes are not a metafile of that kind, or it cannot
 *   be rebuilt with confidence.
 */
export function rebuildMetafile(
  bytes: Uint8Array,
  kind: MetafileKind,
  limits: MetafileLimits,
  findings: FindingTally,
): Uint8Array {
  const found = new FindingTally();
  const rebuilt =
    kind === 'emf' ? rebuildEmf(bytes, limits, found) : rebuildWmf(bytes, limits, found);
  findings.addAll(found.toArray());
  return rebuilt;
}

/**
 * Reads a written metafile back: the headers as the rebuild writes them, every record of a kept
 * type with a size that fits, the end record last and nothing after it. Returns what is wrong, or
 * `undefined`.
 */
export function checkMetafile(bytes: Uint8Array, kind: MetafileKind): string | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return kind === 'emf' ? checkEmf(bytes, view) : checkWmf(bytes, view);
}

function checkEmf(bytes: Uint8Array, view: DataView): string | undefined {
  if (!isEmf(bytes) || view.getUint32(4, true) !== 108) return 'its header is not as written';
  if (view.getUint32(48, true) !== bytes.length) return 'its header gives another length';
  if (view.getUint32(60, true) !== 0) return 'its header keeps a description';
  if (view.getUint32(88, true) !== 0 || view.getUint32(96, true) !== 0) {
    return 'its header keeps a pixel format or OpenGL';
  }
  let at = 108;
  let records = 1;
  while (at + 8 <= bytes.length) {
    const type = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    if (size < 8 || size % 4 !== 0 || at + size > bytes.length) return `record ${type} overruns`;
    records += 1;
    at += size;
    if (type === 14) {
      if (at !== bytes.length) return 'bytes follow its end record';
      return records === view.getUint32(52, true) ? undefined : 'its header miscounts records';
    }
    if (!KEPT_EMF_RECORDS.has(type)) return `record type ${type} is kept`;
  }
  return 'it has no end record';
}

function checkWmf(bytes: Uint8Array, view: DataView): string | undefined {
  if (!isWmf(bytes)) return 'its header is not a Windows metafile header';
  const start = view.getUint32(0, true) === 0x9ac6cdd7 ? 22 : 0;
  if (view.getUint32(start + 6, true) * 2 !== bytes.length - start) {
    return 'its header gives another length';
  }
  let at = start + 18;
  while (at + 6 <= bytes.length) {
    const words = view.getUint32(at, true);
    const fn = view.getUint16(at + 4, true);
    if (words < 3 || at + words * 2 > bytes.length) return `record 0x${fn.toString(16)} overruns`;
    at += words * 2;
    if (fn === 0) return at === bytes.length ? undefined : 'bytes follow its end record';
    if (!KEPT_WMF_RECORDS.has(fn)) return `record function 0x${fn.toString(16)} is kept`;
  }
  return 'it has no end record';
}
