import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode, ProblemType } from '../http/problems.ts';
import { problemTypeUrl } from '../http/problem-response.ts';

/** Where the interactive reference is served. */
export const DOCS_PATH = '/docs';

/** Where the reference's scripts and styles are served: `${DOCS_ASSETS_PATH}/<name>`. */
export const DOCS_ASSETS_PATH = '/docs/assets';

/** Where the problem catalogue is served; `${PROBLEMS_PATH}/<code>` is each problem's `type`. */
export const PROBLEMS_PATH = '/problems';

/** The asset the API itself generates ({@link docsInitScript}); the others come from `docsAssets`. */
export const DOCS_INIT_SCRIPT = 'init.js';

/**
 * The reference's assets by name, with the content type to serve each with. All but
 * {@link DOCS_INIT_SCRIPT} are files of the `swagger-ui-dist` package, read by the process
 * (`DisarmApiConfig.docsAssets`) — never fetched from a CDN.
 */
export const DOCS_ASSET_TYPES = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  [DOCS_INIT_SCRIPT]: 'text/javascript; charset=utf-8',
} as const;

/** Name of a reference asset. */
export type DocsAssetName = keyof typeof DOCS_ASSET_TYPES;

/**
 * Content-Security-Policy of the reference page: scripts, styles and the contract from the
 * same origin only, no inline script (Swagger UI sets inline styles; its icons are data: URLs).
 * "Try it out" can only call the same origin.
 */
export const DOCS_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Content-Security-Policy of the problem pages: static HTML, one inline style sheet, no script. */
export const PROBLEM_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** True when `name` is one of {@link DOCS_ASSET_TYPES}. */
export function isDocsAssetName(name: string): name is DocsAssetName {
  return Object.hasOwn(DOCS_ASSET_TYPES, name);
}

/** Escapes text for HTML element content and double-quoted attribute values. */
function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Escaped text with its `code spans` as `<code>`. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** A JSON string literal safe inside any script (no `</script>`, no line separators). */
function scriptString(text: string): string {
  return JSON.stringify(text)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** Options of {@link docsHtml}. */
export interface DocsPageOptions {
  /** URL of the OpenAPI document, same origin (e.g. `/v1/openapi.json`); linked for readers without script. */
  readonly openapiUrl: string;
  /** URL prefix of the assets, same origin, no trailing slash (e.g. {@link DOCS_ASSETS_PATH}). */
  readonly assetBase: string;
}

/**
 * The interactive reference (`GET /docs`): Swagger UI from the process's own copy of
 * `swagger-ui-dist`, started by {@link docsInitScript} at `${assetBase}/init.js`. The page has
 * no inline script and loads nothing from another origin, so it works offline and under
 * {@link DOCS_CSP} — serve it with that header.
 *
 * @example
 * ```ts
 * new Response(docsHtml({ openapiUrl: OPENAPI_PATH, assetBase: DOCS_ASSETS_PATH }), {
 *   headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': DOCS_CSP },
 * });
 * ```
 */
export function docsHtml(options: DocsPageOptions): string {
  const asset = (name: DocsAssetName): string => escapeHtml(`${options.assetBase}/${name}`);
  const openapiUrl = escapeHtml(options.openapiUrl);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>disarm CDR API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${asset('swagger-ui.css')}">
<style>body { margin: 0; background: #fafafa; } noscript p { font-family: sans-serif; padding: 1rem; }</style>
</head>
<body>
<noscript><p>This reference needs JavaScript. The contract itself: <a href="${openapiUrl}">${openapiUrl}</a>.</p></noscript>
<div id="swagger-ui"></div>
<script src="${asset('swagger-ui-bundle.js')}"></script>
<script src="${asset('swagger-ui-standalone-preset.js')}"></script>
<script src="${asset(DOCS_INIT_SCRIPT)}"></script>
</body>
</html>
`;
}

/**
 * The script that starts Swagger UI on the reference page (served at `${assetBase}/init.js`
 * as `text/javascript`). It loads `openapiUrl` only — the `?url=` query override and the
 * external validator badge are off — and hides the top bar, whose box would load any URL.
 */
export function docsInitScript(openapiUrl: string): string {
  return `'use strict';
(function () {
  var hideTopbar = function () {
    return { components: { Topbar: function () { return null; } } };
  };
  window.ui = window.SwaggerUIBundle({
    url: ${scriptString(openapiUrl)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    queryConfigEnabled: false,
    validatorUrl: null,
    displayRequestDuration: true,
    persistAuthorization: false,
    withCredentials: false,
    presets: [window.SwaggerUIBundle.presets.apis, window.SwaggerUIStandalonePreset],
    plugins: [hideTopbar],
    layout: 'StandaloneLayout'
  });
})();
`;
}

const PAGE_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafafa}' +
  'main{max-width:52rem;margin:0 auto;padding:2rem 1rem}' +
  'code{font:0.9em ui-monospace,monospace;background:#eef0f3;padding:0.1em 0.3em;border-radius:3px}' +
  'dl{display:grid;grid-template-columns:max-content 1fr;gap:0.3rem 1rem}dt{font-weight:600}dd{margin:0}' +
  'table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:0.4rem;border-bottom:1px solid #d8dce1}';

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

function baseOf(publicBaseUrl: string): string {
  return publicBaseUrl.replace(/\/+$/, '');
}

/**
 * The catalogue entry of one problem type (`GET /problems/{code}`), the page a problem's `type`
 * links to. Every value is HTML-escaped; serve it with {@link PROBLEM_PAGE_CSP}.
 */
export function problemPageHtml(
  code: ProblemCode,
  problem: ProblemType,
  publicBaseUrl: string,
): string {
  const base = baseOf(publicBaseUrl);
  return page(
    `${code} — disarm problem type`,
    `<p><a href="${escapeHtml(base + PROBLEMS_PATH)}">Problem catalogue</a> · <a href="${escapeHtml(base + DOCS_PATH)}">API reference</a></p>
<h1>${escapeHtml(problem.title)}</h1>
<dl>
<dt>code</dt><dd><code>${escapeHtml(code)}</code></dd>
<dt>HTTP status</dt><dd>${String(problem.status)}</dd>
<dt>type</dt><dd><code>${escapeHtml(problemTypeUrl(base, code))}</code></dd>
</dl>
<p>${prose(problem.description)}</p>
<p>Problem bodies are RFC 9457 <code>application/problem+json</code> with members <code>type</code>, <code>title</code>, <code>status</code>, <code>code</code> and <code>detail</code>. Branch on <code>code</code>; <code>title</code> and <code>detail</code> are for people.</p>`,
  );
}

/**
 * The problem catalogue (`GET /problems`): every code with its status, title and meaning.
 * Serve it with {@link PROBLEM_PAGE_CSP}.
 * @param problems The catalogue. @default PROBLEMS
 */
export function problemsIndexHtml(
  publicBaseUrl: string,
  problems: Readonly<Record<ProblemCode, ProblemType>> = PROBLEMS,
): string {
  const base = baseOf(publicBaseUrl);
  const rows = (Object.keys(problems) as ProblemCode[])
    .map((code) => {
      const problem = problems[code];
      return `<tr><td><a href="${escapeHtml(problemTypeUrl(base, code))}"><code>${escapeHtml(code)}</code></a></td><td>${String(problem.status)}</td><td>${escapeHtml(problem.title)}</td><td>${prose(problem.description)}</td></tr>`;
    })
    .join('\n');
  return page(
    'disarm problem catalogue',
    `<p><a href="${escapeHtml(base + DOCS_PATH)}">API reference</a></p>
<h1>Problem catalogue</h1>
<p>Every error body is RFC 9457 <code>application/problem+json</code>; its <code>type</code> links here and its <code>code</code> is stable.</p>
<table>
<thead><tr><th>code</th><th>status</th><th>title</th><th>meaning</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>`,
  );
}
