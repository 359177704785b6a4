import { StorageUnavailableError } from '@disarm/protocol';

/**
 * S3 error codes that say the service cannot serve right now, whatever the request: it asks to
 * slow down or failed inside (https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html),
 * or the SDK gave up waiting. The SDK has already retried them (three attempts by default).
 */
const UNAVAILABLE_ERROR_NAMES: ReadonlySet<string> = new Set([
  'SlowDown',
  'InternalError',
  'ServiceUnavailable',
  'RequestTimeout',
  'TimeoutError',
]);

/** Node error codes of a bucket endpoint that cannot be reached or dropped the connection. */
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Lowest HTTP status of a bucket answering that it is failing (5xx). */
const SERVER_ERROR_STATUS = 500;

/**
 * `error` as the blob store port throws it: {@link StorageUnavailableError} when the bucket is
 * failing (5xx, `SlowDown`) or out of reach, the error itself otherwise (a 403 of bad
 * credentials, a missing bucket: configuration faults, not outages).
 */
export function toBlobStoreError(error: unknown): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const { name, code, cause, $metadata } = error as {
    name?: unknown;
    code?: unknown;
    cause?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const status = $metadata?.httpStatusCode;
  const causeCode = (cause as { code?: unknown } | null | undefined)?.code;
  const unavailable =
    (typeof name === 'string' && UNAVAILABLE_ERROR_NAMES.has(name)) ||
    (typeof status === 'number' && status >= SERVER_ERROR_STATUS) ||
    (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) ||
    (typeof causeCode === 'string' && NETWORK_ERROR_CODES.has(causeCode));
  if (!unavailable) return error;
  const reason =
    typeof code === 'string' ? code : typeof name === 'string' ? name : `HTTP ${String(status)}`;
  return new StorageUnavailableError('blob-store', reason, { cause: error });
}
