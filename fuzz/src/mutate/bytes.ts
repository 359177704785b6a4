/**
 * Byte mutators in the manner of libFuzzer and AFL: bit flips, interesting integers in both byte
 * orders, arithmetic, deletions, duplications, insertions and splices with another seed.
 */
import type { Mutator } from './types.ts';
import { concat } from './types.ts';

/** Longest run a byte mutator inserts, deletes or copies. */
const MAX_RUN_BYTES = 4_096;

const INTERESTING_8 = [0, 1, 0x7f, 0x80, 0xff, 0x10, 0x20, 0x40];
const INTERESTING_16 = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x1000, 0x200];
const INTERESTING_32 = [
  0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x10000, 0x100000, 0x7fff, 0xffff,
];

function copy(bytes: Uint8Array): Uint8Array {
  return Uint8Array.from(bytes);
}

function writeInt(
  bytes: Uint8Array,
  offset: number,
  size: number,
  value: number,
  littleEndian: boolean,
): void {
  for (let i = 0; i < size && offset + i < bytes.length; i += 1) {
    const shift = littleEndian ? i : size - 1 - i;
    bytes[offset + i] = Math.floor(value / 2 ** (8 * shift)) & 0xff;
  }
}

/** The byte mutators, for every target. */
export const BYTE_MUTATORS: readonly Mutator[] = [
  {
    name: 'bytes.flip-bit',
    apply(bytes, { choices }) {
      if (bytes.length === 0) return undefined;
      const out = copy(bytes);
      const at = choices.below(out.length);
      out[at] = (out[at] ?? 0) ^ (1 << choices.below(8));
      return out;
    },
  },
  {
    name: 'bytes.interesting-8',
    apply(bytes, { choices }) {
      if (bytes.length === 0) return undefined;
      const out = copy(bytes);
      out[choices.below(out.length)] = choices.pick(INTERESTING_8);
      return out;
    },
  },
  {
    name: 'bytes.interesting-16',
    apply(bytes, { choices }) {
      if (bytes.length < 2) return undefined;
      const out = copy(bytes);
      writeInt(
        out,
        choices.below(out.length - 1),
        2,
        choices.pick(INTERESTING_16),
        choices.chance(0.5),
      );
      return out;
    },
  },
  {
    name: 'bytes.interesting-32',
    apply(bytes, { choices }) {
      if (bytes.length < 4) return undefined;
      const out = copy(bytes);
      writeInt(
        out,
        choices.below(out.length - 3),
        4,
        choices.pick(INTERESTING_32),
        choices.chance(0.5),
      );
      return out;
    },
  },
  {
    name: 'bytes.arithmetic',
    apply(bytes, { choices }) {
      if (bytes.length === 0) return undefined;
      const out = copy(bytes);
      const at = choices.below(out.length);
      out[at] = ((out[at] ?? 0) + choices.between(-35, 35)) & 0xff;
      return out;
    },
  },
  {
    name: 'bytes.delete',
    apply(bytes, { choices }) {
      if (bytes.length < 2) return undefined;
      const start = choices.below(bytes.length);
      const length = 1 + choices.below(Math.min(MAX_RUN_BYTES, bytes.length - start));
      return concat(bytes.subarray(0, start), bytes.subarray(start + length));
    },
  },
  {
    name: 'bytes.duplicate',
    apply(bytes, { choices }) {
      if (bytes.length === 0) return undefined;
      const start = choices.below(bytes.length);
      const length = 1 + choices.below(Math.min(MAX_RUN_BYTES, bytes.length - start));
      const at = choices.below(bytes.length + 1);
      return concat(
        bytes.subarray(0, at),
        bytes.subarray(start, start + length),
        bytes.subarray(at),
      );
    },
  },
  {
    name: 'bytes.insert',
    apply(bytes, { choices }) {
      const at = choices.below(bytes.length + 1);
      const length = 1 + choices.below(64);
      const run = choices.chance(0.5)
        ? choices.bytes(length)
        : new Uint8Array(length).fill(choices.pick(INTERESTING_8));
      return concat(bytes.subarray(0, at), run, bytes.subarray(at));
    },
  },
  {
    name: 'bytes.truncate',
    apply(bytes, { choices }) {
      return bytes.length < 2 ? undefined : bytes.slice(0, choices.below(bytes.length));
    },
  },
  {
    name: 'bytes.overwrite-within',
    apply(bytes, { choices }) {
      if (bytes.length < 2) return undefined;
      const out = copy(bytes);
      const from = choices.below(out.length);
      const length = 1 + choices.below(Math.min(MAX_RUN_BYTES, out.length - from));
      out.copyWithin(choices.below(out.length), from, from + length);
      return out;
    },
  },
  {
    name: 'bytes.splice',
    apply(bytes, { choices, donors }) {
      if (donors.length === 0) return undefined;
      const donor = choices.pick(donors);
      if (donor.length === 0) return undefined;
      const at = choices.below(bytes.length + 1);
      const from = choices.below(donor.length);
      const length = 1 + choices.below(Math.min(MAX_RUN_BYTES, donor.length - from));
      const cut = choices.chance(0.5) ? at : Math.min(bytes.length, at + length);
      return concat(
        bytes.subarray(0, at),
        donor.subarray(from, from + length),
        bytes.subarray(cut),
      );
    },
  },
];
