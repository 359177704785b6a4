import type { XmlAttributeNode, XmlElementNode } from '../../_internal/xml-reader.ts';
import { XmlReader } from '../../_internal/xml-reader.ts';
import type { FindingTally } from '../../findings.ts';
import {
  INLINE_IMAGE_ADDRESS,
  LINK_ADDRESS,
  normaliseAddress,
  SCRIPT_ADDRESS,
  SVG_ATTRIBUTES,
  SVG_ELEMENTS,
} from './allowlist.ts';
import { sanitiseCss } from './css.ts';
import { MAX_MARKUP_DEPTH, MAX_MARKUP_ELEMENTS, MAX_SVG_SIDE_PX, tooLarge } from './limits.ts';

const SVG_NAMESPACE = 'http://www.w3.org/2000/svg';
const XLINK_NAMESPACE = 'http://www.w3.org/1999/xlink';
const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';

/** A sanitised SVG document and the size it is drawn at. */
export interface SanitisedSvg {
  readonly markup: string;
  /** CSS pixels; the PDF page takes this size. */
  readonly width: number;
  readonly height: number;
}

/** CSS Values 4 §6.2: CSS pixels per unit. */
const PX_PER_UNIT: Readonly<Record<string, number>> = {
  '': 1,
  px: 1,
  pt: 96 / 72,
  pc: 16,
  in: 96,
  cm: 96 / 2.54,
  mm: 96 / 25.4,
  q: 96 / 101.6,
};

/** The size of a drawing whose root states neither a size nor a view box (SVG 2 §8.2: 300x150). */
const DEFAULT_SIZE_PX = { width: 300, height: 150 } as const;

/**
 * Sanitises an SVG document. It is read by the engine's XML reader, which never expands an entity
 * or reads a DOCTYPE's external identifier and refuses an internal subset (`invalid_file`), and
 * written anew from the allowlist: SVG elements and attributes only, in the SVG namespace (or in
 * none, as browsers draw an `<svg>` root without one); `script`, `foreignObject`, animation,
 * events, other namespaces (editor data, RDF metadata) go; `href` only to a fragment, an inline
 * raster image for `<image>`, the web or mail for `<a>`; CSS cleaned by {@link sanitiseCss}.
 * @throws {Rejection} `file_too_large` past the element, depth or size limits.
 */
export function sanitiseSvg(text: string, findings: FindingTally): SanitisedSvg {
  const out: string[] = [];
  /** Depth of the dropped element whose content is being skipped, if any. */
  let skipping: number | undefined;
  let depth = 0;
  let elements = 0;
  let size: { width: number; height: number } | undefined;
  let styleText: string[] | undefined;
  const reader = new XmlReader(text.replace(/^\uFEFF/, ''), 'the SVG document', {
    open(element, ancestors) {
      depth = ancestors.length + 1;
      elements += 1;
      if (elements > MAX_MARKUP_ELEMENTS) {
        throw tooLarge(`the SVG holds more than ${MAX_MARKUP_ELEMENTS} elements`);
      }
      if (depth > MAX_MARKUP_DEPTH) {
        throw tooLarge(`the SVG nests elements deeper than ${MAX_MARKUP_DEPTH} levels`);
      }
      if (skipping !== undefined) return;
      const root = ancestors.length === 0;
      const name = svgName(element);
      if (root) {
        size = drawingSize(element);
        if (size.width > MAX_SVG_SIDE_PX || size.height > MAX_SVG_SIDE_PX) {
          throw tooLarge(
            `the SVG is drawn ${Math.round(size.width)}x${Math.round(size.height)} px; the limit is ${MAX_SVG_SIDE_PX} px a side`,
          );
        }
        out.push(`<svg xmlns="${SVG_NAMESPACE}" xmlns:xlink="${XLINK_NAMESPACE}"`);
        out.push(` width="${size.width}" height="${size.height}"`);
      } else if (name === undefined) {
        countDropped(element, findings);
        skipping = depth;
        return;
      } else {
        out.push(`<${name}`);
      }
      for (const attribute of element.attributes) {
        // The root is written at the size it is drawn at, in pixels, for the renderer's page.
        if (root && attribute.uri === '' && /^(?:width|height)$/.test(attribute.local)) continue;
        const kept = keptAttribute(name ?? 'svg', attribute, findings);
        if (kept !== undefined) out.push(` ${kept[0]}="${escapeXml(kept[1])}"`);
      }
      out.push('>');
      // An <svg> root in another namespace (a bogus default namespace) is no SVG to a browser,
      // which draws nothing of it: an empty page, as it would show.
      if (root && name === undefined) skipping = depth;
      if (name === 'style') styleText = [];
    },
    close(element) {
      const closing = depth;
      depth -= 1;
      if (closing === 1) {
        out.push('</svg>');
        return;
      }
      if (skipping !== undefined) {
        if (closing === skipping) skipping = undefined;
        return;
      }
      const name = svgName(element);
      if (name === 'style' && styleText !== undefined) {
        out.push(escapeXml(sanitiseCss(styleText.join(''), findings)));
        styleText = undefined;
      }
      out.push(`</${name}>`);
    },
    text(value) {
      if (skipping !== undefined) return;
      if (styleText !== undefined) styleText.push(value);
      else out.push(escapeXml(value));
    },
  });
  reader.read();
  const { width, height } = size ?? DEFAULT_SIZE_PX;
  return { markup: out.join(''), width, height };
}

/** The name an element is written under, or `undefined` when it is dropped with its content. */
function svgName(element: XmlElementNode): string | undefined {
  if (element.uri !== SVG_NAMESPACE && element.uri !== '') return undefined;
  return SVG_ELEMENTS.has(element.localName) ? element.localName : undefined;
}

function countDropped(element: XmlElementNode, findings: FindingTally): void {
  const name = element.localName;
  if (name === 'script' || name === 'handler' || name === 'listener') findings.add('script');
  else if (name === 'foreignObject') findings.add('embedded-object');
  else if (name === 'feImage' || name === 'font-face-uri' || name === 'cursor') {
    findings.add('external-resource');
  } else if (/^(?:animate|animateMotion|animateTransform|animateColor|set|discard)$/.test(name)) {
    findings.add('script');
  } else if (name === 'metadata') findings.add('document-metadata');
}

/** The attribute as written out (`[name, value]`), or `undefined` when it goes. */
function keptAttribute(
  element: string,
  attribute: XmlAttributeNode,
  findings: FindingTally,
): readonly [string, string] | undefined {
  const { uri, local, value } = attribute;
  if (uri === '' && /^on/i.test(local)) {
    findings.add('event-handler');
    return undefined;
  }
  if (local === 'href' && (uri === '' || uri === XLINK_NAMESPACE)) {
    const address = normaliseAddress(value);
    const allowed =
      element === 'a'
        ? LINK_ADDRESS.test(address)
        : element === 'image'
          ? INLINE_IMAGE_ADDRESS.test(address)
          : address.startsWith('#');
    if (allowed) return ['href', value];
    findings.add(SCRIPT_ADDRESS.test(address) ? 'script' : 'external-resource');
    return undefined;
  }
  if (uri === XML_NAMESPACE && (local === 'lang' || local === 'space'))
    return [`xml:${local}`, value];
  if (uri !== '') return undefined;
  if (local === 'style') {
    const css = sanitiseCss(value, findings);
    return css === '' ? undefined : ['style', css];
  }
  return SVG_ATTRIBUTES.has(local) ? [local, value] : undefined;
}

/** The root's drawing size in CSS pixels: its width and height, else its view box's, else 300x150. */
function drawingSize(root: XmlElementNode): { width: number; height: number } {
  const attribute = (name: string): string | undefined =>
    root.attributes.find((candidate) => candidate.uri === '' && candidate.local === name)?.value;
  const box = (attribute('viewBox') ?? '')
    .trim()
    .split(/[\s,]+/)
    .map(Number);
  const boxWidth = box.length === 4 && box[2] !== undefined && box[2] > 0 ? box[2] : undefined;
  const boxHeight = box.length === 4 && box[3] !== undefined && box[3] > 0 ? box[3] : undefined;
  const width = toPixels(attribute('width'));
  const height = toPixels(attribute('height'));
  // SVG 2 §8.2: a side left unsaid follows the view box's aspect ratio.
  const ratio =
    boxWidth !== undefined && boxHeight !== undefined ? boxHeight / boxWidth : undefined;
  if (width !== undefined && height === undefined && ratio !== undefined) {
    return { width, height: width * ratio };
  }
  if (height !== undefined && width === undefined && ratio !== undefined) {
    return { width: height / ratio, height };
  }
  return {
    width: width ?? boxWidth ?? DEFAULT_SIZE_PX.width,
    height: height ?? boxHeight ?? DEFAULT_SIZE_PX.height,
  };
}

/** A length attribute in CSS pixels, or `undefined` for a percentage, `auto` or nonsense. */
function toPixels(value: string | undefined): number | undefined {
  const match = /^\s*([+]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([a-zA-Z]*)\s*$/.exec(
    value ?? '',
  );
  if (match?.[1] === undefined) return undefined;
  const unit = PX_PER_UNIT[(match[2] ?? '').toLowerCase()];
  const pixels = Number(match[1]) * (unit ?? Number.NaN);
  return Number.isFinite(pixels) && pixels > 0 ? pixels : undefined;
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"]/g, (char) =>
    char === '&' ? '&amp;' : char === '<' ? '&lt;' : char === '>' ? '&gt;' : '&quot;',
  );
}
