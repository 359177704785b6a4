import { PROBLEMS } from './problems.ts';
import type { ProblemCode } from './problems.ts';
import { bufferedResponse } from './buffered-response.ts';

/** Options of {@link problemResponse}. */
export interface ProblemOptions {
  readonly detail?: string;
  /** The request path the problem is about (`instance`). */
  readonly instance?: string;
  /** Extension members (`errors`, `maxSizeBytes`, ...). */
  readonly extensions?: Readonly<Record<string, unknown>>;
  readonly headers?: HeadersInit;
  /**
   * The status when the catalogue gives a code two (NotProvisioned: 403 on submissions, 404 on
   * GET /v1/account).
   */
  readonly status?: number;
}

/** Base of every problem `type` link: `{publicBaseUrl}/problems/{code}`. */
export function problemTypeUrl(publicBaseUrl: string, code: ProblemCode): string {
  return `${publicBaseUrl}/problems/${code}`;
}

/**
 * An RFC 9457 `application/problem+json` response for `code`, from the one catalogue table.
 */
export function problemResponse(
  publicBaseUrl: string,
  code: ProblemCode,
  options: ProblemOptions = {},
): Response {
  const problem = PROBLEMS[code];
  const status = options.status ?? problem.status;
  const body: Record<string, unknown> = {
    type: problemTypeUrl(publicBaseUrl, code),
    title: problem.title,
    status,
    code,
    detail: options.detail ?? problem.description,
    ...(options.instance !== undefined ? { instance: options.instance } : {}),
    ...options.extensions,
  };
  const headers = new Headers(options.headers);
  headers.set('Content-Type', 'application/problem+json');
  headers.set('Cache-Control', 'no-store');
  return bufferedResponse(JSON.stringify(body), { status, headers });
}
