import { describe, expect, it } from 'vitest';

import { Rejection } from './rejection.ts';
import { rewriteXml } from './xml-rewrite.ts';
import type { XmlRewriteRules } from './xml-rewrite.ts';

const DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

const keepAll: XmlRewriteRules = { element: () => ({ action: 'keep' }) };

describe('rewriteXml', () => {
  it('writes UTF-8 with a fresh declaration, escaping what must be escaped', () => {
    const input =
      '<?xml version="1.0" encoding="UTF-8"?><!-- gone --><r a="x&amp;y&quot;&#10;">é ✓ 😀 &lt;b&gt; &amp;<e></e><f/></r>';
    const output = decode(rewriteXml(encode(input), 'part', keepAll));
    expect(output).toBe(
      `${DECLARATION}<r a="x&amp;y&quot;&#10;">é ✓ 😀 &lt;b&gt; &amp;<e/><f/></r>`,
    );
  });

  it('drops and unwraps elements, and rolls back an empty lazy container', () => {
    const input =
      '<r><names><name>secret</name></names><keep><u><t>text</t></u></keep><names><name>ok</name></names></r>';
    const rules: XmlRewriteRules = {
      element: (element, ancestors) => {
        if (element.localName === 'name' && ancestors.length === 2 && element.index === 2) {
          return { action: 'drop' };
        }
        if (element.localName === 'u') return { action: 'unwrap' };
        return { action: 'keep' };
      },
      dropWhenEmpty: (element) => element.localName === 'names',
    };
    expect(decode(rewriteXml(encode(input), 'part', rules))).toBe(
      `${DECLARATION}<r><keep><t>text</t></keep><names><name>ok</name></names></r>`,
    );
  });

  it('grows its output past the first buffer without losing multi-byte text', () => {
    const cell = '<c>żółw 🐢 and a long enough run of text to fill the buffer quickly</c>';
    const input = `<r>${cell.repeat(20_000)}</r>`;
    const output = decode(rewriteXml(encode(input), 'part', keepAll));
    expect(output).toBe(`${DECLARATION}${input}`);
  });

  it('refuses a DOCTYPE and malformed XML as invalid_file', () => {
    const doctype = '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>';
    expect(() => rewriteXml(encode(doctype), 'part', keepAll)).toThrow(Rejection);
    expect(() => rewriteXml(encode('<r><a></r>'), 'part', keepAll)).toThrow(/not well-formed/);
  });
});
