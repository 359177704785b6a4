/**
 * The interactive reference in a real browser (Debian's Chromium through playwright-core),
 * served by the real embedded server: it renders the contract's operations, raises no console
 * error, and makes no request off its own origin (it must work offline, under its strict CSP).
 *
 * Point it at another running server with `DISARM_DOCS_BASE_URL=http://127.0.0.1:8080`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { DOCS_CSP, DOCS_PATH, HTTP_METHODS, OPENAPI_PATH } from '@disarm/protocol';
import type { OpenApiDocument } from '@disarm/protocol';
import { chromium } from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startServer } from '../src/serve/index.ts';
import type { RunningDisarm } from '../src/serve/index.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

const CHROMIUM = '/usr/bin/chromium';
const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('GET /docs in Chromium', () => {
  let browser: Browser | undefined;
  let server: RunningDisarm | undefined;
  let dataDir: string | undefined;
  let origin: string;
  let page: Page;
  /** Requests that tried to leave the origin (all blocked). */
  const offOrigin: string[] = [];
  const consoleErrors: string[] = [];
  const failedRequests: string[] = [];
  let cspHeader: string | null = null;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      execFileSync('bash', [join(REPO_ROOT, 'scripts/ensure-system-deps.sh')], {
        stdio: 'inherit',
      });
    }
    const external = process.env.DISARM_DOCS_BASE_URL;
    if (external !== undefined && external !== '') {
      origin = new URL(external).origin;
    } else {
      dataDir = await mkdtemp(join(tmpdir(), 'disarm-docs-'));
      server = await startServer({ dataDir, port: 0, storagePort: 0, workers: 1, demo: false });
      origin = new URL(server.apiUrl).origin;
    }
    const launched = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    browser = launched;
    const context = await launched.newContext({ serviceWorkers: 'block' });
    await context.route('**/*', async (route) => {
      const url = route.request().url();
      if (new URL(url).origin === origin) {
        await route.continue();
      } else {
        offOrigin.push(url);
        await route.abort('blockedbyclient');
      }
    });
    page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
    page.on('requestfailed', (request) =>
      failedRequests.push(`${request.url()}: ${request.failure()?.errorText ?? ''}`),
    );
    page.on('response', (response) => {
      if (response.status() >= 400) failedRequests.push(`${response.url()}: ${response.status()}`);
    });
    const response = await page.goto(`${origin}${DOCS_PATH}`, { waitUntil: 'load' });
    cspHeader = (await response?.allHeaders())?.['content-security-policy'] ?? null;
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('is served with the strict CSP', () => {
    expect(cspHeader).toBe(DOCS_CSP);
  });

  it('renders the title and every operation of the contract', async () => {
    const title = page.locator('.info .title').first();
    await title.waitFor({ timeout: scaledMs(30_000) });
    expect(await title.textContent()).toContain('disarm CDR API');
    // The contract the page was given: the served one when pointed at a real server.
    const document = (await (await fetch(`${origin}${OPENAPI_PATH}`)).json()) as OpenApiDocument;
    const expected = Object.entries(document.paths).flatMap(([path, item]) =>
      HTTP_METHODS.filter((method) => item[method] !== undefined).map(
        (method) => `${method.toUpperCase()} ${path}`,
      ),
    );
    const blocks = page.locator('.opblock');
    await blocks.first().waitFor();
    const rendered = await blocks.evaluateAll((elements) =>
      elements.map((element) => {
        const method = element.querySelector('.opblock-summary-method')?.textContent ?? '';
        const path =
          element.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method.trim()} ${path}`;
      }),
    );
    expect(rendered.sort()).toEqual(expected.sort());
    expect(rendered).toContain('POST /v1/documents');
  });

  it('expands an operation to its parameters and response codes', async () => {
    const submit = page.locator('#operations-Documents-submitDocument');
    await submit.locator('.opblock-summary').first().click();
    const codes = submit.locator('.responses-table .response-col_status');
    await codes.first().waitFor();
    const statuses = (await codes.allTextContents()).map((text) => text.trim());
    expect(statuses).toEqual(expect.arrayContaining(['200', '202', '400', '401', '413', '429']));
    const parameters = await submit.locator('.parameters .parameter__name').allTextContents();
    expect(parameters.map((text) => text.replace(/\s*\*\s*required$/, '').trim())).toEqual(
      expect.arrayContaining(['wait', 'waitSeconds', 'Idempotency-Key', 'Prefer']),
    );
  });

  it('raises no console error and never leaves its origin', () => {
    expect(consoleErrors).toEqual([]);
    expect(failedRequests).toEqual([]);
    expect(offOrigin).toEqual([]);
  });
});
