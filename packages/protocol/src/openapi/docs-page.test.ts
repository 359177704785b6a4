import { describe, expect, it } from 'vitest';

import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode } from '../http/problems.ts';
import {
  DOCS_ASSET_TYPES,
  DOCS_CSP,
  docsHtml,
  docsInitScript,
  isDocsAssetName,
  PROBLEM_PAGE_CSP,
  problemPageHtml,
  problemsIndexHtml,
} from './docs-page.ts';

const BASE = 'https://cdr.example.com';

describe('docsHtml', () => {
  const html = docsHtml({ openapiUrl: '/v1/openapi.json', assetBase: '/docs/assets' });

  it('loads only its own assets, by URL, with no inline script', () => {
    const urls = [...html.matchAll(/(?:src|href)="([^"]*)"/g)].map((found) => found[1]);
    expect(urls).toEqual([
      'data:,',
      '/docs/assets/swagger-ui.css',
      '/v1/openapi.json',
      '/docs/assets/swagger-ui-bundle.js',
      '/docs/assets/swagger-ui-standalone-preset.js',
      '/docs/assets/init.js',
    ]);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    expect(html).not.toMatch(/https?:\/\//);
  });

  it('escapes the URLs it is given', () => {
    const hostile = docsHtml({ openapiUrl: '/x"><script>alert(1)</script>', assetBase: '/a"b' });
    expect(hostile).not.toContain('<script>alert');
    expect(hostile).toContain('/x&quot;&gt;&lt;script&gt;');
    expect(hostile).toContain('href="/a&quot;b/swagger-ui.css"');
  });

  it('has a CSP that allows no inline or evaluated script', () => {
    expect(DOCS_CSP).toContain("default-src 'self'");
    expect(DOCS_CSP).not.toContain('script-src');
    expect(DOCS_CSP).not.toContain('unsafe-eval');
    expect(DOCS_CSP).toContain("frame-ancestors 'none'");
  });
});

describe('docsInitScript', () => {
  it('starts Swagger UI on the given document only, with no external validator', () => {
    const script = docsInitScript('/v1/openapi.json');
    expect(script).toContain('url: "/v1/openapi.json"');
    expect(script).toContain('validatorUrl: null');
    expect(script).toContain('queryConfigEnabled: false');
    expect(script).not.toMatch(/https?:\/\//);
  });

  it('embeds the URL as a safe string literal', () => {
    const script = docsInitScript('/x"</script><script>alert(1)//\u2028');
    expect(script).not.toContain('</script>');
    expect(script).not.toContain('\u2028');
    expect(script).toContain('"/x\\"\\u003c/script\\u003e');
  });
});

describe('isDocsAssetName', () => {
  it('knows the assets and nothing else', () => {
    for (const name of Object.keys(DOCS_ASSET_TYPES)) expect(isDocsAssetName(name)).toBe(true);
    expect(isDocsAssetName('../package.json')).toBe(false);
    expect(isDocsAssetName('toString')).toBe(false);
  });
});

describe('problem pages', () => {
  it('shows one problem type with its code, status and type URL', () => {
    const html = problemPageHtml('InsufficientCredit', PROBLEMS.InsufficientCredit, `${BASE}/`);
    expect(html).toContain('<h1>Insufficient credit</h1>');
    expect(html).toContain('<dd>402</dd>');
    expect(html).toContain(`<code>${BASE}/problems/InsufficientCredit</code>`);
    expect(html).toContain('<code>balancePence</code>');
    expect(html).toContain(`href="${BASE}/problems"`);
    expect(html).not.toMatch(/<script/);
  });

  it('escapes every value', () => {
    const html = problemPageHtml(
      'NotFound',
      { status: 404, title: '<img src=x onerror=alert(1)>', description: 'a & `<b>`' },
      'https://x.example/"><script>',
    );
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('a &amp; <code>&lt;b&gt;</code>');
  });

  it('lists every code in the index, each linking to its page', () => {
    const html = problemsIndexHtml(BASE);
    for (const code of Object.keys(PROBLEMS) as ProblemCode[]) {
      expect(html).toContain(`<a href="${BASE}/problems/${code}"><code>${code}</code></a>`);
    }
    expect(html).not.toMatch(/<script/);
  });

  it('has a CSP that allows no script at all', () => {
    expect(PROBLEM_PAGE_CSP).toContain("default-src 'none'");
    expect(PROBLEM_PAGE_CSP).not.toContain('script-src');
  });
});
