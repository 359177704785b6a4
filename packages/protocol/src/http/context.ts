import type { ApiKeyCache } from '../auth/api-key-cache.ts';
import type { Principal } from '../auth/principal.ts';
import type {
  ApiFailpoint,
  ApiObserver,
  DisarmApiConfig,
  DocsAsset,
  Logger,
  Readiness,
} from '../config.ts';
import type {
  BlobStore,
  Clock,
  DocumentEvents,
  IdempotencyHold,
  ProcessIdentity,
  Random,
  StateStore,
} from '../ports.ts';

/** The API's configuration with every default resolved. */
export interface ApiSettings {
  /** Without a trailing slash. */
  readonly publicBaseUrl: string;
  readonly syncWaitMs: number;
  readonly pollAfterSeconds: number;
  readonly deleteAfterDownloadGraceMs: number;
  readonly helpUrl: string;
  readonly adminTokenHashes: ReadonlySet<string>;
  readonly manualClock: DisarmApiConfig['manualClock'];
  readonly readiness: () => Promise<Readiness>;
  readonly docsAssets: ((name: string) => Promise<DocsAsset | undefined>) | undefined;
  /** Test mode's crash points ({@link DisarmApiConfig.failpoint}); `undefined` otherwise. */
  readonly failpoint: ((step: ApiFailpoint) => void) | undefined;
}

/** What every handler can reach. */
export interface ApiContext {
  readonly store: StateStore;
  readonly blobs: BlobStore;
  readonly events: DocumentEvents;
  readonly clock: Clock;
  readonly random: Random;
  /** Inside a request: the logger that adds the request id to every line. */
  readonly logger: Logger;
  readonly observer: ApiObserver;
  readonly settings: ApiSettings;
  /** API keys recently found valid; a revocation through this API clears it. */
  readonly apiKeys: ApiKeyCache;
  /** Aborts when the API is shutting down (sync waits then answer at once). */
  readonly closing: AbortSignal;
  /** This process, as `Idempotency-Key` claims record it. */
  readonly processIdentity: ProcessIdentity;
}

/**
 * The `Idempotency-Key` claim a request runs under (set by the idempotency step): what it creates
 * is recorded on the claim in the same transaction (`NewDocument.idempotency`).
 */
export interface IdempotencyContext extends IdempotencyHold {
  /**
   * The request's fingerprint. Resolves once the body has been read to its end: call it after
   * the route has consumed the body.
   */
  requestHash(): Promise<string>;
}

/** One request on its way through the pipeline. */
export interface RequestContext {
  readonly api: ApiContext;
  readonly request: Request;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  /** The route's pattern, e.g. `/v1/documents/:id` (idempotency keys are bound to it). */
  readonly routePattern: string;
  /** The request's id (`X-Request-Id`): on its response, its log lines and its problems. */
  readonly requestId: string;
  /** Set by the authentication step for routes that need it. */
  readonly principal: Principal | undefined;
  /** Headers every response of this request carries (usage, rate-limit fields). */
  readonly responseHeaders: Headers;
  /** The request's `Idempotency-Key` claim, on idempotent routes called with a key. */
  readonly idempotency?: IdempotencyContext;
}

/** A route handler. */
export type Handler = (context: RequestContext) => Promise<Response>;

/** Resolves defaults and checks the configuration (`TypeError` on misuse). */
export function resolveSettings(config: DisarmApiConfig): ApiSettings {
  let base: URL;
  try {
    base = new URL(config.publicBaseUrl);
  } catch {
    throw new TypeError(`publicBaseUrl must be an absolute URL, got ${config.publicBaseUrl}`);
  }
  if (base.search !== '' || base.hash !== '') {
    throw new TypeError('publicBaseUrl must not carry a query or fragment');
  }
  const publicBaseUrl = base.toString().replace(/\/+$/, '');
  const syncWaitSeconds = config.syncWaitSeconds ?? 45;
  const pollAfterSeconds = config.pollAfterSeconds ?? 2;
  const graceSeconds = config.deleteAfterDownloadGraceSeconds ?? 300;
  for (const [name, value] of [
    ['syncWaitSeconds', syncWaitSeconds],
    ['pollAfterSeconds', pollAfterSeconds],
    ['deleteAfterDownloadGraceSeconds', graceSeconds],
  ] as const) {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`${name} must be >= 0`);
  }
  return {
    publicBaseUrl,
    syncWaitMs: syncWaitSeconds * 1000,
    pollAfterSeconds: Math.max(1, Math.round(pollAfterSeconds)),
    deleteAfterDownloadGraceMs: graceSeconds * 1000,
    helpUrl: config.helpUrl ?? `${publicBaseUrl}/docs`,
    adminTokenHashes: new Set((config.adminTokenHashes ?? []).map((hash) => hash.toLowerCase())),
    manualClock: config.manualClock,
    readiness: config.readiness ?? (() => Promise.resolve({ ready: true })),
    docsAssets: config.docsAssets,
    failpoint: config.failpoint,
  };
}
