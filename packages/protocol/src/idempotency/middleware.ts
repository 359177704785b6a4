import type { Middleware } from '../api.ts';
import type { RequestContext } from '../http/context.ts';
import { problemResponse } from '../http/problem-response.ts';
import { problemInstance } from '../http/request-id.ts';
import type { StoredResponse } from '../ports.ts';
import { RequestFingerprint } from './fingerprint.ts';
import { bufferedResponse } from '../http/buffered-response.ts';

/** Longest Idempotency-Key (README "Idempotency"). */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;
/** How long a key replays its first response (README "Idempotency"). */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Header marking a replayed response. */
export const REPLAYED_HEADER = 'Idempotency-Replayed';

function validKey(key: string): boolean {
  // A visible-ASCII string (the IETF draft's sf-string), 1 to 200 characters.
  return key.length >= 1 && key.length <= MAX_IDEMPOTENCY_KEY_CHARS && /^[\x20-\x7e]+$/.test(key);
}

function replay(stored: StoredResponse): Response {
  const headers = new Headers(
    stored.headers.map(([name, value]) => [name, value] as [string, string]),
  );
  headers.set(REPLAYED_HEADER, 'true');
  return bufferedResponse(stored.status === 204 ? null : stored.body.slice(), {
    status: stored.status,
    headers,
  });
}

async function toStored(response: Response): Promise<StoredResponse> {
  const body = new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers: [...response.headers.entries()], body };
}

/**
 * `Idempotency-Key` on the two POST routes (README "Idempotency", IETF Idempotency-Key draft):
 * the key is claimed atomically before any work; a successful first response is stored and
 * replayed byte for byte (with `Idempotency-Replayed: true`) for 24 hours; a concurrent
 * duplicate gets 409; the key on another endpoint 422; the same key with a different request
 * (by what it means, see {@link RequestFingerprint}, not how it is framed) 422. Refusals that happen before any work (validation, 402, 403, 404, 429) are not stored, so
 * a corrected retry can go through. Keys are scoped to the organisation.
 */
export const idempotencyMiddleware: Middleware = async (context, route, next) => {
  const key = context.request.headers.get('Idempotency-Key');
  const organisationId = context.principal?.organisationId;
  if (route.idempotent !== true || key === null || !organisationId) return next();
  const { api, request, url } = context;
  const problem = (
    code: Parameters<typeof problemResponse>[1],
    detail: string,
    extensions?: Record<string, unknown>,
  ): Response =>
    problemResponse(api.settings.publicBaseUrl, code, {
      detail,
      instance: problemInstance(url.pathname, context.requestId),
      ...(extensions ? { extensions } : {}),
    });
  if (!validKey(key)) {
    return problem(
      'ValidationFailed',
      `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters.`,
      {
        errors: [
          {
            field: 'header.Idempotency-Key',
            message: `1 to ${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters`,
          },
        ],
      },
    );
  }
  const endpoint = `${request.method} ${context.routePattern}`;
  const now = api.clock.now();
  const fingerprint = new RequestFingerprint(request, url);
  const claim = await api.store.claimIdempotencyKey({
    organisationId,
    key,
    endpoint,
    requestHash: '',
    createdAt: now,
    expiresAt: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
  });

  if (claim.kind === 'existing') {
    const { record } = claim;
    if (record.endpoint !== endpoint) {
      return problem(
        'IdempotencyKeyEndpointMismatch',
        `This Idempotency-Key was first used on ${record.endpoint}.`,
      );
    }
    if (record.state === 'in_flight' || !record.response) {
      return problem(
        'IdempotencyKeyInFlight',
        'The first request with this Idempotency-Key is still running; retry shortly.',
      );
    }
    await fingerprint.drain(request.body);
    if ((await fingerprint.digest()) !== record.requestHash) {
      return problem(
        'IdempotencyKeyReused',
        'This Idempotency-Key was first used with a different request; use a new key for a new request.',
      );
    }
    return replay(record.response);
  }

  // Claimed: run the request with its body hashed on the way in.
  const tapped: RequestContext = {
    ...context,
    request: request.body
      ? new Request(request, { body: fingerprint.tap(request.body), duplex: 'half' } as RequestInit)
      : request,
  };
  let response: Response;
  try {
    response = await next(tapped);
  } catch (error) {
    await api.store.releaseIdempotencyKey(organisationId, key);
    throw error;
  }
  const requestHash = await fingerprint.digest();
  if (response.status >= 300 || requestHash === undefined) {
    await api.store.releaseIdempotencyKey(organisationId, key);
    return response;
  }
  const stored = await toStored(response);
  await api.store.completeIdempotencyKey(organisationId, key, stored, requestHash);
  return replayless(stored);
};

/** The first response itself, rebuilt from what was stored (without the replay marker). */
function replayless(stored: StoredResponse): Response {
  return bufferedResponse(stored.status === 204 ? null : stored.body.slice(), {
    status: stored.status,
    headers: stored.headers.map(([name, value]) => [name, value] as [string, string]),
  });
}
