import { Rejection } from '../../_internal/rejection.ts';

/*
 * The limits below are measured with headless Chromium (156, two shared cores) against the
 * default 120 s time budget: a page of 8.4 MB of running text sanitises in 3 s and renders in
 * 16 s; 50 000 paragraphs (4.3 MB, about 1 100 pages) go through sanitise, render and the PDF
 * rebuild in 32 s, so the element limit keeps the worst case near half the budget; a table of
 * 20 000 rows renders in 10 s; an SVG of 100 000 shapes in 6 s; a 19 200 px square SVG with a
 * blur filter over all of it in under 1 s.
 */

/** Largest markup document rendered. */
export const MAX_MARKUP_BYTES = 8 * 1024 * 1024;

/** Most elements a markup document may hold (start tags, counted before parsing). */
export const MAX_MARKUP_ELEMENTS = 100_000;

/**
 * Deepest nesting of elements (counting `html` and `body`). Below the XML reader's 256 so an SVG
 * that nests too deep is the same refusal as an HTML page that does; Chromium draws 198 nested
 * blocks in 0.4 s.
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
