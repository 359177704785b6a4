import { createHash } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';

import { createClamdScanner } from '@disarm/core';
import {
  createDisarmApi,
  createLinkSigner,
  createStorageApi,
  StorageUnavailableError,
} from '@disarm/protocol';
import type { BlobStore, Clock, Logger } from '@disarm/protocol';
import type { OAuthConfig } from '@disarm/protocol/oauth';

import { createFailpoints } from '../failpoints/index.ts';
import type { FailpointStep } from '../failpoints/index.ts';
import { silentLogger } from '../_internal/logger.ts';
import { createProcessIdentity } from '../_internal/process-identity.ts';
import { createLocalBlobStore } from '../blobs/create-local-blob-store.ts';
import type { LocalBlobStore } from '../blobs/create-local-blob-store.ts';
import { createManualClock } from '../clock/manual-clock.ts';
import type { ManualClock } from '../clock/manual-clock.ts';
import { systemClock } from '../clock/system-clock.ts';
import { createWorkerPool } from '../pool/create-worker-pool.ts';
import { createRenderers, renderersByFormat } from '../render/renderers.ts';
import type { RendererSelection } from '../render/renderers.ts';
import type { ClamdConfig } from '../pool/types.ts';
import { createMetrics, METRICS_PATH } from '../metrics/create-metrics.ts';
import { createDispatcher } from '../processing/create-dispatcher.ts';
import { createSweeper } from '../retention/create-sweeper.ts';
import {
  describeDatabase,
  openDocumentEvents,
  openStateStore,
  parseDatabaseUrl,
} from '../state/open-state.ts';
import { provisionDemo } from './_demo.ts';
import type { DemoAccount } from './_demo.ts';
import { withRequestLog } from './_request-log.ts';
import { createStorageWatch } from './_storage-watch.ts';
import { loadLinkSecret, loadTokenSigningKek } from './_secrets.ts';
import { createSwaggerUiAssets } from './docs-assets.ts';

/** Default longest sync wait (45 seconds; `submitDocument`, README "Submitting"). */
export const DEFAULT_SYNC_WAIT_SECONDS = 45;
/** Default delete-after-download grace. */
export const DEFAULT_GRACE_SECONDS = 300;
/** How long shutdown lets requests and documents in flight finish. */
export const SHUTDOWN_GRACE_MS = 20_000;
/** How long `/readyz` waits for clamd's `PONG`, so that a hung clamd cannot hang the probe. */
const CLAMD_READINESS_TIMEOUT_MS = 2_000;
/** Documents in flight may finish for this long at shutdown, inside the listeners' grace. */
const DISPATCHER_STOP_MS = SHUTDOWN_GRACE_MS - 5_000;
/** The blob `/readyz` writes (and removes) to see whether an unavailable blob store is back. */
const READINESS_PROBE_KEY = 'readiness/probe';

/**
 * OAuth of the embedded service: {@link OAuthConfig} without the key-encryption key, which is
 * the data folder's `secrets/token-signing.kek`.
 */
export type EmbeddedOAuthOptions = Omit<OAuthConfig, 'keyEncryptionKey'>;

/** Options of {@link createEmbeddedDisarm}. */
export interface EmbeddedDisarmOptions {
  /**
   * Folder of all state: `disarm.sqlite` (unless {@link database} names another), `blobs/`, `secrets/link-signing.key`,
   * `secrets/token-signing.kek`, `work/`. Created when missing. It holds key hashes, the
   * link-signing secret and the key that seals the token signing keys: keep it private.
   */
  readonly dataDir: string;
  /**
   * The state store and queue: `postgres://user@host:port/database` for several nodes on one
   * PostgreSQL (migrated on start, under a lock, so nodes starting at once migrate once), or
   * `sqlite:<path>`. Document events follow it (LISTEN/NOTIFY on PostgreSQL).
   * @default `sqlite:<dataDir>/disarm.sqlite`
   */
  readonly database?: string;
  /**
   * Base URL clients reach the API at (what `statusUrl`s, `Location` headers and the OpenAPI
   * `servers` start with), e.g. `https://cdr.example.com`. A trailing slash is dropped.
   */
  readonly publicBaseUrl: string;
  /**
   * Base URL clients reach the storage origin at: signed download and upload links start with it,
   * so it must route to {@link EmbeddedDisarm.storage}. A trailing slash is dropped.
   */
  readonly storageBaseUrl: string;
  /** @default {@link DEFAULT_SYNC_WAIT_SECONDS} */
  readonly syncWaitSeconds?: number;
  /** Worker processes. @default `os.availableParallelism()` */
  readonly workers?: number;
  /** Delete-after-download grace in seconds. @default {@link DEFAULT_GRACE_SECONDS} */
  readonly graceSeconds?: number;
  /**
   * SHA-256 (hex) of bootstrap admin bearer tokens ({@link hashAdminToken}); never the tokens.
   * @default none: the admin routes accept no bootstrap token
   */
  readonly adminTokenHashes?: readonly string[];
  /**
   * Test mode: every component runs on a manual clock starting now, which `POST /v1/admin/clock`
   * and {@link EmbeddedDisarm.advanceClock} move. **Never in production**: anyone with an admin
   * token can then jump time (expire links, reset allowances).
   * @default false
   */
  readonly testMode?: boolean;
  /** Creates a demo organisation and API key when the store is empty. @default true */
  readonly demo?: boolean;
  /** Where logs go (request lines, processing, errors). @default none */
  readonly logger?: Logger;
  /** Worker module for the pool (tests use a misbehaving one). @default this package's worker */
  readonly workerModule?: string | URL;
  /**
   * Process documents in this process. `false` runs the API and storage only: documents are
   * accepted and queued but stay pending until a process with processing on leases them (the
   * scale-out API role; tests use it to hold documents in flight). @default true
   */
  readonly processing?: boolean;
  /**
   * Scan with ClamAV's clamd besides the built-in scanner: every submitted file, archive member,
   * office package part and PDF attachment (see {@link ClamdConfig}). Fail-closed unless
   * `failOpen`: a file clamd cannot scan fails (`internal_error`, credited), and `/readyz`
   * answers 503 while clamd does not answer `PING`. With `failOpen`, readiness does not depend
   * on clamd. Only processing uses it: with `processing: false` it is not consulted.
   * @default no clamd: the built-in EICAR scanner only
   */
  readonly clamd?: ClamdConfig;
  /**
   * Where submitted, cleaned and uploaded bytes live, e.g. an S3 bucket (`@disarm/s3`): its own
   * links replace the storage origin's, which then serves nothing. Its clock is the real one, so
   * test mode's clock does not expire its links.
   * @default a folder `blobs/` under `dataDir`, its links served by {@link EmbeddedDisarm.storage}
   */
  readonly blobs?: BlobStore;
  /**
   * Bearer token that `GET /metrics` (Prometheus) requires; compared in constant time.
   * **Without it the metrics are public** on the API's port: no tenant is named there, but
   * volumes, failure rates and queue depth are. @default none
   */
  readonly metricsToken?: string;
  /**
   * Renderers for the formats returned as PDF (svg, html, htm, ods, odp): `auto`, every installed
   * one, or names in the order to ask them; the engine's built-in renderer always follows them.
   * Each worker keeps its renderers warm across documents. `/readyz` reports which renderer draws
   * each format. Only processing uses them: with `processing: false` they are not consulted.
   * @default 'auto'
   */
  readonly renderers?: RendererSelection;
  /** Seconds between retention sweeps. @default 30 */
  readonly sweepIntervalSeconds?: number;
  /**
   * Test mode only: the step at which this process kills itself with SIGKILL, the first time a
   * document passes it (`DISARM_FAILPOINT`, README "Crash safety"), to prove what a crash there
   * leaves and that a restart puts it right. **Never in production.**
   * @default none
   * @throws {TypeError} (rejected) without `testMode`.
   */
  readonly failpoint?: FailpointStep;
  /**
   * OAuth 2.0 client credentials, always on: `POST /connect/token` issues ES256 access tokens
   * (issuer and audience below), `GET /.well-known/jwks.json` publishes their keys, and the
   * admin API manages clients and signing keys. With `external`, an identity provider's tokens
   * are accepted too (see {@link OAuthConfig.external} for its security notes).
   * @default issuer `publicBaseUrl`, audience `<publicBaseUrl>/v1`, no external issuer
   */
  readonly oauth?: EmbeddedOAuthOptions;
}

/**
 * The embedded service without listeners; see {@link createEmbeddedDisarm}. Serve {@link api} and
 * {@link storage} however you like (a framework, `listen`, a serverless adapter), then call
 * {@link start}.
 */
export interface EmbeddedDisarm {
  /**
   * The v1 API as a fetch handler: `/v1/*`, `/docs`, `/docs/assets/*`, `/problems`,
   * `/problems/*`, `/healthz`, `/readyz`. It logs one line per request (never the query string
   * or headers). Give it the request body as a stream: uploads of up to 100 MB are read as they
   * arrive and never buffered.
   */
  readonly api: (request: Request) => Promise<Response>;
  /**
   * The storage origin as a fetch handler: the targets of signed links (`/blobs/*`). Mount it
   * where {@link EmbeddedDisarmOptions.storageBaseUrl} points; it may receive uploads of 450 MB
   * over a link valid 60 minutes, so do not put a short request timeout in front of it.
   */
  readonly storage: (request: Request) => Promise<Response>;
  /** {@link EmbeddedDisarmOptions.publicBaseUrl} without its trailing slash. */
  readonly apiUrl: string;
  /** {@link EmbeddedDisarmOptions.storageBaseUrl} without its trailing slash. */
  readonly storageUrl: string;
  /** Where blobs live (`<dataDir>/blobs`), or `undefined` with {@link EmbeddedDisarmOptions.blobs}. */
  readonly blobDirectory: string | undefined;
  /** The clock every component uses. */
  readonly clock: Clock;
  /** Set on the start that created the demo organisation (an empty store), never again. */
  readonly demo: DemoAccount | undefined;
  /**
   * Test mode only: moves the clock forward, then runs what time drives at the new time (lease
   * recovery when this node processes, and a retention sweep) before resolving with it.
   * @throws {Error} (rejected) outside test mode.
   */
  advanceClock(milliseconds: number): Promise<Date>;
  /**
   * Test mode only: the process kills itself with SIGKILL the next time a document passes `step`
   * (what {@link EmbeddedDisarmOptions.failpoint} does from the start).
   * @throws {Error} outside test mode.
   */
  armFailpoint(step: FailpointStep): void;
  /**
   * Starts the background work: the dispatcher (unless `processing: false`) and the retention
   * sweeper. Until it resolves, `/readyz` answers 503 and accepted documents wait in the queue.
   * Calling it again returns the same promise.
   * @throws {Error} (rejected) after {@link stop} or {@link close}.
   */
  start(): Promise<void>;
  /**
   * Stops the background work: `/readyz` turns 503, the sweeper stops, and the dispatcher stops
   * leasing and lets documents in flight finish for up to {@link SHUTDOWN_GRACE_MS} (documents
   * still running are left to be requeued by the next start). The handlers keep answering, so a
   * server in front can drain its requests meanwhile. Idempotent.
   */
  stop(): Promise<void>;
  /**
   * {@link stop}, then closes the worker pool and the store; the handlers fail afterwards, so
   * stop serving them first. Idempotent.
   *
   * @example
   * ```ts
   * const drained = server.close({ graceMs: SHUTDOWN_GRACE_MS }); // your listener
   * await disarm.stop(); // documents finish while requests drain
   * await drained;
   * await disarm.close();
   * ```
   */
  close(): Promise<void>;
}

/** Hex SHA-256 of an admin token, for {@link EmbeddedDisarmOptions.adminTokenHashes}. */
export function hashAdminToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/**
 * Builds the embedded service in this process without listening anywhere: the state store
 * (SQLite by default, PostgreSQL from `database`), the local blob store and link signer, a pool of worker processes with its dispatcher,
 * the retention sweeper, and the two fetch handlers — the v1 API and the storage origin — for
 * the caller to mount (a framework route, `createListener`, `listen`). {@link startServer} is
 * this plus two listeners.
 *
 * The caller owns the listeners, so it states up front where they will be reached
 * (`publicBaseUrl`, `storageBaseUrl`).
 *
 * @example
 * ```ts
 * const disarm = await createEmbeddedDisarm({
 *   dataDir: '.data',
 *   publicBaseUrl: 'http://localhost:3000',
 *   storageBaseUrl: 'http://localhost:3001',
 * });
 * const storage = await listen(disarm.storage, { port: 3001 });
 * app.all('/v1/*', (c) => disarm.api(c.req.raw)); // e.g. Hono
 * await disarm.start();
 * ```
 * @throws {Error} (rejected) when the data folder cannot be used or the workers cannot start;
 *   whatever had started is stopped again. `RendererUnavailableError` when a renderer named in
 *   `renderers` is not ready.
 * @throws {TypeError} (rejected) when `publicBaseUrl` or `storageBaseUrl` is not an absolute
 *   http(s) URL.
 */
export async function createEmbeddedDisarm(
  options: EmbeddedDisarmOptions,
): Promise<EmbeddedDisarm> {
  const publicBaseUrl = toBaseUrl(options.publicBaseUrl, 'publicBaseUrl');
  const storageBaseUrl = toBaseUrl(options.storageBaseUrl, 'storageBaseUrl');
  const logger = options.logger ?? silentLogger;
  if (options.failpoint !== undefined && options.testMode !== true) {
    throw new TypeError('a failpoint needs test mode: it makes the process kill itself');
  }
  // Test mode only: armed now (`failpoint`) or later by the harness (`armFailpoint`).
  const failpoints = options.testMode === true ? createFailpoints(options.failpoint) : undefined;
  const failpoint = failpoints?.reach;
  const dataDir = resolve(options.dataDir);
  const manualClock: ManualClock | undefined =
    options.testMode === true ? createManualClock(new Date()) : undefined;
  const clock: Clock = manualClock ?? systemClock;
  const startedAt = new Date();
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanUp = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((error: unknown) => {
        logger.error({ err: error }, 'shutdown step failed');
      });
    }
  };

  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const workDirectory = join(dataDir, 'work');
    // Scratch of a previous run: nothing in it is referenced any more.
    await rm(workDirectory, { recursive: true, force: true });
    await mkdir(workDirectory, { recursive: true });
    const secret = await loadLinkSecret(dataDir);
    const tokenSigningKek = await loadTokenSigningKek(dataDir);

    const database = parseDatabaseUrl(options.database, dataDir);
    const opened = await openStateStore(database, {
      onMigrationNotice: (notice) => {
        logger.warn({ notice }, 'schema migration changed access');
      },
    });
    cleanups.push(() => opened.store.close());
    // Every component sees the stores through the watch, which logs an outage once when it
    // starts and once when it ends (README "Runbook: resource faults").
    const storageWatch = createStorageWatch({ logger });
    const store = storageWatch.watch('state-store', opened.store);
    logger.info({ database: describeDatabase(database) }, 'state store open');
    const demo = options.demo === false ? undefined : await provisionDemo(store, clock.now());

    const selection = options.renderers ?? 'auto';
    // The workers make the same choice; asking here tells a missing renderer before any document
    // is accepted, and what `/readyz` reports.
    const renderers = options.processing === false ? undefined : await rendererReport(selection);
    const pool = createWorkerPool({
      size: options.workers ?? Math.max(1, availableParallelism()),
      renderers: selection,
      ...(options.workerModule === undefined ? {} : { workerModule: options.workerModule }),
      ...(options.clamd === undefined ? {} : { clamd: options.clamd }),
    });
    // Readiness asks clamd when documents would fail without it (fail-closed processing).
    const clamdProbe =
      options.clamd !== undefined && options.clamd.failOpen !== true && options.processing !== false
        ? createClamdScanner({
            ...options.clamd,
            connectTimeoutMs: CLAMD_READINESS_TIMEOUT_MS,
            readTimeoutMs: CLAMD_READINESS_TIMEOUT_MS,
          })
        : undefined;
    let poolOpen = true;
    cleanups.push(async () => {
      poolOpen = false;
      await pool.close();
    });
    const documentEvents = await openDocumentEvents(database, (error) => {
      // The database out of reach is logged once by the watch (the store's own calls fail too),
      // not at every reconnection try of the listener.
      if (error instanceof StorageUnavailableError) {
        logger.debug?.({ err: error }, 'document events: the database is out of reach');
      } else {
        logger.warn({ err: error }, 'document events: connection lost, listening again');
      }
    });
    cleanups.push(() => documentEvents.close());
    const events = documentEvents.events;

    const signer = createLinkSigner(secret, storageBaseUrl);
    let local: LocalBlobStore | undefined;
    let blobs: BlobStore;
    if (options.blobs === undefined) {
      local = createLocalBlobStore({ directory: join(dataDir, 'blobs'), signer });
      await local.removeStaleTempFiles(startedAt);
      blobs = storageWatch.watch('blob-store', local);
    } else {
      blobs = storageWatch.watch('blob-store', options.blobs);
    }

    /**
     * Whether the blob store takes bytes: as last seen, and while it did not, asked again with a
     * one-byte write (so `/readyz` tells the moment a disk has room again, without a submission).
     */
    const blobsWritable = async (): Promise<boolean> => {
      if (storageWatch.state('blob-store').available) return true;
      try {
        await blobs.put(READINESS_PROBE_KEY, oneByte(), { maxBytes: 1 });
        await blobs.delete(READINESS_PROBE_KEY);
        return true;
      } catch {
        return false;
      }
    };

    const metrics = createMetrics({
      store,
      storageAvailable: (storage) => storageWatch.state(storage).available,
      ...(options.processing === false ? {} : { workerRestarts: () => pool.stats().restarts }),
      logger,
      ...(options.metricsToken === undefined ? {} : { token: options.metricsToken }),
    });

    const sweeper = createSweeper({
      store,
      blobs,
      clock,
      ...(failpoint === undefined ? {} : { failpoint }),
      graceMs: (options.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000,
      ...(options.sweepIntervalSeconds === undefined
        ? {}
        : { intervalMs: options.sweepIntervalSeconds * 1000 }),
      logger,
    });
    const dispatcher = createDispatcher({
      store,
      blobs,
      events,
      pool,
      clock,
      logger,
      workDirectory,
      ...(failpoint === undefined ? {} : { failpoint }),
      onFinished: (document, details) => {
        metrics.documentFinished(document, details);
      },
    });
    let started: Promise<void> | undefined;
    let running = false;
    let stopped: Promise<void> | undefined;

    const processIdentity = await createProcessIdentity();
    const api = createDisarmApi(
      { store, blobs, events, clock, logger, observer: metrics.api, processIdentity },
      {
        // Every step the protocol reaches is one of ours (the types check it).
        ...(failpoint === undefined ? {} : { failpoint }),
        publicBaseUrl,
        syncWaitSeconds: options.syncWaitSeconds ?? DEFAULT_SYNC_WAIT_SECONDS,
        deleteAfterDownloadGraceSeconds: options.graceSeconds ?? DEFAULT_GRACE_SECONDS,
        adminTokenHashes: options.adminTokenHashes ?? [],
        ...(manualClock
          ? {
              manualClock: {
                now: () => manualClock.now(),
                advance: async (milliseconds: number) => {
                  const now = manualClock.advance(milliseconds);
                  await sweeper.sweep();
                  return now;
                },
              },
            }
          : {}),
        readiness: async () => {
          const report = renderers === undefined ? {} : { renderers };
          if (!running || stopped || !poolOpen || pool.stats().size < 1) {
            return { ready: false, ...report };
          }
          // A blob store that cannot take bytes (a full disk) leaves the process in rotation:
          // status reads and downloads still work, and submissions answer 503 themselves.
          const blobStore = (await blobsWritable()) ? 'ok' : 'unavailable';
          try {
            await store.getOrganisation('org_readiness_probe', clock.now());
          } catch (error) {
            // An outage is logged by the watch when it starts, not at every probe.
            if (!(error instanceof StorageUnavailableError)) {
              logger.error({ err: error }, 'readiness: the state store is unreachable');
            }
            return {
              ready: false,
              checks: { database: 'unreachable', blobs: blobStore },
              ...report,
            };
          }
          try {
            await clamdProbe?.ping();
            return {
              ready: true,
              checks: { database: 'ok', blobs: blobStore, ...(clamdProbe ? { clamd: 'ok' } : {}) },
              ...report,
            };
          } catch (error) {
            logger.error({ err: error }, 'readiness: clamd does not answer');
            return {
              ready: false,
              checks: { database: 'ok', blobs: blobStore, clamd: 'not answering' },
              ...report,
            };
          }
        },
        docsAssets: createSwaggerUiAssets(),
        oauth: { ...options.oauth, keyEncryptionKey: tokenSigningKek },
      },
      {
        routes: [
          {
            pattern: METRICS_PATH,
            methods: { GET: { auth: 'none', handler: ({ request }) => metrics.handle(request) } },
          },
        ],
      },
    );
    const storage = createStorageApi({
      store,
      blobs,
      signer,
      clock,
      storageBaseUrl,
      problemsBaseUrl: publicBaseUrl,
      logger,
    });

    const stop = (): Promise<void> => {
      stopped ??= (async () => {
        // A start in flight finishes first, so the dispatcher is never stopped half-started.
        await started?.catch(() => undefined);
        await sweeper.stop().catch((error: unknown) => {
          logger.error({ err: error }, 'shutdown step failed');
        });
        // Documents in flight get most of the grace, so their sync waiters still see them end
        // before the listeners cut connections.
        await dispatcher.stop({ timeoutMs: DISPATCHER_STOP_MS }).catch((error: unknown) => {
          logger.error({ err: error }, 'shutdown step failed');
        });
        // Whatever is still held open in sync mode answers now (202): nothing more will finish.
        api.close();
      })();
      return stopped;
    };
    // Stopped in reverse of opening: background work, then the pool, then the store.
    cleanups.push(stop);

    let closed: Promise<void> | undefined;
    return {
      api: withRequestLog('api', (request) => api.fetch(request), logger),
      storage: withRequestLog(
        'storage',
        async (request) => {
          const started = performance.now();
          const response = await storage.fetch(request);
          metrics.storageRequest({
            method: request.method,
            route: null,
            status: response.status,
            seconds: (performance.now() - started) / 1000,
          });
          return response;
        },
        logger,
      ),
      apiUrl: publicBaseUrl,
      storageUrl: storageBaseUrl,
      blobDirectory: local?.directory,
      clock,
      demo,
      armFailpoint(step) {
        if (!failpoints) throw new Error('armFailpoint() needs test mode');
        failpoints.arm(step);
      },
      async advanceClock(milliseconds) {
        if (!manualClock) throw new Error('advanceClock() needs test mode');
        const now = manualClock.advance(milliseconds);
        // A jump past a lease recovers the documents of a worker that died holding them, as the
        // recovery timer would after real time had passed.
        if (running && options.processing !== false) await dispatcher.recover();
        await sweeper.sweep();
        return now;
      },
      start() {
        if (stopped) return Promise.reject(new Error('start() after stop() or close()'));
        started ??= (async () => {
          if (options.processing !== false) await dispatcher.start();
          sweeper.start();
          running = true;
        })();
        return started;
      },
      stop,
      close() {
        closed ??= cleanUp();
        return closed;
      },
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

/**
 * Which renderer draws each format under `selection`, as the workers will have it.
 * @throws {RendererUnavailableError} (rejected) when a named renderer is not ready.
 */
async function rendererReport(selection: RendererSelection): Promise<Record<string, string>> {
  const renderers = await createRenderers({ selection });
  try {
    return renderersByFormat(await Promise.all(renderers.map((renderer) => renderer.status())));
  } finally {
    await Promise.all(renderers.map((renderer) => renderer.close()));
  }
}

/** An absolute http(s) URL without its trailing slash. */
function toBaseUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${name} must be an absolute URL (got "${value}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${name} must be an http or https URL (got "${value}")`);
  }
  return value.replace(/\/+$/, '');
}

/** A one-byte body, for the blob store's readiness probe. */
function oneByte(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new Uint8Array([0]));
      controller.close();
    },
  });
}
