import { convertToPdf } from '../../render/convert.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { odfKindOf, rebuildOdf } from './rebuild.ts';
import { verifyOdf } from './verify.ts';

/**
 * A spreadsheet or presentation as the v1 API returns it, a PDF: the package is rebuilt like a
 * text's (no macro, event listener, link, DDE, database source or embedded object but charts;
 * formulas that fetch kept as their cached values), held to verify before release as a package,
 * and only then handed to the renderer that draws the kind, whose PDF is rebuilt in turn.
 */
export async function convertOdf(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const kind = odfKindOf(input);
  const rebuilt = await rebuildOdf(input, context);
  // The renderer sees nothing the package verify would not release.
  await verifyOdf(rebuilt, input, context);
  return convertToPdf(
    { kind: kind === 'odf-spreadsheet' ? 'spreadsheet' : 'presentation', bytes: rebuilt.bytes },
    input,
    rebuilt.findings,
    context,
  );
}
