/**
 * Compares what the engine did with a corpus file against what the manifest expects, and sorts
 * the difference by how much it matters.
 */
import type { JobResult } from '@disarm/node';

import type { ManifestRow, OutcomeLabel } from './manifest.ts';
import type { Verification } from './verify.ts';

/**
 * - `match`: the expected outcome, and a cleaned copy opens in an independent reader.
 * - `unsafe`: cleaned although the file should have been refused for what it is or carries
 *   (threat, policy, password, size), a cleaned copy that still carries metadata (an image tag
 *   exiftool reads outside the structural allowlist) or is byte-equal to its input, or an
 *   independent reader (a virus scanner, a `qpdf --json` walk) still finds active content in the
 *   copy — the one verdict that means hostile content got through.
 * - `broken`: cleaned, but the independent reader cannot open the copy (a fidelity bug).
 * - `unbuilt`: the format's rebuilder is not in this engine version yet (the file failed closed).
 * - `differs`: any other difference (another reason, or a stricter or more lenient decoder).
 */
export type Verdict = 'match' | 'unsafe' | 'broken' | 'unbuilt' | 'differs';

export const VERDICTS: readonly Verdict[] = ['match', 'unsafe', 'broken', 'unbuilt', 'differs'];

/** Reasons that say "this file must not come back", whatever a decoder thinks of it. */
const MUST_REFUSE = new Set([
  'rejected:threat_detected',
  'rejected:policy_violation',
  'rejected:password_protected',
  'rejected:file_too_large',
]);

const NOT_YET_SUPPORTED = /not yet supported/i;

/** The manifest's label for a result: `completed-cleaned`, `rejected:<reason>`, `failed:<reason>`. */
export function labelOf(result: JobResult): OutcomeLabel {
  return result.status === 'cleaned' ? 'completed-cleaned' : `${result.status}:${result.reason}`;
}

/** The verdict on one file; `verification` is present for cleaned results. */
export function judge(
  row: ManifestRow,
  result: JobResult,
  verification: Verification | undefined,
): Verdict {
  if (result.status === 'failed' && NOT_YET_SUPPORTED.test(result.detail)) return 'unbuilt';
  if (result.status === 'cleaned') {
    if (MUST_REFUSE.has(row.expected) || verification?.unsafe === true) return 'unsafe';
    if ((verification?.leaks?.length ?? 0) > 0) return 'unsafe';
    if ((verification?.activeContent?.length ?? 0) > 0) return 'unsafe';
    if (verification?.ok === false) return 'broken';
    if (verification?.textDiffers === true) return 'differs';
  }
  return labelOf(result) === row.expected ? 'match' : 'differs';
}
