/**
 * What a structure-aware mutator knows of a file: its parts (records, chunks, objects, members,
 * elements) that may be dropped, duplicated or reordered among their siblings, and its fields
 * (lengths, offsets, counts, dimensions) that may be corrupted in place.
 */

/** What a field means, which decides the values a corruption tries. */
export type FieldKind = 'length' | 'offset' | 'count' | 'dimension' | 'value';

/** How a field is written. `ascii` is a run of decimal digits in a text format. */
export type FieldEncoding = 'le' | 'be' | 'ascii';

/** One field of the file, at a byte offset. */
export interface Field {
  readonly offset: number;
  /** Bytes the field takes (for `ascii`, the digits). */
  readonly size: number;
  readonly encoding: FieldEncoding;
  readonly kind: FieldKind;
}

/** One part of the file: `[start, end)`. Parts of one `group` are siblings. */
export interface Part {
  readonly start: number;
  readonly end: number;
  readonly group: string;
}

/** The layout of one file as a describer reads it. */
export interface Layout {
  readonly parts: readonly Part[];
  readonly fields: readonly Field[];
  /**
   * Repairs checksums after a mutation (PNG chunk CRCs), so that the mutated structure is read
   * past its integrity check. Applied to some mutations only: a bad checksum is a case too.
   */
  readonly fixup?: (bytes: Uint8Array) => Uint8Array;
  /** Tokens worth inserting between parts (active content, format keywords). */
  readonly dictionary?: readonly Uint8Array[];
}

/** Reads the layout of a file, or `undefined` when the bytes are not that format. */
export type Describe = (bytes: Uint8Array) => Layout | undefined;

/** A cap on the parts and fields any describer lists, so a large input cannot stall it. */
export const MAX_LAYOUT_ITEMS = 4_096;

/** Collects parts and fields up to {@link MAX_LAYOUT_ITEMS} each. */
export class LayoutBuilder {
  readonly parts: Part[] = [];
  readonly fields: Field[] = [];

  /** Adds a part (ignored when empty or past the cap). */
  part(start: number, end: number, group: string): void {
    if (this.parts.length < MAX_LAYOUT_ITEMS && start >= 0 && end > start) {
      this.parts.push({ start, end, group });
    }
  }

  /** Adds a field (ignored past the cap). */
  field(offset: number, size: number, encoding: FieldEncoding, kind: FieldKind): void {
    if (this.fields.length < MAX_LAYOUT_ITEMS && offset >= 0) {
      this.fields.push({ offset, size, encoding, kind });
    }
  }

  /** True once both lists are full: describers stop walking. */
  isFull(): boolean {
    return this.parts.length >= MAX_LAYOUT_ITEMS && this.fields.length >= MAX_LAYOUT_ITEMS;
  }

  /** The layout collected. */
  build(extra: Pick<Layout, 'fixup' | 'dictionary'> = {}): Layout {
    return { parts: this.parts, fields: this.fields, ...extra };
  }
}

/** Little-endian 16-bit read, `undefined` past the end. */
export function u16le(bytes: Uint8Array, offset: number): number | undefined {
  return offset + 2 <= bytes.length
    ? (bytes[offset] ?? 0) | ((bytes[offset + 1] ?? 0) << 8)
    : undefined;
}

/** Little-endian 32-bit read, `undefined` past the end. */
export function u32le(bytes: Uint8Array, offset: number): number | undefined {
  const low = u16le(bytes, offset);
  const high = u16le(bytes, offset + 2);
  return low === undefined || high === undefined ? undefined : low + high * 0x10000;
}

/** Big-endian 16-bit read, `undefined` past the end. */
export function u16be(bytes: Uint8Array, offset: number): number | undefined {
  return offset + 2 <= bytes.length
    ? ((bytes[offset] ?? 0) << 8) | (bytes[offset + 1] ?? 0)
    : undefined;
}

/** Big-endian 32-bit read, `undefined` past the end. */
export function u32be(bytes: Uint8Array, offset: number): number | undefined {
  const high = u16be(bytes, offset);
  const low = u16be(bytes, offset + 2);
  return low === undefined || high === undefined ? undefined : high * 0x10000 + low;
}

/** The four ASCII characters at `offset`. */
export function fourcc(bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(...bytes.subarray(offset, offset + 4));
}
