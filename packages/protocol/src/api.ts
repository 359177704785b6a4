import {
  advanceClock,
  createApiKey,
  createOrganisation,
  getOrganisation,
  listApiKeys,
  listOrganisations,
  revokeApiKey,
  updateOrganisation,
} from './admin/routes.ts';
import { getAccount } from './account/routes.ts';
import { createApiKeyCache } from './auth/api-key-cache.ts';
import { authenticate, bearerChallenge, isAuthFailure } from './auth/authenticate.ts';
import type { BearerVerifier } from './auth/principal.ts';
import type { ApiObserver, DisarmApiConfig, DisarmApiPorts, Logger } from './config.ts';
import { cryptoRandom, randomBase32 } from './domain/ids.ts';
import {
  deleteDocument,
  downloadDocument,
  getDocument,
  resumeSubmission,
  submitDocument,
} from './documents/routes.ts';
import { resolveSettings } from './http/context.ts';
import type { ApiContext, Handler, RequestContext } from './http/context.ts';
import { ProblemError } from './http/problem-error.ts';
import {
  problemInstance,
  REQUEST_ID_HEADER,
  requestIdOf,
  withRequestId,
} from './http/request-id.ts';
import { problemResponse } from './http/problem-response.ts';
import { addResponseHeaders } from './http/response-headers.ts';
import { compilePattern } from './http/router.ts';
import type { CompiledPattern } from './http/router.ts';
import { ValidationError } from './http/validation.ts';
import { unavailableProblem } from './http/unavailable.ts';
import { StorageUnavailableError } from './ports.ts';
import { createUpload, resumeUpload } from './uploads/routes.ts';
import { idempotencyMiddleware } from './idempotency/middleware.ts';
import { rateLimitMiddleware } from './limits/rate-limit.ts';
import { publicRoutes } from './public-routes.ts';
import { createOAuth } from './oauth/create-oauth.ts';
import { bufferedBodyOf, bufferedResponse } from './http/buffered-response.ts';

/** The v1 API as a WHATWG fetch handler: mount it on any runtime or framework. */
export interface DisarmApi {
  fetch(request: Request): Promise<Response>;
  /**
   * Shutting down: requests held open in sync mode answer at once with their current envelope
   * (202), so they are not cut off when the listener closes. Call it before draining
   * connections. Idempotent.
   */
  close(): void;
}

/** How a route is reached. */
export interface RouteOptions {
  readonly handler: Handler;
  /** `none`: public (health, contract, docs); `required`: any valid credential. */
  readonly auth: 'none' | 'required';
  /** Which per-minute budget the route draws on (README "Rate limits": submissions or status). */
  readonly rateLimit?: 'submission' | 'status';
  /** Honours `Idempotency-Key`. */
  readonly idempotent?: boolean;
  /**
   * On an idempotent route: answers a retry whose first request created `resourceId` (recorded
   * on the key with it) but died before its response was stored — for that resource, never by
   * creating another. Without it such a retry gets 409 until the key expires.
   */
  readonly resume?: (context: RequestContext, resourceId: string) => Promise<Response>;
}

/** One path and the methods it answers. */
export interface RouteDefinition {
  readonly pattern: string;
  readonly methods: Readonly<Partial<Record<string, RouteOptions>>>;
}

/**
 * A step that runs before the handler (after authentication): rate limits, idempotency. It may
 * answer the request itself, or return `undefined` to go on.
 */
export type Middleware = (
  context: RequestContext,
  route: RouteOptions,
  next: (context?: RequestContext) => Promise<Response>,
) => Promise<Response>;

/** Extension points: a bearer-token verifier, middleware after the built-in ones, extra routes. */
export interface DisarmApiExtensions {
  readonly verifyBearer?: BearerVerifier;
  readonly middleware?: readonly Middleware[];
  readonly routes?: readonly RouteDefinition[];
}

const NO_LOGGER: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
const NO_OBSERVER: ApiObserver = { request: () => undefined, accepted: () => undefined };

function apiRoutes(testMode: boolean): RouteDefinition[] {
  const authed = (handler: Handler, extra: Partial<RouteOptions> = {}): RouteOptions => ({
    handler,
    auth: 'required',
    ...extra,
  });
  return [
    { pattern: '/v1/account', methods: { GET: authed(getAccount, { rateLimit: 'status' }) } },
    {
      pattern: '/v1/documents',
      methods: {
        POST: authed(submitDocument, {
          rateLimit: 'submission',
          idempotent: true,
          resume: resumeSubmission,
        }),
      },
    },
    {
      pattern: '/v1/documents/:id',
      methods: {
        GET: authed(getDocument, { rateLimit: 'status' }),
        DELETE: authed(deleteDocument, { rateLimit: 'status' }),
      },
    },
    {
      pattern: '/v1/documents/:id/download',
      methods: { GET: authed(downloadDocument, { rateLimit: 'status' }) },
    },
    {
      pattern: '/v1/uploads',
      methods: {
        POST: authed(createUpload, {
          rateLimit: 'submission',
          idempotent: true,
          resume: resumeUpload,
        }),
      },
    },
    {
      pattern: '/v1/admin/organisations',
      methods: { GET: authed(listOrganisations), POST: authed(createOrganisation) },
    },
    {
      pattern: '/v1/admin/organisations/:organisationId',
      methods: { GET: authed(getOrganisation), PATCH: authed(updateOrganisation) },
    },
    {
      pattern: '/v1/admin/organisations/:organisationId/keys',
      methods: { GET: authed(listApiKeys), POST: authed(createApiKey) },
    },
    {
      pattern: '/v1/admin/organisations/:organisationId/keys/:keyId',
      methods: { DELETE: authed(revokeApiKey) },
    },
    // The manual clock route exists only in test mode.
    ...(testMode ? [{ pattern: '/v1/admin/clock', methods: { POST: authed(advanceClock) } }] : []),
  ];
}

/**
 * Builds the v1 API over its ports.
 *
 * @example
 * ```ts
 * const api = createDisarmApi({ store, blobs, events, clock }, { publicBaseUrl: 'https://cdr.example.com' });
 * const response = await api.fetch(new Request('https://cdr.example.com/v1/account', { headers }));
 * ```
 */
export function createDisarmApi(
  ports: DisarmApiPorts,
  config: DisarmApiConfig,
  extensions: DisarmApiExtensions = {},
): DisarmApi {
  const settings = resolveSettings(config);
  const closing = new AbortController();
  const random = ports.random ?? cryptoRandom;
  const api: ApiContext = {
    store: ports.store,
    blobs: ports.blobs,
    events: ports.events,
    clock: ports.clock,
    random,
    logger: ports.logger ?? NO_LOGGER,
    observer: ports.observer ?? NO_OBSERVER,
    settings,
    apiKeys: createApiKeyCache(),
    closing: closing.signal,
    processIdentity: ports.processIdentity ?? {
      // Unique to this API: its claims are freed by their lease alone.
      id: `api_${randomBase32(random, 20)}`,
      isGone: () => Promise.resolve(false),
    },
  };
  // OAuth (config.oauth): the token endpoint, the JWKS, client and signing-key admin routes, and
  // the verifier of access tokens (ours and an external issuer's).
  const oauth =
    config.oauth === undefined
      ? undefined
      : createOAuth(
          { store: api.store, clock: api.clock, random: api.random, logger: api.logger },
          config.oauth,
          settings.publicBaseUrl,
        );
  const verifyBearer = extensions.verifyBearer ?? oauth?.verifyBearer;
  const routes: { compiled: CompiledPattern; definition: RouteDefinition }[] = [
    ...apiRoutes(settings.manualClock !== undefined),
    ...publicRoutes(api, { requireRateLimitHeaders: true, oauth: oauth !== undefined }),
    ...(oauth?.routes ?? []),
    ...(extensions.routes ?? []),
  ].map((definition) => ({ compiled: compilePattern(definition.pattern), definition }));
  // Order matters: the rate limit counts a request before idempotency can replay it.
  const middleware = [rateLimitMiddleware, idempotencyMiddleware, ...(extensions.middleware ?? [])];
  const problem = (
    code: Parameters<typeof problemResponse>[1],
    options?: Parameters<typeof problemResponse>[2],
  ): Response => problemResponse(settings.publicBaseUrl, code, options);

  /** What {@link handle} found out about a request, for the observer. */
  interface Trace {
    route: string | null;
  }

  async function handle(
    request: Request,
    url: URL,
    requestId: string,
    trace: Trace,
  ): Promise<Response> {
    const instance = problemInstance(url.pathname, requestId);
    let found: { params: Record<string, string>; definition: RouteDefinition } | undefined;
    for (const route of routes) {
      const params = route.compiled.match(url.pathname);
      if (params) {
        found = { params, definition: route.definition };
        break;
      }
    }
    if (!found) return problem('NotFound', { detail: `No route ${url.pathname}.`, instance });
    trace.route = found.definition.pattern;
    const { methods } = found.definition;
    // Every route that answers GET answers HEAD the same way (`fetch` drops the content).
    const head = request.method === 'HEAD' && methods.HEAD === undefined;
    const options = head ? methods.GET : methods[request.method];
    if (!options) {
      const names = Object.keys(methods);
      const allow = (
        names.includes('GET') && !names.includes('HEAD') ? [...names, 'HEAD'] : names
      ).join(', ');
      return problem('MethodNotAllowed', {
        detail: `${url.pathname} answers ${allow}.`,
        instance,
        headers: { Allow: allow },
      });
    }
    let principal;
    if (options.auth === 'required') {
      const found = await authenticate(request, {
        store: api.store,
        apiKeys: api.apiKeys,
        adminTokenHashes: settings.adminTokenHashes,
        ...(verifyBearer ? { verifyBearer } : {}),
      });
      if (isAuthFailure(found)) {
        return problem('Unauthorized', {
          detail: found.detail,
          instance,
          headers: { 'WWW-Authenticate': bearerChallenge(found) },
        });
      }
      principal = found;
    }
    const context: RequestContext = {
      api: { ...api, logger: withRequestId(api.logger, requestId) },
      request,
      url,
      params: found.params,
      routePattern: found.definition.pattern,
      requestId,
      principal,
      responseHeaders: new Headers(),
    };
    const run = async (current: RequestContext): Promise<Response> => {
      try {
        return withHeaders(await options.handler(current), current.responseHeaders);
      } catch (error) {
        return withHeaders(errorResponse(error, url.pathname, requestId), current.responseHeaders);
      }
    };
    const chain = middleware.reduceRight<(current: RequestContext) => Promise<Response>>(
      (next, step) => (current) => step(current, options, (changed) => next(changed ?? current)),
      run,
    );
    return chain(context);
  }

  function errorResponse(error: unknown, path: string, requestId: string): Response {
    const instance = problemInstance(path, requestId);
    if (error instanceof ProblemError) return problem(error.code, { instance, ...error.options });
    if (error instanceof ValidationError) {
      return problem('ValidationFailed', {
        detail: error.message,
        instance,
        extensions: { errors: error.errors },
      });
    }
    if (error instanceof StorageUnavailableError) {
      // Not our code's fault and not the caller's: 503 with Retry-After. The outage itself is
      // logged once where it starts and ends (by whoever watches the stores), not per request.
      api.logger.debug?.({ err: error, path, requestId }, 'request refused: storage unavailable');
      return problem('ServiceUnavailable', { instance, ...unavailableProblem(error) });
    }
    api.logger.error({ err: error, path, requestId }, 'request failed');
    return problem('InternalError', {
      detail: 'Something failed inside the service.',
      instance,
    });
  }

  return {
    close() {
      closing.abort();
    },
    async fetch(request) {
      const started = performance.now();
      const requestId = requestIdOf(request, api.random);
      const trace: Trace = { route: null };
      let response = await respond(request, requestId, trace);
      // Every answer names its request, problems and replays included (README "Request ids").
      response = addResponseHeaders(response, [[REQUEST_ID_HEADER, requestId]], true);
      api.observer.request({
        method: request.method,
        route: trace.route,
        status: response.status,
        seconds: (performance.now() - started) / 1000,
      });
      if (request.method !== 'HEAD') return response;
      // RFC 9110 9.3.2: a HEAD response carries the headers of the GET and never content.
      if (bufferedBodyOf(response) === undefined) await response.body?.cancel();
      return bufferedResponse(null, { status: response.status, headers: response.headers });
    },
  };

  async function respond(request: Request, requestId: string, trace: Trace): Promise<Response> {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return problem('NotFound');
    }
    try {
      return await handle(request, url, requestId, trace);
    } catch (error) {
      return errorResponse(error, url.pathname, requestId);
    }
  }
}

function withHeaders(response: Response, extra: Headers): Response {
  return addResponseHeaders(response, extra, false);
}
