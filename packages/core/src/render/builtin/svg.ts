import { PDFDocument } from '@cantoo/pdf-lib';
import sharp from 'sharp';

import { Rejection } from '../../_internal/rejection.ts';
import { XmlReader } from '../../_internal/xml-reader.ts';
import { DisarmError } from '../../errors.ts';
import { A4_PAGE, MAX_PAGE_SIDE_POINTS, MIN_PAGE_SIDE_POINTS } from './_flow.ts';
import { drawPicture, toPicture } from './_pictures.ts';

/** Resolution an SVG is rasterised at on its page, in dots per inch. */
const SVG_PRINT_DPI = 200;
/**
 * Most pixels one rasterised SVG may have (8 Mi: A4 at 200 dpi is 3.9 million, A3 7.8 million).
 * A larger drawing is rasterised at a lower resolution to fit. Its 24 MiB of samples count
 * against the document's content ceiling when the PDF rebuild reads the page back.
 */
const MAX_SVG_RASTER_PIXELS = 8_388_608;
/** Lowest resolution worth drawing at, in dots per inch; below it the SVG is refused. */
const MIN_SVG_DPI = 9;
/** librsvg's resolution when sharp's `density` is 72: one SVG user unit is one pixel. */
const BASE_DENSITY = 72;
/** CSS 2.1 §4.3.2: a CSS pixel is 0.75 point. */
const POINTS_PER_CSS_PIXEL = 0.75;
const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';
/** ISO 216 A4 in CSS pixels (96 per inch), the page a browser prints an unsized drawing on. */
const A4_CSS_PIXELS = { width: 794, height: 1123 };
/** The only URL schemes a sanitised SVG may still hold: same-document fragments and pictures. */
const SELF_CONTAINED_URL = /^\s*(?:#|data:image\/(?:png|jpeg|jpg|gif|webp)[;,])/i;
const CSS_URL = /url\(\s*(['"]?)([^'")]*)\1\s*\)/gi;

/**
 * Draws a sanitised SVG on one page the size of the drawing: rasterised by librsvg (through
 * sharp) at {@link SVG_PRINT_DPI}, within {@link MAX_SVG_RASTER_PIXELS}, on white. A drawing
 * with no size of its own (no viewBox, and no width and height that are lengths) is laid out on
 * an A4 page, as a browser prints it; a document whose root is not an SVG `<svg>` element draws
 * nothing, as in a browser, and gives a blank A4 page.
 * @throws {DisarmError} `ERR_INTERNAL` when the markup still names anything outside itself (a
 *   DOCTYPE, a style sheet, an external `href` or `url()`): the sanitiser's promise is checked
 *   again here, because librsvg would otherwise be the one to act on it.
 * @throws {Rejection} `file_too_large` when even the lowest resolution needs too many pixels;
 *   `invalid_file` when librsvg cannot read the drawing.
 */
export async function renderSvg(markup: string, check: () => void): Promise<Uint8Array> {
  const root = assertSelfContained(markup);
  const document = await PDFDocument.create({ updateMetadata: false });
  if (root.uri !== SVG_NAMESPACE || root.localName !== 'svg') {
    document.addPage([A4_PAGE.width, A4_PAGE.height]);
    return document.save({ useObjectStreams: false });
  }
  // CSS 2.1 §10.3.2: a drawing with no size of its own takes its viewport, a page, where
  // librsvg would shrink it to what it draws.
  const unsized = !root.attributes.has('viewBox') && !hasAbsoluteSize(root.attributes);
  const svg = Buffer.from(unsized ? withRootSize(markup, A4_CSS_PIXELS) : markup, 'utf8');
  const physical = !unsized && hasPhysicalSize(root.attributes);
  const base = await sharp(svg, { density: BASE_DENSITY, limitInputPixels: false })
    .metadata()
    .catch(() => {
      throw new Rejection('invalid_file', 'the SVG drawing cannot be read');
    });
  // Sized in physical units, librsvg at 72 dpi already gives points; in user units (CSS pixels),
  // a browser prints 96 of them per inch.
  const pointsPerUnit = physical ? 1 : POINTS_PER_CSS_PIXEL;
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
  const page = document.addPage([pageWidth, pageHeight]);
  drawPicture(document, page, picture, { x: 0, y: 0, width: pageWidth, height: pageHeight });
  return document.save({ useObjectStreams: false });
}

/**
 * `markup` with its root start tag's `width` and `height` replaced by `size` (CSS pixels). The
 * markup is well-formed and has no DOCTYPE (checked before), so the root tag is the first tag
 * after the prolog's declaration, comments and processing instructions.
 */
function withRootSize(markup: string, size: { width: number; height: number }): string {
  let start = 0;
  for (;;) {
    while (/\s|\uFEFF/.test(markup.charAt(start))) start += 1;
    if (markup.startsWith('<?', start)) start = markup.indexOf('?>', start) + 2;
    else if (markup.startsWith('<!--', start)) start = markup.indexOf('-->', start) + 3;
    else break;
  }
  let end = start;
  let quote = '';
  for (; end < markup.length; end += 1) {
    const character = markup.charAt(end);
    if (quote !== '') {
      if (character === quote) quote = '';
    } else if (character === '"' || character === "'") {
      quote = character;
    } else if (character === '>') {
      break;
    }
  }
  const tag = markup
    .slice(start, end)
    .replace(/\s(?:width|height)\s*=\s*(?:"[^"]*"|'[^']*')/g, '')
    .replace(/^<[^\s/>]+/, (name) => `${name} width="${size.width}" height="${size.height}"`);
  return markup.slice(0, start) + tag + markup.slice(end);
}

/** The root element of an SVG document: its name and attributes. */
interface SvgRoot {
  readonly uri: string;
  readonly localName: string;
  readonly attributes: ReadonlyMap<string, string>;
}

/** The root element, once the whole markup is found self-contained. */
function assertSelfContained(markup: string): SvgRoot {
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
  const attributes = new Map<string, string>();
  let root: SvgRoot = { uri: '', localName: '', attributes };
  let styleDepth = 0;
  new XmlReader(markup, 'the SVG', {
    open(element, ancestors) {
      if (ancestors.length === 0)
        root = { uri: element.uri, localName: element.localName, attributes };
      if (element.localName === 'style') styleDepth += 1;
      for (const attribute of element.attributes) {
        if (ancestors.length === 0) attributes.set(attribute.local, attribute.value);
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

/** Whether the root has a width and a height that are lengths (not percentages, not `auto`). */
function hasAbsoluteSize(root: ReadonlyMap<string, string>): boolean {
  const absolute = (value: string | undefined): boolean =>
    value !== undefined && /^\s*[0-9.eE+-]+\s*(?:px|in|cm|mm|pt|pc|em|ex)?\s*$/.test(value);
  return absolute(root.get('width')) && absolute(root.get('height'));
}
