import { Rejection } from '../../_internal/rejection.ts';
import type { FindingTally } from '../../findings.ts';
import { mediaTypeOf } from '../../outcome.ts';
import type { DetectedFile, EngineContext } from '../types.ts';
import { tooLarge } from './limits.ts';

/**
 * Most images one markup document may hold inline. Each is rebuilt like a submitted image (a
 * decode and an encode), so a page of thousands of tiny images would spend the time budget.
 */
export const MAX_INLINE_IMAGES = 500;

/**
 * An inline image address as the sanitisers write it, in an attribute or in CSS: up to the first
 * character no data URL of base64 holds (quotes, parentheses, white space, markup, references).
 */
const INLINE_IMAGE = /data:image\/(?:png|jpeg|gif|webp)[;,][^"')\s<>&]*/gi;

/**
 * What a left-out image's address becomes: a transparent GIF of one pixel, written here (an empty
 * address would point at the page itself), so the page keeps its layout and draws nothing there.
 */
const NOTHING = 'data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';

/** RFC 2397 with base64 (RFC 4648 §4), as image tools and browsers write an inline image. */
const BASE64_IMAGE = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$/i;

/**
 * Rebuilds every inline image of sanitised markup through the engine, as an archive member is
 * rebuilt, so the renderer's image decoders only ever read images this engine wrote. An image
 * that is not base64 PNG, JPEG, GIF or WebP, or that its rebuild refuses, is left out (drawn as
 * nothing, as a browser draws a broken image) and counted as `damaged-content`; a threat in one
 * rejects the document.
 * @throws {Rejection} `file_too_large` past {@link MAX_INLINE_IMAGES}; `threat_detected`.
 */
export async function rebuildInlineImages(
  markup: string,
  input: DetectedFile,
  context: EngineContext,
  findings: FindingTally,
): Promise<string> {
  const addresses = [...new Set(markup.match(INLINE_IMAGE) ?? [])];
  if (addresses.length > MAX_INLINE_IMAGES) {
    throw tooLarge(`the document holds more than ${MAX_INLINE_IMAGES} inline images`);
  }
  const rebuilt = new Map<string, string>();
  for (const [index, address] of addresses.entries()) {
    rebuilt.set(address, await rebuildOne(address, index, input, context, findings));
  }
  return addresses.length === 0
    ? markup
    : markup.replace(INLINE_IMAGE, (address) => rebuilt.get(address) ?? '');
}

async function rebuildOne(
  address: string,
  index: number,
  input: DetectedFile,
  context: EngineContext,
  findings: FindingTally,
): Promise<string> {
  const match = BASE64_IMAGE.exec(address);
  if (match?.[1] === undefined || match[2] === undefined) {
    findings.add('damaged-content');
    return NOTHING;
  }
  const extension = match[1].toLowerCase();
  const fileName = `inline-image-${index + 1}.${extension === 'jpeg' ? 'jpg' : extension}`;
  try {
    const image = await context.processMember(
      { bytes: Buffer.from(match[2], 'base64'), fileName },
      input.bytes,
    );
    findings.addAll(image.findings);
    return `data:${mediaTypeOf(image.format.extension)};base64,${Buffer.from(image.bytes).toString('base64')}`;
  } catch (error) {
    if (!(error instanceof Rejection) || error.reason === 'threat_detected') throw error;
    findings.add('damaged-content');
    return NOTHING;
  }
}
