import { DisarmError } from '../../errors.ts';
import type { RenderInput, RenderOptions, Renderer, RenderKind } from '../renderer.ts';

/** Name of the built-in renderer in `disarm doctor`, `/readyz` and error messages. */
export const BUILTIN_RENDERER_NAME = 'builtin';

const KINDS: readonly RenderKind[] = ['svg', 'html', 'spreadsheet', 'presentation'];

/**
 * The engine's own renderer, in pure JavaScript and the libraries the engine already uses
 * (pdf-lib, sharp with librsvg): it draws every kind, with less fidelity than a browser or an
 * office suite, and starts no process. `disarm()` asks it after the configured renderers, so a
 * document no configured renderer accepts is still converted.
 *
 * - `svg`: rasterised at 200 dpi (at most 8 Mi pixels) on a page the size of the drawing. The
 *   markup must name nothing outside itself; this is checked again before librsvg reads it.
 * - `html`: headings, paragraphs, lists, tables, preformatted text and inline (`data:`)
 *   pictures, in Helvetica and Courier on A4. No CSS layout, colour or web font.
 * - `spreadsheet`: every sheet's used cells as a grid on A4 landscape, each sheet from a new
 *   page, wide sheets in bands of columns.
 * - `presentation`: one page per slide at the slide's size, each shape's text and picture where
 *   it stands. No backgrounds, master page content, outlines or text styles.
 *
 * Text is drawn in the standard fonts' WinAnsi encoding (Latin script); a character outside it
 * is drawn as `?`.
 */
export const builtinRenderer: Renderer = {
  name: BUILTIN_RENDERER_NAME,
  kinds: KINDS,
  async render(input: RenderInput, options: RenderOptions): Promise<Uint8Array> {
    const check = (): void => {
      if (options.signal.aborted) {
        throw new DisarmError('ERR_TIMEOUT', 'the built-in renderer was stopped');
      }
    };
    check();
    // Loaded on first use, like the handlers that use pdf-lib and sharp (`handlers/registry.ts`).
    switch (input.kind) {
      case 'svg':
        return (await import('./svg.ts')).renderSvg(input.markup, check);
      case 'html':
        return (await import('./html.ts')).renderHtml(input.markup, check);
      case 'spreadsheet':
        return (await import('./odf.ts')).renderSpreadsheet(input.bytes, check);
      case 'presentation':
        return (await import('./odf.ts')).renderPresentation(input.bytes, check);
    }
  },
  async status() {
    const { default: sharp } = await import('sharp');
    return {
      name: BUILTIN_RENDERER_NAME,
      kinds: KINDS,
      ready: true,
      version: `sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, librsvg ${sharp.versions.rsvg ?? 'unknown'}`,
    };
  },
  close() {
    return Promise.resolve();
  },
};
