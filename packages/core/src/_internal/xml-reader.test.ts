import {
  buildOdt,
  buildPresentation,
  buildWordDocument,
  buildWorkbook,
  seededRandom,
} from '@disarm/fixtures';
import { beforeAll, describe, expect, it } from 'vitest';

import { Rejection } from './rejection.ts';
import { XmlReader } from './xml-reader.ts';
import type { XmlWalker } from './xml-reader.ts';
import { partText, XmlChunkWalk } from './xml-rewrite.ts';
import { openZip, readMember } from './zip-reader.ts';

/**
 * A walk's events as lines: element starts with their resolved names and attributes, ends, and
 * the text between two tags joined (saxes reports text in pieces, the reader in one).
 */
function recorder(events: string[]): XmlWalker {
  let text = '';
  const flush = (): void => {
    if (text !== '') events.push(`text ${JSON.stringify(text)}`);
    text = '';
  };
  return {
    open(element) {
      flush();
      const attributes = element.attributes.map((a) => [a.name, a.uri, a.local, a.value]);
      events.push(
        `open ${JSON.stringify([element.index, element.name, element.uri, element.localName, element.key, attributes])}`,
      );
    },
    close(element) {
      flush();
      events.push(`close ${element.name}`);
    },
    text(piece) {
      text += piece;
    },
  };
}

type Reading = { readonly events: readonly string[] } | { readonly failure: Rejection };

function read(bytes: Uint8Array, step = Number.POSITIVE_INFINITY): Reading {
  const events: string[] = [];
  try {
    const reader = new XmlReader(partText(bytes, 'part'), 'part', recorder(events));
    while (!reader.done) reader.read(step);
    return { events };
  } catch (error) {
    if (error instanceof Rejection) return { failure: error };
    throw error;
  }
}

/** The same bytes through saxes, the verify step's reader. */
function readWithSaxes(bytes: Uint8Array): Reading {
  const events: string[] = [];
  const walker = recorder(events);
  try {
    const walk = new XmlChunkWalk('part', walker);
    walk.write(bytes);
    walk.close();
    return { events };
  } catch (error) {
    if (error instanceof Rejection) return { failure: error };
    throw error;
  }
}

const utf8 = (text: string): Uint8Array => Buffer.from(text, 'utf8');
/** UTF-16LE with its byte-order mark: the only way a part can hold an unpaired surrogate. */
const utf16 = (text: string): Uint8Array =>
  Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);

function eventsOf(text: string): readonly string[] {
  const reading = read(utf8(text));
  if ('failure' in reading) throw reading.failure;
  return reading.events;
}

function failureOf(bytes: Uint8Array): string {
  const reading = read(bytes);
  if (!('failure' in reading)) throw new Error('read without failure');
  expect(reading.failure.reason).toBe('invalid_file');
  return reading.failure.message;
}

/**
 * What the reader refuses on purpose while saxes reads it: a namespace name with white space at
 * its ends (saxes trims it), a local part that is not an NCName (`a:-b`), XML 1.1, a second
 * byte-order mark (saxes skips one in the text), and a DOCTYPE not of XML 1.0 §2.8's syntax (saxes
 * reads to its `>`).
 */
const STRICTER =
  /white space at its ends|no name after the prefix|malformed XML declaration|text outside the root element \(at offset 0\)|malformed (document type declaration|external identifier)/;

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

describe('XmlReader', () => {
  it('resolves namespaces as they are bound, rebound and unbound, element by element', () => {
    const events = eventsOf(
      `<w:document xmlns:w="${W}" xmlns="urn:d"><w:body a="1" w:b="2"><p xmlns="urn:e" xmlns:w="urn:w2"><w:t/></p><q xmlns=""/><r xml:space="preserve"/></w:body></w:document>`,
    );
    expect(events).toEqual([
      `open ${JSON.stringify([
        0,
        'w:document',
        W,
        'document',
        `${W} document`,
        [
          ['xmlns:w', 'http://www.w3.org/2000/xmlns/', 'w', W],
          ['xmlns', 'http://www.w3.org/2000/xmlns/', 'xmlns', 'urn:d'],
        ],
      ])}`,
      `open ${JSON.stringify([
        1,
        'w:body',
        W,
        'body',
        `${W} body`,
        [
          ['a', '', 'a', '1'],
          ['w:b', W, 'b', '2'],
        ],
      ])}`,
      `open ${JSON.stringify([
        2,
        'p',
        'urn:e',
        'p',
        'urn:e p',
        [
          ['xmlns', 'http://www.w3.org/2000/xmlns/', 'xmlns', 'urn:e'],
          ['xmlns:w', 'http://www.w3.org/2000/xmlns/', 'w', 'urn:w2'],
        ],
      ])}`,
      `open ${JSON.stringify([3, 'w:t', 'urn:w2', 't', 'urn:w2 t', []])}`,
      'close w:t',
      'close p',
      `open ${JSON.stringify([4, 'q', '', 'q', ' q', [['xmlns', 'http://www.w3.org/2000/xmlns/', 'xmlns', '']]])}`,
      'close q',
      `open ${JSON.stringify([5, 'r', 'urn:d', 'r', 'urn:d r', [['xml:space', 'http://www.w3.org/XML/1998/namespace', 'space', 'preserve']]])}`,
      'close r',
      'close w:body',
      'close w:document',
    ]);
  });

  it('joins the text between two tags: references, CDATA, and past comments and instructions', () => {
    const events = eventsOf(
      '<?xml version="1.0" encoding="UTF-8"?>\r\n<!-- before --><r>a &amp; b&#32;&#x1F600;<!-- c --><?pi data?><![CDATA[<x> & ]]]]>\r\nc\rd<e/>&lt;&gt;&quot;&apos;</r>\n<?after?>',
    );
    expect(events.filter((line) => line.startsWith('text'))).toEqual([
      `text ${JSON.stringify('a & b 😀<x> & ]]\nc\nd')}`,
      `text ${JSON.stringify('<>"\'')}`,
    ]);
  });

  it('normalises attribute values: white space to spaces, references resolved after', () => {
    const [open] = eventsOf('<r a="x\r\ny\tz\n" b=\'&#9;&#10;&#13;&quot;"\' c="&lt;&amp;lt;"/>');
    expect(open).toContain(
      JSON.stringify([
        ['a', '', 'a', 'x y z '],
        ['b', '', 'b', '\t\n\r""'],
        ['c', '', 'c', '<&lt;'],
      ]),
    );
  });

  it('reads the same events however small the steps it is read in', () => {
    const text = `<?xml version="1.0"?><w:d xmlns:w="${W}"><w:p a="1">ż 😀 &amp; x<![CDATA[y]]><!--c--></w:p>\r\n<w:q/></w:d>`;
    const whole = read(utf8(text));
    for (let step = 1; step < 12; step += 1) expect(read(utf8(text), step)).toEqual(whole);
  });

  it('reads past a DOCTYPE without an internal subset, as if it were not there', () => {
    const body = `<manifest:manifest xmlns:manifest="urn:m"><manifest:file-entry a="&amp;"/></manifest:manifest>`;
    const plain = eventsOf(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
    for (const doctype of [
      // OpenOffice.org 1.x-3.x, META-INF/manifest.xml.
      '<!DOCTYPE manifest:manifest PUBLIC "-//OpenOffice.org//DTD Manifest 1.0//EN" "Manifest.dtd">',
      "<!DOCTYPE manifest:manifest PUBLIC '-//OpenOffice.org//DTD Manifest 1.0//EN' 'Manifest.dtd' >",
      '<!DOCTYPE manifest:manifest SYSTEM "http://example.com/x.dtd">',
      "<!DOCTYPE manifest:manifest SYSTEM 'a\"[b>'>",
      '<!DOCTYPE manifest:manifest>',
      '<!DOCTYPE\r\n\tmanifest:manifest\nPUBLIC\n"-//A//B"\n""\n>',
    ]) {
      expect(eventsOf(`<?xml version="1.0" encoding="UTF-8"?>\n${doctype}\n${body}`)).toEqual(
        plain,
      );
      expect(eventsOf(`<!-- c --><?pi x?>${doctype}<!-- d -->${body}`)).toEqual(plain);
    }
  });

  it.each([
    [
      'an internal subset',
      '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>',
      /with an internal subset/,
    ],
    ['an empty internal subset', '<!DOCTYPE r SYSTEM "x.dtd" []><r/>', /with an internal subset/],
    ['an internal subset after PUBLIC', '<!DOCTYPE r PUBLIC "-//A" "a"[]><r/>', /internal subset/],
    ['an entity declared outside a DOCTYPE', '<!ENTITY a "b"><r/>', /declares an entity/],
    [
      'an entity the DOCTYPE does not declare',
      '<!DOCTYPE r SYSTEM "x.dtd"><r>&a;</r>',
      /undefined entity/,
    ],
    ['a DOCTYPE inside the root', '<r><!DOCTYPE r></r>', /after the root element starts/],
    ['a DOCTYPE after the root', '<r/><!DOCTYPE r>', /after the root element starts/],
    ['two DOCTYPEs', '<!DOCTYPE r><!DOCTYPE r><r/>', /more than one document type/],
    [
      'a DOCTYPE before the declaration',
      '<!DOCTYPE r><?xml version="1.0"?><r/>',
      /not at the start/,
    ],
    ['no space before the name', '<!DOCTYPEr><r/>', /no space before its name/],
    ['no name', '<!DOCTYPE ><r/>', /malformed document type declaration/],
    ['a name that is not a QName', '<!DOCTYPE a:b:c><r/>', /malformed document type declaration/],
    ['a lower-case keyword', '<!DOCTYPE r system "x"><r/>', /malformed document type declaration/],
    ['SYSTEM without a literal', '<!DOCTYPE r SYSTEM><r/>', /malformed external identifier/],
    ['PUBLIC without a system literal', '<!DOCTYPE r PUBLIC "-//A"><r/>', /malformed external/],
    ['no space before the literal', '<!DOCTYPE r SYSTEM"x"><r/>', /malformed external identifier/],
    [
      'a character not allowed in a public id',
      '<!DOCTYPE r PUBLIC "a{b" "c"><r/>',
      /malformed external/,
    ],
    ['an unclosed literal', '<!DOCTYPE r SYSTEM "x><r/>', /malformed external identifier/],
    [
      'a control character in a system literal',
      '<!DOCTYPE r SYSTEM "\u0001"><r/>',
      /XML does not allow/,
    ],
    ['no space before the external id', '<!DOCTYPE r"x"><r/>', /malformed document type/],
    ['an unclosed DOCTYPE', '<!DOCTYPE r SYSTEM "x" <r/>', /malformed document type/],
  ])('refuses %s', (_, text, detail) => {
    expect(failureOf(utf8(text))).toMatch(detail);
  });

  it.each([
    ['an undefined entity', '<r>&a;</r>', /undefined entity/],
    ['a reference without its semicolon', '<r>&amp</r>', /undefined entity/],
    ['a reference outside the root', '&amp;<r/>', /reference outside the root/],
    ['a character reference to NUL', '<r>&#0;</r>', /code point XML does not allow/],
    ['a character reference to a surrogate', '<r a="&#xD800;"/>', /code point XML does not/],
    ['a character reference past U+10FFFF', '<r>&#x110000;</r>', /code point XML does not/],
    ['"]]>" in text', '<r>a]]>b</r>', /"]]>" in character data/],
    ['"--" in a comment', '<r><!-- a -- b --></r>', /malformed comment/],
    ['a comment ending in "-"', '<r><!-- a ---></r>', /malformed comment/],
    ['an unclosed comment', '<r><!-- a </r>', /malformed comment/],
    ['an unclosed CDATA section', '<r><![CDATA[a</r>', /unclosed CDATA/],
    ['CDATA outside the root', '<![CDATA[a]]><r/>', /CDATA section outside/],
    ['a declaration not at the start', ' <?xml version="1.0"?><r/>', /declaration not at/],
    ['a second declaration', '<?xml version="1.0"?><r><?xml version="1.0"?></r>', /not at/],
    ['an instruction target with a colon', '<r><?a:b?></r>', /processing instruction/],
    ['an unclosed instruction', '<r><?pi </r>', /unclosed processing/],
    ['text before the root', 'x<r/>', /text outside the root/],
    ['text after the root', '<r/>x', /text outside the root/],
    ['two roots', '<r/><r/>', /more than one root/],
    ['no root', '<!-- c -->', /no root element/],
    ['nothing', '', /no root element/],
    ['an unclosed element', '<r><a></r>', /does not match/],
    ['an unclosed root', '<r><a/>', /unclosed element <r>/],
    ['an end tag alone', '</r>', /end tag does not match/],
    ['a mismatched end tag', '<r><a></ab></r>', /end tag does not match <a>/],
    ['a name starting with a digit', '<1r/>', /malformed start tag/],
    ['a name with two colons', '<a:b:c xmlns:a="u"/>', /malformed start tag/],
    ['an empty prefix', '<:r/>', /malformed start tag/],
    ['a local part that is no name', '<a:-b xmlns:a="u"/>', /no name after the prefix/],
    ['an unbound element prefix', '<p:r/>', /unbound namespace prefix p/],
    ['an unbound attribute prefix', '<r p:a="1"/>', /unbound namespace prefix p/],
    ['the prefix xmlns on an element', '<xmlns:r/>', /reserved prefix xmlns/],
    ['a duplicate attribute', '<r a="1" a="2"/>', /duplicate attribute a/],
    ['a duplicate expanded name', '<r xmlns:p="u" xmlns:q="u" p:a="1" q:a="2"/>', /duplicate/],
    ['an unquoted value', '<r a=1/>', /unquoted attribute value/],
    ['"<" in a value', '<r a="<"/>', /"<" in an attribute value/],
    ['an unclosed value', '<r a="1/>', /unclosed attribute value/],
    ['attributes without space between', '<r a="1"b="2"/>', /malformed start tag <r>/],
    ['a space in "/>"', '<r/ >', /malformed start tag <r>/],
    ['a prefix bound to nothing', '<r xmlns:p=""/>', /bound to no namespace/],
    ['xml bound elsewhere', '<r xmlns:xml="urn:x"/>', /bound only to each other/],
    [
      'the xml namespace on a prefix',
      '<r xmlns:p="http://www.w3.org/XML/1998/namespace"/>',
      /only/,
    ],
    ['the xmlns prefix declared', '<r xmlns:xmlns="urn:x"/>', /prefix xmlns may not/],
    [
      'the xmlns namespace bound',
      '<r xmlns:p="http://www.w3.org/2000/xmlns/"/>',
      /may not be bound/,
    ],
    ['a namespace name padded', '<r xmlns=" urn:x "/>', /white space at its ends/],
    ['XML 1.1', '<?xml version="1.1"?><r/>', /malformed XML declaration/],
    ['a control character', '<r>a\u0001b</r>', /U\+0001 is not allowed/],
    ['a control character in a value', '<r a="\u001f"/>', /character XML does not allow/],
    ['a control character in a comment', '<r><!--\u0000--></r>', /character XML does not/],
    ['U+FFFE', '<r>\uFFFE</r>', /U\+FFFE is not allowed/],
    ['a bang that is no markup', '<r><!ELEMENT r></r>', /malformed markup declaration/],
  ])('refuses %s as invalid_file', (_, text, reason) => {
    expect(failureOf(utf8(text))).toMatch(reason);
  });

  it('reads UTF-16 as UTF-8, an unpaired surrogate as U+FFFD (the decoder’s), as saxes does', () => {
    expect(read(utf16('<r a="😀">😀</r>'))).toEqual(read(utf8('<r a="😀">😀</r>')));
    expect(read(utf16('<r a="\uDC00">\uD800</r>'))).toEqual(read(utf8('<r a="\uFFFD">\uFFFD</r>')));
    expect(read(utf16('<r a="\uDC00">\uD800</r>'))).toEqual(
      readWithSaxes(utf16('<r a="\uDC00">\uD800</r>')),
    );
  });

  it('reads a tag of 200k attributes in linear time, and still finds a duplicate among them', () => {
    const attributes = Array.from({ length: 200_000 }, (_, i) => `a${i}="${i}"`).join(' ');
    const [open] = eventsOf(`<r xmlns:p="urn:p" ${attributes} p:a1="x"/>`);
    expect(open).toContain('["a199999","","a199999","199999"]');
    expect(failureOf(utf8(`<r ${attributes} a123456="again"/>`))).toMatch(
      /duplicate attribute a123456/,
    );
    const prefixed = Array.from({ length: 20 }, (_, i) => `p:a${i}="${i}"`).join(' ');
    expect(failureOf(utf8(`<r xmlns:p="urn:p" xmlns:q="urn:p" ${prefixed} q:a7="x"/>`))).toMatch(
      /duplicate attribute q:a7/,
    );
  });

  it('reads elements nested 256 deep and refuses a 257th level', () => {
    const nested = (depth: number): string => `${'<a>'.repeat(depth)}${'</a>'.repeat(depth)}`;
    expect(eventsOf(nested(256))).toHaveLength(512);
    expect(failureOf(utf8(nested(257)))).toMatch(/elements nested deeper than 256 levels/);
    expect(failureOf(utf8(nested(1_000_000)))).toMatch(/nested deeper than 256 levels/);
  });

  it('hands on what a walker throws, its rejection as the part’s', () => {
    const refusal = new Rejection('policy_violation', 'no');
    const reader = new XmlReader('<r><a/></r>', 'part', {
      open(element) {
        if (element.name === 'a') throw refusal;
      },
    });
    expect(() => {
      reader.read();
    }).toThrow(refusal);
  });
});

describe('XmlReader against saxes (the verify step’s reader)', () => {
  const parts: { readonly name: string; readonly bytes: Uint8Array }[] = [];

  beforeAll(async () => {
    // Packages as the fixtures make them, carrying every kind of content the rebuild handles.
    const packages = [
      await buildWordDocument('docm', {
        texts: ['Zażółć gęślą jaźń', 'a & b < c', '😀 emoji'],
        vba: true,
        customXml: true,
        signature: true,
        customUi: true,
        hyperlinks: ['https://example.com/?a=1&b=2'],
        oleObject: true,
        externalOle: 'mhtml:http://example.com/x!x',
        dde: true,
        fetchingFields: true,
        macroButton: true,
        activeX: true,
        attachedTemplate: 'https://example.com/t.dotm',
      }),
      await buildWordDocument('docx', { texts: ['one', 'two'], tableOfContents: true }),
      await buildWorkbook('xlsm', {
        texts: ['a', 'b', 'c'],
        sheets: 2,
        formulas: true,
        macroSheet: true,
        externalData: true,
        ruleFormulas: true,
      }),
      await buildPresentation('pptm', { texts: ['slide'], macroAction: true }),
      await buildOdt({ texts: ['odt text'] }),
    ];
    for (const bytes of packages) {
      const listing = await openZip(bytes, 1000);
      for (const member of listing.members) {
        const data = await readMember(listing, member, 1 << 26, member.name);
        if (/\.(xml|rels|vml)$/.test(member.name)) parts.push({ name: member.name, bytes: data });
      }
    }
    // Constructs the fixtures do not write.
    for (const text of [
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\r\n<!-- c --><?pi x?><w:d xmlns:w="${W}"><w:p w:a="x&#10;y&amp;&#x9;"><![CDATA[a<b]]>&lt;&#65;</w:p><p xmlns="urn:a" xmlns:w="urn:b"><w:q/></p>\r\n</w:d>`,
      `<r xmlns:a="urn:a"><a:x a:y='"' y="'"/><é/><_x.y-z/><a:\u00C0\u00B7/></r>`,
      '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE manifest:manifest PUBLIC "-//OpenOffice.org//DTD Manifest 1.0//EN" "Manifest.dtd">\n<manifest:manifest xmlns:manifest="urn:m"/>',
    ]) {
      parts.push(
        { name: 'inline', bytes: utf8(text) },
        { name: 'inline utf-16', bytes: utf16(text) },
      );
    }
  });

  it('reads every part of the fixtures as saxes does', () => {
    expect(parts.length).toBeGreaterThan(40);
    for (const part of parts) {
      const ours = read(part.bytes);
      expect('events' in ours, part.name).toBe(true);
      expect(ours, part.name).toEqual(readWithSaxes(part.bytes));
    }
  });

  it('refuses a DOCTYPE with an internal subset as saxes is made to', () => {
    for (const text of [
      '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>',
      '<!DOCTYPE r SYSTEM "a[b" []><r/>',
    ]) {
      const saxes = readWithSaxes(utf8(text));
      expect('failure' in saxes && saxes.failure.message, text).toMatch(/internal subset/);
    }
    expect(readWithSaxes(utf8('<!DOCTYPE r SYSTEM "a[b"><r/>'))).toEqual(read(utf8('<r/>')));
  });

  it('agrees with saxes on thousands of mutated parts: same events, or both refuse', () => {
    // What attackers and broken writers put where markup is: references, markup declarations,
    // bindings, duplicates, characters XML does not allow, names that are not names.
    const tokens = [
      '<',
      '>',
      '&',
      '&amp;',
      '&#0;',
      '&#x10FFFF;',
      '&#xD800;',
      '&#0065;',
      '&lt',
      '&foo;',
      ']]>',
      ']',
      '<!--',
      '-->',
      '--',
      '<!-- c -->',
      '<!--->',
      '<![CDATA[x]]>',
      '<![CDATA[a\r\nb]]>',
      '<![CDATA[',
      '<?pi x?>',
      '<?a:b x?>',
      '<?XmL x?>',
      '<?xml version="1.0"?>',
      '<!DOCTYPE x>',
      '<!ENTITY x "y">',
      '"',
      "'",
      '=',
      ':',
      ' xmlns:a="urn:a"',
      ' xmlns:w=""',
      ' xmlns=""',
      ' xmlns:xml="http://www.w3.org/XML/1998/namespace"',
      ' a="1"',
      ' a="1" a="2"',
      ' a="&lt;&#10;\t\r\n x"',
      ' w:a="1" w:a="2"',
      ` xmlns:z="${W}" z:val="1"`,
      ' a="<"',
      ' a="1"b="2"',
      '\r',
      '\r\n',
      '\t',
      '\u0000',
      '\u001f',
      '\uFFFE',
      '\uFFFD',
      '\uD800',
      '\uDC00',
      '😀',
      '\u00A0',
      '\u2028',
      '\u0085',
      '</x>',
      '<x>',
      '<x/>',
      '<x:y>',
      '<xmlns:y/>',
      '<a:b:c/>',
      '<é/>',
      '<\u00B7/>',
      '<\uDB80\uDC00/>',
      ' p:x="1"',
      '/',
      ' ',
      ' xml:space="preserve"',
    ];
    const random = seededRandom(20261126);
    const pick = (n: number): number => Math.floor(random() * n);
    const counts = { same: 0, bothRefuse: 0, stricter: 0 };
    for (let i = 0; i < 3000; i += 1) {
      const part = parts[pick(parts.length)];
      if (part === undefined) throw new Error('no parts');
      let text = partText(part.bytes, part.name);
      for (let edits = pick(3) === 0 ? 2 : 1; edits > 0; edits -= 1) {
        let at = pick(text.length + 1);
        // Mostly where content or attributes go: after a tag, or before a tag's end.
        const where = pick(10);
        const gt = text.indexOf('>', at);
        if (where < 4 && gt !== -1) at = gt + 1;
        else if (where < 7 && gt !== -1) at = text[gt - 1] === '/' ? gt - 1 : gt;
        const edit = pick(10);
        if (edit < 6)
          text = text.slice(0, at) + (tokens[pick(tokens.length)] ?? '') + text.slice(at);
        else if (edit < 8) text = text.slice(0, at) + text.slice(at + 1 + pick(10));
        else text = text.slice(0, at) + text.slice(at, at + 1 + pick(20)) + text.slice(at);
      }
      const bytes = pick(4) === 0 ? utf16(text) : utf8(text);
      const ours = read(bytes);
      const saxes = readWithSaxes(bytes);
      if ('events' in ours) {
        expect(ours, text).toEqual(saxes);
        counts.same += 1;
      } else if ('failure' in saxes) {
        counts.bothRefuse += 1;
      } else {
        expect(ours.failure.message, text).toMatch(STRICTER);
        counts.stricter += 1;
      }
    }
    // Both outcomes are exercised, not only refusals.
    expect(counts.same).toBeGreaterThan(300);
    expect(counts.bothRefuse).toBeGreaterThan(300);
  });
});
