import type { Clock } from '@disarm/protocol';

import type { FailpointStep } from '../failpoints/index.ts';
import { listen } from '../http/listen.ts';
import type { RunningServer } from '../http/listen.ts';
import type { FetchHandler } from '../http/types.ts';
import {
  createEmbeddedDisarm,
  DEFAULT_GRACE_SECONDS,
  DEFAULT_SYNC_WAIT_SECONDS,
  hashAdminToken,
  SHUTDOWN_GRACE_MS,
} from './create-embedded-disarm.ts';
import type { EmbeddedDisarm, EmbeddedDisarmOptions } from './create-embedded-disarm.ts';
import type { DemoAccount } from './_demo.ts';

// Re-exported for the CLI, which reads every default from here.
export { DEFAULT_GRACE_SECONDS, DEFAULT_SYNC_WAIT_SECONDS, hashAdminToken, SHUTDOWN_GRACE_MS };

/** Default API port. */
export const DEFAULT_API_PORT = 8080;
/** Default storage-origin port. */
export const DEFAULT_STORAGE_PORT = 8081;
/** Default bind address: loopback only. */
export const DEFAULT_HOST = '127.0.0.1';
/**
 * The storage origin receives staged uploads of up to 450 MB over a link valid 60 minutes, so a
 * slow upload may take that long.
 */
const STORAGE_REQUEST_TIMEOUT_MS = 60 * 60 * 1000;
/**
 * The API receives multipart and raw uploads of up to 100 MB: fifteen minutes lets one through
 * at about 1 Mbit/s (node's default, five minutes, needs 2.8). A client that stops sending is cut
 * off sooner, by the idle timeout.
 */
const API_REQUEST_TIMEOUT_MS = 15 * 60 * 1000;

/**
 * Options of {@link startServer}: those of {@link createEmbeddedDisarm}, plus where to listen. The
 * base URLs are optional here because the listeners are this function's own.
 */
export interface ServerOptions extends Omit<
  EmbeddedDisarmOptions,
  'publicBaseUrl' | 'storageBaseUrl'
> {
  /** API port; `0` picks a free one. @default {@link DEFAULT_API_PORT} */
  readonly port?: number;
  /** Storage-origin port; `0` picks a free one. @default {@link DEFAULT_STORAGE_PORT} */
  readonly storagePort?: number;
  /**
   * Address both listeners bind. Anything but loopback exposes the service to the network.
   * @default {@link DEFAULT_HOST}
   */
  readonly host?: string;
  /** Base URL clients reach the API at. @default `http://localhost:<api port>` */
  readonly publicBaseUrl?: string;
  /** Base URL clients reach the storage origin at. @default `http://localhost:<storage port>` */
  readonly storageBaseUrl?: string;
}

/** A running `disarm serve`; see {@link startServer}. */
export interface RunningDisarm {
  /** Public base URL of the API (what `statusUrl`s start with). */
  readonly apiUrl: string;
  /** Public base URL of the storage origin (what signed links start with). */
  readonly storageUrl: string;
  /** Bound API port. */
  readonly apiPort: number;
  /** Bound storage port. */
  readonly storagePort: number;
  /** The API's fetch handler (what the API port serves), for in-process use. */
  readonly apiHandler: (request: Request) => Promise<Response>;
  /** The storage origin's fetch handler, for in-process use. */
  readonly storageHandler: (request: Request) => Promise<Response>;
  /** Where blobs live (`<dataDir>/blobs`), or `undefined` with the `blobs` option. */
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
   * (README "Crash safety").
   * @throws {Error} outside test mode.
   */
  armFailpoint(step: FailpointStep): void;
  /**
   * Graceful shutdown: stops accepting connections, lets requests and documents in flight finish
   * for up to {@link SHUTDOWN_GRACE_MS} (documents still running are left to be requeued by the
   * next start), then closes the worker pool, the sweeper and the store. Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Starts the embedded service in this process: {@link createEmbeddedDisarm} with the v1 API and
 * the storage origin each on its own port. `disarm serve` and the integration tests both use it.
 *
 * @example
 * ```ts
 * const server = await startServer({ dataDir: '.data', port: 0, storagePort: 0, logger });
 * console.log(server.apiUrl, server.storageUrl);
 * process.once('SIGTERM', () => void server.close());
 * ```
 * @throws {Error} (rejected) when a port cannot be bound or the data folder cannot be used;
 *   whatever had started is stopped again.
 */
export async function startServer(options: ServerOptions): Promise<RunningDisarm> {
  const { port, storagePort, host = DEFAULT_HOST, ...embeddedOptions } = options;
  const logger = options.logger;
  const onError = (error: unknown, context: { method: string; path: string }): void => {
    logger?.error({ err: error, ...context }, 'request handler failed');
  };
  // The URLs depend on the bound ports (port 0), so the handlers are bound after listening.
  let disarm: EmbeddedDisarm | undefined;
  const notReady = (): Response =>
    new Response(null, { status: 503, headers: { 'Retry-After': '1' } });
  const late =
    (pick: (bound: EmbeddedDisarm) => FetchHandler): FetchHandler =>
    (request) =>
      disarm ? pick(disarm)(request) : notReady();

  const listeners: RunningServer[] = [];
  const closeListeners = async (): Promise<void> => {
    await Promise.all(listeners.map((server) => server.close({ graceMs: SHUTDOWN_GRACE_MS })));
  };
  try {
    const apiServer = await listen(
      late((bound) => bound.api),
      {
        port: port ?? DEFAULT_API_PORT,
        hostname: host,
        requestTimeoutMs: API_REQUEST_TIMEOUT_MS,
        onError,
        // Both handlers are APIs of @disarm/protocol: they never re-wrap a request.
        lightRequests: true,
      },
    );
    listeners.push(apiServer);
    const storageServer = await listen(
      late((bound) => bound.storage),
      {
        port: storagePort ?? DEFAULT_STORAGE_PORT,
        hostname: host,
        requestTimeoutMs: STORAGE_REQUEST_TIMEOUT_MS,
        onError,
        // Both handlers are APIs of @disarm/protocol: they never re-wrap a request.
        lightRequests: true,
      },
    );
    listeners.push(storageServer);

    const embedded = await createEmbeddedDisarm({
      ...embeddedOptions,
      publicBaseUrl: options.publicBaseUrl ?? `http://localhost:${apiServer.port}`,
      storageBaseUrl: options.storageBaseUrl ?? `http://localhost:${storageServer.port}`,
    });
    disarm = embedded;
    try {
      await embedded.start();
    } catch (error) {
      await embedded.close();
      throw error;
    }

    let closed: Promise<void> | undefined;
    return {
      apiUrl: embedded.apiUrl,
      storageUrl: embedded.storageUrl,
      apiPort: apiServer.port,
      storagePort: storageServer.port,
      apiHandler: embedded.api,
      storageHandler: embedded.storage,
      blobDirectory: embedded.blobDirectory,
      clock: embedded.clock,
      demo: embedded.demo,
      advanceClock: (milliseconds) => embedded.advanceClock(milliseconds),
      armFailpoint: (step) => {
        embedded.armFailpoint(step);
      },
      close() {
        closed ??= (async () => {
          // Stop accepting first; requests in flight keep going while documents finish, so sync
          // waiters see them complete. The pool and the store close only once both drained.
          const drained = closeListeners();
          await embedded.stop();
          await drained;
          await embedded.close();
        })();
        return closed;
      },
    };
  } catch (error) {
    await closeListeners();
    throw error;
  }
}
