import type { Middleware } from '../api.ts';
import type { RequestContext } from '../http/context.ts';
import { problemResponse } from '../http/problem-response.ts';
import { problemInstance } from '../http/request-id.ts';
import { randomBase32 } from '../domain/ids.ts';
import { IDEMPOTENCY_RENEW_INTERVAL_MS } from '../domain/idempotency.ts';
import type { IdempotencyHold, IdempotencyRecord, StoredResponse } from '../ports.ts';
import { RequestFingerprint } from './fingerprint.ts';
import { bufferedResponse } from '../http/buffered-response.ts';

/** Longest Idempotency-Key (README "Idempotency"). */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;
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

/** Tries to claim a key: a claim left by a gone process is taken over once, on the spot. */
const MAX_CLAIM_ATTEMPTS = 2;

/**
 * `Idempotency-Key` on the two POST routes (README "Idempotency", IETF Idempotency-Key draft):
 * the key is claimed atomically before any work; a successful first response is stored and
 * replayed byte for byte (with `Idempotency-Replayed: true`) for 24 hours; a concurrent
 * duplicate gets 409; the key on another endpoint 422; the same key with a different request
 * (by what it means, see {@link RequestFingerprint}, not how it is framed) 422. Refusals that happen before any work (validation, 402, 403, 404, 429) are not stored, so
 * a corrected retry can go through. Keys are scoped to the organisation.
 *
 * A claim belongs to a live request: it names its owner (this request, in this process) and a
 * lease the request renews every {@link IDEMPOTENCY_RENEW_INTERVAL_MS} while it runs. A claim
 * whose lease lapsed, or whose process the API's `ProcessIdentity` says is gone, is taken over by the
 * next request with the key; so after a crash a retry never waits longer than a live request
 * could hold the key. What the first request created (its document or upload) is recorded on
 * the key in the same transaction that created it, so a retry that takes over such a claim
 * answers for that resource (the route's `resume`) instead of creating and billing another.
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
  const fingerprint = new RequestFingerprint(request, url);
  const hold: IdempotencyHold = {
    organisationId,
    key,
    owner: `idem_${randomBase32(api.random, 26)}`,
  };

  let claimed: IdempotencyRecord | undefined;
  let replacing: string | undefined;
  for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS && claimed === undefined; attempt += 1) {
    const claim = await api.store.claimIdempotencyKey({
      organisationId,
      key,
      endpoint,
      owner: hold.owner,
      ownerProcess: api.processIdentity.id,
      at: api.clock.now(),
      ...(replacing === undefined ? {} : { replacing }),
    });
    if (claim.kind === 'claimed') {
      claimed = claim.record;
      break;
    }
    const { record } = claim;
    if (record.endpoint !== endpoint) {
      return problem(
        'IdempotencyKeyEndpointMismatch',
        `This Idempotency-Key was first used on ${record.endpoint}.`,
      );
    }
    if (record.state === 'completed' && record.response) {
      await fingerprint.drain(request.body);
      if ((await fingerprint.digest()) !== record.requestHash) return reused();
      return replay(record.response);
    }
    // Held: by a live request, unless its process is known to be gone (a crash on this host).
    if (
      replacing !== undefined ||
      record.owner === null ||
      record.ownerProcess === null ||
      !(await api.processIdentity.isGone(record.ownerProcess))
    ) {
      break;
    }
    api.logger.info(
      { idempotencyKeyOwner: record.ownerProcess },
      'idempotency claim of a process that is gone: taking it over',
    );
    replacing = record.owner;
  }
  if (claimed === undefined) {
    return problem(
      'IdempotencyKeyInFlight',
      'The first request with this Idempotency-Key is still running; retry shortly.',
    );
  }

  const renewal = setInterval(() => {
    void api.store.renewIdempotencyKey(hold, api.clock.now()).then(
      (held) => {
        if (!held) api.logger.warn({}, 'idempotency claim lost to a retry while running');
      },
      (error: unknown) => {
        api.logger.error({ err: error }, 'renewing an idempotency claim failed');
      },
    );
  }, IDEMPOTENCY_RENEW_INTERVAL_MS);
  try {
    if (claimed.resourceId !== null) {
      // The first request created this resource and died before answering: answer for it.
      await fingerprint.drain(request.body);
      if ((await fingerprint.digest()) !== claimed.requestHash) {
        await api.store.releaseIdempotencyKey(hold);
        return reused();
      }
      if (!route.resume) {
        await api.store.releaseIdempotencyKey(hold);
        return problem(
          'IdempotencyKeyInFlight',
          'The first request with this Idempotency-Key is still running; retry shortly.',
        );
      }
      return await keep(await resumed(route.resume, claimed.resourceId), claimed.requestHash);
    }

    // Claimed afresh: run the request with its body hashed on the way in.
    const tapped: RequestContext = {
      ...context,
      request: request.body
        ? new Request(request, {
            body: fingerprint.tap(request.body),
            duplex: 'half',
          } as RequestInit)
        : request,
      idempotency: { ...hold, requestHash: () => fingerprint.settledDigest() },
    };
    let response: Response;
    try {
      response = await next(tapped);
    } catch (error) {
      await api.store.releaseIdempotencyKey(hold);
      throw error;
    }
    const requestHash = await fingerprint.digest();
    if (response.status >= 300 || requestHash === undefined) {
      await api.store.releaseIdempotencyKey(hold);
      return response;
    }
    return await keep(response, requestHash);
  } finally {
    clearInterval(renewal);
  }

  async function resumed(
    resume: NonNullable<typeof route.resume>,
    resourceId: string,
  ): Promise<Response> {
    try {
      return await resume(context, resourceId);
    } catch (error) {
      await api.store.releaseIdempotencyKey(hold);
      throw error;
    }
  }

  /** Stores a successful response for replays; anything else gives the claim up. */
  async function keep(response: Response, requestHash: string): Promise<Response> {
    if (response.status >= 300) {
      await api.store.releaseIdempotencyKey(hold);
      return response;
    }
    const stored = await toStored(response);
    if (!(await api.store.completeIdempotencyKey(hold, stored, requestHash))) {
      // A retry took the key over meanwhile: it answers for the same resource.
      api.logger.warn({}, 'idempotency claim lost to a retry before its response was stored');
    }
    return replayless(stored);
  }

  function reused(): Response {
    return problem(
      'IdempotencyKeyReused',
      'This Idempotency-Key was first used with a different request; use a new key for a new request.',
    );
  }
};

/** The first response itself, rebuilt from what was stored (without the replay marker). */
function replayless(stored: StoredResponse): Response {
  return bufferedResponse(stored.status === 204 ? null : stored.body.slice(), {
    status: stored.status,
    headers: stored.headers.map(([name, value]) => [name, value] as [string, string]),
  });
}
