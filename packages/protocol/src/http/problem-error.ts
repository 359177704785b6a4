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

/** The 401 of a valid credential whose organisation no longer exists. */
export function organisationGone(): ProblemError {
  const detail = 'The credential belongs to no current organisation.';
  return new ProblemError('Unauthorized', {
    detail,
    headers: {
      'WWW-Authenticate': `Bearer realm="disarm", error="invalid_token", error_description="${detail}"`,
    },
  });
}
