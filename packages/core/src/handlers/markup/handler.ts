import { decodeXmlText } from '../../_internal/xml.ts';
import { FindingTally } from '../../findings.ts';
import { convertToPdf, verifyConverted } from '../../render/convert.ts';
import type { RenderInput } from '../../render/renderer.ts';
import type { DetectedFile, EngineContext, FormatHandler, HandlerOutput } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { decodeHtml } from './charset.ts';
import { findForbiddenHtml, findForbiddenSvg } from './check.ts';
import { sanitiseHtml } from './html.ts';
import { rebuildInlineImages } from './images.ts';
import { countStartTags, MAX_MARKUP_BYTES, MAX_MARKUP_ELEMENTS, tooLarge } from './limits.ts';
import { sanitiseSvg } from './svg.ts';

/** The sanitised markup each converted output was rendered from, for its check before release. */
const RENDERED = new WeakMap<HandlerOutput, RenderInput & { kind: 'html' | 'svg' }>();

/**
 * Sanitises an HTML or SVG document (see `html.ts`, `svg.ts`): the budgets first, so nothing
 * past them reaches a parser or a renderer.
 * @throws {Rejection} `file_too_large` past {@link MAX_MARKUP_BYTES}, {@link MAX_MARKUP_ELEMENTS}
 *   or the depth and size limits; `invalid_file` for an SVG that is not well-formed XML or
 *   declares an internal DTD subset.
 */
export function sanitiseMarkup(
  input: DetectedFile,
  findings: FindingTally,
): RenderInput & { kind: 'html' | 'svg' } {
  if (input.bytes.length > MAX_MARKUP_BYTES) {
    throw tooLarge(
      `the ${input.format.extension} document is ${input.bytes.length} bytes; markup is rendered up to ${MAX_MARKUP_BYTES} bytes`,
    );
  }
  const svg = input.format.kind === 'svg';
  const text = svg ? decodeXmlText(input.bytes) : decodeHtml(input.bytes).text;
  if (countStartTags(text, MAX_MARKUP_ELEMENTS) > MAX_MARKUP_ELEMENTS) {
    throw tooLarge(`the document holds more than ${MAX_MARKUP_ELEMENTS} elements`);
  }
  return svg
    ? { kind: 'svg', markup: sanitiseSvg(text, findings).markup }
    : { kind: 'html', markup: sanitiseHtml(text, findings) };
}

async function rebuildMarkup(input: DetectedFile, context: EngineContext): Promise<HandlerOutput> {
  const findings = new FindingTally();
  const sanitised = sanitiseMarkup(input, findings);
  const rendered = {
    ...sanitised,
    markup: await rebuildInlineImages(sanitised.markup, input, context, findings),
  };
  const output = await convertToPdf(rendered, input, findings.toArray(), context);
  RENDERED.set(output, rendered);
  return output;
}

async function verifyMarkup(
  output: HandlerOutput,
  input: DetectedFile,
  context: EngineContext,
): Promise<void> {
  const rendered = RENDERED.get(output);
  if (rendered === undefined) {
    throw new VerifyFailure('markup.rendered', 'no sanitised markup is on record for this output');
  }
  const problem =
    rendered.kind === 'svg'
      ? findForbiddenSvg(rendered.markup)
      : findForbiddenHtml(rendered.markup);
  if (problem !== undefined) {
    throw new VerifyFailure(
      'markup.sanitised',
      `the markup given to the renderer holds ${problem}`,
    );
  }
  await verifyConverted(output, input, context);
}

/**
 * HTML and SVG, returned as PDF: sanitised to an allowlist, then drawn by the first configured
 * renderer that draws the kind, and the PDF it wrote rebuilt by the PDF family.
 */
export const markupHandler: FormatHandler = {
  family: 'markup',
  rebuild: rebuildMarkup,
  verify: verifyMarkup,
};
