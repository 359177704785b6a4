import { Rejection } from './rejection.ts';
import { transitional } from './strict-ooxml.ts';

/** One attribute as written, with its namespace resolved. */
export interface XmlAttributeNode {
  /** Qualified name as written, e.g. `r:id` or `xmlns:w`. */
  readonly name: string;
  readonly uri: string;
  /** Name without its prefix. */
  readonly local: string;
  readonly value: string;
}

/** An element start, numbered in document order (0 for the root). */
export interface XmlElementNode {
  /** Ordinal of the element in document order; the same in every walk of the same bytes. */
  readonly index: number;
  readonly name: string;
  readonly uri: string;
  readonly localName: string;
  /** `uri localName`, the key the rule tables are looked up by (built once per element). */
  readonly key: string;
  readonly attributes: readonly XmlAttributeNode[];
}

/** Element and text events of one walk over a part. */
export interface XmlWalker {
  open?(element: XmlElementNode, ancestors: readonly XmlElementNode[]): void;
  close?(element: XmlElementNode): void;
  /**
   * Character data inside the root: the text between two tags comes in one call, with
   * references resolved, CDATA sections joined in, comments and processing instructions left
   * out, and line ends normalised (XML 1.0 §2.11).
   */
  text?(text: string, ancestors: readonly XmlElementNode[]): void;
}

/** Elements one part may hold; beyond this the part is refused, not parsed on. */
export const MAX_XML_ELEMENTS = 5_000_000;

/**
 * Levels elements may nest in one part; deeper, the part is refused. libxml2's default limit,
 * which LibreOffice reads with, so no document an office suite opens nests deeper; real parts
 * nest a few dozen levels at most (23 in the corpus). Without it a part of a million nested
 * elements held the check for its whole time budget: saxes, verify's reader, resolves a prefix
 * by walking up the open elements, once per element.
 */
export const MAX_XML_DEPTH = 256;

const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';
const XMLNS_NAMESPACE = 'http://www.w3.org/2000/xmlns/';

/** XML 1.0 §2.3 [3]: only these four are white space (not JavaScript's `\s`). */
const S = '[ \\t\\r\\n]';
/**
 * What an attribute value needs looked at: markup, references, white space to normalise, and
 * what XML 1.0 §2.2 [2] does not allow (controls, U+FFFE, U+FFFF).
 */
// eslint-disable-next-line no-control-regex -- the controls XML 1.0 §2.2 [2] leaves out
const ATTRIBUTE_SPECIAL = /[<&\u0000-\u001F\uFFFE\uFFFF]/;
/**
 * Character data up to anything that needs a look: markup, a reference, `]]>`, any control (tab
 * and LF are taken one by one, CR is normalised, the rest are not characters), U+FFFE, U+FFFF.
 * All controls rather than only the disallowed ones: V8 runs this class about twice as fast.
 */
// eslint-disable-next-line no-control-regex -- the controls XML 1.0 §2.2 [2] leaves out
const TEXT_RUN = /[^<&\]\u0000-\u001F\uFFFE\uFFFF]+/y;
/**
 * Character data on from a tab, a line feed or a `]` that {@link TEXT_RUN} stopped at: taken
 * together rather than one character at a time (a text of many tabs or `]` would otherwise cost a
 * step each).
 */
// eslint-disable-next-line no-control-regex -- the controls XML 1.0 §2.2 [2] leaves out
const TEXT_ON = /[^<&\r\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]+/y;
/**
 * XML 1.0 §4.1 [66]-[68]: the predefined entities and character references (leading zeros
 * allowed; a value too long to be a code point fails to match, which is as not well-formed).
 */
const REFERENCE = /&(?:(amp|lt|gt|quot|apos)|#0*([0-9]{1,8})|#x0*([0-9A-Fa-f]{1,8}));/y;
/** XML 1.0 §2.8 [23]-[26], [32]: version 1.0 only, as every OOXML and ODF producer writes. */
const XML_DECLARATION = new RegExp(
  `<\\?xml${S}+version${S}*=${S}*(?:"1\\.0"|'1\\.0')` +
    `(?:${S}+encoding${S}*=${S}*(?:"[A-Za-z][A-Za-z0-9._-]*"|'[A-Za-z][A-Za-z0-9._-]*'))?` +
    `(?:${S}+standalone${S}*=${S}*(?:"(?:yes|no)"|'(?:yes|no)'))?${S}*\\?>`,
  'y',
);
/** XML 1.0 §2.3 [11]: a system literal, any characters but its quote (checked as characters). */
const SYSTEM_LITERAL = /"[^"]*"|'[^']*'/y;
/** XML 1.0 §2.3 [12]-[13]: a public identifier, of its few characters only. */
const PUBID_LITERAL =
  /"[- \r\na-zA-Z0-9'()+,./:=?;!*#@$_%]*"|'[- \r\na-zA-Z0-9()+,./:=?;!*#@$_%]*'/y;
// eslint-disable-next-line no-control-regex -- the controls XML 1.0 §2.2 [2] leaves out
const NOT_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;
const ATTRIBUTE_WHITE_SPACE = /\r\n|[\t\n\r]/g;
const LINE_END = /\r\n?/g;

const PREDEFINED: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

const NO_ATTRIBUTES: readonly XmlAttributeNode[] = Object.freeze([]);

const NAME_START = 1;
const NAME_MORE = 2;
/** XML 1.0 §2.3 [4]-[4a] for ASCII, without the colon (Namespaces in XML 1.0 §3: NCName). */
const ASCII_NAME = new Uint8Array(128);
for (const [from, to, kind] of [
  [0x41, 0x5a, NAME_START], // A-Z
  [0x61, 0x7a, NAME_START], // a-z
  [0x5f, 0x5f, NAME_START], // _
  [0x30, 0x39, NAME_MORE], // 0-9
  [0x2d, 0x2e, NAME_MORE], // - .
] as const) {
  ASCII_NAME.fill(kind, from, to + 1);
}

/**
 * UTF-16 units of the name character at `at` past ASCII (XML 1.0 §2.3 [4]-[4a]): 1, 2 for a
 * character past the BMP (#x10000-#xEFFFF, a high surrogate up to U+DB7F and a low one), or 0
 * when there is none (`first`: a character that may start a name).
 */
function wideNameUnits(source: string, at: number, first: boolean): number {
  const c = source.charCodeAt(at);
  if (c >= 0xd800 && c <= 0xdb7f) {
    const low = source.charCodeAt(at + 1);
    return low >= 0xdc00 && low <= 0xdfff ? 2 : 0;
  }
  const start =
    (c >= 0xc0 && c <= 0xd6) ||
    (c >= 0xd8 && c <= 0xf6) ||
    (c >= 0xf8 && c <= 0x2ff) ||
    (c >= 0x370 && c <= 0x37d) ||
    (c >= 0x37f && c <= 0x1fff) ||
    c === 0x200c ||
    c === 0x200d ||
    (c >= 0x2070 && c <= 0x218f) ||
    (c >= 0x2c00 && c <= 0x2fef) ||
    (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) ||
    (c >= 0xfdf0 && c <= 0xfffd);
  if (start) return 1;
  const more = c === 0xb7 || (c >= 0x300 && c <= 0x36f) || c === 0x203f || c === 0x2040;
  return more && !first ? 1 : 0;
}

/** Where the NCName starting at `at` ends (`at` when none starts there). */
function ncNameEnd(source: string, at: number): number {
  let i = at;
  for (;;) {
    const c = source.charCodeAt(i);
    if (c < 0x80) {
      const kind = ASCII_NAME[c];
      if (kind === NAME_START || (kind === NAME_MORE && i > at)) {
        i += 1;
        continue;
      }
      return i;
    }
    // Past the end `c` is NaN, which no range holds.
    const units = wideNameUnits(source, i, i === at);
    if (units === 0) return i;
    i += units;
  }
}

/** XML 1.0 §2.3 [3]. */
function isWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
}

/** Where the white space starting at `at` ends. */
function skipWhiteSpace(source: string, at: number): number {
  let i = at;
  while (isWhiteSpace(source.charCodeAt(i))) i += 1;
  return i;
}

/** Attributes of one tag checked for duplicates pair by pair; more are checked with a set. */
const FEW_ATTRIBUTES = 16;

/** Distinct names remembered resolved; past this, they are forgotten and resolved afresh. */
const MAX_CACHED_NAMES = 4096;

/** A qualified name resolved (Namespaces in XML 1.0 §6), with the key rule tables look up. */
interface ResolvedName {
  readonly uri: string;
  readonly local: string;
  readonly key: string;
}

/** A namespace binding an element made, and the one it hid, restored when the element closes. */
interface Binding {
  readonly prefix: string;
  readonly hidden: string | undefined;
}

/**
 * The XML reader of the rebuild: a strict, non-validating reader of a whole part held as a
 * string, reporting elements (namespaces resolved, as Namespaces in XML 1.0 defines them) and
 * character data to a walker. It reads only what OOXML and ODF parts are made of and refuses the
 * rest as not well-formed. A document type declaration is read past only when it has no internal
 * subset (see `#doctype`): its external identifier is never fetched, so only the five predefined
 * entities and character references exist, nothing is expanded, and no attribute gets a default;
 * an internal subset or an entity declaration is refused. Checked as it reads:
 * names (XML 1.0 §2.3), characters (§2.2), references, `]]>` in text, comments
 * (§2.5), processing instructions (§2.6, `xml` only as the declaration, version 1.0), CDATA
 * (§2.7), one root and only white space, comments and instructions around it, matching end
 * tags, unique attributes by name and by expanded name, bound prefixes and the reserved
 * bindings (Namespaces §3-§6). Attribute values are normalised (§3.3.3), line ends too (§2.11).
 *
 * The source is a part's text as {@link TextDecoder} makes it, which has no unpaired surrogate
 * (the WHATWG decoders put U+FFFD in their place, as they do for bytes that are not UTF-8), so
 * surrogates are not looked at apart from names.
 *
 * It is ours rather than a general parser's because the rebuild reads every element of every
 * part: this reads it three to four times as fast as saxes (a 13 MB Word part in 69 ms against
 * 251, a 15 MB sheet in 92 against 264, a 12 MB table of contents in 114 against 306, in one
 * process), and reads the part's string in place instead of in copied chunks. The verify step
 * reads the rebuilt part again with saxes, a parser independent of this one.
 *
 * A walker stops the walk by throwing; a {@link Rejection} it throws is the part's.
 */
export class XmlReader {
  readonly #source: string;
  readonly #what: string;
  readonly #walker: XmlWalker;
  readonly #stack: XmlElementNode[] = [];
  /** Bindings made by each open element, `undefined` for one that made none (most). */
  readonly #bindings: (Binding[] | undefined)[] = [];
  readonly #namespaces = new Map<string, string>([
    ['xml', XML_NAMESPACE],
    ['xmlns', XMLNS_NAMESPACE],
  ]);
  /** Names and values of the attributes of the start tag being read (reused, not reallocated). */
  readonly #names: string[] = [];
  readonly #values: string[] = [];
  /** Qualified names of elements resolved under the bindings in force. */
  readonly #elementNames = new Map<string, ResolvedName>();
  /** The same for attributes, which an unprefixed name leaves in no namespace. */
  readonly #attributeNames = new Map<string, ResolvedName>();
  #position = 0;
  #elements = 0;
  #sawRoot = false;
  #sawDoctype = false;
  /** Character data gathered since the last tag. */
  #text = '';

  constructor(source: string, what: string, walker: XmlWalker) {
    this.#source = source;
    this.#what = what;
    this.#walker = walker;
  }

  /** Whether the whole part has been read. */
  get done(): boolean {
    return this.#position > this.#source.length;
  }

  /**
   * Reads on until at least `units` more UTF-16 units are read (a markup construct is read
   * whole) or the part ends; at the end, checks that the document is complete.
   * @throws {Rejection} `invalid_file` when the part is not well-formed, declares a DOCTYPE with
   *   an internal subset, holds more than {@link MAX_XML_ELEMENTS} elements or nests them deeper
   *   than {@link MAX_XML_DEPTH}; or what the walker throws.
   */
  read(units = Number.POSITIVE_INFINITY): void {
    const source = this.#source;
    const limit = Math.min(source.length, this.#position + units);
    if (this.#position === 0 && source.startsWith('<?xml')) this.#declaration();
    while (this.#position < limit) {
      const at = this.#position;
      const code = source.charCodeAt(at);
      if (code === 0x3c /* < */) {
        const next = source.charCodeAt(at + 1);
        if (next === 0x2f /* / */) this.#endTag();
        else if (next === 0x21 /* ! */) this.#bang();
        else if (next === 0x3f /* ? */) this.#instruction();
        else this.#startTag();
      } else if (code === 0x26 /* & */) {
        this.#reference();
      } else {
        this.#characters();
      }
    }
    if (this.#position === source.length) this.#end();
  }

  #declaration(): void {
    const source = this.#source;
    // `<?xml` followed by white space or `?>` is the declaration; `<?xml-stylesheet` is not.
    const after = source.charCodeAt(5);
    if (!isWhiteSpace(after) && after !== 0x3f /* ? */) return;
    XML_DECLARATION.lastIndex = 0;
    if (!XML_DECLARATION.test(source)) this.#fail('malformed XML declaration');
    this.#position = XML_DECLARATION.lastIndex;
  }

  /**
   * Where the qualified name (Namespaces in XML 1.0 §4 [7]: NCName, or NCName `:` NCName)
   * starting at `at` ends.
   */
  #qNameEnd(at: number, what: 'start tag' | 'attribute' | 'document type declaration'): number {
    const source = this.#source;
    const end = ncNameEnd(source, at);
    if (end === at) this.#fail(`malformed ${what}`);
    if (source.charCodeAt(end) !== 0x3a /* : */) return end;
    const local = ncNameEnd(source, end + 1);
    if (local === end + 1) this.#fail(`malformed ${what}: no name after the prefix`);
    return local;
  }

  #startTag(): void {
    const source = this.#source;
    const nameEnd = this.#qNameEnd(this.#position + 1, 'start tag');
    const name = source.slice(this.#position + 1, nameEnd);
    if (this.#stack.length === 0) {
      if (this.#sawRoot) this.#fail('more than one root element');
      this.#sawRoot = true;
    } else if (this.#stack.length >= MAX_XML_DEPTH) {
      this.#fail(`elements nested deeper than ${MAX_XML_DEPTH} levels`);
    }
    this.#flushText();
    let at = nameEnd;
    const names = this.#names;
    const values = this.#values;
    let count = 0;
    let selfClosing: boolean;
    for (;;) {
      // XML 1.0 §3.1 [40], [41], [44]: white space before each attribute, `S? '/'? '>'` at the end.
      const spaced = skipWhiteSpace(source, at);
      const c = source.charCodeAt(spaced);
      if (c === 0x3e /* > */ || (c === 0x2f /* / */ && source.charCodeAt(spaced + 1) === 0x3e)) {
        selfClosing = c === 0x2f;
        at = spaced + (selfClosing ? 2 : 1);
        break;
      }
      if (spaced === at) this.#fail(`malformed start tag <${name}>`);
      const attributeEnd = this.#qNameEnd(spaced, 'attribute');
      at = skipWhiteSpace(source, attributeEnd);
      if (source.charCodeAt(at) !== 0x3d /* = */) this.#fail(`malformed attribute in <${name}>`);
      at = skipWhiteSpace(source, at + 1);
      const quote = source.charCodeAt(at);
      if (quote !== 0x22 /* " */ && quote !== 0x27 /* ' */) {
        this.#fail(`unquoted attribute value in <${name}>`);
      }
      const close = source.indexOf(quote === 0x22 ? '"' : "'", at + 1);
      if (close === -1) this.#fail(`unclosed attribute value in <${name}>`);
      const raw = source.slice(at + 1, close);
      names[count] = source.slice(spaced, attributeEnd);
      values[count] = ATTRIBUTE_SPECIAL.test(raw) ? this.#attributeValue(raw) : raw;
      count += 1;
      at = close + 1;
    }
    this.#position = at;
    const element = this.#element(name, count);
    this.#walker.open?.(element, this.#stack);
    this.#stack.push(element);
    if (selfClosing) this.#close();
  }

  /** Normalises and resolves an attribute value (XML 1.0 §3.3.3). */
  #attributeValue(raw: string): string {
    // XML 1.0 §3.1 [10]: no `<` in an attribute value.
    if (raw.includes('<')) this.#fail('"<" in an attribute value');
    this.#checkCharacters(raw);
    const normal = raw.replace(ATTRIBUTE_WHITE_SPACE, ' ');
    return normal.includes('&') ? this.#resolve(normal) : normal;
  }

  /** Replaces every reference in `text`; anything else starting with `&` is not well-formed. */
  #resolve(text: string): string {
    let out = '';
    let from = 0;
    for (let amp = text.indexOf('&'); amp !== -1; amp = text.indexOf('&', from)) {
      REFERENCE.lastIndex = amp;
      const match = REFERENCE.exec(text);
      if (!match) this.#fail('undefined entity or malformed reference');
      out += text.slice(from, amp) + this.#replacement(match);
      from = REFERENCE.lastIndex;
    }
    return out + text.slice(from);
  }

  #replacement(match: RegExpExecArray): string {
    const [, entity, decimal, hex] = match;
    if (entity !== undefined) return PREDEFINED[entity] ?? '';
    const code =
      decimal === undefined ? Number.parseInt(hex ?? '', 16) : Number.parseInt(decimal, 10);
    // XML 1.0 §4.1 [66]: a character reference must name a Char (§2.2 [2]).
    const isChar =
      code === 0x9 ||
      code === 0xa ||
      code === 0xd ||
      (code >= 0x20 && code <= 0xd7ff) ||
      (code >= 0xe000 && code <= 0xfffd) ||
      (code >= 0x10000 && code <= 0x10ffff);
    if (!isChar) this.#fail(`character reference to a code point XML does not allow`);
    return String.fromCodePoint(code);
  }

  /**
   * The element of the start tag just read, whose `count` attributes are in `#names` and
   * `#values`: its bindings made, its names resolved, its attributes checked.
   */
  #element(name: string, count: number): XmlElementNode {
    const names = this.#names;
    const values = this.#values;
    if (this.#elements >= MAX_XML_ELEMENTS) this.#fail(`more than ${MAX_XML_ELEMENTS} elements`);
    const namespaces = this.#namespaces;
    let bindings: Binding[] | undefined;
    for (let i = 0; i < count; i += 1) {
      const attribute = names[i] ?? '';
      if (!attribute.startsWith('xmlns')) continue;
      let prefix: string;
      if (attribute === 'xmlns') prefix = '';
      else if (attribute.charCodeAt(5) === 0x3a /* : */) prefix = attribute.slice(6);
      else continue;
      const uri = values[i] ?? '';
      this.#checkBinding(prefix, uri);
      bindings ??= [];
      bindings.push({ prefix, hidden: namespaces.get(prefix) });
      namespaces.set(prefix, uri);
    }
    this.#bindings.push(bindings);
    if (bindings !== undefined) this.#forgetNames();
    const resolved = this.#elementNames.get(name) ?? this.#resolveElement(name);
    const element: XmlElementNode = {
      index: this.#elements,
      name,
      uri: resolved.uri,
      localName: resolved.local,
      key: resolved.key,
      attributes: count === 0 ? NO_ATTRIBUTES : this.#attributes(count),
    };
    this.#elements += 1;
    return element;
  }

  #resolveElement(name: string): ResolvedName {
    const colon = name.indexOf(':');
    const prefix = colon === -1 ? '' : name.slice(0, colon);
    const local = colon === -1 ? name : name.slice(colon + 1);
    if (prefix === 'xmlns') this.#fail(`element <${name}> has the reserved prefix xmlns`);
    const uri = this.#namespaces.get(prefix) ?? '';
    if (prefix !== '' && uri === '') this.#fail(`unbound namespace prefix ${prefix}`);
    return this.#remember(this.#elementNames, name, uri, local);
  }

  #resolveAttribute(name: string): ResolvedName {
    const colon = name.indexOf(':');
    if (colon === -1) {
      // Namespaces in XML 1.0 §6.2: an unprefixed attribute has no namespace.
      return this.#remember(
        this.#attributeNames,
        name,
        name === 'xmlns' ? XMLNS_NAMESPACE : '',
        name,
      );
    }
    const prefix = name.slice(0, colon);
    const uri = this.#namespaces.get(prefix);
    if (uri === undefined || uri === '') this.#fail(`unbound namespace prefix ${prefix}`);
    return this.#remember(this.#attributeNames, name, uri, name.slice(colon + 1));
  }

  #remember(
    names: Map<string, ResolvedName>,
    name: string,
    uri: string,
    local: string,
  ): ResolvedName {
    // A Strict OOXML name reads as its Transitional twin (see `transitional`): one rule for both.
    const read = transitional(uri);
    const resolved: ResolvedName = { uri: read, local, key: `${read} ${local}` };
    if (names.size >= MAX_CACHED_NAMES) names.clear();
    names.set(name, resolved);
    return resolved;
  }

  /** Names resolve anew once a binding changes. */
  #forgetNames(): void {
    this.#elementNames.clear();
    this.#attributeNames.clear();
  }

  /** Namespaces in XML 1.0 §3 (reserved prefixes and names; no empty prefixed binding in 1.0). */
  #checkBinding(prefix: string, uri: string): void {
    if (prefix === 'xmlns') this.#fail('the prefix xmlns may not be declared');
    if (prefix === 'xml' ? uri !== XML_NAMESPACE : uri === XML_NAMESPACE) {
      this.#fail('the prefix xml and its namespace are bound only to each other');
    }
    if (uri === XMLNS_NAMESPACE) this.#fail(`the namespace ${XMLNS_NAMESPACE} may not be bound`);
    if (prefix !== '' && uri === '') this.#fail(`the prefix ${prefix} is bound to no namespace`);
    // A namespace name is a URI reference, which has no white space at its ends; parsers differ
    // on whether to trim it (saxes does, others do not), so it is refused rather than guessed.
    if (uri !== uri.trim())
      this.#fail(`the namespace name of ${prefix || 'xmlns'} has white space at its ends`);
  }

  #attributes(count: number): readonly XmlAttributeNode[] {
    const names = this.#names;
    const values = this.#values;
    const attributes: XmlAttributeNode[] = [];
    // Past a few attributes, names seen are kept in a set: a tag of many thousands of attributes
    // costs linear time, not quadratic.
    const seen = count > FEW_ATTRIBUTES ? new Set<string>() : undefined;
    for (let i = 0; i < count; i += 1) {
      const name = names[i] ?? '';
      const { uri, local } = this.#attributeNames.get(name) ?? this.#resolveAttribute(name);
      // XML 1.0 §3.1 (unique attribute specification) and Namespaces in XML 1.0 §6.3 (unique
      // expanded names; an unprefixed attribute's namespace is none, so only its name counts).
      if (seen === undefined) {
        for (const other of attributes) {
          if (other.name === name || (uri !== '' && other.uri === uri && other.local === local)) {
            this.#fail(`duplicate attribute ${name}`);
          }
        }
      } else {
        // A qualified name has no `{`, so the two kinds of entry cannot meet.
        const expanded = uri === '' ? undefined : `{${uri}}${local}`;
        if (seen.has(name) || (expanded !== undefined && seen.has(expanded))) {
          this.#fail(`duplicate attribute ${name}`);
        }
        seen.add(name);
        if (expanded !== undefined) seen.add(expanded);
      }
      attributes.push({ name, uri, local, value: values[i] ?? '' });
    }
    return attributes;
  }

  #endTag(): void {
    const source = this.#source;
    const at = this.#position + 2;
    const open = this.#stack.at(-1);
    // XML 1.0 §3.1 [42] and the element type match: the open element's name, then `S? '>'`.
    if (open === undefined || !source.startsWith(open.name, at))
      this.#fail('end tag does not match its start tag');
    const end = skipWhiteSpace(source, at + open.name.length);
    if (source.charCodeAt(end) !== 0x3e /* > */)
      this.#fail(`end tag does not match <${open.name}>`);
    this.#flushText();
    this.#position = end + 1;
    this.#close();
  }

  #close(): void {
    const element = this.#stack.pop();
    const bindings = this.#bindings.pop();
    if (bindings !== undefined) {
      for (const { prefix, hidden } of bindings.reverse()) {
        if (hidden === undefined) this.#namespaces.delete(prefix);
        else this.#namespaces.set(prefix, hidden);
      }
      this.#forgetNames();
    }
    if (element) this.#walker.close?.(element);
  }

  /** `<!`: a comment, a CDATA section, or a document type declaration. */
  #bang(): void {
    const source = this.#source;
    const at = this.#position;
    if (source.startsWith('<!--', at)) {
      // XML 1.0 §2.5 [15]: `--` only in the closing `-->`.
      const dashes = source.indexOf('--', at + 4);
      if (dashes === -1 || source.charCodeAt(dashes + 2) !== 0x3e /* > */) {
        this.#fail('malformed comment');
      }
      this.#checkCharacters(source.slice(at + 4, dashes));
      this.#position = dashes + 3;
    } else if (source.startsWith('<![CDATA[', at)) {
      if (this.#stack.length === 0) this.#fail('CDATA section outside the root element');
      const end = source.indexOf(']]>', at + 9);
      if (end === -1) this.#fail('unclosed CDATA section');
      const data = source.slice(at + 9, end);
      this.#checkCharacters(data);
      this.#text += data.includes('\r') ? data.replace(LINE_END, '\n') : data;
      this.#position = end + 3;
    } else if (source.startsWith('<!DOCTYPE', at)) {
      this.#doctype();
    } else if (source.startsWith('<!ENTITY', at)) {
      throw new Rejection('invalid_file', `${this.#what} declares an entity, which is not allowed`);
    } else {
      this.#fail('malformed markup declaration');
    }
  }

  /**
   * XML 1.0 §2.8 [28], [75], [11]-[13]: `<!DOCTYPE` S Name (S ExternalID)? S? `>`, in the prolog
   * only, at most once. OpenOffice.org wrote one into its manifest and other parts
   * (`PUBLIC "-//OpenOffice.org//DTD Manifest 1.0//EN" "Manifest.dtd"`), so one without an
   * internal subset is read past: its external identifier is never fetched or read, so it can
   * neither declare entities nor default attributes, and the part reads exactly as without it.
   * An internal subset (`[`), where entities and attribute defaults would be declared, is
   * refused.
   */
  #doctype(): void {
    const source = this.#source;
    if (this.#sawRoot) this.#fail('a document type declaration after the root element starts');
    if (this.#sawDoctype) this.#fail('more than one document type declaration');
    this.#sawDoctype = true;
    let at = this.#position + 9;
    let spaced = skipWhiteSpace(source, at);
    if (spaced === at) this.#fail('malformed document type declaration: no space before its name');
    // Namespaces in XML 1.0 §7: the name is a QName.
    at = this.#qNameEnd(spaced, 'document type declaration');
    spaced = skipWhiteSpace(source, at);
    if (spaced > at) {
      at = spaced;
      if (source.startsWith('SYSTEM', at)) {
        at = this.#literal(at + 6, SYSTEM_LITERAL);
      } else if (source.startsWith('PUBLIC', at)) {
        at = this.#literal(at + 6, PUBID_LITERAL);
        at = this.#literal(at, SYSTEM_LITERAL);
      }
      at = skipWhiteSpace(source, at);
    }
    if (source.charCodeAt(at) === 0x5b /* [ */) {
      throw new Rejection(
        'invalid_file',
        `${this.#what} declares a DOCTYPE with an internal subset, which is not allowed (entity and attribute declarations are never read)`,
      );
    }
    if (source.charCodeAt(at) !== 0x3e /* > */) this.#fail('malformed document type declaration');
    this.#position = at + 1;
  }

  /** White space, then a literal `pattern` matches (quotes included); where the literal ends. */
  #literal(at: number, pattern: RegExp): number {
    const spaced = skipWhiteSpace(this.#source, at);
    pattern.lastIndex = spaced;
    if (spaced === at || !pattern.test(this.#source)) {
      this.#fail('malformed external identifier in the document type declaration');
    }
    this.#checkCharacters(this.#source.slice(spaced, pattern.lastIndex));
    return pattern.lastIndex;
  }

  /** XML 1.0 §2.6 [16]; Namespaces in XML 1.0 §7: a target is an NCName (no colon). */
  #instruction(): void {
    const source = this.#source;
    const at = this.#position + 2;
    const targetEnd = ncNameEnd(source, at);
    const after = source.charCodeAt(targetEnd);
    const closes = after === 0x3f /* ? */ && source.charCodeAt(targetEnd + 1) === 0x3e;
    if (targetEnd === at || !(closes || isWhiteSpace(after))) {
      this.#fail('malformed processing instruction');
    }
    // XML 1.0 §2.6 [17]: `xml` in any case is reserved (the declaration is read before this).
    if (source.slice(at, targetEnd).toLowerCase() === 'xml')
      this.#fail('XML declaration not at the start');
    const end = source.indexOf('?>', targetEnd);
    if (end === -1) this.#fail('unclosed processing instruction');
    this.#checkCharacters(source.slice(targetEnd, end));
    this.#position = end + 2;
  }

  #reference(): void {
    if (this.#stack.length === 0) this.#fail('reference outside the root element');
    REFERENCE.lastIndex = this.#position;
    const match = REFERENCE.exec(this.#source);
    if (!match) this.#fail('undefined entity or malformed reference');
    this.#text += this.#replacement(match);
    this.#position = REFERENCE.lastIndex;
  }

  /**
   * Character data up to the next markup or reference, taken as one slice of the source but
   * where a line end is normalised (text that needs nothing done costs no copy per character).
   */
  #characters(): void {
    const source = this.#source;
    let at = this.#position;
    let from = at;
    let text = '';
    for (;;) {
      TEXT_RUN.lastIndex = at;
      if (TEXT_RUN.test(source)) at = TEXT_RUN.lastIndex;
      if (at >= source.length) break;
      const code = source.charCodeAt(at);
      if (code === 0x3c /* < */ || code === 0x26 /* & */) break;
      if (code === 0x5d /* ] */ || code === 0x09 || code === 0x0a) {
        // On through tabs, line feeds and `]` with the wider class; XML 1.0 §2.4 [14]: `]]>`
        // does not appear in character data (the run before `at` holds no `]`).
        TEXT_ON.lastIndex = at;
        TEXT_ON.test(source);
        if (source.slice(at, TEXT_ON.lastIndex).includes(']]>')) {
          this.#fail('"]]>" in character data');
        }
        at = TEXT_ON.lastIndex;
      } else if (code === 0x0d /* CR */) {
        // XML 1.0 §2.11: CR LF and a lone CR are read as LF.
        text += `${source.slice(from, at)}\n`;
        at += source.charCodeAt(at + 1) === 0x0a ? 2 : 1;
        from = at;
      } else {
        this.#fail(
          `character U+${code.toString(16).toUpperCase().padStart(4, '0')} is not allowed`,
        );
      }
    }
    text += source.slice(from, at);
    if (this.#stack.length === 0) {
      if (text === '' || skipWhiteSpace(text, 0) !== text.length) {
        this.#fail('text outside the root element');
      }
    } else {
      this.#text += text;
    }
    this.#position = at;
  }

  #flushText(): void {
    if (this.#text === '') return;
    const text = this.#text;
    this.#text = '';
    this.#walker.text?.(text, this.#stack);
  }

  #end(): void {
    this.#position += 1;
    const open = this.#stack.at(-1);
    if (open !== undefined) this.#fail(`unclosed element <${open.name}>`);
    if (!this.#sawRoot) this.#fail('no root element');
  }

  #checkCharacters(text: string): void {
    if (NOT_CHAR.test(text)) this.#fail('a character XML does not allow');
  }

  #fail(reason: string): never {
    throw new Rejection(
      'invalid_file',
      `${this.#what} is not well-formed XML: ${reason} (at offset ${this.#position})`,
    );
  }
}
