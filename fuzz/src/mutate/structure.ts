/**
 * Structure-aware mutators over a {@link Layout}: drop, duplicate, reorder and move parts among
 * their siblings, corrupt lengths, offsets, counts and dimensions with the values that break
 * readers, and insert the format's own keywords at part boundaries.
 */
import type { Choices } from '../random.ts';
import type { Describe, Field, Layout, Part } from '../layout/types.ts';
import type { Mutator } from './types.ts';
import { concat } from './types.ts';

/** Chance that a structural mutation repairs checksums afterwards (when the format has them). */
const FIXUP_CHANCE = 0.75;

function siblingsOf(layout: Layout, part: Part): Part[] {
  return layout.parts.filter((other) => other.group === part.group && other !== part);
}

function readField(bytes: Uint8Array, field: Field): number {
  if (field.encoding === 'ascii') {
    return Number(
      Buffer.from(bytes.subarray(field.offset, field.offset + field.size)).toString('latin1'),
    );
  }
  let value = 0;
  for (let i = 0; i < field.size; i += 1) {
    const shift = field.encoding === 'le' ? i : field.size - 1 - i;
    value += (bytes[field.offset + i] ?? 0) * 2 ** (8 * shift);
  }
  return value;
}

/** The values worth trying in a field of this kind, given its value and the file's length. */
function candidates(field: Field, value: number, fileBytes: number): number[] {
  const max = field.encoding === 'ascii' ? 2 ** 53 - 1 : 2 ** (8 * field.size) - 1;
  const common = [0, 1, value + 1, value - 1, max, Math.floor(max / 2), Math.floor(max / 2) + 1];
  switch (field.kind) {
    case 'length':
      return [
        ...common,
        value * 2,
        fileBytes,
        fileBytes + 1,
        Math.floor(value / 2),
        0x7fff,
        0xffff,
        0x10000,
      ];
    case 'offset':
      return [...common, fileBytes - 1, fileBytes, fileBytes + 1, max - 1, max - 2, 0x7fffffff];
    case 'count':
      return [...common, value * 2, value + 1000, 0xffff, 0x7fffffff, 1_000_000];
    case 'dimension':
      return [...common, value * 2, 0x7fff, 0xffff, 16_384, 65_536, 100_000, 0x7fffffff];
    case 'value':
      return [...common, value ^ 1, value ^ 0x80, 2, 3, 4, 7, 8, 0x7f, 0x80, 0xff];
  }
}

function writeField(bytes: Uint8Array, field: Field, value: number, choices: Choices): Uint8Array {
  if (field.encoding === 'ascii') {
    const text = choices.chance(0.15)
      ? choices.pick(['-1', '-0', '1e9', '99999999999999999999', '0.5', '+1', ''])
      : String(Math.max(0, value));
    return concat(
      bytes.subarray(0, field.offset),
      Buffer.from(text, 'latin1'),
      bytes.subarray(field.offset + field.size),
    );
  }
  const out = Uint8Array.from(bytes);
  const max = 2 ** (8 * field.size);
  const wrapped = ((value % max) + max) % max;
  for (let i = 0; i < field.size && field.offset + i < out.length; i += 1) {
    const shift = field.encoding === 'le' ? i : field.size - 1 - i;
    out[field.offset + i] = Math.floor(wrapped / 2 ** (8 * shift)) & 0xff;
  }
  return out;
}

function finish(layout: Layout, bytes: Uint8Array, choices: Choices): Uint8Array {
  return layout.fixup && choices.chance(FIXUP_CHANCE) ? layout.fixup(bytes) : bytes;
}

/**
 * The structure-aware mutators of one format, named `<prefix>.<operation>`. Each reads the layout
 * of the bytes it is given, so it applies to whatever an earlier mutation left.
 */
export function structureMutators(prefix: string, describe: Describe): Mutator[] {
  const withLayout =
    (operation: (bytes: Uint8Array, layout: Layout, choices: Choices) => Uint8Array | undefined) =>
    (bytes: Uint8Array, { choices }: { choices: Choices }): Uint8Array | undefined => {
      const layout = describe(bytes);
      if (!layout) return undefined;
      const out = operation(bytes, layout, choices);
      return out === undefined ? undefined : finish(layout, out, choices);
    };
  return [
    {
      name: `${prefix}.drop-part`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.parts.length === 0) return undefined;
        const part = choices.pick(layout.parts);
        return concat(bytes.subarray(0, part.start), bytes.subarray(part.end));
      }),
    },
    {
      name: `${prefix}.duplicate-part`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.parts.length === 0) return undefined;
        const part = choices.pick(layout.parts);
        const siblings = siblingsOf(layout, part);
        // Next to itself, or before another sibling.
        const at =
          siblings.length > 0 && choices.chance(0.5) ? choices.pick(siblings).start : part.end;
        const copy = bytes.slice(part.start, part.end);
        const times = choices.chance(0.1) ? choices.between(2, 64) : 1;
        return concat(
          bytes.subarray(0, at),
          ...Array.from({ length: times }, () => copy),
          bytes.subarray(at),
        );
      }),
    },
    {
      name: `${prefix}.swap-parts`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.parts.length === 0) return undefined;
        const first = choices.pick(layout.parts);
        const siblings = siblingsOf(layout, first).filter(
          (other) => other.end <= first.start || other.start >= first.end,
        );
        if (siblings.length === 0) return undefined;
        const second = choices.pick(siblings);
        const [a, b] = first.start < second.start ? [first, second] : [second, first];
        return concat(
          bytes.subarray(0, a.start),
          bytes.subarray(b.start, b.end),
          bytes.subarray(a.end, b.start),
          bytes.subarray(a.start, a.end),
          bytes.subarray(b.end),
        );
      }),
    },
    {
      name: `${prefix}.move-part`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.parts.length === 0) return undefined;
        const part = choices.pick(layout.parts);
        const rest = concat(bytes.subarray(0, part.start), bytes.subarray(part.end));
        const at = choices.below(rest.length + 1);
        return concat(
          rest.subarray(0, at),
          bytes.subarray(part.start, part.end),
          rest.subarray(at),
        );
      }),
    },
    {
      name: `${prefix}.corrupt-field`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.fields.length === 0) return undefined;
        const field = choices.pick(layout.fields);
        if (field.offset + field.size > bytes.length) return undefined;
        const value = readField(bytes, field);
        return writeField(
          bytes,
          field,
          choices.pick(candidates(field, value, bytes.length)),
          choices,
        );
      }),
    },
    {
      name: `${prefix}.nudge-field`,
      apply: withLayout((bytes, layout, choices) => {
        if (layout.fields.length === 0) return undefined;
        const field = choices.pick(layout.fields);
        if (field.offset + field.size > bytes.length) return undefined;
        return writeField(
          bytes,
          field,
          readField(bytes, field) + choices.between(-16, 16),
          choices,
        );
      }),
    },
    {
      name: `${prefix}.insert-token`,
      apply: withLayout((bytes, layout, choices) => {
        const dictionary = layout.dictionary ?? [];
        if (dictionary.length === 0) return undefined;
        const token = choices.pick(dictionary);
        const boundaries = layout.parts.flatMap((part) => [part.start, part.end]);
        const at =
          boundaries.length > 0 && choices.chance(0.8)
            ? choices.pick(boundaries)
            : choices.below(bytes.length + 1);
        return concat(bytes.subarray(0, at), token, bytes.subarray(at));
      }),
    },
  ];
}
