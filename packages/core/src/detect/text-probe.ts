import { decodeXmlText } from '../_internal/xml.ts';

/** How far into a file the root element of an SVG is looked for. */
const SVG_ROOT_WINDOW_BYTES = 256 * 1024;

/**
 * True when the document's root element is `svg` (any prefix): the prolog (XML declaration,
 * comments, processing instructions, a DOCTYPE with an internal subset) is skipped lexically, the
 * first start tag is read. No entity is expanded; the SVG rebuild parses the whole document later.
 */
export function hasSvgRoot(bytes: Uint8Array): boolean {
  const text = decodeXmlText(bytes.subarray(0, SVG_ROOT_WINDOW_BYTES)).replace(/^\uFEFF/, '');
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i += 1;
    } else if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i + 2);
      if (end < 0) return false;
      i = end + 2;
    } else if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4);
      if (end < 0) return false;
      i = end + 3;
    } else if (text.startsWith('<!DOCTYPE', i) || text.startsWith('<!doctype', i)) {
      const end = skipDoctype(text, i);
      if (end < 0) return false;
      i = end;
    } else if (c === '<') {
      const match = /^<(?:[A-Za-z_][\w.-]*:)?svg[\s/>]/.exec(text.slice(i, i + 256));
      return match !== null;
    } else {
      return false;
    }
  }
  return false;
}

/** Index just past a DOCTYPE declaration, honouring a bracketed internal subset; -1 if open. */
function skipDoctype(text: string, start: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = start + 2; i < text.length; i += 1) {
    const c = text[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '[') {
      depth += 1;
    } else if (c === ']') {
      depth -= 1;
    } else if (c === '>' && depth <= 0) {
      return i + 1;
    }
  }
  return -1;
}
