import { createListener } from '@disarm/node';
import type { EmbeddedDisarm } from '@disarm/node';
import { fastify } from 'fastify';
import type { FastifyInstance, FastifyPluginCallback } from 'fastify';

import { DISARM_PATH_PREFIXES } from './_paths.ts';

/**
 * A Fastify 5 app with the disarm API mounted at its own paths (`/v1/*`, `/docs`, `/problems`,
 * `/healthz`, `/readyz`) next to a route of the app's (`GET /hello`).
 *
 * The disarm routes hand the raw `node:http` request and response to `createListener` in their
 * `onRequest` hook, before Fastify parses anything: the body is read by the API as a stream
 * (never buffered, never cut at Fastify's `bodyLimit`), and no Fastify reply — such as its 415
 * for a content type it cannot parse — stands in for the API's own problem responses.
 *
 * @example
 * ```ts
 * const app = createFastifyApp(disarm);
 * await app.listen({ port: 3000 });
 * ```
 */
export function createFastifyApp(disarm: Pick<EmbeddedDisarm, 'api'>): FastifyInstance {
  const app = fastify();
  void app.register(disarmRoutes(disarm));
  app.get('/hello', () => ({ hello: 'from fastify' }));
  return app;
}

/** The disarm paths as an encapsulated plugin: nothing here leaks into the app's own routes. */
function disarmRoutes(disarm: Pick<EmbeddedDisarm, 'api'>): FastifyPluginCallback {
  const toDisarm = createListener(disarm.api);
  return (scope, _options, done) => {
    for (const prefix of DISARM_PATH_PREFIXES) {
      for (const url of [prefix, `${prefix}/*`]) {
        scope.route({
          method: scope.supportedMethods,
          url,
          onRequest(request, reply, next) {
            // Hijacked: Fastify skips its content-type parsers and the handler, and never writes
            // this reply; the body is still unread on `request.raw`.
            reply.hijack();
            toDisarm(request.raw, reply.raw);
            next();
          },
          handler() {
            throw new Error('unreachable: the onRequest hook hands every request to disarm');
          },
        });
      }
    }
    done();
  };
}
