import type { ServerResponse } from 'node:http';

/**
 * RFC 9457 body of the bridge's own 500: no detail, nothing of the error — that goes to the log.
 * `about:blank` because the bridge does not know the API's problem catalogue URL.
 */
const INTERNAL_ERROR_BODY = JSON.stringify({
  type: 'about:blank',
  title: 'Internal Server Error',
  status: 500,
  code: 'InternalError',
});

/** Answers 500 if nothing was sent yet; otherwise ends the connection (the status is gone). */
export function sendInternalError(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  res.statusCode = 500;
  res.setHeader('Content-Type', 'application/problem+json');
  res.setHeader('Content-Length', Buffer.byteLength(INTERNAL_ERROR_BODY));
  res.setHeader('Cache-Control', 'no-store');
  res.end(res.req.method === 'HEAD' ? undefined : INTERNAL_ERROR_BODY);
}
