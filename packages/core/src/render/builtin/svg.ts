import { PDFDocument } from '@cantoo/pdf-lib';
import sharp from 'sharp';

import { Rejection } from '../../_internal/rejection.ts';
import { XmlReader } from '../../_internal/xml-reader.ts';
import { DisarmError } from '../../errors.ts';
import { MAX_PAGE_SIDE_POINTS, MIN_PAGE_SIDE_POINTS } from './_flow.ts';
import { drawPicture, toPicture } from './_pictures.ts';

/** Resolution an SVG is rasterised at on its page, in dots per inch. */
export const SVG_PRINT_DPI = 200;
/**
 * Most pixels one rasterised SVG may have (8 Mi: A4 at 200 dpi is 3.9 million, A3 7.8 million).
 * A larger drawing is rasterised at a lower resolution to fit. Its 24 MiB of samples count
 * against the document's content ceiling when the PDF rebuild reads the page back.
 */
export const MAX_SVG_RASTER_PIXELS = 8_388_608;
/** Lowest resolution worth drawing at, in dots per inch; below it the SVG is refused. */
const MIN_SVG_DPI = 9;
/** librsvg's resolution when sharp's `density` is 72: one SVG user unit is one pixel. */
const BASE_DENSITY = 72;
/** CSS 2.1 §4.3.2: a CSS pixel is 0.75 point. */
const POINTS_PER_CSS_PIXEL = 0.75;
/** The only URL schemes a sanitised SVG may still hold: same-document fragments and pictures. */
const SELF_CONTAINED_URL = /^\s*(?:#|data:image\/(?:png|jpeg|jpg|gif|webp)[;,])/i;
const CSS_URL = /url\(\s*(['"]?)([^'")]*)\1\s*\)/gi;

/**
 * Draws a sanitised SVG on one page the size of the drawing: rasterised by librsvg (through
 * sharp) at {@link SVG_PRINT_DPI}, within {@link MAX_SVG_RASTER_PIXELS}, on white.
 * @throws {DisarmError} `ERR_INTERNAL` when the markup still names anything outside itself (a
 *   DOCTYPE, a style sheet, an external `href` or `url()`): the sanitiser's promise is checked
 *   again here, because librsvg would otherwise be the one to act on it.
 * @throws {Rejection} `file_too_large` when even the lowest resolution needs too many pixels.
 */
export async function renderSvg(markup: string, check: () => void): Promise<Uint8Array> {
  const root = assertSelfContained(markup);
  const svg = Buffer.from(markup, 'utf8');
  const base = await sharp(svg, { density: BASE_DENSITY, limitInputPixels: false }).metadata();
  // Sized in physical units, librsvg at 72 dpi already gives points; in user units (CSS pixels),
  // a browser prints 96 of them per inch.
  const pointsPerUnit = hasPhysicalSize(root) ? 1 : POINTS_PER_CSS_PIXEL;
  let pageWidth = base.width * pointsPerUnit;
  let pageHeight = base.height * pointsPerUnit;
  const shrink = Math.min(1, MAX_PAGE_SIDE_POINTS / pageWidth, MAX_PAGE_SIDE_POINTS / pageHeight);
  pageWidth = Math.max(MIN_PAGE_SIDE_POINTS, pageWidth * shrink);
  pageHeight = Math.max(MIN_PAGE_SIDE_POINTS, pageHeight * shrink);
  const inches = (pageWidth / 72) * (pageHeight / 72);
  const dpi = Math.min(SVG_PRINT_DPI, Math.sqrt(MAX_SVG_RASTER_PIXELS / inches));
  if (dpi < MIN_SVG_DPI) {
    throw new Rejection(
      'file_too_large',
      `the SVG drawing is ${Math.round(pageWidth)} by ${Math.round(pageHeight)} points, too large to draw`,
    );
  }
  check();
  // librsvg draws in its own units: at density d, one unit is d/72 pixels.
  const density = (BASE_DENSITY * (pageWidth / 72) * dpi) / base.width;
  const picture = await toPicture(
    sharp(svg, { density, limitInputPixels: MAX_SVG_RASTER_PIXELS * 2 }),
  );
  const document = await PDFDocument.create({ updateMetadata: false });
  const page = document.addPage([pageWidth, pageHeight]);
  drawPicture(document, page, picture, { x: 0, y: 0, width: pageWidth, height: pageHeight });
  return document.save({ useObjectStreams: false });
}

/** The root `<svg>` element's attributes, once the whole markup is found self-contained. */
function assertSelfContained(markup: string): ReadonlyMap<string, string> {
  const refuse = (what: string): never => {
    throw new DisarmError('ERR_INTERNAL', `the sanitised SVG still holds ${what}`);
  };
  if (/<!DOCTYPE/i.test(markup)) refuse('a DOCTYPE');
  // librsvg honours the xml-stylesheet processing instruction (SVG 1.1 §6.3).
  if (/<\?xml-stylesheet/i.test(markup)) refuse('a style sheet link');
  const checkCss = (css: string): void => {
    if (/@import/i.test(css)) refuse('a CSS @import');
    for (const match of css.matchAll(CSS_URL)) {
      if (!SELF_CONTAINED_URL.test(match[2] ?? '')) refuse('an external url() reference');
    }
  };
  const root = new Map<string, string>();
  let styleDepth = 0;
  new XmlReader(markup, 'the SVG', {
    open(element, ancestors) {
      if (element.localName === 'style') styleDepth += 1;
      for (const attribute of element.attributes) {
        if (ancestors.length === 0) root.set(attribute.local, attribute.value);
        if (attribute.local === 'href' || attribute.local === 'src') {
          if (!SELF_CONTAINED_URL.test(attribute.value)) refuse(`an external ${attribute.local}`);
        } else {
          checkCss(attribute.value);
        }
      }
    },
    close(element) {
      if (element.localName === 'style') styleDepth -= 1;
    },
    text(text) {
      if (styleDepth > 0) checkCss(text);
    },
  }).read();
  return root;
}

/** Whether the root's width and height are both in physical units (in, cm, mm, pt, pc). */
function hasPhysicalSize(root: ReadonlyMap<string, string>): boolean {
  const physical = (value: string | undefined): boolean =>
    value !== undefined && /^\s*[0-9.eE+-]+\s*(?:in|cm|mm|pt|pc)\s*$/.test(value);
  return physical(root.get('width')) && physical(root.get('height'));
}
