import type { ProblemOptions } from './problem-response.ts';
import type { ProblemCode } from './problems.ts';

/** Thrown by a handler to answer with a catalogue problem. */
export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly options: ProblemOptions;

  constructor(code: ProblemCode, options: ProblemOptions = {}) {
    super(options.detail ?? code);
    this.name = 'ProblemError';
    this.code = code;
    this.options = options;
  }
}
