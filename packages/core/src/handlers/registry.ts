import { DisarmError } from '../errors.ts';
import type { FormatFamily } from '../formats.ts';
import { archiveHandler } from './archive/handler.ts';
import { imageHandler } from './image/rebuild.ts';
import { odfHandler } from './odf/handler.ts';
import { ooxmlHandler } from './ooxml/handler.ts';
import { pdfHandler } from './pdf/handler.ts';
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

/** One handler per family; the allowlist in `formats.ts` maps every extension to one of these. */
export const HANDLERS: Readonly<Record<FormatFamily, FormatHandler>> = {
  image: imageHandler,
  archive: archiveHandler,
  pdf: pdfHandler,
  ooxml: ooxmlHandler,
  odf: odfHandler,
  cfb: notYetSupported('cfb'),
  rtf: notYetSupported('rtf'),
  markup: notYetSupported('markup'),
};
