import { html, parse, serialize } from 'parse5';
import type { DefaultTreeAdapterMap } from 'parse5';
import sanitizeHtml from 'sanitize-html';

import type { FindingTally } from '../../findings.ts';
import {
  HTML_ATTRIBUTES,
  HTML_ELEMENTS,
  INLINE_IMAGE_ADDRESS,
  LINK_ADDRESS,
  normaliseAddress,
  SCRIPT_ADDRESS,
  SVG_ATTRIBUTES,
  SVG_ELEMENTS,
} from './allowlist.ts';
import { sanitiseCss } from './css.ts';
import { MAX_MARKUP_DEPTH, tooLarge } from './limits.ts';

type ParentNode = DefaultTreeAdapterMap['parentNode'];
type Element = DefaultTreeAdapterMap['element'];

/** Elements that embed another document or plug-in, reported as embedded objects. */
const EMBEDDING = new Set(['iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'portal']);
/** Elements that load, submit or navigate, reported as external resources. */
const LOADING = new Set(['link', 'base', 'form', 'audio', 'video', 'source', 'track', 'feimage']);
/** Attributes holding an address: each is kept only where {@link isAllowedAddress} allows it. */
const ADDRESS_ATTRIBUTES = new Set([
  'src',
  'href',
  'xlink:href',
  'action',
  'formaction',
  'data',
  'poster',
  'background',
  'ping',
  'srcset',
  'srcdoc',
  'codebase',
  'cite',
  'longdesc',
  'manifest',
  'lowsrc',
  'dynsrc',
  'usemap',
  'archive',
  'classid',
  'profile',
  'itemtype',
  'imagesrcset',
]);

/**
 * Elements whose content goes with them: text that is script, style for an element we drop, or
 * markup a browser with scripting off reads differently from a parser with it on (`noscript`:
 * HTML §13.2.6.4.4; `template`: inert content a sanitiser must not judge by its text).
 */
const DROPPED_WITH_CONTENT = [
  'script',
  'textarea',
  'option',
  'xmp',
  'noscript',
  'noembed',
  'noframes',
  'template',
  'iframe',
  'object',
  'applet',
  'select',
  'math',
  'foreignobject',
  'plaintext',
];

const SANITIZE_OPTIONS: sanitizeHtml.IOptions = {
  allowedTags: [...HTML_ELEMENTS, ...[...SVG_ELEMENTS].map((name) => name.toLowerCase())],
  allowedAttributes: {
    '*': [...HTML_ATTRIBUTES, 'style'],
    a: ['href', 'xlink:href'],
    img: ['src'],
    ...Object.fromEntries(
      [...SVG_ELEMENTS].map((name) => [
        name.toLowerCase(),
        [...SVG_ATTRIBUTES]
          .map((attribute) => attribute.toLowerCase())
          .concat('href', 'xlink:href'),
      ]),
    ),
  },
  allowedSchemes: ['http', 'https', 'mailto', 'data'],
  allowedSchemesAppliedToAttributes: ['href', 'src', 'xlink:href'],
  allowProtocolRelative: false,
  disallowedTagsMode: 'discard',
  nonTextTags: DROPPED_WITH_CONTENT,
  // The whole document is kept, its head and body included.
  enforceHtmlBoundary: false,
  parseStyleAttributes: false,
  // `style` is allowed on purpose: its sheet is cleaned by `sanitiseCss` in the second pass.
  allowVulnerableTags: true,
};

/**
 * A browser-parsed tree cleaned in place: an element outside the allowlist goes with its content,
 * an attribute outside it or an address that reaches past the document goes, CSS is cleaned.
 */
function cleanTree(parent: ParentNode, findings: FindingTally, depth: number): void {
  if (depth > MAX_MARKUP_DEPTH) {
    throw tooLarge(`the HTML nests elements deeper than ${MAX_MARKUP_DEPTH} levels`);
  }
  parent.childNodes = parent.childNodes.filter((node) => {
    if (node.nodeName === '#comment' || node.nodeName === '#documentType') return false;
    if (!('tagName' in node)) return true;
    if (!isAllowedElement(node)) {
      countElement(node.tagName.toLowerCase(), findings);
      return false;
    }
    cleanAttributes(node, findings);
    if (node.tagName === 'style') {
      const css = node.childNodes.map((child) => ('value' in child ? child.value : '')).join('');
      const cleaned = sanitiseCss(css, findings);
      node.childNodes = cleaned === '' ? [] : [{ ...textNode(cleaned), parentNode: node }];
      return true;
    }
    cleanTree(node, findings, depth + 1);
    return true;
  });
}

function textNode(value: string): DefaultTreeAdapterMap['textNode'] {
  return { nodeName: '#text', value, parentNode: null };
}

/** True when an element of the parsed tree is on the allowlist of its namespace. */
function isAllowedElement(element: Element): boolean {
  if (element.namespaceURI === html.NS.HTML) return HTML_ELEMENTS.has(element.tagName);
  if (element.namespaceURI === html.NS.SVG) return SVG_ELEMENTS.has(element.tagName);
  return false;
}

/**
 * Whether an address attribute on an element of the parsed tree may stay: a link to the web or
 * mail, an inline raster image for an image, a fragment for SVG references; nothing else.
 */
function isAllowedAddress(element: Element, name: string, value: string): boolean {
  const address = normaliseAddress(value);
  const tag = element.tagName;
  if (name === 'href' && tag === 'a') return LINK_ADDRESS.test(address);
  if (name === 'src' && tag === 'img') return INLINE_IMAGE_ADDRESS.test(address);
  if (name === 'href' && element.namespaceURI === html.NS.SVG) {
    if (tag === 'image') return INLINE_IMAGE_ADDRESS.test(address);
    return address.startsWith('#');
  }
  return false;
}

function cleanAttributes(element: Element, findings: FindingTally): void {
  const svg = element.namespaceURI === html.NS.SVG;
  element.attrs = element.attrs.filter((attribute) => {
    const name =
      attribute.namespace === html.NS.XLINK || attribute.prefix === undefined
        ? attribute.name
        : `${attribute.prefix}:${attribute.name}`;
    if (/^on/i.test(attribute.name)) {
      findings.add('event-handler');
      return false;
    }
    if (ADDRESS_ATTRIBUTES.has(name) || name === 'href') {
      if (isAllowedAddress(element, name, attribute.value)) return true;
      findings.add(
        SCRIPT_ADDRESS.test(normaliseAddress(attribute.value)) ? 'script' : 'external-resource',
      );
      return false;
    }
    if (name === 'style') {
      attribute.value = sanitiseCss(attribute.value, findings);
      return attribute.value !== '';
    }
    return svg ? SVG_ATTRIBUTES.has(name) : HTML_ATTRIBUTES.has(name);
  });
}

/** Counts a removed element as the finding of its kind (plain markup counts nothing). */
function countElement(tag: string, findings: FindingTally): void {
  if (tag === 'script') findings.add('script');
  else if (EMBEDDING.has(tag) || tag === 'foreignobject') findings.add('embedded-object');
  else if (LOADING.has(tag)) findings.add('external-resource');
}

/**
 * A DOCTYPE kept as the document wrote it when it is one HTML §13.2.6.4.1 knows, so the page
 * renders in the same mode (no-quirks, limited-quirks or quirks); its identifiers are never read.
 */
const DOCTYPE =
  /^\s*(?:<!--[\s\S]*?-->\s*)*(<!doctype\s+html(?:\s+public\s+(?:"[^"<>]*"|'[^'<>]*')(?:\s+(?:"[^"<>]*"|'[^'<>]*'))?|\s+system\s+(?:"[^"<>]*"|'[^'<>]*'))?\s*>)/i;

/**
 * Sanitises an HTML document in two passes. sanitize-html (over htmlparser2) removes what is not
 * on the allowlist, content and all where the content is script or parses differently with
 * scripting off; then the result is parsed as a browser parses it (parse5, HTML §13.2) and that
 * tree is cleaned again, so a construct the two parsers read differently (mutation XSS) is judged
 * as the renderer will see it. Addresses are kept only where they reach nothing: `<a>` to the web
 * or mail, images inline as PNG, JPEG, GIF or WebP, SVG references to fragments. CSS is cleaned by
 * {@link sanitiseCss}. What was removed is counted in `findings`.
 *
 * Why sanitize-html: measured on 58 XSS and request-forgery vectors (scripts, event handlers,
 * script URLs, every fetching element and attribute, CSS `url()`/`@import`/`image-set`, SVG
 * `use`/`feImage`, mutation-XSS shapes), each output re-parsed by parse5: DOMPurify over linkedom
 * fails open (57 leaked: it finds no usable DOM and returns its input unchanged); DOMPurify over
 * jsdom leaked 6 in its strictest plain configuration (remote images, a relative image behind
 * `<base>`, `data:image/svg+xml`) for 39 packages and 28 MB; sanitize-html leaked 2 (the relative
 * image, the SVG data image) for 18 packages and 5.6 MB. The second pass closes what either leaks.
 * @returns a complete UTF-8 HTML document.
 * @throws {Rejection} `file_too_large` when elements nest deeper than {@link MAX_MARKUP_DEPTH}.
 */
export function sanitiseHtml(text: string, findings: FindingTally): string {
  const first = sanitizeHtml(text, {
    ...SANITIZE_OPTIONS,
    onOpenTag: (name: string, attributes: Record<string, string>) => {
      countOpened(name, attributes, findings);
    },
  });
  const document = parse(first);
  cleanTree(document, findings, 0);
  const doctype = DOCTYPE.exec(text)?.[1] ?? '';
  const markup = serialize(document);
  return `${doctype}${markup.replace(/<head>/i, '<head><meta charset="utf-8">')}`;
}

/** The first pass's findings, from each start tag as written (what it then drops). */
function countOpened(
  name: string,
  attributes: Record<string, string>,
  findings: FindingTally,
): void {
  const tag = name.toLowerCase();
  countElement(tag, findings);
  if (tag === 'meta' && /refresh/i.test(attributes['http-equiv'] ?? ''))
    findings.add('external-resource');
  for (const [attribute, value] of Object.entries(attributes)) {
    if (/^on/i.test(attribute)) findings.add('event-handler');
    else if (!ADDRESS_ATTRIBUTES.has(attribute)) continue;
    else if (SCRIPT_ADDRESS.test(normaliseAddress(value))) findings.add('script');
    else if (attribute !== 'href' && attribute !== 'src') findings.add('external-resource');
  }
}
