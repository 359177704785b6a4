import { createListener } from '@disarm/node';
import type { EmbeddedDisarm } from '@disarm/node';
import express from 'express';
import type { Express } from 'express';

import { isDisarmPath } from './_paths.ts';

/**
 * An Express 5 app with the disarm API mounted at its own paths (`/v1/*`, `/docs`, `/problems`,
 * `/healthz`, `/readyz`) next to a route of the app's (`GET /hello`).
 *
 * The API is handed the untouched `node:http` request through `createListener`, so request and
 * response bodies stream both ways: a 100 MB upload is never held in memory. That is why the mount
 * comes before any body parser — `express.json()` placed earlier would drain the JSON bodies of
 * the admin routes before the API could read them.
 *
 * @example
 * ```ts
 * const app = createExpressApp(disarm);
 * app.listen(3000);
 * ```
 */
export function createExpressApp(disarm: Pick<EmbeddedDisarm, 'api'>): Express {
  const app = express();
  app.disable('x-powered-by');

  const toDisarm = createListener(disarm.api);
  // A path-filtering middleware rather than `app.use('/v1', ...)`: a mount path would be cut off
  // `req.url`, and the API routes on the whole path.
  app.use((req, res, next) => {
    if (isDisarmPath(req.path)) toDisarm(req, res);
    else next();
  });

  // The app's own routes, with whatever parsing they like.
  app.use(express.json());
  app.get('/hello', (_req, res) => {
    res.json({ hello: 'from express' });
  });
  return app;
}
