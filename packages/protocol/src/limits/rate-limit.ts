import type { Middleware } from '../api.ts';
import type { ApiContext } from '../http/context.ts';
import { problemResponse } from '../http/problem-response.ts';
import { problemInstance } from '../http/request-id.ts';
import { addResponseHeaders } from '../http/response-headers.ts';

/** Length of one rate-limit window (README "Rate limits": per organisation and minute). */
export const RATE_WINDOW_MS = 60_000;
/**
 * Status reads get ten times the plan's per-minute limit, in their own partition
 * (README "Rate limits").
 */
export const STATUS_READ_MULTIPLIER = 10;

/**
 * How long this process uses an organisation's per-minute limit before reading it again. Every
 * hit is still counted in the shared store; only the number it is compared with may lag a change
 * made through another process by this long (a change through this API applies at once).
 */
export const RATE_LIMIT_TTL_MS = 1_000;

const limitCaches = new WeakMap<ApiContext, Map<string, { perMinute: number; until: number }>>();

/** The organisation's per-minute limit, read at most once a {@link RATE_LIMIT_TTL_MS}. */
async function rateLimitPerMinute(
  api: ApiContext,
  organisationId: string,
  now: Date,
): Promise<number | undefined> {
  let cache = limitCaches.get(api);
  if (cache === undefined) {
    cache = new Map();
    limitCaches.set(api, cache);
  }
  const at = performance.now();
  const cached = cache.get(organisationId);
  if (cached !== undefined && at < cached.until) return cached.perMinute;
  const organisation = await api.store.getOrganisation(organisationId, now);
  if (!organisation) {
    cache.delete(organisationId);
    return undefined;
  }
  // Bounded by the organisations that exist: entries are replaced, never piled up.
  cache.set(organisationId, {
    perMinute: organisation.rateLimitPerMinute,
    until: at + RATE_LIMIT_TTL_MS,
  });
  return organisation.rateLimitPerMinute;
}

/** Forgets the limits this process remembers (after an organisation's terms change here). */
export function forgetRateLimits(api: ApiContext): void {
  limitCaches.get(api)?.clear();
}

/** Names of the two partitions, as they appear in the RateLimit fields. */
const POLICY_NAMES = { submission: 'submissions', status: 'status-reads' } as const;

/**
 * Per-organisation, per-minute rate limits in two partitions: submissions (`POST /v1/documents`
 * and `POST /v1/uploads` share the plan's limit) and status reads (`GET /v1/documents/*` and the
 * account, ten times the limit). Counters live in the state store, so every process sees the
 * same budget. Over the limit: `429 RateLimited` with `Retry-After` in seconds. Every response of
 * a limited route carries the IETF `RateLimit-Policy` and `RateLimit` fields
 * (draft-ietf-httpapi-ratelimit-headers) so clients can pace themselves.
 */
export const rateLimitMiddleware: Middleware = async (context, route, next) => {
  const partition = route.rateLimit;
  const organisationId = context.principal?.organisationId;
  if (partition === undefined || !organisationId) return next();
  const { api } = context;
  const now = api.clock.now();
  const perMinute = await rateLimitPerMinute(api, organisationId, now);
  if (perMinute === undefined) return next();
  const limit = partition === 'submission' ? perMinute : perMinute * STATUS_READ_MULTIPLIER;
  const windowStart = Math.floor(now.getTime() / RATE_WINDOW_MS) * RATE_WINDOW_MS;
  const count = await api.store.hitRateLimit(
    `${organisationId}:${partition}`,
    new Date(windowStart),
    now,
  );
  const resetSeconds = Math.max(
    1,
    Math.ceil((windowStart + RATE_WINDOW_MS - now.getTime()) / 1000),
  );
  const name = POLICY_NAMES[partition];
  const fields = {
    'RateLimit-Policy': `"${name}";q=${limit};w=${RATE_WINDOW_MS / 1000}`,
    RateLimit: `"${name}";r=${Math.max(0, limit - count)};t=${resetSeconds}`,
  };
  if (count > limit) {
    return problemResponse(api.settings.publicBaseUrl, 'RateLimited', {
      detail: `The ${name} limit of ${limit} requests per minute is reached; retry in ${resetSeconds} s.`,
      instance: problemInstance(context.url.pathname, context.requestId),
      headers: { ...fields, 'Retry-After': String(resetSeconds) },
      extensions: { limit, retryAfterSeconds: resetSeconds },
    });
  }
  return addResponseHeaders(await next(), Object.entries(fields), true);
};
