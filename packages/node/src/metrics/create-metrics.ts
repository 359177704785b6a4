import { createHash, timingSafeEqual } from 'node:crypto';

import { formatForFileName } from '@disarm/core';
import { StorageUnavailableError } from '@disarm/protocol';
import type {
  AcceptedSample,
  ApiObserver,
  DocumentRecord,
  Logger,
  RequestSample,
  StateStore,
  UnavailableStorage,
} from '@disarm/protocol';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

import { silentLogger } from '../_internal/logger.ts';
import type { FinishDetails } from '../processing/create-dispatcher.ts';

/** Where the metrics are served on the API's port. */
export const METRICS_PATH = '/metrics';
/**
 * Request latency buckets, in seconds: status reads take milliseconds, a sync submission up to
 * the 45-second wait budget, so the buckets span both.
 */
const REQUEST_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Engine time buckets, in seconds: an image in milliseconds, an office file through LibreOffice in tens of seconds. */
const ENGINE_BUCKETS_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/**
 * The methods that get their own label; anything else is `other`, so a client inventing methods
 * cannot create series.
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
]);

/** What the metrics read at scrape time. */
export interface MetricsSources {
  /** The queue, read at each scrape (depth and oldest wait). */
  readonly store: Pick<StateStore, 'queueStats'>;
  /**
   * Whether the state store and the blob store can do their work, as this process last saw it
   * (`disarm_storage_up`). @default not reported
   */
  readonly storageAvailable?: (storage: UnavailableStorage) => boolean;
  /** Workers replaced so far, when this process runs a worker pool. */
  readonly workerRestarts?: () => number;
  readonly logger?: Logger;
  /**
   * Bearer token `GET /metrics` requires. **Without one the metrics are public** on the API
   * port: they name no tenant, but show volumes and failure rates. @default none
   */
  readonly token?: string;
}

/** The metrics of one `disarm serve` process; see {@link createMetrics}. */
export interface DisarmMetrics {
  /** The Prometheus registry (this process's own, never the global one). */
  readonly registry: Registry;
  /** Feeds the v1 API's requests and acceptances in (`ports.observer`). */
  readonly api: ApiObserver;
  /** Counts a request of the storage origin (one route: signed links). */
  storageRequest(sample: RequestSample): void;
  /** Counts a document that ended, the engine's time on it and a refund (dispatcher `onFinished`). */
  documentFinished(document: DocumentRecord, details: FinishDetails): void;
  /**
   * `GET /metrics` in the Prometheus text format; 401 without the token when one is set, 405 for
   * another method.
   */
  handle(request: Request): Promise<Response>;
}

/**
 * The Prometheus metrics of `disarm serve`, on `prom-client`: HTTP requests by server, route
 * template and status with a latency histogram; documents by status, reason and format; engine
 * time by format; queue depth and oldest wait; worker restarts; charges and refunds; and the
 * process's own (CPU, memory, event-loop lag, file descriptors).
 *
 * Labels are bounded: routes are patterns (`/v1/documents/:id`), unknown paths `unmatched`,
 * methods outside the standard set `other`, formats from the allowlist or `other`.
 *
 * @example
 * ```ts
 * const metrics = createMetrics({ store, workerRestarts: () => pool.stats().restarts, token });
 * const api = createDisarmApi({ store, blobs, events, clock, observer: metrics.api }, config);
 * // route GET /metrics to metrics.handle
 * ```
 */
export function createMetrics(sources: MetricsSources): DisarmMetrics {
  const logger = sources.logger ?? silentLogger;
  if (sources.token?.length === 0) throw new TypeError('the metrics token must not be empty');
  const tokenDigest = sources.token === undefined ? undefined : sha256(sources.token);
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const requests = new Counter({
    name: 'disarm_http_requests_total',
    help: 'HTTP requests answered, by server (api, storage), method, route template and status.',
    labelNames: ['server', 'method', 'route', 'status'] as const,
    registers: [registry],
  });
  const requestSeconds = new Histogram({
    name: 'disarm_http_request_duration_seconds',
    help: 'Seconds from request to response head, by server, method and route template.',
    labelNames: ['server', 'method', 'route'] as const,
    buckets: REQUEST_BUCKETS_SECONDS,
    registers: [registry],
  });
  const documents = new Counter({
    name: 'disarm_documents_total',
    help: 'Documents that reached a terminal status, by status, reason (none when completed) and submitted format.',
    labelNames: ['status', 'reason', 'format'] as const,
    registers: [registry],
  });
  const engineSeconds = new Histogram({
    name: 'disarm_engine_duration_seconds',
    help: 'Seconds the engine (a worker process) spent on one document, by submitted format.',
    labelNames: ['format'] as const,
    buckets: ENGINE_BUCKETS_SECONDS,
    registers: [registry],
  });
  const charges = new Counter({
    name: 'disarm_charges_total',
    help: 'Documents accepted and billed, by plan type (tier: one allowance unit, payg: credit, internal: not metered).',
    labelNames: ['plan_type'] as const,
    registers: [registry],
  });
  const chargedPence = new Counter({
    name: 'disarm_charged_pence_total',
    help: 'Pence taken from prepaid credit by accepted documents.',
    registers: [registry],
  });
  const refunds = new Counter({
    name: 'disarm_refunds_total',
    help: 'Failed documents, each credited back (its credit or allowance unit returned).',
    registers: [registry],
  });
  const refundedPence = new Counter({
    name: 'disarm_refunded_pence_total',
    help: 'Pence given back to prepaid credit by failed documents (not by those that lease recovery fails after repeated crashes of their process: it reports no amounts).',
    registers: [registry],
  });
  const readQueue = async (): Promise<
    Awaited<ReturnType<StateStore['queueStats']>> | undefined
  > => {
    try {
      return await sources.store.queueStats();
    } catch (error) {
      // An outage is logged once by whoever watches the store, not at every scrape.
      if (!(error instanceof StorageUnavailableError)) {
        logger.error({ err: error }, 'metrics: reading the queue failed');
      }
      return undefined;
    }
  };
  new Gauge({
    name: 'disarm_queue_depth',
    help: 'Documents in the queue by state (pending: waiting for a worker; processing: leased), across every process sharing the store.',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const stats = await readQueue();
      if (stats === undefined) return;
      this.set({ state: 'pending' }, stats.pending);
      this.set({ state: 'processing' }, stats.processing);
    },
  });
  new Gauge({
    name: 'disarm_queue_oldest_pending_age_seconds',
    help: 'Seconds the oldest pending document has waited since submission (0 when none waits).',
    registers: [registry],
    async collect() {
      const stats = await readQueue();
      if (stats === undefined) return;
      const oldest = stats.oldestPendingSubmittedAt;
      this.set(oldest === null ? 0 : Math.max(0, (Date.now() - oldest.getTime()) / 1000));
    },
  });
  const storageAvailable = sources.storageAvailable;
  if (storageAvailable !== undefined) {
    new Gauge({
      name: 'disarm_storage_up',
      help: 'Whether this process can use its storage (1) or has met it unavailable lately (0): database (unreachable, or full), blobs (disk full, bucket failing).',
      labelNames: ['storage'] as const,
      registers: [registry],
      collect() {
        this.set({ storage: 'database' }, storageAvailable('state-store') ? 1 : 0);
        this.set({ storage: 'blobs' }, storageAvailable('blob-store') ? 1 : 0);
      },
    });
  }
  const workerRestarts = sources.workerRestarts;
  if (workerRestarts !== undefined) {
    let counted = 0;
    new Counter({
      name: 'disarm_worker_restarts_total',
      help: 'Worker processes replaced after a crash, a time-budget kill or the memory limit.',
      registers: [registry],
      collect() {
        const now = workerRestarts();
        if (now > counted) this.inc(now - counted);
        counted = now;
      },
    });
  }

  const observe = (server: string, sample: RequestSample): void => {
    const method = KNOWN_METHODS.has(sample.method) ? sample.method : 'other';
    const route = sample.route ?? 'unmatched';
    requests.inc({ server, method, route, status: String(sample.status) });
    requestSeconds.observe({ server, method, route }, sample.seconds);
  };

  return {
    registry,
    api: {
      request(sample) {
        observe('api', sample);
      },
      accepted(sample: AcceptedSample) {
        charges.inc({ plan_type: sample.planType ?? 'none' });
        if (sample.chargedPence > 0) chargedPence.inc(sample.chargedPence);
      },
    },
    storageRequest(sample) {
      observe('storage', { ...sample, route: '/blobs/*' });
    },
    documentFinished(document, details) {
      const format = formatForFileName(document.fileName)?.extension ?? 'other';
      documents.inc({ status: document.status, reason: document.reason ?? 'none', format });
      if (details.engineSeconds !== null) engineSeconds.observe({ format }, details.engineSeconds);
      // Every failed document is credited back (spec "States and transitions").
      if (document.status === 'failed') refunds.inc();
      if (details.refundedPence > 0) refundedPence.inc(details.refundedPence);
    },
    async handle(request) {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return new Response(null, { status: 405, headers: { Allow: 'GET, HEAD' } });
      }
      if (tokenDigest !== undefined && !bearerMatches(request, tokenDigest)) {
        return new Response(null, {
          status: 401,
          headers: { 'WWW-Authenticate': 'Bearer realm="metrics"', 'Cache-Control': 'no-store' },
        });
      }
      const body = await registry.metrics();
      return new Response(request.method === 'HEAD' ? null : body, {
        headers: { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' },
      });
    },
  };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Whether the request carries `Authorization: Bearer <token>`. The digests are compared in
 * constant time, and hashing first makes the comparison independent of the token's length too.
 */
function bearerMatches(request: Request, expected: Buffer): boolean {
  const header = request.headers.get('Authorization') ?? '';
  const match = /^Bearer +(\S+)\s*$/i.exec(header);
  return match?.[1] !== undefined && timingSafeEqual(sha256(match[1]), expected);
}
