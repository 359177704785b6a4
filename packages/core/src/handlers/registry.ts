import { DisarmError } from '../errors.ts';
import type { FormatFamily } from '../formats.ts';
import { archiveHandler } from './archive/handler.ts';
import { cfbHandler } from './cfb/handler.ts';
import { odfHandler } from './odf/handler.ts';
import { ooxmlHandler } from './ooxml/handler.ts';
import type { FormatHandler } from './types.ts';

/**
 * A family whose rebuild has not shipped yet. It fails the file as a fault — never passes it
 * through, never rejects it as if the file were at fault.
 */
function notYetSupported(family: FormatFamily): FormatHandler {
  return {
    family,
    rebuild(input) {
      return Promise.reject(
        new DisarmError(
          'ERR_NOT_YET_SUPPORTED',
          `rebuilding .${input.format.extension} files (${family}) is not yet supported by this engine version`,
        ),
      );
    },
    verify() {
      return Promise.reject(new TypeError(`no ${family} output can exist to verify`));
    },
  };
}

/**
 * A handler whose module, and the library it wraps, loads when the first file of its family
 * comes: @cantoo/pdf-lib costs about 0.1 s and 25 MB of start-up and sharp (libvips) about
 * 0.03 s and 15 MB, which a process rebuilding one Word document should not pay.
 */
function loadedOnUse(family: FormatFamily, load: () => Promise<FormatHandler>): FormatHandler {
  let loading: Promise<FormatHandler> | undefined;
  const handler = (): Promise<FormatHandler> => (loading ??= load());
  return {
    family,
    async rebuild(input, context) {
      return (await handler()).rebuild(input, context);
    },
    async verify(output, input, context) {
      return (await handler()).verify(output, input, context);
    },
  };
}

/** One handler per family; the allowlist in `formats.ts` maps every extension to one of these. */
export const HANDLERS: Readonly<Record<FormatFamily, FormatHandler>> = {
  image: loadedOnUse('image', async () => (await import('./image/rebuild.ts')).imageHandler),
  archive: archiveHandler,
  pdf: loadedOnUse('pdf', async () => (await import('./pdf/handler.ts')).pdfHandler),
  ooxml: ooxmlHandler,
  odf: odfHandler,
  cfb: cfbHandler,
  rtf: notYetSupported('rtf'),
  markup: notYetSupported('markup'),
};
