export { createFailpoints, FAILPOINT_ENV, FAILPOINT_STEPS, parseFailpoint } from './failpoints.ts';
export type { Failpoint, Failpoints, FailpointStep, WorkerFailpoint } from './failpoints.ts';
