import type { StorageUnavailableError } from '../ports.ts';
import type { ProblemOptions } from './problem-response.ts';

/**
 * `Retry-After` of a 503 answered because storage is unavailable: 15 seconds. Long enough that a
 * crowd of retrying clients does not hammer a database that is restarting (a PostgreSQL failover
 * takes seconds to tens of seconds), short enough that a client retries soon after it is back.
 */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 15;

/**
 * The one mapping of {@link StorageUnavailableError} to a problem, used by the API and the
 * storage origin alike: 503 `ServiceUnavailable` with `Retry-After`. The detail names which
 * storage failed, never why (paths, hosts and driver messages stay in the logs).
 */
export function unavailableProblem(error: StorageUnavailableError): ProblemOptions {
  return {
    detail:
      error.storage === 'state-store'
        ? 'The service cannot reach its database just now. Retry after the time in Retry-After, with the same Idempotency-Key if you sent one.'
        : 'The service cannot store files just now. Retry after the time in Retry-After, with the same Idempotency-Key if you sent one.',
    headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
  };
}
