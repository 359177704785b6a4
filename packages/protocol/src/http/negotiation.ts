import { bufferedResponse } from './buffered-response.ts';

/** Media types a successful JSON body is offered as (README "Errors"): JSON, text/json, text/plain. */
export const JSON_MEDIA_TYPES = ['application/json', 'text/json', 'text/plain'] as const;

/** One of {@link JSON_MEDIA_TYPES}. */
export type JsonMediaType = (typeof JSON_MEDIA_TYPES)[number];

interface AcceptRange {
  readonly type: string;
  readonly q: number;
  readonly order: number;
}

function parseAccept(header: string): AcceptRange[] {
  return header
    .split(',')
    .map((part, order) => {
      const [range = '', ...params] = part.trim().split(';');
      let q = 1;
      for (const param of params) {
        const [name, value] = param.trim().split('=');
        if (name?.trim().toLowerCase() === 'q') {
          const parsed = Number(value);
          q = Number.isFinite(parsed) ? Math.min(1, Math.max(0, parsed)) : 0;
        }
      }
      return { type: range.trim().toLowerCase(), q, order };
    })
    .filter((range) => range.type.length > 0);
}

function matches(range: string, mediaType: string): boolean {
  if (range === '*/*' || range === mediaType) return true;
  return range.endsWith('/*') && mediaType.startsWith(range.slice(0, -1));
}

/**
 * The media type to answer with (RFC 9110 12.5.1): the most preferred of JSON, text/json and
 * text/plain; JSON when `Accept` is absent or allows none of them (a server may ignore Accept
 * rather than refuse).
 */
export function negotiateJson(accept: string | null): JsonMediaType {
  if (accept === null || accept.trim() === '') return 'application/json';
  const ranges = parseAccept(accept);
  let best: { type: JsonMediaType; q: number; specificity: number; order: number } | undefined;
  for (const mediaType of JSON_MEDIA_TYPES) {
    for (const range of ranges) {
      if (!matches(range.type, mediaType) || range.q === 0) continue;
      const specificity = range.type === mediaType ? 2 : range.type === '*/*' ? 0 : 1;
      const candidate = { type: mediaType, q: range.q, specificity, order: range.order };
      if (
        !best ||
        candidate.q > best.q ||
        (candidate.q === best.q && candidate.specificity > best.specificity) ||
        (candidate.q === best.q &&
          candidate.specificity === best.specificity &&
          candidate.order < best.order)
      ) {
        best = candidate;
      }
    }
  }
  return best?.type ?? 'application/json';
}

/** A JSON body as the negotiated media type, `Cache-Control: no-store`. */
export function jsonResponse(
  request: Request,
  body: unknown,
  init: { status?: number; headers?: HeadersInit } = {},
): Response {
  const headers = new Headers(init.headers);
  const mediaType = negotiateJson(request.headers.get('Accept'));
  headers.set('Content-Type', `${mediaType}; charset=utf-8`);
  headers.append('Vary', 'Accept');
  if (!headers.has('Cache-Control')) headers.set('Cache-Control', 'no-store');
  return bufferedResponse(JSON.stringify(body), { status: init.status ?? 200, headers });
}
