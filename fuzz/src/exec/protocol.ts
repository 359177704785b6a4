/** Messages between the fuzz campaign (parent) and its executor process (child). */

/** One HTTP request, as plain data that crosses the IPC channel. */
export interface HttpRequestSpec {
  /** `api` or `storage`: which of the two fetch handlers receives it. */
  readonly origin: 'api' | 'storage';
  readonly method: string;
  /** Path and query, e.g. `/v1/documents?wait=true`. */
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: Uint8Array;
}

/** What one execution is asked to run. */
export type Job =
  | { readonly kind: 'engine'; readonly fileName: string; readonly bytes: Uint8Array }
  | { readonly kind: 'http'; readonly requests: readonly HttpRequestSpec[] };

/** What went wrong, by kind; each is a finding. */
export type FindingKind =
  /** The executor process died (a native crash, an abort, an uncaught exception). */
  | 'crash'
  /** No answer within the budget and its grace: the process was killed. */
  | 'hang'
  /** Peak RSS grew past the bound while running the input. */
  | 'memory'
  /** `disarm()` threw something other than a `DisarmError`. */
  | 'unexpected-error'
  /** `disarm()` failed with `ERR_INTERNAL` (a bug reached by input). */
  | 'internal-error'
  /** Verify before release refused a rebuilt output (`ERR_VERIFY_FAILED`). */
  | 'verify-failed'
  /** `disarm()` answered, but later than its time budget allows. */
  | 'over-budget'
  /** The outcome is not one the API defines (unknown reason, missing detail, no bytes). */
  | 'bad-outcome'
  /** A cleaned output disarmed again had findings, failed, or came back different. */
  | 'idempotence'
  /** The HTTP front answered 500. */
  | 'http-500'
  /** The HTTP front answered something the OpenAPI document does not describe. */
  | 'http-contract'
  /** The HTTP fetch handler threw or its body stream failed. */
  | 'http-exception';

/** The verdict on one execution. */
export type Verdict =
  | { readonly ok: true; readonly outcome: string }
  | {
      readonly ok: false;
      readonly kind: FindingKind;
      readonly message: string;
      readonly stack?: string;
    };

/** Parent -> child. */
export interface RunMessage {
  readonly type: 'run';
  readonly id: number;
  readonly job: Job;
}

/** Child -> parent. */
export type ChildMessage =
  | { readonly type: 'ready'; readonly rssBytes: number }
  | {
      readonly type: 'result';
      readonly id: number;
      readonly verdict: Verdict;
      /** Block keys this execution covered that this child had not covered before. */
      readonly newBlocks: readonly string[];
      readonly durationMs: number;
      /** Time spent taking and reading the block coverage after the job. */
      readonly coverageMs: number;
      /** The process's peak RSS so far (`process.resourceUsage().maxRSS`). */
      readonly peakRssBytes: number;
      readonly heapUsedBytes: number;
      /** `heapUsedBytes` was read right after a forced collection (every few hundred jobs). */
      readonly collected: boolean;
    };

/** How the child is configured, through its environment. */
export const COVERAGE_SCOPE_ENV = 'DISARM_FUZZ_COVERAGE';

/**
 * Set to `1` for the executor's own tests: an engine job whose file is named
 * `failpoint-crash`, `failpoint-hang` or `failpoint-memory` aborts the process, never answers, or
 * grows the RSS past the bound, so each way an execution can go wrong is tested deterministically.
 */
export const FAILPOINTS_ENV = 'DISARM_FUZZ_FAILPOINTS';
