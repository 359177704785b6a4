import type { RouteDefinition } from './api.ts';
import { PROBLEMS } from './http/problems.ts';
import type { ProblemCode } from './http/problems.ts';
import type { Readiness } from './config.ts';
import type { ApiContext } from './http/context.ts';
import { jsonResponse } from './http/negotiation.ts';
import { ProblemError } from './http/problem-error.ts';
import { createOpenApiDocument, OPENAPI_PATH } from './openapi/document.ts';
import {
  DOCS_ASSET_TYPES,
  DOCS_ASSETS_PATH,
  DOCS_CSP,
  DOCS_INIT_SCRIPT,
  docsHtml,
  docsInitScript,
  isDocsAssetName,
  PROBLEM_PAGE_CSP,
  problemPageHtml,
  problemsIndexHtml,
} from './openapi/docs-page.ts';
import { bufferedResponse } from './http/buffered-response.ts';

function html(body: string, csp: string): Response {
  return bufferedResponse(body, {
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-cache',
    },
  });
}

/** Routes that need no credential: health, the contract, the docs and the problem pages. */
export function publicRoutes(
  api: ApiContext,
  options: {
    readonly requireRateLimitHeaders: boolean;
    /** The API serves the OAuth routes: the contract describes them. @default false */
    readonly oauth?: boolean;
  },
): RouteDefinition[] {
  const { publicBaseUrl } = api.settings;
  const basePath = new URL(publicBaseUrl).pathname.replace(/\/+$/, '');
  const document = createOpenApiDocument({
    publicBaseUrl,
    testMode: api.settings.manualClock !== undefined,
    requireRateLimitHeaders: options.requireRateLimitHeaders,
    oauth: options.oauth === true,
  });
  const documentJson = JSON.stringify(document);
  return [
    {
      pattern: OPENAPI_PATH,
      methods: {
        GET: {
          auth: 'none',
          handler: ({ request }) =>
            Promise.resolve(
              jsonResponse(request, JSON.parse(documentJson) as unknown, {
                headers: { 'Cache-Control': 'no-cache' },
              }),
            ),
        },
      },
    },
    {
      pattern: '/docs',
      methods: {
        GET: {
          auth: 'none',
          handler: () =>
            Promise.resolve(
              html(
                docsHtml({
                  openapiUrl: `${basePath}${OPENAPI_PATH}`,
                  assetBase: `${basePath}${DOCS_ASSETS_PATH}`,
                }),
                DOCS_CSP,
              ),
            ),
        },
      },
    },
    {
      pattern: `${DOCS_ASSETS_PATH}/:name`,
      methods: {
        GET: {
          auth: 'none',
          handler: async ({ params }) => {
            const name = params.name ?? '';
            if (!isDocsAssetName(name)) throw new ProblemError('NotFound');
            const type = DOCS_ASSET_TYPES[name];
            if (name === DOCS_INIT_SCRIPT) {
              return bufferedResponse(docsInitScript(`${basePath}${OPENAPI_PATH}`), {
                headers: { 'Content-Type': type, 'Cache-Control': 'no-cache' },
              });
            }
            const asset = await api.settings.docsAssets?.(name);
            if (!asset) throw new ProblemError('NotFound');
            return bufferedResponse(asset.body.slice(), {
              headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=3600' },
            });
          },
        },
      },
    },
    {
      pattern: '/problems',
      methods: {
        GET: {
          auth: 'none',
          handler: () => Promise.resolve(html(problemsIndexHtml(publicBaseUrl), PROBLEM_PAGE_CSP)),
        },
      },
    },
    {
      pattern: '/problems/:code',
      methods: {
        GET: {
          auth: 'none',
          handler: ({ params }) => {
            const code = params.code ?? '';
            if (!Object.hasOwn(PROBLEMS, code)) throw new ProblemError('NotFound');
            const problemCode = code as ProblemCode;
            return Promise.resolve(
              html(
                problemPageHtml(problemCode, PROBLEMS[problemCode], publicBaseUrl),
                PROBLEM_PAGE_CSP,
              ),
            );
          },
        },
      },
    },
    {
      pattern: '/healthz',
      methods: {
        GET: {
          auth: 'none',
          handler: () =>
            Promise.resolve(
              Response.json({ status: 'ok' }, { headers: { 'Cache-Control': 'no-store' } }),
            ),
        },
      },
    },
    {
      pattern: '/readyz',
      methods: {
        GET: {
          auth: 'none',
          handler: async () => {
            const { ready, renderers, checks } = await api.settings
              .readiness()
              .catch((): Readiness => ({ ready: false }));
            return Response.json(
              {
                status: ready ? 'ready' : 'not ready',
                ...(checks === undefined ? {} : { checks }),
                ...(renderers === undefined ? {} : { renderers }),
              },
              { status: ready ? 200 : 503, headers: { 'Cache-Control': 'no-store' } },
            );
          },
        },
      },
    },
  ];
}
