import { StorageUnavailableError } from '@disarm/protocol';
import type { Logger } from '@disarm/protocol';

/**
 * Logs a failed background step (a lease, a renewal, a sweep) with its error as `err`: at
 * `error`, or only at `debug` when the error is `StorageUnavailableError` — the process's storage
 * watch logs an outage once when it starts and once when it ends, so that a database down for a
 * minute is two lines, not one per poll.
 */
export function logFault(
  logger: Logger,
  error: unknown,
  fields: Record<string, unknown>,
  message: string,
): void {
  if (error instanceof StorageUnavailableError) {
    logger.debug?.({ err: error, ...fields }, message);
    return;
  }
  logger.error({ err: error, ...fields }, message);
}
