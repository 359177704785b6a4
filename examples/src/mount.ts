import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';

import type { EmbeddedDisarm } from '@disarm/node';
import { getRequestListener } from '@hono/node-server';

import { createExpressApp } from './express.ts';
import { createFastifyApp } from './fastify.ts';
import { createHonoApp } from './hono.ts';

/** The frameworks there is an example for. */
export const FRAMEWORKS = ['express', 'fastify', 'hono'] as const;

/** One of {@link FRAMEWORKS}. */
export type Framework = (typeof FRAMEWORKS)[number];

/** Whether `value` names one of {@link FRAMEWORKS}. */
export function isFramework(value: unknown): value is Framework {
  return (FRAMEWORKS as readonly unknown[]).includes(value);
}

/** A framework app as a `node:http` request listener; see {@link mountApp}. */
export interface MountedApp {
  readonly framework: Framework;
  /** Serves the app on any `node:http` server. */
  readonly listener: RequestListener;
  /** Releases what the framework holds (Fastify's plugins); close the server first. */
  close(): Promise<void>;
}

/**
 * The example app of `framework` around `disarm`, as a request listener for a `node:http` server
 * of the caller's (so every framework listens, times out and shuts down the same way).
 *
 * @example
 * ```ts
 * const app = await mountApp('fastify', disarm);
 * const server = createServer(app.listener).listen(3000);
 * ```
 */
export async function mountApp(
  framework: Framework,
  disarm: Pick<EmbeddedDisarm, 'api'>,
): Promise<MountedApp> {
  switch (framework) {
    case 'express':
      return { framework, listener: createExpressApp(disarm), close: () => Promise.resolve() };
    case 'fastify': {
      const app = createFastifyApp(disarm);
      await app.ready();
      return {
        framework,
        listener: (req, res) => {
          app.routing(req, res);
        },
        close: () => app.close(),
      };
    }
    case 'hono': {
      // Leave the global Request and Response alone: the rest of the process uses Node's own.
      const listener = getRequestListener(createHonoApp(disarm).fetch, {
        overrideGlobalObjects: false,
      });
      return {
        framework,
        listener: (req, res) => void listener(req, res),
        close: () => Promise.resolve(),
      };
    }
  }
}

/**
 * Creates a `node:http` server and resolves once it listens on `port` (`0` picks a free one). Pass
 * `listener` now, or attach it later (`server.on('request', listener)`) when the app needs the
 * bound port first.
 * @throws {Error} (rejected) when the address cannot be bound.
 */
export async function listenOn(
  port: number,
  host: string,
  listener?: RequestListener,
): Promise<{ readonly server: Server; readonly port: number }> {
  const server = listener ? createServer(listener) : createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}

/**
 * Stops `server` accepting connections, closes idle ones, and cuts the rest after `graceMs`;
 * resolves when every connection is closed.
 */
export function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const force = setTimeout(() => {
      server.closeAllConnections();
    }, graceMs);
    server.close(() => {
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}
