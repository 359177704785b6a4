import type { EmbeddedDisarm } from '@disarm/node';
import { Hono } from 'hono';
import type { Context } from 'hono';

import { DISARM_PATH_PREFIXES } from './_paths.ts';

/**
 * A Hono app with the disarm API mounted at its own paths (`/v1/*`, `/docs`, `/problems`,
 * `/healthz`, `/readyz`) next to a route of the app's (`GET /hello`).
 *
 * Hono speaks fetch, so the API gets the request as it came (`c.req.raw`, its body still a
 * stream) and its response goes back as is. On Node, serve it with `@hono/node-server`; pass
 * `overrideGlobalObjects: false` so the global `Request` and `Response` stay Node's own.
 *
 * @example
 * ```ts
 * serve({ fetch: createHonoApp(disarm).fetch, port: 3000, overrideGlobalObjects: false });
 * ```
 */
export function createHonoApp(disarm: Pick<EmbeddedDisarm, 'api'>): Hono {
  const app = new Hono();
  const toDisarm = (c: Context): Promise<Response> => disarm.api(c.req.raw);
  for (const prefix of DISARM_PATH_PREFIXES) {
    app.all(prefix, toDisarm);
    app.all(`${prefix}/*`, toDisarm);
  }
  app.get('/hello', (c) => c.json({ hello: 'from hono' }));
  return app;
}
