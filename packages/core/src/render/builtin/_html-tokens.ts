/**
 * A tolerant HTML tokenizer for the built-in renderer: start tags with their attributes, end
 * tags and text, in document order. It only reads what the markup sanitiser already wrote, to
 * draw its text; it decides nothing about safety. Comments, DOCTYPEs and processing
 * instructions are skipped, and raw-text elements (`style`, `script`, `title`, …) are skipped
 * whole (WHATWG HTML §13.1.2.1).
 */

/** One token of an HTML document. */
export type HtmlToken =
  | {
      readonly type: 'start';
      readonly name: string;
      readonly attributes: ReadonlyMap<string, string>;
    }
  | { readonly type: 'end'; readonly name: string }
  | { readonly type: 'text'; readonly text: string };

/** Elements whose content is not markup, so their text is never drawn. */
const RAW_TEXT_ELEMENTS = new Set([
  'script',
  'style',
  'title',
  'textarea',
  'xmp',
  'iframe',
  'noembed',
  'noframes',
  'noscript',
  'template',
]);

const TAG_NAME = /^<\/?([A-Za-z][^\s/>]*)/;
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/y;

/** WHATWG HTML named character references most documents use; others stay as written. */
const NAMED_REFERENCES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  copy: '©',
  reg: '®',
  trade: '™',
  deg: '°',
  euro: '€',
  pound: '£',
  yen: '¥',
  cent: '¢',
  sect: '§',
  para: '¶',
  middot: '·',
  bull: '•',
  hellip: '…',
  ndash: '–',
  mdash: '—',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  times: '×',
  divide: '÷',
  plusmn: '±',
  frac12: '½',
  frac14: '¼',
  frac34: '¾',
  eacute: 'é',
  egrave: 'è',
  agrave: 'à',
  aacute: 'á',
  ccedil: 'ç',
  ouml: 'ö',
  uuml: 'ü',
  auml: 'ä',
  szlig: 'ß',
  shy: '\u00ad',
};

/** Character references of `text` resolved (WHATWG HTML §13.2.5.72-80, the common cases). */
function decodeReferences(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(
    /&(?:#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));?/g,
    (whole, decimal: string | undefined, hex: string | undefined, name: string | undefined) => {
      if (name !== undefined) return NAMED_REFERENCES[name] ?? whole;
      const code = decimal !== undefined ? Number(decimal) : Number.parseInt(hex ?? '', 16);
      // §13.2.5.80: NUL, surrogates and values past U+10FFFF become U+FFFD.
      if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return '\ufffd';
      return String.fromCodePoint(code);
    },
  );
}

/** The tokens of `markup`, in order. Runs in one pass; every step moves forward. */
export function* tokenizeHtml(markup: string): Generator<HtmlToken> {
  let position = 0;
  const length = markup.length;
  while (position < length) {
    const open = markup.indexOf('<', position);
    if (open < 0) {
      yield { type: 'text', text: decodeReferences(markup.slice(position)) };
      return;
    }
    if (open > position) {
      yield { type: 'text', text: decodeReferences(markup.slice(position, open)) };
    }
    if (markup.startsWith('<!--', open)) {
      const end = markup.indexOf('-->', open + 4);
      position = end < 0 ? length : end + 3;
      continue;
    }
    const next = markup.charCodeAt(open + 1);
    if (next === 0x21 /* ! */ || next === 0x3f /* ? */) {
      const end = markup.indexOf('>', open);
      position = end < 0 ? length : end + 1;
      continue;
    }
    const name = TAG_NAME.exec(markup.slice(open, open + 64));
    if (name === null) {
      // A `<` that starts no tag is text (§13.2.5.6).
      yield { type: 'text', text: '<' };
      position = open + 1;
      continue;
    }
    const tagName = (name[1] ?? '').toLowerCase();
    const closing = next === 0x2f; /* / */
    const { attributes, end } = readAttributes(markup, open + name[0].length);
    position = end;
    if (closing) {
      yield { type: 'end', name: tagName };
      continue;
    }
    yield { type: 'start', name: tagName, attributes };
    if (RAW_TEXT_ELEMENTS.has(tagName)) {
      const close = new RegExp(`</${tagName}`, 'gi');
      close.lastIndex = position;
      position = close.exec(markup)?.index ?? length;
    }
  }
}

/** Attributes of a start tag from `from` to its `>`; the first of a repeated name wins. */
function readAttributes(
  markup: string,
  from: number,
): { attributes: Map<string, string>; end: number } {
  const attributes = new Map<string, string>();
  let position = from;
  while (position < markup.length) {
    const code = markup.charCodeAt(position);
    if (code === 0x3e /* > */) return { attributes, end: position + 1 };
    if (code === 0x2f /* / */ || code <= 0x20) {
      position += 1;
      continue;
    }
    ATTRIBUTE.lastIndex = position;
    const match = ATTRIBUTE.exec(markup);
    if (match === null || match[0].length === 0) {
      position += 1;
      continue;
    }
    const name = (match[1] ?? '').toLowerCase();
    if (!attributes.has(name)) {
      attributes.set(name, decodeReferences(match[2] ?? match[3] ?? match[4] ?? ''));
    }
    position = ATTRIBUTE.lastIndex;
  }
  return { attributes, end: markup.length };
}
