import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { DisarmError } from '@disarm/core';
import type { RenderInput, RenderOptions, Renderer, RendererStatus } from '@disarm/core';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** Where Debian's `chromium` package installs the browser. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/** How long the browser may take to start before a render fails. */
export const DEFAULT_LAUNCH_TIMEOUT_MS = 30_000;

/** Margin of a page whose document sets none with `@page` (Chromium's own print default). */
const DEFAULT_MARGIN = '10mm';

/** A page of a fresh browser context, never used before. */
interface FreshPage {
  readonly context: BrowserContext;
  readonly page: Page;
}

/** Options of {@link createChromiumRenderer}. */
export interface ChromiumRendererOptions {
  /** The browser to run. Default {@link DEFAULT_CHROMIUM_PATH} (Debian's `chromium`). */
  readonly executablePath?: string;
  /** Default {@link DEFAULT_LAUNCH_TIMEOUT_MS}. */
  readonly launchTimeoutMs?: number;
}

/**
 * What the browser is started with, besides Playwright's own headless switches. A proxy that
 * does not exist, loopback included (`<-loopback>`), and a resolver that resolves nothing: a
 * request that got past the page's policy and the route that aborts every request would still
 * reach nowhere. Background services (updates, sync, safe browsing, metrics) are off.
 */
const BROWSER_ARGS = [
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=<-loopback>',
  '--host-resolver-rules=MAP * ~NOTFOUND',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-domain-reliability',
  '--disable-sync',
  '--no-pings',
  '--disable-features=Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions',
];

/**
 * The page's Content Security Policy (CSP 3): nothing may load but images inline in the page;
 * styles inline in it apply; no script, frame, form target, font, media or base address.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'";

/** The page a render loads: the sanitised document, its policy first in its head. */
function pageFor(input: RenderInput): string {
  const policy = `<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">`;
  switch (input.kind) {
    case 'html': {
      const head = /<head[^>]*>/i.exec(input.markup);
      return head === null
        ? `${policy}${input.markup}`
        : `${input.markup.slice(0, head.index + head[0].length)}${policy}${input.markup.slice(head.index + head[0].length)}`;
    }
    case 'svg': {
      const { width, height } = svgSize(input.markup);
      // A page the size of the drawing, the drawing inline on it so its shapes and text stay
      // vectors in the PDF.
      return `<!DOCTYPE html><html><head><meta charset="utf-8">${policy}<style>@page{size:${width}px ${height}px;margin:0}html,body{margin:0;padding:0}body>svg{display:block}</style></head><body>${input.markup}</body></html>`;
    }
    case 'spreadsheet':
    case 'presentation':
      throw new TypeError(`the chromium renderer does not draw ${input.kind}s`);
  }
}

/** The pixel size the engine wrote on a sanitised SVG's root (300x150, SVG's default, if none). */
function svgSize(markup: string): { width: number; height: number } {
  const root = /^<svg\b[^>]*>/.exec(markup)?.[0] ?? '';
  const length = (name: string, fallback: number): number => {
    const value = Number(new RegExp(`\\s${name}="([0-9.]+)"`).exec(root)?.[1]);
    return Number.isFinite(value) && value > 0 ? value : fallback;
  };
  return { width: length('width', 300), height: length('height', 150) };
}

/**
 * A renderer of sanitised HTML and SVG to PDF by headless Chromium, driven through
 * playwright-core with the system's browser (no browser download).
 *
 * One browser is started on the first render and kept warm; each document gets a fresh
 * isolated context (no cookie, cache or storage shared) with JavaScript disabled, service
 * workers blocked and every request aborted (prepared while the renderer waits for the next
 * document), and a Content Security Policy that allows only
 * inline images. Page size and margins follow the document's `@page` rule, A4 with 10 mm margins
 * otherwise; an SVG is drawn inline on a page of its own size, so it stays vectors. A render that
 * outlives its time budget or its signal closes its context and fails with `ERR_TIMEOUT`; a
 * browser that died is started again for the next render.
 *
 * Warning: the markup must come sanitised from the engine (`disarm()` does this); the browser
 * settings are a second wall, not the first.
 *
 * @example
 * ```ts
 * const chromium = createChromiumRenderer();
 * const outcome = await disarm(source, { renderers: [chromium] });
 * await chromium.close();
 * ```
 */
export function createChromiumRenderer(options: ChromiumRendererOptions = {}): Renderer {
  const executablePath = options.executablePath ?? DEFAULT_CHROMIUM_PATH;
  const launchTimeoutMs = options.launchTimeoutMs ?? DEFAULT_LAUNCH_TIMEOUT_MS;
  if (!Number.isInteger(launchTimeoutMs) || launchTimeoutMs <= 0) {
    throw new TypeError('launchTimeoutMs must be a positive integer');
  }
  let starting: Promise<Browser> | undefined;
  let closed = false;
  let version: Promise<string | undefined> | undefined;

  const browser = (): Promise<Browser> => {
    // playwright-core costs about 55 MiB resident once imported: it loads with the first
    // browser, so a process that only asks for the renderer's status (an API node's readiness,
    // `disarm doctor`) never pays it.
    starting ??= import('playwright-core')
      .then(({ chromium }) =>
        chromium.launch({
          executablePath,
          args: BROWSER_ARGS,
          timeout: launchTimeoutMs,
          // Playwright's own handlers would close the browser on SIGINT, SIGTERM and SIGHUP, and
          // exit the whole process on SIGINT: the process that owns the renderer decides when it
          // stops, and closes it. Chromium ends by itself when this process dies (its DevTools
          // pipe closes).
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
        }),
      )
      .then((started) => {
        started.on('disconnected', () => {
          // The next render starts a new one.
          starting = undefined;
        });
        return started;
      });
    starting.catch(() => {
      starting = undefined;
    });
    return starting;
  };

  /**
   * A page in a context of its own, prepared after the previous render so the next document does
   * not wait for it (a context costs about as much as printing a short page). It is used once.
   */
  let spare: Promise<FreshPage> | undefined;

  async function openPage(): Promise<FreshPage> {
    const started = await browser();
    const context = await started.newContext({
      javaScriptEnabled: false,
      serviceWorkers: 'block',
      acceptDownloads: false,
    });
    await context.route('**/*', (route) => route.abort('blockedbyclient'));
    return { context, page: await context.newPage() };
  }

  async function takePage(): Promise<FreshPage> {
    const ready = await spare?.catch(() => undefined);
    spare = undefined;
    // A spare of a browser that died since is no use.
    return ready !== undefined && !ready.page.isClosed() ? ready : openPage();
  }

  function prepareSpare(): void {
    if (closed || spare !== undefined) return;
    spare = openPage();
    spare.catch(() => undefined);
  }

  async function render(
    input: RenderInput,
    { signal, timeoutMs }: RenderOptions,
  ): Promise<Uint8Array> {
    if (closed) throw new DisarmError('ERR_INTERNAL', 'the chromium renderer is closed');
    const html = pageFor(input);
    if (signal.aborted || timeoutMs <= 0) throw timeout();
    let context: BrowserContext | undefined;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => {
        reject(timeout());
      };
      timer = setTimeout(onAbort, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    const work = (async () => {
      const fresh = await takePage();
      context = fresh.context;
      const { page } = fresh;
      page.setDefaultTimeout(timeoutMs);
      await page.setContent(html, { waitUntil: 'load' });
      return page.pdf({
        preferCSSPageSize: true,
        format: 'A4',
        printBackground: true,
        margin: {
          top: DEFAULT_MARGIN,
          right: DEFAULT_MARGIN,
          bottom: DEFAULT_MARGIN,
          left: DEFAULT_MARGIN,
        },
      });
    })();
    try {
      const pdf = await Promise.race([work, stopped]);
      return new Uint8Array(pdf.buffer, pdf.byteOffset, pdf.byteLength);
    } catch (error) {
      if (error instanceof DisarmError) throw error;
      throw new DisarmError('ERR_INTERNAL', 'chromium failed to render the document', {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      // Closing the context stops whatever its page still does. A render stopped before its
      // context existed closes it as soon as it does.
      const close = (): Promise<void> =>
        context?.close().catch(() => undefined) ?? Promise.resolve();
      if (context === undefined) void work.then(close, close);
      else await close();
      prepareSpare();
    }
  }

  return {
    name: 'chromium',
    kinds: ['html', 'svg'],
    render,
    async status(): Promise<RendererStatus> {
      version ??= programVersion(executablePath);
      const found = await version;
      return found === undefined
        ? {
            name: 'chromium',
            kinds: ['html', 'svg'],
            ready: false,
            detail: `no chromium at ${executablePath}`,
          }
        : {
            name: 'chromium',
            kinds: ['html', 'svg'],
            ready: !closed,
            version: found,
            detail: executablePath,
          };
    },
    async close(): Promise<void> {
      closed = true;
      const unused = spare;
      spare = undefined;
      await (await unused?.catch(() => undefined))?.context.close().catch(() => undefined);
      const running = starting;
      starting = undefined;
      if (running !== undefined) await (await running.catch(() => undefined))?.close();
    },
  };
}

function timeout(): DisarmError {
  return new DisarmError(
    'ERR_TIMEOUT',
    'chromium did not finish the document within its time budget',
  );
}

/** `Chromium 156.0.8078.108 built on Debian ...` -> `156.0.8078.108`; `undefined` when absent. */
async function programVersion(executablePath: string): Promise<string | undefined> {
  try {
    const { stdout } = await promisify(execFile)(executablePath, ['--version'], {
      timeout: 10_000,
    });
    return /(\d+\.\d+\.\d+\.\d+)/.exec(stdout)?.[1] ?? stdout.trim();
  } catch {
    return undefined;
  }
}
