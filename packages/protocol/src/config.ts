import type { OAuthConfig } from './oauth/config.ts';
import type { PlanType } from './domain/plans.ts';
import type {
  BlobStore,
  Clock,
  DocumentEvents,
  ProcessIdentity,
  Random,
  StateStore,
} from './ports.ts';

/** Structured logger the API writes to (pino-compatible subset). Never given secrets. */
export interface Logger {
  /** Detail for operators chasing a problem (refused tokens, with the reason only). */
  debug?(object: Record<string, unknown>, message?: string): void;
  info(object: Record<string, unknown>, message?: string): void;
  warn(object: Record<string, unknown>, message?: string): void;
  error(object: Record<string, unknown>, message?: string): void;
}

/** One answered request, as {@link ApiObserver.request} sees it. */
export interface RequestSample {
  /** The request method as sent (any token: normalise before using it as a label). */
  readonly method: string;
  /**
   * The pattern of the route that answered, e.g. `/v1/documents/:id`, never the raw path (ids
   * would make every path unique); `null` when no route matched.
   */
  readonly route: string | null;
  readonly status: number;
  /** Seconds from the request to the response head (a streamed body may still be flowing). */
  readonly seconds: number;
}

/** One accepted document and what accepting it cost, as {@link ApiObserver.accepted} sees it. */
export interface AcceptedSample {
  /** `null` for an organisation without a plan (never accepted, but typed as stored). */
  readonly planType: PlanType | null;
  /** Pence taken from prepaid credit (pay-as-you-go). */
  readonly chargedPence: number;
  /** Whether a unit of the monthly allowance was used (tier plans). */
  readonly countedInAllowance: boolean;
}

/**
 * Receives what the API does, for metrics. Called synchronously on the request path: keep it
 * cheap and never throw.
 */
export interface ApiObserver {
  request(sample: RequestSample): void;
  accepted(sample: AcceptedSample): void;
}

/** Everything the API talks to. */
export interface DisarmApiPorts {
  readonly store: StateStore;
  readonly blobs: BlobStore;
  readonly events: DocumentEvents;
  readonly clock: Clock;
  /** Default: `crypto.getRandomValues`. */
  readonly random?: Random;
  /** Default: no logging. */
  readonly logger?: Logger;
  /** Default: nothing observes the API. */
  readonly observer?: ApiObserver;
  /**
   * Tells whether the process that holds an `Idempotency-Key` claim is gone, so a retry after a
   * crash takes the key over at once instead of when the claim's lease lapses.
   * @default a random id per API; no process is ever known gone (the lease alone bounds a claim)
   */
  readonly processIdentity?: ProcessIdentity;
}

/**
 * The steps of a submission where a test-mode process can be made to crash
 * (`DISARM_FAILPOINT`, README "Crash safety"): `intake-partial` once some bytes of a multipart or
 * raw body are in the intake blob, `intake-stored` once the intake blob is stored and before the
 * document row, `document-accepted` once the row is committed and before the response, and
 * `upload-created` once a staged upload's row is committed and before the response.
 */
export type ApiFailpoint =
  'intake-partial' | 'intake-stored' | 'document-accepted' | 'upload-created';

/** A static file of the interactive reference (`/docs`), served by the process itself. */
export interface DocsAsset {
  readonly body: Uint8Array;
  readonly contentType: string;
}

/** What `GET /readyz` answers (see {@link DisarmApiConfig.readiness}). */
export interface Readiness {
  /** 200 `ready` when true, else 503 `not ready`. */
  readonly ready: boolean;
  /**
   * Which renderer draws each format returned as PDF, by extension (for example
   * `{ "svg": "chromium", "ods": "builtin" }`), reported as `renderers`; absent where this
   * process does not convert.
   */
  readonly renderers?: Readonly<Record<string, string>>;
  /**
   * What readiness depends on and how each stands, reported as `checks`, e.g.
   * `{ "database": "unreachable", "blobs": "ok" }`: it tells an operator which dependency holds
   * the process out of rotation (or, for one that does not, what is degraded). Absent when
   * nothing is reported.
   */
  readonly checks?: Readonly<Record<string, string>>;
}

/** How the API is configured. */
export interface DisarmApiConfig {
  /**
   * Absolute base URL clients reach the API at, e.g. `https://cdr.example.com`. Every
   * `statusUrl`, `Location` and problem `type` is built from it — never from the request's
   * Host header, which a client controls.
   */
  readonly publicBaseUrl: string;
  /** Longest sync wait in seconds (`wait=true`, `Prefer: respond-sync`). @default 45 */
  readonly syncWaitSeconds?: number;
  /** Suggested seconds between polls while in flight (`pollAfterSeconds`, `Retry-After`). @default 2 */
  readonly pollAfterSeconds?: number;
  /**
   * How long a delete-after-download file stays fetchable after the first download call (the
   * link cannot tell the API when a download finished). @default 300
   */
  readonly deleteAfterDownloadGraceSeconds?: number;
  /** Where a caller manages the account (`helpUrl` of failed and rejected envelopes). */
  readonly helpUrl?: string;
  /**
   * SHA-256 (hex) of bootstrap admin tokens: a bearer token whose hash is listed here acts with
   * scope `cdr.admin` on `/v1/admin/*`. Store only hashes.
   */
  readonly adminTokenHashes?: readonly string[];
  /**
   * Test mode: the manual clock that `POST /v1/admin/clock` advances. Never set in production.
   */
  readonly manualClock?: { advance(milliseconds: number): Date | Promise<Date>; now(): Date };
  /**
   * Readiness for `GET /readyz` (store reachable, workers up), and what the answer reports
   * besides. `GET /healthz` only says the process answers. A rejected promise is "not ready".
   * @default always ready
   */
  readonly readiness?: () => Promise<Readiness>;
  /** Files of the `/docs` reference by name (`index.html` and its scripts and styles). */
  readonly docsAssets?: (name: string) => Promise<DocsAsset | undefined>;
  /**
   * OAuth 2.0 client credentials (README "OAuth 2.0 client credentials (recommended)"). When set,
   * the API also serves:
   *
   * - `POST /connect/token` (RFC 6749 4.4): signed JWT access tokens (ES256, `typ: at+jwt`,
   *   RFC 9068) valid one hour, for clients authenticating with `client_secret_basic` or
   *   `client_secret_post`;
   * - `GET /.well-known/jwks.json`: the public keys that verify them;
   * - admin routes (scope `cdr.admin`) for an organisation's clients
   *   (`/v1/admin/organisations/{organisationId}/clients`: create, list, rotate a secret with a
   *   two-secret overlap, revoke) and for the signing keys (`/v1/admin/signing-keys`: list,
   *   rotate);
   *
   * and accepts those tokens — and, with `oauth.external`, an external identity provider's —
   * as `Authorization: Bearer` credentials. Signing keys live in the state store, their private
   * halves sealed with `oauth.keyEncryptionKey`, so every process sharing the store issues and
   * verifies the same tokens. Without it, only API keys and bootstrap admin tokens authenticate.
   *
   * **Security**: see {@link OAuthConfig.keyEncryptionKey} and {@link OAuthConfig.external}.
   * @default none
   */
  readonly oauth?: OAuthConfig;
  /**
   * Test mode only: called as a submission passes each {@link ApiFailpoint}; the test harness's
   * hook ends the process at the step it was armed with, to prove what a crash there leaves.
   * **Never in production.** @default none
   */
  readonly failpoint?: (step: ApiFailpoint) => void;
}
