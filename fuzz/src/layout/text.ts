/**
 * Layouts of the text formats: PDF objects and the numbers that size and place them (ISO 32000-1
 * 7.3, 7.5), RTF groups and control-word parameters (RTF 1.9.1), and XML/HTML elements and
 * attributes (OOXML and ODF parts, SVG, HTML).
 */
import type { Describe, Layout } from './types.ts';
import { LayoutBuilder } from './types.ts';

/** Characters of a text file the describers scan (inputs past it are described in part). */
const MAX_SCAN_CHARS = 2 * 1024 * 1024;
/** Nesting the RTF and XML walkers follow. */
const MAX_NESTING = 64;

const latin1 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.subarray(0, MAX_SCAN_CHARS)).toString('latin1');

const tokens = (words: readonly string[]): Uint8Array[] =>
  words.map((word) => Buffer.from(word, 'latin1'));

/** Adds every decimal number matched by `pattern`'s group 1 as an ascii field of `kind`. */
function numbers(
  text: string,
  pattern: RegExp,
  kind: Layout['fields'][number]['kind'],
  layout: LayoutBuilder,
): void {
  for (const match of text.matchAll(pattern)) {
    const digits = match[1];
    if (digits === undefined || layout.isFull()) continue;
    layout.field(match.index + match[0].lastIndexOf(digits), digits.length, 'ascii', kind);
  }
}

const PDF_DICTIONARY = tokens([
  '/JS (app.alert(1))',
  '/JavaScript',
  '/OpenAction 1 0 R',
  '/AA << /O << /S /JavaScript /JS (x) >> >>',
  '/S /Launch /F (cmd.exe)',
  '/URI (http://127.0.0.1:9/)',
  '/EmbeddedFiles',
  '/XFA',
  '/Filter /FlateDecode',
  '/Filter [/ASCIIHexDecode /FlateDecode]',
  '/Type /ObjStm /N 1 /First 4',
  '/Type /XRef /W [1 2 1]',
  '/Encrypt 1 0 R',
  '/Kids [1 0 R 1 0 R]',
  '/Parent 3 0 R',
  'stream\nxx\nendstream',
  '<< /Length 99999999 >>',
  '1 0 obj << >> endobj',
  'trailer << /Root 1 0 R /Size 1 >>',
  'startxref\n0\n%%EOF',
  '(\\',
  '<<',
  '>>',
  '[',
  ']',
  '%%EOF',
]);

/** PDF: indirect objects as parts; lengths, counts, sizes, references and xref offsets as fields. */
export const describePdf: Describe = (bytes) => {
  const text = latin1(bytes);
  if (!text.startsWith('%PDF') && !text.startsWith('%FDF')) return undefined;
  const layout = new LayoutBuilder();
  for (const match of text.matchAll(/\d+\s+\d+\s+obj\b[\s\S]*?endobj/g)) {
    if (layout.isFull()) break;
    layout.part(match.index, match.index + match[0].length, 'object');
  }
  const trailer = text.lastIndexOf('xref');
  if (trailer >= 0) layout.part(trailer, text.length, 'trailer');
  numbers(text, /\/Length\s+(\d+)/g, 'length', layout);
  numbers(text, /\/(?:Count|N|Size)\s+(\d+)/g, 'count', layout);
  numbers(text, /\/(?:First|Prev|XRefStm)\s+(\d+)/g, 'offset', layout);
  numbers(text, /startxref\s+(\d+)/g, 'offset', layout);
  numbers(text, /^(\d{10}) \d{5} [nf]/gm, 'offset', layout);
  numbers(text, /(\d+)\s+\d+\s+R\b/g, 'value', layout);
  numbers(
    text,
    /\/(?:Width|Height|BitsPerComponent|Columns|Predictor|Colors)\s+(\d+)/g,
    'dimension',
    layout,
  );
  numbers(text, /\[\s*(\d+)\s+\d+\s+\d+\s*\]/g, 'length', layout);
  return layout.build({ dictionary: PDF_DICTIONARY });
};

const RTF_DICTIONARY = tokens([
  '{\\object\\objemb{\\*\\objclass Equation.3}{\\*\\objdata 01050000020000000b0000004571756174696f6e2e33}}',
  '{\\field{\\*\\fldinst DDEAUTO c:\\\\windows\\\\system32\\\\cmd.exe "/c calc"}{\\fldrslt x}}',
  '{\\field{\\*\\fldinst INCLUDEPICTURE "http://127.0.0.1:9/x.png" \\\\d}{\\fldrslt}}',
  '{\\*\\template http://127.0.0.1:9/t.dotm}',
  '{\\pict\\pngblip\\picw10\\pich10 89504e47}',
  '{\\pict\\wmetafile8\\picw10\\pich10 0100090000}',
  '{\\pict\\emfblip 01000000}',
  '\\bin4 abcd',
  '\\bin99999999 ',
  '{\\*\\datastore 0105}',
  '{\\*\\objdata 0105}',
  "\\'ff",
  '\\u-1?',
  '\\uc0',
  '\\ansicpg65001',
  '{\\*\\unknowndest x}',
  '{\\shp{\\*\\shpinst{\\sp{\\sn pFragments}{\\sv 1;1;0}}}}',
  '{',
  '}',
  '\\par ',
]);

/** RTF: groups as parts (siblings share a parent); control-word parameters as fields. */
export const describeRtf: Describe = (bytes) => {
  const text = latin1(bytes);
  if (!text.startsWith('{\\rtf')) return undefined;
  const layout = new LayoutBuilder();
  const open: number[] = [];
  for (let at = 0; at < text.length && !layout.isFull(); at += 1) {
    const char = text[at];
    if (char === '\\') {
      at += 1;
    } else if (char === '{') {
      if (open.length < MAX_NESTING) open.push(at);
    } else if (char === '}') {
      const start = open.pop();
      if (start !== undefined) layout.part(start, at + 1, `group${open.at(-1) ?? -1}`);
    }
  }
  numbers(text, /\\bin(\d+)/g, 'length', layout);
  numbers(
    text,
    /\\(?:objw|objh|picw|pich|picwgoal|pichgoal|cellx|trleft|sl|fs)(-?\d+)/g,
    'dimension',
    layout,
  );
  numbers(text, /\\(?:uc|u|ansicpg|deff|f|cf|cb|s|ls|ilvl|listid)(-?\d+)/g, 'value', layout);
  numbers(text, /\\(?:objdata|bliptag|blipupi)(\d+)/g, 'count', layout);
  return layout.build({ dictionary: RTF_DICTIONARY });
};

const MARKUP_DICTIONARY = tokens([
  '<script>alert(1)</script>',
  ' onload="alert(1)"',
  ' onerror=alert(1)',
  ' href="javascript:alert(1)"',
  ' xlink:href="javascript:alert(1)"',
  ' style="background:url(http://127.0.0.1:9/x)"',
  ' src="http://127.0.0.1:9/x.png"',
  ' src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"',
  '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>',
  '<svg><foreignObject><body onload="alert(1)"/></foreignObject></svg>',
  '<use href="http://127.0.0.1:9/u.svg#a"/>',
  '<style>@import url(http://127.0.0.1:9/i.css);</style>',
  '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd"><!ENTITY f "&e;&e;">]>',
  '<![CDATA[<script>alert(1)</script>]]>',
  '<!-- -->',
  '<?xml-stylesheet href="http://127.0.0.1:9/s.xsl"?>',
  '&#x3C;script&#x3E;',
  '&lt;',
  '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/">',
  '<base href="http://127.0.0.1:9/">',
  '<math><mi xlink:href="javascript:alert(1)">x</mi></math>',
  '<a:hlinkClick r:id="rId99"/>',
  ' r:id="rId99"',
  ' r:embed="rId1"',
  ' TargetMode="External"',
  '<Relationship Id="rId99" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/oleObject" Target="http://127.0.0.1:9/" TargetMode="External"/>',
  '<w:fldSimple w:instr="DDEAUTO cmd /c calc"/>',
  '<w:instrText>INCLUDETEXT "http://127.0.0.1:9/"</w:instrText>',
  '<f>WEBSERVICE("http://127.0.0.1:9/")</f>',
  '<office:event-listeners><script:event-listener script:event-name="dom:load" xlink:href="vnd.sun.star.script:x"/></office:event-listeners>',
  ' xlink:href="macro:x"',
  '<text:a xlink:href="javascript:alert(1)">x</text:a>',
  '<draw:object xlink:href="./Object 1"/>',
  '<',
  '>',
  '</',
  '"',
  "'",
]);

/**
 * XML and HTML: elements as parts (siblings share a parent), attributes as parts of their
 * element, numeric attribute values as fields. A tag scanner, not a parser: it also describes
 * markup a parser would refuse.
 */
export const describeMarkup: Describe = (bytes) => {
  const text = latin1(bytes);
  if (!/^\s*(?:\uFEFF|ï»¿)?\s*</.test(text)) return undefined;
  const layout = new LayoutBuilder();
  const open: { name: string; start: number }[] = [];
  const tag = /<(\/?)([A-Za-z_][\w:.-]*)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>/g;
  for (const match of text.matchAll(tag)) {
    if (layout.isFull()) break;
    const [whole, closing, name = '', attributes = '', selfClosing] = match;
    const start = match.index;
    const parent = open.at(-1)?.start ?? -1;
    if (closing === '/') {
      const index = open.map((element) => element.name).lastIndexOf(name);
      if (index < 0) continue;
      const element = open[index];
      open.length = index;
      if (element)
        layout.part(element.start, start + whole.length, `element${open.at(-1)?.start ?? -1}`);
      continue;
    }
    const attributeStart = start + 1 + name.length;
    for (const attribute of attributes.matchAll(
      /\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+)/g,
    )) {
      layout.part(
        attributeStart + attribute.index,
        attributeStart + attribute.index + attribute[0].length,
        `attributes${start}`,
      );
    }
    for (const value of attributes.matchAll(/=\s*["']?(-?\d+)/g)) {
      if (value[1] === undefined) continue;
      layout.field(
        attributeStart + value.index + value[0].length - value[1].length,
        value[1].length,
        'ascii',
        'dimension',
      );
    }
    if (selfClosing === '/') {
      layout.part(start, start + whole.length, `element${parent}`);
    } else if (open.length < MAX_NESTING) {
      open.push({ name, start });
    }
  }
  return layout.build({ dictionary: MARKUP_DICTIONARY });
};
