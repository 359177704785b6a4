/**
 * Removing sheets from a BIFF8 workbook: records of the globals that count sheets by position
 * ([MS-XLS] 2.4.150 Lbl `itab`, XTI, WINDOW1, RRTABID, 2.4.271 SUPBOOK `ctab`) written again for the sheets that stay. Formulas in BIFF8 reach other sheets only
 * through XTI entries of EXTERNSHEET (PtgRef3d, PtgArea3d and their kin carry an XTI index, never
 * a sheet index), so renumbering the XTIs renumbers every 3D reference.
 */
import { u16le } from '../../../_internal/bytes.ts';

/** [MS-XLS] XTI `itabFirst`/`itabLast` of a reference to a deleted sheet (#REF!). */
const DELETED_SHEET = 0xffff;
/** XTI sheet values at or above this one are not sheet positions (workbook level, deleted). */
const FIRST_SPECIAL_SHEET = 0xfffe;
const XTI_BYTES = 6;

/** The sheets that stay, by their position before and after. */
export class SheetMap {
  readonly #newIndex: readonly (number | undefined)[];
  readonly kept: number;

  /** `dropped[i]` says whether sheet `i` (0-based, BOUNDSHEET8 order) goes. */
  constructor(dropped: readonly boolean[]) {
    let next = 0;
    this.#newIndex = dropped.map((gone) => (gone ? undefined : next++));
    this.kept = next;
  }

  get changed(): boolean {
    return this.kept !== this.#newIndex.length;
  }

  /** The new position of sheet `index`, or `undefined` when it goes (or never was). */
  newIndex(index: number): number | undefined {
    return this.#newIndex[index];
  }

  /** The first kept sheet at or after `from` and the last at or before `to`, new positions. */
  range(from: number, to: number): [number, number] | undefined {
    let first: number | undefined;
    let last: number | undefined;
    for (let index = from; index <= to && index < this.#newIndex.length; index += 1) {
      const mapped = this.#newIndex[index];
      if (mapped === undefined) continue;
      first ??= mapped;
      last = mapped;
    }
    return first === undefined || last === undefined ? undefined : [first, last];
  }
}

/**
 * EXTERNSHEET ([MS-XLS] 2.4.105): `cXTI`, then XTIs of (iSupBook, itabFirst, itabLast). Those
 * through this workbook's own SUPBOOK (`selfSupbook`) are moved to the kept sheets; one that
 * covers only removed sheets points at a deleted sheet, so its formulas show `#REF!`. Those through
 * a removed link (`removedSupbooks`, now an add-in SUPBOOK) point at no sheet, and their indices
 * are added to `removedXtis` for the formula screening.
 */
export function renumberedExternSheet(
  data: Uint8Array,
  supbooks: { readonly self: number | undefined; readonly removed: ReadonlySet<number> },
  sheets: SheetMap,
  removedXtis: Set<number>,
): Uint8Array {
  const out = Uint8Array.from(data);
  const view = new DataView(out.buffer);
  const count = u16le(data, 0);
  for (let index = 0; index < count && 2 + (index + 1) * XTI_BYTES <= out.length; index += 1) {
    const at = 2 + index * XTI_BYTES;
    const supbook = view.getUint16(at, true);
    if (supbooks.removed.has(supbook)) {
      removedXtis.add(index);
      view.setUint16(at + 2, FIRST_SPECIAL_SHEET, true);
      view.setUint16(at + 4, FIRST_SPECIAL_SHEET, true);
      continue;
    }
    if (supbook !== supbooks.self) continue;
    const first = view.getUint16(at + 2, true);
    const last = view.getUint16(at + 4, true);
    if (first >= FIRST_SPECIAL_SHEET) continue;
    const range = sheets.range(first, last);
    view.setUint16(at + 2, range?.[0] ?? DELETED_SHEET, true);
    view.setUint16(at + 4, range?.[1] ?? DELETED_SHEET, true);
  }
  return out;
}

/** WINDOW1 ([MS-XLS] Window1): the active tab (`itabCur`, at 10) and the first tab shown (12). */
export function renumberedWindow(data: Uint8Array, sheets: SheetMap): Uint8Array {
  const out = Uint8Array.from(data);
  const view = new DataView(out.buffer);
  for (const at of [10, 12]) {
    if (at + 2 > out.length) continue;
    view.setUint16(at, sheets.newIndex(view.getUint16(at, true)) ?? 0, true);
  }
  return out;
}

/** RRTABID ([MS-XLS] RRTabId): one 2-byte revision id per sheet, in sheet order. */
export function renumberedTabIds(
  data: Uint8Array,
  sheets: SheetMap,
  total: number,
): Uint8Array | undefined {
  if (data.length !== total * 2) return undefined;
  const ids: number[] = [];
  for (let index = 0; index < total; index += 1) {
    if (sheets.newIndex(index) !== undefined) ids.push(u16le(data, index * 2));
  }
  const out = new Uint8Array(ids.length * 2);
  const view = new DataView(out.buffer);
  ids.forEach((id, index) => {
    view.setUint16(index * 2, id, true);
  });
  return out;
}

/** SUPBOOK of this workbook ([MS-XLS] 2.4.271): `ctab` is the number of sheets. */
export function renumberedSelfSupbook(data: Uint8Array, sheets: SheetMap): Uint8Array {
  const out = Uint8Array.from(data);
  new DataView(out.buffer).setUint16(0, sheets.kept, true);
  return out;
}
