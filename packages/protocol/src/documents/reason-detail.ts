import type { RejectionReason } from '@disarm/core';

import type { FailureReason } from '../domain/types.ts';
import type { DocumentResult } from '../ports.ts';

/** Longest `reasonDetail`, in characters; a longer engine sentence is cut with an ellipsis. */
export const MAX_REASON_DETAIL_CHARS = 500;

/**
 * What a rejection means when the engine gave no sentence (documents stored before
 * `reasonDetail` existed), one per `reason` code of the envelope (`getDocument`).
 */
const REJECTION_SENTENCES: Readonly<Record<RejectionReason, string>> = {
  threat_detected: 'Active content that cannot be removed was found (see threatNames).',
  password_protected: 'The file is encrypted or password protected, so it cannot be rebuilt.',
  invalid_file: 'The file is corrupt or not a valid file of its declared type.',
  unsupported_file_type: 'The file, or a file inside it, is not a supported type.',
  policy_violation: 'The file holds content the organisation’s policy does not permit.',
  file_too_large: 'The rebuilt or expanded content exceeds the plan’s size ceiling.',
};

/**
 * The only sentences a failed document ever shows: a failure is the service's fault, and what
 * went wrong inside (a worker's error, a path, a stack) stays in the logs.
 */
const FAILURE_SENTENCES: Readonly<Record<FailureReason, string>> = {
  timeout:
    'Processing did not finish within the time budget; the charge was credited back. Submitting the file again may succeed.',
  internal_error:
    'The service failed while processing this file; the charge was credited back. Submit it again; if it keeps failing, contact the operator.',
};

/** C0 and C1 controls, and the bidirectional and zero-width marks that can disguise text. */
// eslint-disable-next-line no-control-regex -- control characters are what we remove
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]+/g;
/**
 * Absolute paths under a server's usual roots (and Windows drive paths): an engine message that
 * quotes a decoder's error must not show where the service keeps its files. A member name the
 * engine quotes (`member "/tmp/x.png" has an absolute path`) is the caller's own data and stays
 * (the first alternative matches it whole, so the path inside is not replaced).
 */
const SERVER_PATH =
  /(member "(?:[^"\\]|\\.)*")|(?:\/(?:tmp|var|home|root|usr|opt|srv|run|mnt|proc|dev|etc|private|Users|work|data|app|nix)\/|[A-Za-z]:\\)[^\s"'`<>|]*/g;

/**
 * The caller's `reasonDetail` of a finished document that was not completed: for a rejection,
 * the engine's own sentence (what was found, which member, which limit), made safe; for a
 * failure, the fixed sentence of its reason, never the internal detail.
 *
 * Made safe: control, bidirectional and zero-width characters become spaces, runs of spaces
 * collapse, absolute server paths become `[path]`, it starts with a capital and ends with a full
 * stop, and it is at most {@link MAX_REASON_DETAIL_CHARS} characters.
 */
export function toReasonDetail(result: Exclude<DocumentResult, { status: 'completed' }>): string {
  if (result.status === 'failed') return FAILURE_SENTENCES[result.reason];
  const cleaned = result.detail
    .replace(CONTROL, ' ')
    .replace(SERVER_PATH, (path, member: string | undefined) => member ?? '[path]');
  const text = cleaned.replace(/\s+/g, ' ').trim();
  if (text === '') return REJECTION_SENTENCES[result.reason];
  const sentence = `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
  const ended = /[.!?…]$/.test(sentence) ? sentence : `${sentence}.`;
  // Counted in code points, as JSON Schema's maxLength counts, so no surrogate pair is split.
  const characters = Array.from(ended);
  return characters.length <= MAX_REASON_DETAIL_CHARS
    ? ended
    : `${characters
        .slice(0, MAX_REASON_DETAIL_CHARS - 1)
        .join('')
        .trimEnd()}…`;
}

/** The sentence for `reason` when the store holds none (documents from before the field). */
export function fallbackReasonDetail(reason: RejectionReason | FailureReason): string {
  return reason === 'timeout' || reason === 'internal_error'
    ? FAILURE_SENTENCES[reason]
    : REJECTION_SENTENCES[reason];
}
