import { describe, expect, it } from 'vitest';

import { createSwaggerUiAssets } from './docs-assets.ts';

describe('createSwaggerUiAssets()', () => {
  it('serves the allowlisted swagger-ui-dist files with their types', async () => {
    const assets = createSwaggerUiAssets();
    const css = await assets('swagger-ui.css');
    expect(css?.contentType).toBe('text/css; charset=utf-8');
    expect(new TextDecoder().decode(css?.body.slice(0, 2000))).toContain('.swagger-ui');
    expect((await assets('swagger-ui-bundle.js'))?.contentType).toBe(
      'text/javascript; charset=utf-8',
    );
    expect((await assets('swagger-ui-standalone-preset.js'))?.body.byteLength).toBeGreaterThan(0);
    const icon = await assets('favicon-32x32.png');
    expect(icon?.contentType).toBe('image/png');
    expect([...(icon?.body.slice(1, 4) ?? [])]).toEqual([0x50, 0x4e, 0x47]);
    expect(await assets('swagger-ui.css')).toBe(css);
  });

  it('never reads a name that is not on the list', async () => {
    const assets = createSwaggerUiAssets();
    for (const name of [
      'index.html',
      'package.json',
      '../package.json',
      '../../../etc/passwd',
      '/etc/passwd',
      'swagger-ui.css.map',
      '__proto__',
      'constructor',
      'toString',
      '',
    ]) {
      expect(await assets(name), name).toBeUndefined();
    }
  });
});
