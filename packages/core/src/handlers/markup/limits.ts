import { Rejection } from '../../_internal/rejection.ts';

/**
 * Largest markup document rendered. Measured with headless Chromium on this engine's default
 * time budget: see the README's conversion section for the numbers behind each limit.
 */
export const MAX_MARKUP_BYTES = 8 * 1024 * 1024;

/** Most elements a markup document may hold (start tags, counted before parsing). */
export const MAX_MARKUP_ELEMENTS = 100_000;

/**
 * Deepest nesting of elements. Below the XML reader's 256 so an SVG that nests too deep is the
 * same refusal as an HTML page that does.
 */
export const MAX_MARKUP_DEPTH = 200;

/**
 * Longest side of an SVG's drawing, in CSS pixels: 200 inches, the largest page ISO 32000-1
 * Annex C.2 lets a PDF have (14 400 points); the PDF page is sized to the drawing.
 */
export const MAX_SVG_SIDE_PX = 19_200;

/** A markup document past one of the limits above. */
export function tooLarge(detail: string): Rejection {
  return new Rejection('file_too_large', detail);
}

/**
 * Start tags in `text`, counted lexically up to `cap` (an upper bound on the elements a parser
 * builds, known before parsing).
 */
export function countStartTags(text: string, cap: number): number {
  const tag = /<[A-Za-z]/g;
  let count = 0;
  while (count <= cap && tag.exec(text) !== null) count += 1;
  return count;
}
