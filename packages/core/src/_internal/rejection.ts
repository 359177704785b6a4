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
