import { u16le, u32le } from '../../../_internal/bytes.ts';
import { forEachLimited, MEMBER_CONCURRENCY } from '../../../_internal/concurrency.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import {
  ART,
  artChildren,
  FBSE_CB_NAME_OFFSET,
  FBSE_DELAY_OFFSET,
  FBSE_FIXED_BYTES,
  FBSE_SIZE_OFFSET,
  isBlipType,
  isContainer,
  NOT_DELAYED,
  readArtRecord,
  rebuildBlip,
  RECORD_HEADER_BYTES,
} from '../office-art.ts';
import type { ArtRecord, PictureRebuild } from '../office-art.ts';
import type { FindingTally } from '../../../findings.ts';
import { characterGrpprls, SPRM, sprmsOf } from './chpx.ts';
import { FC_LCB, fcLcb } from './fib.ts';
import type { Fib } from './fib.ts';
import { clearPictureSources } from './shapes.ts';

/** A picture's records as a rejection's detail names them. */
const WHAT = 'a picture of the Word document';

/** [MS-DOC] 2.5.4 FibRgLw97.cbMac: the bytes of the WordDocument stream that have meaning. */
const CB_MAC_OFFSET = 64;
/** [MS-DOC] 2.9.158 PICF: its size (cbHeader), and the offset of mfpf.mm. */
export const PICF_BYTES = 0x44;
const PICF_MM_OFFSET = 6;
/** [MS-DOC] 2.9.158 mfpf.mm: the picture is an OfficeArt shape; with a file name after the PICF. */
export const MM_SHAPE = 0x0064;
const MM_SHAPEFILE = 0x0066;
/**
 * The picture location written for a picture character whose picture is refused or names
 * nothing: past the end of any Data stream this engine writes (it stays under the size ceiling),
 * so no reader finds a picture there. LibreOffice writes the same value as an object's name.
 */
const NO_PICTURE = 0x7fffffff;
/** [MS-DOC] 2.9.192: LibreOffice and Word start each entry of the Data stream on 4 bytes. */
export const DATA_ALIGNMENT = 4;

/** A character's pointer into the Data stream ([MS-DOC] 2.6.1 sprmCPicLocation). */
export interface DataReference {
  /** Offset in the WordDocument stream of the 4-byte sprmCPicLocation operand. */
  readonly operand: number;
  /** NilPICFAndBinData (form field or hyperlink data, sprmCFData) rather than a picture. */
  readonly binData: boolean;
}

/**
 * Every character formatting that points into the Data stream: a `sprmCPicLocation` ([MS-DOC]
 * 2.6.1) in a Chpx that does not make the character an OLE object (`sprmCFOle2` present: the
 * operand is then the object's storage name) or a plain one (`sprmCFSpec` 0). With several,
 * the last applies, as Word reads a grpprl.
 */
export function dataReferences(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  what: string,
): DataReference[] {
  const references: DataReference[] = [];
  for (const grpprl of characterGrpprls(word, table, fib, what)) {
    let operand: number | undefined;
    let binData = false;
    let skip = false;
    for (const sprm of sprmsOf(word, grpprl)) {
      if (sprm.sprm === SPRM.cPicLocation) operand = sprm.operand;
      if (sprm.sprm === SPRM.cFData) binData = word[sprm.operand] !== 0;
      if (sprm.sprm === SPRM.cFOle2) skip = true;
      if (sprm.sprm === SPRM.cFSpec) skip ||= word[sprm.operand] === 0;
    }
    if (operand !== undefined && !skip) references.push({ operand, binData });
  }
  return references;
}

/** The three streams the pictures live in, and the document's FIB. */
export interface WordStreams {
  /** Changed in place: picture locations, and the delay stream's pictures. */
  readonly word: Uint8Array;
  /** Changed in place: the BLIP store entries' sizes, offsets and names. */
  readonly table: Uint8Array;
  readonly data: Uint8Array | undefined;
  readonly fib: Fib;
  readonly what: string;
}

/**
 * Rebuilds every picture a Word document shows ([MS-DOC] 2.9.192, [MS-ODRAW]).
 *
 * Inline pictures and object previews: a new Data stream holding only what the characters point
 * at, each once, in the order the text first names it: every PICFAndOfficeArtData rebuilt (its
 * PICF, its shape, and each BLIP store entry with its picture rebuilt by {@link rebuildBlip}
 * and its name dropped; a picture file's path, MM_SHAPEFILE, dropped too), and form field and
 * hyperlink data (NilPICFAndBinData) copied within its stated size. Each `sprmCPicLocation`
 * operand is set to where its entry now is, or to {@link NO_PICTURE} when the picture is refused
 * or the operand names nothing; the operand keeps its size, so no other offset moves.
 *
 * Floating pictures: each BLIP store entry of the drawings (fcDggInfo) whose picture lies in
 * the delay stream (the WordDocument stream, [MS-DOC] 2.9.172) has that picture rebuilt and
 * written where it was when it fits, the rest of its place zeroed, or at the end of the stream
 * (FibRgLw97.cbMac grown to cover it); a refused one is zeroed and its entry names none, as
 * does an entry whose place holds no picture of its size. Entry names are zeroed.
 * @returns the WordDocument stream (a new one when it grew) and the new Data stream.
 * @throws {Rejection} `invalid_file` for a drawing table that does not fit or pictures that
 *   overlap; a threat or the size budget from a picture's rebuild.
 */
export async function rebuildWordPictures(
  streams: WordStreams,
  rebuild: PictureRebuild,
): Promise<{ word: Uint8Array; data: Uint8Array }> {
  const data = await rebuildDataStream(streams, rebuild);
  const word = await rebuildDelayedPictures(streams, rebuild);
  return { word, data };
}

async function rebuildDataStream(
  { word, table, data, fib, what }: WordStreams,
  rebuild: PictureRebuild,
): Promise<Uint8Array> {
  const source = data ?? new Uint8Array(0);
  const references = dataReferences(word, table, fib, what);
  // Each entry once, in the order the text first names it, keyed by its location and its kind
  // (a location read both as a picture and as field data is written as each); pictures are
  // rebuilt side by side.
  const keyOf = ({ operand, binData }: DataReference): number =>
    u32le(word, operand) * 2 + (binData ? 1 : 0);
  const keys = [...new Set(references.map(keyOf))];
  const entries = new Map<number, Uint8Array | undefined>();
  await forEachLimited(keys, MEMBER_CONCURRENCY, async (key) => {
    rebuild.context.deadline.check();
    const location = Math.floor(key / 2);
    entries.set(
      key,
      key % 2 === 1
        ? binDataAt(source, location)
        : await pictureAt(source, location, keys.indexOf(key), rebuild),
    );
  });

  const chunks: Uint8Array[] = [];
  const moved = new Map<number, number>();
  let length = 0;
  for (const key of keys) {
    const entry = entries.get(key);
    if (entry === undefined) continue;
    const padding = (DATA_ALIGNMENT - (length % DATA_ALIGNMENT)) % DATA_ALIGNMENT;
    if (padding > 0) chunks.push(new Uint8Array(padding));
    moved.set(key, length + padding);
    chunks.push(entry);
    length += padding + entry.length;
  }
  const targets = references.map((reference) => moved.get(keyOf(reference)) ?? NO_PICTURE);
  const view = new DataView(word.buffer, word.byteOffset, word.byteLength);
  references.forEach(({ operand }, index) => {
    view.setUint32(operand, targets[index] ?? NO_PICTURE, true);
  });
  return concat(chunks);
}

/** A NilPICFAndBinData ([MS-DOC] 2.9.171) copied within its stated size; none where it is not. */
function binDataAt(data: Uint8Array, location: number): Uint8Array | undefined {
  if (location + PICF_BYTES > data.length) return undefined;
  const lcb = u32le(data, location);
  if (u16le(data, location + 4) !== PICF_BYTES || lcb < PICF_BYTES) return undefined;
  if (location + lcb > data.length) return undefined;
  return data.slice(location, location + lcb);
}

/**
 * The PICFAndOfficeArtData at `location` rebuilt: the PICF (MM_SHAPE, its size fixed), the
 * OfficeArtInlineSpContainer's shape, then each BLIP store entry with its picture rebuilt and no
 * name. `undefined` when the location names nothing or the picture is refused (counted).
 */
async function pictureAt(
  data: Uint8Array,
  location: number,
  index: number,
  rebuild: PictureRebuild,
): Promise<Uint8Array | undefined> {
  if (location >= data.length) return undefined;
  const picture = readPicture(data, location);
  if (picture === undefined) {
    rebuild.findings.add('hidden-data');
    return undefined;
  }
  const { shape, entries } = picture;
  const shapeCopy = data.slice(shape.offset, shape.end);
  try {
    clearPictureSources(shapeCopy, { start: 0, end: shapeCopy.length }, WHAT, rebuild.findings);
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    rebuild.findings.add('hidden-data');
    return undefined;
  }
  const parts: Uint8Array[] = [data.slice(location, location + PICF_BYTES), shapeCopy];
  for (const { entry, blip } of entries) {
    const rebuilt = await rebuildBlip(data, blip, index, rebuild);
    if (rebuilt === undefined) return undefined;
    const head = data.slice(entry.offset, entry.body + FBSE_FIXED_BYTES);
    const headView = new DataView(head.buffer);
    headView.setUint32(4, FBSE_FIXED_BYTES + rebuilt.length, true);
    headView.setUint32(RECORD_HEADER_BYTES + FBSE_SIZE_OFFSET, rebuilt.length, true);
    headView.setUint8(RECORD_HEADER_BYTES + FBSE_CB_NAME_OFFSET, 0);
    parts.push(head, rebuilt);
  }
  const out = concat(parts);
  const view = new DataView(out.buffer);
  view.setUint32(0, out.length, true);
  view.setUint16(PICF_MM_OFFSET, MM_SHAPE, true);
  return out;
}

/** A PICFAndOfficeArtData's shape and BLIP store entries, each holding its picture. */
interface InlinePicture {
  readonly shape: ArtRecord;
  readonly entries: readonly { readonly entry: ArtRecord; readonly blip: ArtRecord }[];
}

/** The PICFAndOfficeArtData at `location` ([MS-DOC] 2.9.192), or `undefined` when it is not one. */
function readPicture(data: Uint8Array, location: number): InlinePicture | undefined {
  if (location + PICF_BYTES > data.length) return undefined;
  const lcb = u32le(data, location);
  const mm = u16le(data, location + PICF_MM_OFFSET);
  const end = location + lcb;
  if (u16le(data, location + 4) !== PICF_BYTES || lcb < PICF_BYTES || end > data.length) {
    return undefined;
  }
  // [MS-DOC] 2.9.158: Word 97 and later write a picture as an OfficeArt shape; older kinds
  // (a bare metafile after the PICF) are not this format.
  if (mm !== MM_SHAPE && mm !== MM_SHAPEFILE) return undefined;
  let offset = location + PICF_BYTES;
  if (mm === MM_SHAPEFILE) offset += 1 + (data[offset] ?? 0);
  const records: ArtRecord[] = [];
  for (let at = offset; at < end;) {
    const record = recordAt(data, at, end);
    if (record === undefined) return undefined;
    records.push(record);
    at = record.end;
  }
  const [shape, ...rest] = records;
  if (shape?.recType !== ART.spContainer || !isContainer(shape)) return undefined;
  const entries: { entry: ArtRecord; blip: ArtRecord }[] = [];
  for (const entry of rest) {
    if (entry.recType !== ART.fbse || entry.end - entry.body < FBSE_FIXED_BYTES) return undefined;
    const blipAt = entry.body + FBSE_FIXED_BYTES + (data[entry.body + FBSE_CB_NAME_OFFSET] ?? 0);
    const blip = recordAt(data, blipAt, entry.end);
    if (blip === undefined || !isBlipType(blip.recType) || blip.end !== entry.end) return undefined;
    entries.push({ entry, blip });
  }
  return { shape, entries };
}

/**
 * The BLIP store entries of the drawings ([MS-DOC] 2.9.172 OfficeArtContent: an
 * OfficeArtDggContainer first, its OfficeArtBStoreContainer holding them).
 * @throws {Rejection} `invalid_file` when the drawing table does not fit the table stream.
 */
export function drawingBlipEntries(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  what: string,
): ArtRecord[] {
  const { fc, lcb } = fcLcb(word, fib, FC_LCB.dggInfo);
  if (lcb === 0) return [];
  if (fc + lcb > table.length) {
    throw new Rejection(
      'invalid_file',
      `${what} is not a readable Word document: its drawings (fcDggInfo) do not fit the table stream`,
    );
  }
  const dgg = readArtRecord(table, fc, fc + lcb, what);
  if (dgg.recType !== ART.dggContainer || !isContainer(dgg)) return [];
  const entries = artChildren(table, dgg, what)
    .filter((child) => child.recType === ART.bStoreContainer && isContainer(child))
    .flatMap((store) => artChildren(table, store, what))
    .filter((child) => child.recType === ART.fbse);
  for (const entry of entries) {
    if (entry.end - entry.body < FBSE_FIXED_BYTES) {
      throw new Rejection(
        'invalid_file',
        `${what} has a BLIP store entry shorter than [MS-ODRAW] 2.2.32 allows`,
      );
    }
  }
  return entries;
}

/**
 * {@link clearPictureSources} on the drawings ([MS-DOC] 2.9.172 OfficeArtContent): the
 * OfficeArtDggContainer, then each drawing (a one-byte dgglbl and an OfficeArtDgContainer).
 * @throws {Rejection} `invalid_file` when a drawing does not fit the drawing table.
 */
export function clearDrawingSources(
  streams: { readonly word: Uint8Array; readonly table: Uint8Array; readonly fib: Fib },
  what: string,
  findings: FindingTally | undefined,
): number {
  const { word, table, fib } = streams;
  const { fc, lcb } = fcLcb(word, fib, FC_LCB.dggInfo);
  if (lcb === 0 || fc + lcb > table.length) return 0;
  const end = fc + lcb;
  let found = 0;
  // A tail too short to hold a drawing is padding, not a drawing.
  for (let at = fc, first = true; at + 1 + RECORD_HEADER_BYTES <= end; first = false) {
    // [MS-DOC] 2.9.168 OfficeArtWordDrawing: dgglbl (main document or header) before each.
    const start = first ? at : at + 1;
    const record = readArtRecord(table, start, end, what);
    found += clearPictureSources(table, { start, end: record.end }, what, findings);
    at = record.end;
  }
  return found;
}

async function rebuildDelayedPictures(
  { word, table, fib, what }: WordStreams,
  rebuild: PictureRebuild,
): Promise<Uint8Array> {
  const view = new DataView(table.buffer, table.byteOffset, table.byteLength);
  const entries = drawingBlipEntries(word, table, fib, what);
  clearDrawingSources({ word, table, fib }, what, rebuild.findings);
  const places = new Map<number, number>();
  for (const entry of entries) {
    const nameEnd = Math.min(
      entry.end,
      entry.body + FBSE_FIXED_BYTES + (table[entry.body + FBSE_CB_NAME_OFFSET] ?? 0),
    );
    table.fill(0, entry.body + FBSE_FIXED_BYTES, nameEnd);
    const size = u32le(table, entry.body + FBSE_SIZE_OFFSET);
    const delay = u32le(table, entry.body + FBSE_DELAY_OFFSET);
    if (nameEnd < entry.end) {
      // [MS-ODRAW] 2.2.32: a picture held in the entry itself, which cannot change size here.
      table.fill(0, nameEnd, entry.end);
      rebuild.findings.add('hidden-data');
      setEntry(view, entry, { offset: NOT_DELAYED, size: 0 });
    } else if (delay !== NOT_DELAYED && size > 0) {
      if (delay + size > word.length) {
        setEntry(view, entry, { offset: NOT_DELAYED, size: 0 });
      } else if ((places.get(delay) ?? size) !== size) {
        throw overlap(what);
      } else {
        places.set(delay, size);
      }
    }
  }
  const sorted = [...places].sort(([a], [b]) => a - b);
  for (let i = 1; i < sorted.length; i += 1) {
    const [before, size] = sorted[i - 1] ?? [0, 0];
    if (before + size > (sorted[i]?.[0] ?? 0)) throw overlap(what);
  }

  const rebuilt = new Map<number, Uint8Array | undefined>();
  await forEachLimited(sorted, MEMBER_CONCURRENCY, async ([delay, size]) => {
    rebuild.context.deadline.check();
    const blip = recordAt(word, delay, delay + size);
    // No picture there, so nothing there is the picture's to clear: the entry names none.
    if (blip === undefined || !isBlipType(blip.recType) || blip.end !== delay + size) return;
    const index = sorted.findIndex(([place]) => place === delay);
    rebuilt.set(delay, await rebuildBlip(word, blip, index, rebuild));
  });
  const moved = new Map<number, { offset: number; size: number }>();
  const appended: Uint8Array[] = [];
  let end = word.length;
  for (const [delay, size] of sorted) {
    const picture = rebuilt.get(delay);
    if (rebuilt.has(delay)) word.fill(0, delay, delay + size);
    if (picture === undefined) {
      moved.set(delay, { offset: NOT_DELAYED, size: 0 });
    } else if (picture.length <= size) {
      word.set(picture, delay);
      moved.set(delay, { offset: delay, size: picture.length });
    } else {
      moved.set(delay, { offset: end, size: picture.length });
      appended.push(picture);
      end += picture.length;
    }
  }
  for (const entry of entries) {
    const target = moved.get(u32le(table, entry.body + FBSE_DELAY_OFFSET));
    if (target !== undefined) setEntry(view, entry, target);
  }
  if (appended.length === 0) return word;
  const grown = concat([word, ...appended]);
  new DataView(grown.buffer).setUint32(CB_MAC_OFFSET, end, true);
  return grown;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** The OfficeArt record at `offset` within `limit`, or `undefined` where none fits. */
function recordAt(bytes: Uint8Array, offset: number, limit: number): ArtRecord | undefined {
  try {
    return readArtRecord(bytes, offset, limit, 'a picture');
  } catch (error) {
    if (error instanceof Rejection) return undefined;
    throw error;
  }
}

function setEntry(
  view: DataView,
  entry: ArtRecord,
  target: { offset: number; size: number },
): void {
  view.setUint32(entry.body + FBSE_SIZE_OFFSET, target.size, true);
  view.setUint32(entry.body + FBSE_DELAY_OFFSET, target.offset, true);
}

function overlap(what: string): Rejection {
  return new Rejection(
    'invalid_file',
    `${what} is not a readable Word document: two of its pictures overlap in the WordDocument stream`,
  );
}
