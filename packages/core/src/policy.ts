import type { FindingKind } from './findings.ts';

/** What to do with a finding: `strip` removes it and rebuilds (default), `reject` refuses the file. */
export type PolicyAction = 'strip' | 'reject';

/**
 * Per finding kind, `strip` (default) or `reject`. With `{ 'vba-macro': 'reject' }` a document
 * carrying macros is rejected with `policy_violation` instead of being returned without them.
 */
export type Policy = Readonly<Partial<Record<FindingKind, PolicyAction>>>;
