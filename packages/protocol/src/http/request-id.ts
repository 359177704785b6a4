import { randomBase32 } from '../domain/ids.ts';
import type { Logger } from '../config.ts';
import type { Random } from '../ports.ts';

/** Header that carries a request's id, in both directions. */
export const REQUEST_ID_HEADER = 'X-Request-Id';
/** Longest request id taken from a caller; a longer one is replaced. */
export const MAX_REQUEST_ID_CHARS = 128;
/**
 * What a caller's id may hold: RFC 3986 unreserved characters, so it is safe in a log line, a
 * header and a URI fragment without escaping (UUIDs, ULIDs, W3C trace ids, `req_…` all fit).
 */
const REQUEST_ID = /^[A-Za-z0-9._~-]+$/;
/** Random characters of a generated id (100 bits). */
const GENERATED_ID_CHARS = 20;

/**
 * The id of `request`: its `X-Request-Id` when that is 1 to {@link MAX_REQUEST_ID_CHARS}
 * unreserved characters (so a proxy's or client's id carries through), otherwise a new
 * `req_` id. A malformed value is replaced, never echoed: it would land in logs and headers.
 */
export function requestIdOf(request: Request, random: Random): string {
  const given = request.headers.get(REQUEST_ID_HEADER);
  if (given !== null && given.length <= MAX_REQUEST_ID_CHARS && REQUEST_ID.test(given)) {
    return given;
  }
  return `req_${randomBase32(random, GENERATED_ID_CHARS)}`;
}

/**
 * The problem `instance` of one request (RFC 9457 3.1.5: it identifies the occurrence): the
 * request path, with the request id as the fragment, e.g. `/v1/documents#req_8k2m…`. The path
 * says where, the id finds the log lines of that very request.
 */
export function problemInstance(path: string, requestId: string): string {
  return `${toUriPath(path)}#${requestId}`;
}

/**
 * `path` as an RFC 3986 path (3.3): WHATWG URL parsing leaves `%` without two hex digits, and
 * `[`, `]`, `|`, `^` and `\\` in a path as sent, none of which a URI reference may hold (found by
 * `npm run fuzz -- http`: `GET /problems/%ZZ` answered an `instance` that was no URI). Those are
 * percent-encoded; a path that is already valid is returned unchanged.
 */
function toUriPath(path: string): string {
  return path
    .replace(/%(?![0-9A-Fa-f]{2})/g, '%25')
    .replace(/[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/gu, (char) => encodeURIComponent(char));
}

/** `logger` with `requestId` on every line. */
export function withRequestId(logger: Logger, requestId: string): Logger {
  const debug = logger.debug?.bind(logger);
  return {
    ...(debug === undefined
      ? {}
      : {
          debug: (object, message) => {
            debug({ requestId, ...object }, message);
          },
        }),
    info: (object, message) => {
      logger.info({ requestId, ...object }, message);
    },
    warn: (object, message) => {
      logger.warn({ requestId, ...object }, message);
    },
    error: (object, message) => {
      logger.error({ requestId, ...object }, message);
    },
  };
}
