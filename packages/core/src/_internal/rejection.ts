import type { RejectionReason } from '../reasons.ts';

/**
 * Thrown inside the engine to stop work on a file that must be rejected; caught at the engine
 * boundary and turned into a `rejected` outcome. Never escapes `disarm()`.
 */
export class Rejection extends Error {
  readonly reason: RejectionReason;
  readonly threatNames: readonly string[];

  constructor(reason: RejectionReason, detail: string, threatNames: readonly string[] = []) {
    super(detail);
    this.name = 'Rejection';
    this.reason = reason;
    this.threatNames = threatNames;
  }
}

/** Throws a {@link Rejection}; reads well in guard clauses. */
export function reject(reason: RejectionReason, detail: string): never {
  throw new Rejection(reason, detail);
}

/**
 * What a parsing library's error says about the file, for a rejection's detail. The library's own
 * checks name the fault; a structure it did not foresee fails inside its code as a TypeError,
 * RangeError or ReferenceError whose message ("Cannot read properties of undefined") speaks of
 * the library, not the file: then `unforeseen` is said instead.
 */
export function faultOf(error: unknown, unforeseen: string): string {
  if (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError
  ) {
    return unforeseen;
  }
  return error instanceof Error ? error.message : String(error);
}
