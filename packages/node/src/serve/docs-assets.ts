import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import type { DocsAsset } from '@disarm/protocol';

/**
 * The files of `swagger-ui-dist` the `/docs` page may load, with their types. Only these names
 * are ever read: the name comes from a request path, so it is looked up here, never joined
 * onto a folder as given.
 */
const SWAGGER_UI_FILES: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/**
 * The static files of the interactive reference from the `swagger-ui-dist` package, for
 * `DisarmApiConfig.docsAssets`. Unknown names (including the page itself, `index.html`, which the
 * API renders) resolve `undefined`. Files are read once and kept in memory.
 *
 * @example
 * ```ts
 * createDisarmApi(ports, { publicBaseUrl, docsAssets: createSwaggerUiAssets() });
 * ```
 */
export function createSwaggerUiAssets(): (name: string) => Promise<DocsAsset | undefined> {
  const folder = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const cache = new Map<string, Promise<DocsAsset>>();
  return async (name) => {
    if (!Object.hasOwn(SWAGGER_UI_FILES, name)) return undefined;
    const contentType = SWAGGER_UI_FILES[name];
    if (contentType === undefined) return undefined;
    let asset = cache.get(name);
    if (!asset) {
      asset = readFile(join(folder, name)).then((bytes) => ({
        body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        contentType,
      }));
      // A failed read is not cached: the next request tries again.
      void asset.catch(() => cache.delete(name));
      cache.set(name, asset);
    }
    return asset;
  };
}
