import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { forEachLimited, MEMBER_CONCURRENCY } from '../../../_internal/concurrency.ts';
import { childNamed, streamNamed } from '../../../_internal/cfb/tree.ts';
import type { CompoundStorage, CompoundStream } from '../../../_internal/cfb/tree.ts';
import { writeCompoundFile } from '../../../_internal/cfb/write.ts';
import { u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import { FindingTally } from '../../../findings.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../../types.ts';
import { parseCurrentUser, PLAIN_HEADER_TOKEN, readCurrentEdit } from './persist.ts';
import type { CurrentEdit } from './persist.ts';
import {
  FBSE_DELAY_OFFSET,
  FBSE_FIXED_BYTES,
  FBSE_SIZE_OFFSET,
  isBlipType,
  isContainer,
  NOT_DELAYED,
  rebuildBlip,
  RECORD_HEADER_BYTES,
} from '../office-art.ts';
import type { PictureRebuild } from '../office-art.ts';
import { childrenOf, readRecord, RT, walkRecords } from './records.ts';
import type { PptRecord } from './records.ts';
import { removalOf } from './screen.ts';

const WHAT = 'the PowerPoint presentation';
/** [MS-PPT] 2.1.1-2.1.3 stream names. */
export const DOCUMENT_STREAM = 'PowerPoint Document';
export const CURRENT_USER_STREAM = 'Current User';
export const PICTURES_STREAM = 'Pictures';
/** Streams a presentation carries that the rebuild drops without a finding: plumbing, not data. */
const DROPPED_QUIETLY: ReadonlySet<string> = new Set([
  '\u0005SummaryInformation',
  '\u0001CompObj',
  '\u0001Ole',
]);
const WRITER_PLACEHOLDER = '\u0001Sh33tJ5';
const DOCUMENT_SUMMARY = '\u0005DocumentSummaryInformation';
/**
 * [MS-OLEPS] 2.21 PropertySetStream: `NumPropertySets` at 24; the second set (custom properties,
 * [MS-OLEPS] 3.2) has its offset at 64; 2.20 PropertySet: `NumProperties` 4 bytes into the set.
 */
const PROPERTY_SET_COUNT_OFFSET = 24;
const SECOND_SET_OFFSET_OFFSET = 64;
/** [MS-OLEPS] 2.17: the dictionary's property identifier. */
const DICTIONARY_PROPERTY_ID = 0;
/** Properties or dictionary entries read from one set; Office writes a few dozen. */
const MAX_PROPERTIES = 4096;
/** [MS-PPT] 2.1.2: the records a persist object may be, besides ExOleObjStg and encryption. */
const PERSIST_OBJECT_TYPES: ReadonlySet<number> = new Set([
  RT.document,
  RT.mainMaster,
  RT.slide,
  RT.notes,
  RT.handout,
]);
/** [MS-PPT] 2.10.x ExOleObjAtom: its length, and the offsets of `exObjId` and `persistIdRef`. */
const EX_OLE_OBJ_ATOM_BYTES = 24;
const EX_OLE_ID_OFFSET = 8;
const EX_OLE_PERSIST_OFFSET = 16;
/** [MS-PPT] 2.3.2 CurrentUserAtom fixed values: `size`, `docFileVersion`, `majorVersion`. */
const CURRENT_USER_SIZE = 0x14;
const DOC_FILE_VERSION = 0x03f4;
const CURRENT_USER_MAJOR_VERSION = 3;
/** [MS-PPT] 2.3.3 UserEditAtom body length without an encryption session. */
const USER_EDIT_BYTES = 0x1c;
/** [MS-PPT] 2.3.4: persist ids per PersistDirectoryEntry (12-bit `cPersist`). */
const MAX_PERSIST_RUN = 0xfff;
const PERSIST_COUNT_SHIFT = 20;
/** [MS-PPT] 2.1.1: the CLSID PowerPoint 97-2003 gives the root storage. */
const POWERPOINT_CLSID = Uint8Array.from([
  0x10, 0x8d, 0x81, 0x64, 0x9b, 0x4f, 0xcf, 0x11, 0x86, 0xea, 0x00, 0xaa, 0x00, 0xb9, 0x29, 0xe8,
]);

/** A live persist object: its id and record in the input's `PowerPoint Document` stream. */
interface PersistObject {
  readonly persistId: number;
  readonly record: PptRecord;
}

/**
 * Rebuilds a PowerPoint 97-2003 presentation (`.ppt`, `.pps`, `.pot`, `.ppa`, [MS-PPT]) as a
 * fresh single-edit file, as a full save writes it: the persist objects live in the current edit
 * (older incremental saves and everything they shadow are never copied), each checked record by
 * record, laid out anew behind one PersistDirectoryAtom and one UserEditAtom; `Current User`
 * rewritten to point at it without the user name; `Pictures` holding only the pictures the BLIP
 * store references; summary streams and every other storage or stream dropped.
 * @throws {Rejection} `password_protected` when encrypted; `invalid_file` for a container or
 *   record structure that does not hold together; `policy_violation` naming an active construct
 *   (VBA project, OLE object, ActiveX control, running action, unsafe hyperlink, linked media).
 */
export function rebuildPowerPointBinary(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  return rebuild(input, context);
}

async function rebuild(input: DetectedFile, context: EngineContext): Promise<HandlerOutput> {
  const { root } = parseCompoundFile(input.bytes, {
    what: WHAT,
    maxBytes: context.limits.maxBytes,
  });
  const findings = new FindingTally();
  if (childNamed(root, 'EncryptedSummary')) {
    throw new Rejection(
      'password_protected',
      `${WHAT} is encrypted ([MS-PPT] CryptSession10Container); it cannot be opened without its password`,
    );
  }
  const documentStream = streamNamed(root, DOCUMENT_STREAM);
  const currentUserStream = streamNamed(root, CURRENT_USER_STREAM);
  if (!documentStream || !currentUserStream) {
    throw new Rejection(
      'invalid_file',
      `${WHAT} lacks its PowerPoint Document or Current User stream`,
    );
  }
  const user = parseCurrentUser(currentUserStream.content);
  const stream = documentStream.content;
  const edit = readCurrentEdit(stream, user.offsetToCurrentEdit);
  // Older edits are what an incremental save leaves behind: shadowed objects never leave.
  findings.add('hidden-data', edit.edits - 1);
  tallyDroppedEntries(root, findings);

  const { objects, storages } = liveObjects(stream, edit);
  const pictures = streamNamed(root, PICTURES_STREAM)?.content ?? new Uint8Array(0);
  const { document, pictureStream } = await relinkPictures(
    { stream, objects, docPersistIdRef: edit.docPersistIdRef, pictures },
    { input, context, findings },
  );
  // The document container, its BLIP store relinked, stands in for the one in the stream.
  const sources = objects.map((object) =>
    object.persistId === edit.docPersistIdRef
      ? {
          persistId: object.persistId,
          bytes: document,
          record: readRecord(document, 0, document.length),
        }
      : { persistId: object.persistId, bytes: stream, record: object.record },
  );
  const removed = removedObjects(sources, context);
  // An ExOleObjStg no kept or removed container names is a payload stored for nothing.
  findings.add('hidden-data', [...storages].filter((id) => !removed.storages.has(id)).length);
  const written = writeDocumentStream(
    sources.map((source) => ({
      persistId: source.persistId,
      bytes: rewriteRecord(source.bytes, source.record, removed.exObjIds, findings),
    })),
    edit,
  );
  const children: CompoundStream[] = [
    {
      kind: 'stream',
      name: CURRENT_USER_STREAM,
      content: currentUserAtom(written.userEditOffset, user.relVersion),
    },
    { kind: 'stream', name: DOCUMENT_STREAM, content: written.bytes },
  ];
  if (pictureStream.length > 0) {
    children.push({ kind: 'stream', name: PICTURES_STREAM, content: pictureStream });
  }
  const rebuilt: CompoundStorage = {
    kind: 'storage',
    name: 'Root Entry',
    clsid: POWERPOINT_CLSID,
    stateBits: 0,
    children,
  };
  return { bytes: writeCompoundFile(rebuilt), findings: findings.toArray() };
}

/** Counts what leaves with the container: custom properties, and storages or streams unknown. */
function tallyDroppedEntries(root: CompoundStorage, findings: FindingTally): void {
  for (const child of root.children) {
    if ([DOCUMENT_STREAM, CURRENT_USER_STREAM, PICTURES_STREAM].includes(child.name)) continue;
    if (DROPPED_QUIETLY.has(child.name)) continue;
    // The 4-byte placeholder stream SheetJS's cfb writer adds to every file it writes.
    if (child.name === WRITER_PLACEHOLDER && child.kind === 'stream' && child.content.length <= 4) {
      continue;
    }
    if (child.name === DOCUMENT_SUMMARY && child.kind === 'stream') {
      if (customPropertyCount(child.content) > 0) findings.add('document-metadata');
      continue;
    }
    findings.add('hidden-data');
  }
}

/**
 * Custom properties a user set, counted from the dictionary of the DocumentSummaryInformation
 * stream's second property set ([MS-OLEPS] 2.17 Dictionary, property id 0). Names starting with
 * `_PID_` are Office's own bookkeeping (the document GUID, the hyperlink cache), not the user's.
 */
function customPropertyCount(content: Uint8Array): number {
  if (content.length < SECOND_SET_OFFSET_OFFSET + 4) return 0;
  if (u32le(content, PROPERTY_SET_COUNT_OFFSET) < 2) return 0;
  const set = u32le(content, SECOND_SET_OFFSET_OFFSET);
  if (set + 8 > content.length) return 0;
  const count = Math.min(u32le(content, set + 4), MAX_PROPERTIES);
  for (let index = 0; index < count; index += 1) {
    const entry = set + 8 + index * 8;
    if (entry + 8 > content.length) return 0;
    if (u32le(content, entry) !== DICTIONARY_PROPERTY_ID) continue;
    return dictionaryNames(content, set + u32le(content, entry + 4)).filter(
      (name) => !name.startsWith('_PID_'),
    ).length;
  }
  return 0;
}

/** The names in a [MS-OLEPS] 2.17 Dictionary of 8-bit code page names; a broken one is cut. */
function dictionaryNames(content: Uint8Array, offset: number): string[] {
  if (offset + 4 > content.length) return [];
  const names: string[] = [];
  const count = Math.min(u32le(content, offset), MAX_PROPERTIES);
  for (let index = 0, at = offset + 4; index < count && at + 8 <= content.length; index += 1) {
    const length = u32le(content, at + 4);
    if (at + 8 + length > content.length) break;
    names.push(Buffer.from(content.subarray(at + 8, at + 8 + length)).toString('latin1'));
    at += 8 + length;
  }
  return names;
}

/**
 * The live persist objects in persist id order, each a whole record of a kind [MS-PPT] 2.1.2
 * allows, the document container among them.
 */
function liveObjects(
  stream: Uint8Array,
  edit: CurrentEdit,
): { objects: PersistObject[]; storages: Set<number> } {
  const objects: PersistObject[] = [];
  const storages = new Set<number>();
  for (const [persistId, offset] of [...edit.directory].sort(([a], [b]) => a - b)) {
    const record = readRecord(stream, offset, stream.length);
    if (record.recType === RT.cryptSession10) {
      throw new Rejection(
        'password_protected',
        `${WHAT} is encrypted ([MS-PPT] CryptSession10Container); it cannot be opened without its password`,
      );
    }
    if (record.recType === RT.externalOleObjectStg) {
      // [MS-PPT] 2.10.34: the storage of an OLE object, ActiveX control or VBA project; all
      // three go with the containers that name them, so no storage is ever kept.
      storages.add(persistId);
      continue;
    }
    if (!PERSIST_OBJECT_TYPES.has(record.recType) || !isContainer(record)) {
      throw new Rejection(
        'invalid_file',
        `${WHAT}'s persist object ${persistId} is a record of type 0x${record.recType.toString(16)}, not one [MS-PPT] 2.1.2 allows`,
      );
    }
    objects.push({ persistId, record });
  }
  const document = objects.find((object) => object.persistId === edit.docPersistIdRef);
  if (document?.record.recType !== RT.document) {
    throw new Rejection('invalid_file', `${WHAT}'s current edit names no DocumentContainer`);
  }
  return { objects, storages };
}

/** A persist object to write, read from `bytes` (the stream, or a relinked copy). */
interface ObjectSource {
  readonly persistId: number;
  readonly bytes: Uint8Array;
  readonly record: PptRecord;
}

/**
 * Walks every live object once, bounding depth and checking every container, and collects what
 * the removed containers name: the `exObjId`s of removed OLE objects, controls and linked media
 * ([MS-PPT] 2.10.x ExOleObjAtom, ExMediaAtom), whose shapes' ExObjRefAtoms go too, and the
 * persist ids of ExOleObjStg storages a container names (VBAInfoAtom, ExOleObjAtom).
 */
function removedObjects(
  sources: readonly ObjectSource[],
  context: EngineContext,
): { exObjIds: Set<number>; storages: Set<number> } {
  const exObjIds = new Set<number>();
  const storages = new Set<number>();
  for (const { bytes, record } of sources) {
    context.deadline.check();
    walkRecords(bytes, record, (inner) => {
      const size = inner.end - inner.body;
      if (inner.recType === RT.vbaInfoAtom && size >= 4) storages.add(u32le(bytes, inner.body));
      if (inner.recType === RT.exOleObjAtom && size >= EX_OLE_OBJ_ATOM_BYTES) {
        storages.add(u32le(bytes, inner.body + EX_OLE_PERSIST_OFFSET));
      }
      if (removalOf(bytes, inner) === undefined || !isContainer(inner)) return;
      for (const child of childrenOf(bytes, inner)) {
        if (child.recType === RT.exOleObjAtom && child.end - child.body >= EX_OLE_OBJ_ATOM_BYTES) {
          exObjIds.add(u32le(bytes, child.body + EX_OLE_ID_OFFSET));
        }
        if (child.recType === RT.exMediaAtom && child.end - child.body >= 4) {
          exObjIds.add(u32le(bytes, child.body));
        }
      }
    });
  }
  return { exObjIds, storages };
}

/**
 * `record` written anew: atoms as they are, containers from their rewritten children, without
 * the records {@link removalOf} removes (each counted) and the ExObjRefAtoms that name a removed
 * object. Depth was bounded by {@link removedObjects}.
 */
function rewriteRecord(
  bytes: Uint8Array,
  record: PptRecord,
  removedIds: ReadonlySet<number>,
  findings: FindingTally,
): Uint8Array {
  return (
    rewrittenContainer(bytes, record, removedIds, findings) ??
    bytes.subarray(record.offset, record.end)
  );
}

/**
 * {@link rewriteRecord} for a container, or `undefined` when nothing in it changes: most of a
 * presentation's containers are copied whole, and only those on the way to a removed record
 * are joined anew.
 */
function rewrittenContainer(
  bytes: Uint8Array,
  record: PptRecord,
  removedIds: ReadonlySet<number>,
  findings: FindingTally,
): Uint8Array | undefined {
  if (!isContainer(record)) return undefined;
  // Made at the first change, starting with the header and the children before it, unchanged.
  let parts: Uint8Array[] | undefined;
  let length = 0;
  for (const child of childrenOf(bytes, record)) {
    const removal = removalOf(bytes, child);
    if (removal) findings.add(removal.kind);
    const dropped =
      removal !== undefined ||
      (child.recType === RT.exObjRefAtom &&
        child.end - child.body >= 4 &&
        removedIds.has(u32le(bytes, child.body)));
    const changed = dropped ? undefined : rewrittenContainer(bytes, child, removedIds, findings);
    if (parts === undefined) {
      if (!dropped && changed === undefined) continue;
      parts = [bytes.subarray(record.offset, child.offset)];
      length = child.offset - record.offset;
    }
    if (dropped) continue;
    const part = changed ?? bytes.subarray(child.offset, child.end);
    parts.push(part);
    length += part.length;
  }
  if (parts === undefined) return undefined;
  const out = concat(parts, length);
  new DataView(out.buffer).setUint32(4, length - RECORD_HEADER_BYTES, true);
  return out;
}

/**
 * A copy of the DocumentContainer whose BLIP store entries point into a new `Pictures` stream
 * ([MS-ODRAW] 2.2.32 `foDelay`, `size`) holding only the BLIPs they reference, each once, in
 * order, each rebuilt (see {@link rebuildBlip}); an entry whose picture is refused names none.
 */
async function relinkPictures(
  from: {
    readonly stream: Uint8Array;
    readonly objects: readonly PersistObject[];
    readonly docPersistIdRef: number;
    readonly pictures: Uint8Array;
  },
  rebuild: PictureRebuild,
): Promise<{ document: Uint8Array; pictureStream: Uint8Array }> {
  const { stream, objects, docPersistIdRef, pictures } = from;
  const documentRecord = objects.find((object) => object.persistId === docPersistIdRef)?.record;
  if (!documentRecord) throw new TypeError('the document container was checked to be live');
  // The BLIP each entry names, once per BLIP, in the order the entries first name them.
  const blips: PptRecord[] = [];
  const blipIndex = new Map<number, number>();
  const relinked: { readonly at: number; readonly blip: number }[] = [];
  // A broken entry is reported once the pictures named before it are rebuilt, as when each
  // picture was rebuilt where its entry was met: a threat among them is what the file is refused for.
  let broken: Rejection | undefined;
  for (const entry of blipStoreEntries(stream, documentRecord)) {
    const size = u32le(stream, entry.body + FBSE_SIZE_OFFSET);
    const delay = u32le(stream, entry.body + FBSE_DELAY_OFFSET);
    if (delay === NOT_DELAYED || size === 0) continue;
    let index = blipIndex.get(delay);
    if (index === undefined) {
      try {
        blips.push(checkedBlip(pictures, delay, size));
      } catch (error) {
        if (!(error instanceof Rejection)) throw error;
        broken = error;
        break;
      }
      index = blips.length - 1;
      blipIndex.set(delay, index);
    }
    relinked.push({ at: entry.body - documentRecord.offset, blip: index });
  }
  const rebuilt = await rebuildPictures(pictures, blips, rebuild);
  if (broken) throw broken;

  const targets: { offset: number; size: number }[] = [];
  let length = 0;
  for (const picture of rebuilt) {
    targets.push(
      picture ? { offset: length, size: picture.length } : { offset: NOT_DELAYED, size: 0 },
    );
    length += picture?.length ?? 0;
  }
  // A copy to patch: the stream may be a view of the caller's bytes, and a Buffer's slice is one.
  const document = Uint8Array.from(stream.subarray(documentRecord.offset, documentRecord.end));
  const view = new DataView(document.buffer, document.byteOffset);
  for (const { at, blip } of relinked) {
    const target = targets[blip] ?? { offset: NOT_DELAYED, size: 0 };
    view.setUint32(at + FBSE_SIZE_OFFSET, target.size, true);
    view.setUint32(at + FBSE_DELAY_OFFSET, target.offset, true);
  }
  const kept = rebuilt.filter((picture): picture is Uint8Array => picture !== undefined);
  return { document, pictureStream: concat(kept, length) };
}

/**
 * The BLIP at `delay` in the `Pictures` stream, which must be a BLIP record of the `size` its
 * BLIP store entry gives.
 * @throws {Rejection} `invalid_file` otherwise.
 */
function checkedBlip(pictures: Uint8Array, delay: number, size: number): PptRecord {
  const blip = readRecord(pictures, delay, pictures.length);
  if (!isBlipType(blip.recType) || blip.end - blip.offset !== size) {
    throw new Rejection(
      'invalid_file',
      `${WHAT}'s picture at offset ${delay} of the Pictures stream is not the picture its BLIP store entry describes`,
    );
  }
  return blip;
}

/**
 * A picture's rebuild as it ended: its record (`undefined` when refused) and findings, or why it
 * failed.
 */
type PictureOutcome =
  | { readonly bytes: Uint8Array | undefined; readonly findings: FindingTally }
  | { readonly error: unknown };

/**
 * The BLIPs rebuilt side by side, as a package's images are (one per CPU, their decodes under the
 * document's decode ceiling), their findings counted in picture order. After a failure no other
 * picture starts; the failure reported is the first in picture order, once every picture before
 * it has finished, so the same file always fails the same way.
 */
async function rebuildPictures(
  pictures: Uint8Array,
  blips: readonly PptRecord[],
  rebuild: PictureRebuild,
): Promise<(Uint8Array | undefined)[]> {
  const outcomes: (PictureOutcome | undefined)[] = blips.map(() => undefined);
  let failed = false;
  await forEachLimited([...blips.keys()], MEMBER_CONCURRENCY, async (index) => {
    if (failed) return;
    const findings = new FindingTally();
    try {
      rebuild.context.deadline.check();
      const blip = blips[index];
      if (blip === undefined) throw new TypeError('a picture index past the BLIPs');
      const bytes = await rebuildBlip(pictures, blip, index, { ...rebuild, findings });
      outcomes[index] = { bytes, findings };
    } catch (error) {
      failed = true;
      outcomes[index] = { error };
    }
  });
  const rebuilt: (Uint8Array | undefined)[] = [];
  for (const outcome of outcomes) {
    // Pictures that never started come after a failure, which is thrown first.
    if (outcome === undefined) continue;
    if ('error' in outcome) throw outcome.error;
    rebuild.findings.addAll(outcome.findings.toArray());
    rebuilt.push(outcome.bytes);
  }
  return rebuilt;
}

/** [MS-PPT] 2.4.3 DrawingGroupContainer → [MS-ODRAW] OfficeArtDggContainer → BStore → FBSE. */
function blipStoreEntries(stream: Uint8Array, document: PptRecord): PptRecord[] {
  const path = [RT.drawingGroup, RT.officeArtDgg, RT.officeArtBStore];
  let level: PptRecord[] = [document];
  for (const recType of path) {
    level = level.flatMap((record) =>
      isContainer(record)
        ? childrenOf(stream, record).filter((child) => child.recType === recType)
        : [],
    );
  }
  const entries = level.flatMap((store) =>
    isContainer(store)
      ? childrenOf(stream, store).filter((child) => child.recType === RT.officeArtFbse)
      : [],
  );
  for (const entry of entries) {
    if (entry.end - entry.body < FBSE_FIXED_BYTES) {
      throw new Rejection(
        'invalid_file',
        `${WHAT} has a BLIP store entry shorter than [MS-ODRAW] 2.2.32 allows`,
      );
    }
  }
  return entries;
}

/**
 * The new `PowerPoint Document` stream: the live objects in persist id order, then one
 * PersistDirectoryAtom naming them and one UserEditAtom with no earlier edit ([MS-PPT] 2.3.3).
 */
function writeDocumentStream(
  objects: readonly { readonly persistId: number; readonly bytes: Uint8Array }[],
  edit: CurrentEdit,
): { bytes: Uint8Array; userEditOffset: number } {
  const chunks: Uint8Array[] = [];
  const offsets = new Map<number, number>();
  let length = 0;
  for (const { persistId, bytes } of objects) {
    offsets.set(persistId, length);
    chunks.push(bytes);
    length += bytes.length;
  }
  const directory = persistDirectoryAtom(offsets);
  const directoryOffset = length;
  chunks.push(directory);
  length += directory.length;
  const userEditOffset = length;
  const maxId = Math.max(...offsets.keys());
  const userEdit = new Uint8Array(RECORD_HEADER_BYTES + USER_EDIT_BYTES);
  const view = new DataView(userEdit.buffer);
  view.setUint16(2, RT.userEditAtom, true);
  view.setUint32(4, USER_EDIT_BYTES, true);
  view.setUint32(8, edit.lastSlideIdRef, true);
  view.setUint16(12, edit.version, true);
  view.setUint8(14, edit.minorVersion);
  view.setUint8(15, edit.majorVersion);
  view.setUint32(16, 0, true);
  view.setUint32(20, directoryOffset, true);
  view.setUint32(24, edit.docPersistIdRef, true);
  view.setUint32(28, Math.max(edit.persistIdSeed, maxId + 1), true);
  view.setUint16(32, edit.lastView, true);
  chunks.push(userEdit);
  length += userEdit.length;
  return { bytes: concat(chunks, length), userEditOffset };
}

/** [MS-PPT] 2.3.4 PersistDirectoryAtom: runs of consecutive persist ids and their offsets. */
function persistDirectoryAtom(offsets: ReadonlyMap<number, number>): Uint8Array {
  const words: number[] = [];
  let header = -1;
  let runStart = 0;
  let runLength = 0;
  for (const [persistId, offset] of offsets) {
    if (header < 0 || persistId !== runStart + runLength || runLength === MAX_PERSIST_RUN) {
      header = words.length;
      words.push(0);
      runStart = persistId;
      runLength = 0;
    }
    runLength += 1;
    words[header] = (runStart | (runLength << PERSIST_COUNT_SHIFT)) >>> 0;
    words.push(offset);
  }
  const atom = new Uint8Array(RECORD_HEADER_BYTES + words.length * 4);
  const view = new DataView(atom.buffer);
  view.setUint16(2, RT.persistDirectoryAtom, true);
  view.setUint32(4, words.length * 4, true);
  words.forEach((word, index) => {
    view.setUint32(RECORD_HEADER_BYTES + index * 4, word, true);
  });
  return atom;
}

/** [MS-PPT] 2.3.2 CurrentUserAtom with no user name, pointing at the single edit. */
function currentUserAtom(offsetToCurrentEdit: number, relVersion: number): Uint8Array {
  const atom = new Uint8Array(RECORD_HEADER_BYTES + CURRENT_USER_SIZE + 4);
  const view = new DataView(atom.buffer);
  view.setUint16(2, RT.currentUserAtom, true);
  view.setUint32(4, CURRENT_USER_SIZE + 4, true);
  view.setUint32(8, CURRENT_USER_SIZE, true);
  view.setUint32(12, PLAIN_HEADER_TOKEN, true);
  view.setUint32(16, offsetToCurrentEdit, true);
  view.setUint16(20, 0, true);
  view.setUint16(22, DOC_FILE_VERSION, true);
  view.setUint8(24, CURRENT_USER_MAJOR_VERSION);
  view.setUint8(25, 0);
  view.setUint32(28, relVersion, true);
  return atom;
}

function concat(chunks: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
