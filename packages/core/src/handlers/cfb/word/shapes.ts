import { u16le, u32le } from '../../../_internal/bytes.ts';
import type { FindingTally } from '../../../findings.ts';
import { readArtRecord, walkArtRecords } from '../office-art.ts';
import type { ArtRecord } from '../office-art.ts';

/** [MS-ODRAW] 2.2.9, 2.2.10, 2.2.11: the primary, secondary and tertiary property tables. */
const PROPERTY_TABLES: ReadonlySet<number> = new Set([0xf00b, 0xf121, 0xf122]);
/** [MS-ODRAW] 2.2.7 OfficeArtFOPTEOPID: the property id is the low 14 bits; bit 15 fComplex. */
const PROPERTY_ID_MASK = 0x3fff;
const COMPLEX = 0x8000;
const PROPERTY_BYTES = 6;
/**
 * [MS-ODRAW] 2.3.23 pibName/pibFlags, 2.3.7 fillBlipName/fillBlipFlags, 2.3.8
 * lineFillBlipName/lineFillBlipFlags: where a shape's picture, fill or line picture came from,
 * and whether it is to be fetched from there ([MS-ODRAW] 2.2.47 MSOBLIPFLAGS).
 */
const PICTURE_NAMES: ReadonlySet<number> = new Set([0x0105, 0x0186, 0x01c5]);
const PICTURE_FLAGS: ReadonlySet<number> = new Set([0x0106, 0x0187, 0x01c6]);
/** [MS-ODRAW] 2.2.47: msoblipflagLinkToFile, the picture is loaded from its name when shown. */
const LINK_TO_FILE = 0x08;

/**
 * Finds in the shapes of `bytes[start, end)` (OfficeArt records, walked to any depth) every
 * picture that names where it came from or is linked to it (a file, a share, a URL): each
 * picture name's characters and each picture flags value not 0. With `findings`, the name is
 * zeroed (an empty string, same size, so no offset moves) and the flags set to 0 (the name is a
 * comment, nothing is fetched), a linked one counted as `external-relationship`.
 * @returns how many names and flags were not empty.
 * @throws {Rejection} `invalid_file` for a record past its container, `policy_violation` for
 *   nesting past the walk's depth limit.
 */
export function clearPictureSources(
  bytes: Uint8Array,
  range: { start: number; end: number },
  what: string,
  findings: FindingTally | undefined,
): number {
  let found = 0;
  for (let at = range.start; at < range.end;) {
    const top = readArtRecord(bytes, at, range.end, what);
    walkArtRecords(bytes, top, what, (record) => {
      if (PROPERTY_TABLES.has(record.recType)) found += clearTable(bytes, record, findings);
    });
    at = top.end;
  }
  return found;
}

/** {@link clearPictureSources} on one property table ([MS-ODRAW] 2.2.9 OfficeArtFOPT). */
function clearTable(
  bytes: Uint8Array,
  table: ArtRecord,
  findings: FindingTally | undefined,
): number {
  const count = table.recInstance;
  // The properties come first, then the complex ones' data in the same order.
  if (table.body + count * PROPERTY_BYTES > table.end) return 0;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let found = 0;
  let data = table.body + count * PROPERTY_BYTES;
  for (let i = 0; i < count; i += 1) {
    const at = table.body + i * PROPERTY_BYTES;
    const id = u16le(bytes, at) & PROPERTY_ID_MASK;
    const op = u32le(bytes, at + 2);
    const complex = (u16le(bytes, at) & COMPLEX) !== 0;
    if (complex) {
      const end = Math.min(table.end, data + op);
      if (PICTURE_NAMES.has(id) && bytes.subarray(data, end).some((byte) => byte !== 0)) {
        found += 1;
        if (findings) bytes.fill(0, data, end);
      }
      data = end;
    } else if (PICTURE_FLAGS.has(id) && op !== 0) {
      found += 1;
      if (findings) {
        if ((op & LINK_TO_FILE) !== 0) findings.add('external-relationship');
        view.setUint32(at + 2, 0, true);
      }
    }
  }
  return found;
}
