/**
 * The `Renderer` port: what turns a sanitised document into PDF bytes for the formats the v1 API
 * returns as PDF (svg, html, htm, ods, odp). The engine sanitises first and hands a renderer only
 * what is already disarmed; the PDF a renderer produces then goes through the PDF rebuild and
 * verify before release like any submitted PDF (see `convert.ts`), so a renderer is trusted for
 * fidelity, never for safety.
 *
 * Implementations: headless Chromium (`@disarm/chromium`, html and svg), a warm LibreOffice pool
 * (`@disarm/libreoffice`, spreadsheets and presentations) and the engine's built-in renderer,
 * which serves whatever no configured renderer accepts.
 */

/** What a renderer is asked to draw. */
export type RenderInput =
  /** A complete sanitised HTML document (UTF-8, no script, no external reference). */
  | { readonly kind: 'html'; readonly markup: string }
  /** A complete sanitised SVG document (no DOCTYPE, no script, no external reference). */
  | { readonly kind: 'svg'; readonly markup: string }
  /**
   * A disarmed OpenDocument package (`.ods` or `.odp` bytes as the ODF rebuild wrote them: no
   * macro, script, event listener, link or embedded object).
   */
  | { readonly kind: 'spreadsheet' | 'presentation'; readonly bytes: Uint8Array };

/** The kinds of {@link RenderInput}. */
export type RenderKind = RenderInput['kind'];

/** How long a render may take and how to stop it. */
export interface RenderOptions {
  /** Aborts when the document's time budget runs out or the caller gives up. */
  readonly signal: AbortSignal;
  /** Milliseconds left of the document's time budget when the render starts. */
  readonly timeoutMs: number;
}

/** What a renderer says of itself, for `disarm doctor` and `/readyz`. */
export interface RendererStatus {
  /** Stable name, for example `chromium`, `libreoffice` or `builtin`. */
  readonly name: string;
  /** The kinds it renders. */
  readonly kinds: readonly RenderKind[];
  /** True when it can render now (its program was found and, if warm, is up). */
  readonly ready: boolean;
  /** Version of the program behind it, when known. */
  readonly version?: string;
  /** Why it is not ready, or other facts worth a line (the executable's path, pool size). */
  readonly detail?: string;
}

/** Renders sanitised documents to PDF. One instance may serve many documents at once. */
export interface Renderer {
  /** Stable name, for example `chromium`, `libreoffice` or `builtin`. */
  readonly name: string;
  /** The kinds it renders; the engine asks the first configured renderer that lists a kind. */
  readonly kinds: readonly RenderKind[];
  /**
   * Draws `input` as a PDF.
   * @returns the PDF bytes, which the engine rebuilds and verifies before release.
   * @throws {DisarmError} `ERR_TIMEOUT` when `options.signal` aborts or the time runs out (the
   *   renderer must stop its work then, never leave it running), `ERR_INTERNAL` for a renderer
   *   fault (a crashed browser or office process, which the renderer replaces for the next call).
   */
  render(input: RenderInput, options: RenderOptions): Promise<Uint8Array>;
  /** Reports whether it can render and with what; never throws. */
  status(): Promise<RendererStatus>;
  /** Stops every process it started. Safe to call twice. */
  close(): Promise<void>;
}
