import type { DocumentStatus } from '../domain/types.ts';

/**
 * The document states (`getDocument`, README "Submitting") and their transitions, in one table.
 * `pending` -> `processing` when a worker leases the document; `processing` -> `pending` when a
 * lease lapses (crash, restart) and the document is processed again; processing ends in one of
 * the terminal statuses, which never change again (deletion removes the file, not the status).
 */
export const TRANSITIONS: Readonly<Record<DocumentStatus, readonly DocumentStatus[]>> = {
  pending: ['processing', 'failed'],
  processing: ['pending', 'completed', 'rejected', 'failed'],
  completed: [],
  rejected: [],
  failed: [],
};

/** True while the document is being worked on. */
export function isInFlight(status: DocumentStatus): boolean {
  return status === 'pending' || status === 'processing';
}

/** True for `completed`, `rejected` and `failed`. */
export function isTerminal(status: DocumentStatus): boolean {
  return !isInFlight(status);
}

/** True when the state table allows `from` -> `to`. */
export function canTransition(from: DocumentStatus, to: DocumentStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Throws when the state table does not allow `from` -> `to` (a bug, never a client error). */
export function assertTransition(from: DocumentStatus, to: DocumentStatus): void {
  if (!canTransition(from, to)) {
    throw new Error(`illegal document transition ${from} -> ${to}`);
  }
}
