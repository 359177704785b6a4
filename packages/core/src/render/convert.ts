import { Rejection } from '../_internal/rejection.ts';
import { DisarmError, isDisarmError } from '../errors.ts';
import { formatForFileName } from '../formats.ts';
import type {
  DetectedFile,
  EngineContext,
  FormatHandler,
  HandlerOutput,
} from '../handlers/types.ts';
import type { RenderInput, Renderer } from './renderer.ts';

/**
 * The renderer that draws `kind`: the first of the configured renderers that lists it. The
 * built-in renderer, which `disarm()` appends after the configured ones, lists every kind.
 * @throws {DisarmError} `ERR_INTERNAL` when none does (a context without the built-in renderer).
 */
export function rendererFor(kind: RenderInput['kind'], context: EngineContext): Renderer {
  const renderer = context.renderers.find((candidate) => candidate.kinds.includes(kind));
  if (renderer === undefined) {
    throw new DisarmError('ERR_INTERNAL', `no renderer is configured for ${kind}`);
  }
  return renderer;
}

/**
 * Renders a sanitised document to PDF and rebuilds that PDF like a submitted one, so what a
 * renderer wrote (its JavaScript, actions, attachments, metadata) never leaves the engine
 * unchecked. The findings are the sanitiser's (`findings`) and the PDF rebuild's together.
 * @throws {DisarmError} `ERR_TIMEOUT` when the render runs past the document's time budget.
 */
export async function convertToPdf(
  input: RenderInput,
  source: DetectedFile,
  findings: HandlerOutput['findings'],
  context: EngineContext,
): Promise<HandlerOutput> {
  const renderer = rendererFor(input.kind, context);
  context.deadline.check();
  let pdf: Uint8Array;
  try {
    pdf = await context.deadline.race(
      renderer.render(input, { signal: context.signal, timeoutMs: context.deadline.remainingMs() }),
    );
  } catch (error) {
    // A renderer's own refusal of a drawing past its bounds is the file's `file_too_large`.
    if (isDisarmError(error) || error instanceof Rejection) throw error;
    throw new DisarmError('ERR_INTERNAL', `the ${renderer.name} renderer failed`, {
      cause: error,
    });
  }
  const rebuilt = await (await pdfFamily()).rebuild(asPdf(pdf, source), context);
  return { bytes: rebuilt.bytes, findings: [...findings, ...rebuilt.findings] };
}

/** Verify before release of a converted output: the PDF family's checks on the written PDF. */
export async function verifyConverted(
  output: HandlerOutput,
  source: DetectedFile,
  context: EngineContext,
): Promise<void> {
  await (await pdfFamily()).verify(output, asPdf(output.bytes, source), context);
}

/** The rendered bytes as a PDF file named after the source. */
function asPdf(bytes: Uint8Array, source: DetectedFile): DetectedFile {
  const format = formatForFileName('rendered.pdf');
  if (format === undefined) throw new TypeError('pdf is missing from the allowlist');
  return { bytes, fileName: `${source.fileName}.pdf`, format };
}

/** The PDF family, loaded with the first conversion (see `handlers/registry.ts`). */
async function pdfFamily(): Promise<FormatHandler> {
  return (await import('../handlers/pdf/handler.ts')).pdfHandler;
}
