import { writeSync } from 'node:fs';

/**
 * Test-mode crash points (README "Crash safety"): `DISARM_FAILPOINT=<step>` makes a
 * `disarm serve --test-mode` process kill itself with SIGKILL the first time a document passes
 * that step, so a test can prove what a crash there leaves behind and that a restart on the same
 * data puts it right. Refused outside test mode. The protocol reaches its steps through
 * `DisarmApiConfig.failpoint`; the dispatcher and the sweeper through their options.
 */

/** The environment variable naming the step to die at. */
export const FAILPOINT_ENV = 'DISARM_FAILPOINT';

/** Where a process can be made to die, in the order a document passes them. */
export const FAILPOINT_STEPS = [
  // API: some bytes of the multipart or raw body are in the intake blob, the rest are not.
  'intake-partial',
  // API: the intake blob is stored; the document row is not.
  'intake-stored',
  // API: the document row (and its charge, and its Idempotency-Key record) committed; no response.
  'document-accepted',
  // API: a staged upload's row (and its Idempotency-Key record) committed; no response.
  'upload-created',
  // Worker: the document is leased, the engine has not answered.
  'worker-leased',
  // Worker: the cleaned file is stored; the document is not ended (`finishDocument`).
  'output-stored',
  // Worker: the document is ended; its intake blob is not deleted yet.
  'document-finished',
  // Sweeper: a blob is deleted; the store does not record it yet (`markSwept`).
  'sweep-deleted',
] as const;

/** One of {@link FAILPOINT_STEPS}. */
export type FailpointStep = (typeof FAILPOINT_STEPS)[number];

/** The steps the dispatcher reaches. */
export type WorkerFailpoint = Extract<
  FailpointStep,
  'worker-leased' | 'output-stored' | 'document-finished'
>;

/** Called at each step; ends the process at the armed one. */
export type Failpoint<Step extends FailpointStep = FailpointStep> = (step: Step) => void;

/**
 * The step `value` names.
 * @throws {TypeError} for anything else, listing the steps.
 */
export function parseFailpoint(value: string): FailpointStep {
  const step = FAILPOINT_STEPS.find((candidate) => candidate === value);
  if (step === undefined) {
    throw new TypeError(
      `${FAILPOINT_ENV} must be one of ${FAILPOINT_STEPS.join(', ')} (got ${JSON.stringify(value)})`,
    );
  }
  return step;
}

/** The failpoints of one test-mode process; see {@link createFailpoints}. */
export interface Failpoints {
  /** Called at each step: ends the process when `step` is the armed one. */
  readonly reach: Failpoint;
  /** Arms `step` (replacing the armed one): a test harness arms the next crash this way. */
  arm(step: FailpointStep): void;
}

/**
 * The failpoints of a test-mode process, armed at `armed` (or at nothing until {@link
 * Failpoints.arm}). Reaching the armed step writes one line to stderr (synchronously, so it is
 * not lost) and sends this process SIGKILL: no handler runs, no buffer is flushed, nothing is
 * released, exactly as when the kernel or an operator kills it. Every other step passes.
 */
export function createFailpoints(
  armed?: FailpointStep,
  kill: () => void = () => process.kill(process.pid, 'SIGKILL'),
): Failpoints {
  let current = armed;
  return {
    reach(step) {
      if (step !== current) return;
      writeSync(2, `disarm: failpoint ${step} reached: killing this process (test mode)\n`);
      kill();
    },
    arm(step) {
      current = step;
    },
  };
}
