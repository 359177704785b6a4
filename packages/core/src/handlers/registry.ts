import type { ContentKind, FormatFamily } from '../formats.ts';
import { archiveHandler } from './archive/handler.ts';
import { cfbHandler } from './cfb/handler.ts';
import { odfHandler } from './odf/handler.ts';
import { ooxmlHandler } from './ooxml/handler.ts';
import { rtfHandler } from './rtf/handler.ts';
import type { FormatHandler, SourcedRebuild } from './types.ts';

/**
 * A handler whose module, and the library it wraps, loads when the first file of its family
 * comes: @cantoo/pdf-lib costs about 0.1 s and 25 MB of start-up, sharp (libvips) about 0.03 s
 * and 15 MB, the markup sanitisers (parse5, sanitize-html, postcss) about 0.1 s and 17 MB, which
 * a process rebuilding one Word document should not pay.
 */
function loadedOnUse(
  family: FormatFamily,
  load: () => Promise<FormatHandler>,
  sourcedKinds: readonly ContentKind[] = [],
): FormatHandler {
  let loading: Promise<FormatHandler> | undefined;
  const handler = (): Promise<FormatHandler> => (loading ??= load());
  const sourced = async (): Promise<SourcedRebuild> => {
    const loaded = (await handler()).sourced;
    if (loaded === undefined) throw new TypeError(`the ${family} handler rebuilds in memory only`);
    return loaded;
  };
  return {
    family,
    async rebuild(input, context) {
      return (await handler()).rebuild(input, context);
    },
    async verify(output, input, context) {
      return (await handler()).verify(output, input, context);
    },
    ...(sourcedKinds.length === 0
      ? {}
      : {
          sourced: {
            kinds: new Set(sourcedKinds),
            rebuild: async (input, context, sink) =>
              (await sourced()).rebuild(input, context, sink),
            verify: async (output, input, context) =>
              (await sourced()).verify(output, input, context),
          },
        }),
  };
}

/** One handler per family; the allowlist in `formats.ts` maps every extension to one of these. */
export const HANDLERS: Readonly<Record<FormatFamily, FormatHandler>> = {
  image: loadedOnUse('image', async () => (await import('./image/rebuild.ts')).imageHandler),
  archive: archiveHandler,
  pdf: loadedOnUse('pdf', async () => (await import('./pdf/handler.ts')).pdfHandler, ['pdf']),
  ooxml: ooxmlHandler,
  odf: odfHandler,
  cfb: cfbHandler,
  rtf: rtfHandler,
  markup: loadedOnUse('markup', async () => (await import('./markup/handler.ts')).markupHandler),
};
