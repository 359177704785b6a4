import {
  CLIENT_CLOSED_REQUEST_STATUS,
  clientDisconnectOf,
  REQUEST_ID_HEADER,
} from '@disarm/protocol';
import type { Logger } from '@disarm/protocol';

import type { FetchHandler } from '../http/types.ts';

/** Statuses of a request whose client left: 499, and 408 when node's request timeout cut it. */
const CLIENT_GONE_STATUSES: ReadonlySet<number> = new Set([CLIENT_CLOSED_REQUEST_STATUS, 408]);

/** A document id (`doc_` and 20 Crockford base32 characters) anywhere in a path. */
const DOCUMENT_ID = /(?:^|\/)(doc_[0-9a-z]{20})(?:\/|$)/;

/**
 * Wraps `handler` to log one line per request: server, method, path (never the query string —
 * signed links carry their signature there), status, milliseconds to the response head, the
 * request id (`X-Request-Id` of the response) and the document id when there is one; for a
 * client that left before its answer (status 499), how it left (`disconnect`). Request headers
 * are never logged.
 */
export function withRequestLog(
  server: string,
  handler: FetchHandler,
  logger: Logger,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const started = performance.now();
    const pathname = pathOf(request.url);
    const line = (
      status: number,
      documentId: string | undefined,
      requestId: string | null,
    ): Record<string, unknown> => ({
      server,
      method: request.method,
      path: pathname,
      status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      ...(requestId === null ? {} : { requestId }),
      ...(documentId === undefined ? {} : { documentId }),
    });
    let response: Response;
    try {
      response = await handler(request);
    } catch (error) {
      logger.info(line(500, DOCUMENT_ID.exec(pathname)?.[1], null), 'request');
      throw error;
    }
    const documentId =
      DOCUMENT_ID.exec(pathname)?.[1] ?? (await submittedDocumentId(request, pathname, response));
    // The handler chose the id (the caller's, when well-formed) and put it on the response.
    const fields = line(response.status, documentId, response.headers.get(REQUEST_ID_HEADER));
    // A client that left (499, or node's 408 request timeout): say how, at the same level.
    const disconnect = CLIENT_GONE_STATUSES.has(response.status)
      ? clientDisconnectOf(request)
      : undefined;
    logger.info(disconnect === undefined ? fields : { ...fields, disconnect }, 'request');
    return response;
  };
}

/** The path of an absolute URL as the request carries it (`https://host/a/b?q` → `/a/b`). */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  if (start === -1) return '/';
  const end = url.slice(start).search(/[?#]/);
  return end === -1 ? url.slice(start) : url.slice(start, start + end);
}

/** The id of a document just submitted: it is only in the envelope of `POST /v1/documents`. */
async function submittedDocumentId(
  request: Request,
  pathname: string,
  response: Response,
): Promise<string | undefined> {
  if (request.method !== 'POST' || pathname !== '/v1/documents') return undefined;
  if (response.status !== 200 && response.status !== 202) return undefined;
  if (!(response.headers.get('Content-Type') ?? '').includes('json')) return undefined;
  try {
    const envelope: unknown = await response.clone().json();
    const id = (envelope as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}
