import type { Choices } from '../random.ts';

/** Largest input a mutation may produce; larger results are dropped. 4 MiB. */
export const MAX_FUZZ_INPUT_BYTES = 4 * 1024 * 1024;

/** What a mutation may draw on besides the input. */
export interface MutationContext {
  readonly choices: Choices;
  /** Inputs to splice from: the target's seeds, so that a recipe replays. */
  readonly donors: readonly Uint8Array[];
}

/** One named way of changing an input; `undefined` when it does not apply to these bytes. */
export interface Mutator {
  readonly name: string;
  apply(bytes: Uint8Array, context: MutationContext): Uint8Array | undefined;
}

/** Concatenates byte arrays. */
export function concat(...parts: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}
