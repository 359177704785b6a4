import { describe, expect, it } from 'vitest';

import { Rejection } from './rejection.ts';
import { collectChunks, partText, rewriteXml } from './xml-rewrite.ts';
import type { XmlRewriteRules } from './xml-rewrite.ts';

const DECLARATION = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n';
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const rewrite = async (input: string, rules: XmlRewriteRules): Promise<string> =>
  decode(await collectChunks(rewriteXml(partText(encode(input), 'part'), 'part', rules)));

const keepAll: XmlRewriteRules = { element: () => ({ action: 'keep' }) };

describe('rewriteXml', () => {
  it('writes UTF-8 with a fresh declaration, escaping what must be escaped', async () => {
    const input =
      '<?xml version="1.0" encoding="UTF-8"?><!-- gone --><r a="x&amp;y&quot;&#10;">é ✓ 😀 &lt;b&gt; &amp;<e></e><f/></r>';
    const output = await rewrite(input, keepAll);
    expect(output).toBe(
      `${DECLARATION}<r a="x&amp;y&quot;&#10;">é ✓ 😀 &lt;b&gt; &amp;<e/><f/></r>`,
    );
  });

  it('drops and unwraps elements, and rolls back an empty lazy container', async () => {
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
    expect(await rewrite(input, rules)).toBe(
      `${DECLARATION}<r><keep><t>text</t></keep><names><name>ok</name></names></r>`,
    );
  });

  it('hands its output on in chunks, none splitting a character, a tag or an empty element', async () => {
    // Multi-byte text, astral characters at every offset, and empty elements written `<e/>`
    // wherever a chunk or slice boundary falls.
    const cell = '<c>żółw 🐢 and a long enough run of text to fill the buffer quickly</c><e></e>';
    const input = `<r>${Array.from({ length: 20_000 }, (_, i) => `${'😀'.repeat(i % 3)}${cell}`).join('')}</r>`;
    const chunks: Uint8Array[] = [];
    for await (const chunk of rewriteXml(partText(encode(input), 'part'), 'part', keepAll))
      chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(3);
    expect(decode(Buffer.concat(chunks))).toBe(
      `${DECLARATION}${input.replaceAll('<e></e>', '<e/>')}`,
    );
  });

  it('keeps a lazy container back until it has content, however much comes before it', async () => {
    const filler = `<p>${'x'.repeat(100_000)}</p>`;
    const input = `<r>${filler}<names>${' '.repeat(300_000)}<name>gone</name></names>${filler}<names>${' '.repeat(300_000)}<name>kept</name></names></r>`;
    const rules: XmlRewriteRules = {
      element: (element) =>
        element.localName === 'name' && element.index === 3
          ? { action: 'drop' }
          : { action: 'keep' },
      dropWhenEmpty: (element) => element.localName === 'names',
    };
    expect(await rewrite(input, rules)).toBe(
      `${DECLARATION}<r>${filler}${filler}<names>${' '.repeat(300_000)}<name>kept</name></names></r>`,
    );
  });

  it('writes an element emptied by a rollback as <e/>, whether its > was encoded or not', async () => {
    const rules: XmlRewriteRules = {
      element: (element) =>
        element.localName === 'name' ? { action: 'drop' } : { action: 'keep' },
      dropWhenEmpty: (element) => element.localName === 'names',
    };
    const filler = `<p>${'x'.repeat(100_000)}</p>`;
    // The `>` of <keep> still gathered, then already encoded (white space inside the container
    // pushes the output past an encoding step before the container is rolled back).
    for (const inside of ['', ' '.repeat(300_000)]) {
      const input = `<r>${filler}<keep><names>${inside}<name>gone</name></names></keep><e></e></r>`;
      expect(await rewrite(input, rules)).toBe(`${DECLARATION}<r>${filler}<keep/><e/></r>`);
    }
  });

  it('refuses a DOCTYPE and malformed XML as invalid_file, also deep into a long part', async () => {
    const doctype = '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>';
    await expect(rewrite(doctype, keepAll)).rejects.toThrow(Rejection);
    await expect(rewrite('<r><a></r>', keepAll)).rejects.toThrow(/not well-formed/);
    const late = `<r>${'<p>text</p>'.repeat(200_000)}<a></r>`;
    await expect(rewrite(late, keepAll)).rejects.toThrow(/not well-formed/);
  });

  it('stops between slices when its pace throws (a deadline)', async () => {
    const input = `<r>${'<p>text</p>'.repeat(100_000)}</r>`;
    let turns = 0;
    const pace = (): Promise<void> => {
      turns += 1;
      return turns === 3 ? Promise.reject(new Error('deadline')) : Promise.resolve();
    };
    await expect(
      collectChunks(rewriteXml(partText(encode(input), 'part'), 'part', keepAll, pace)),
    ).rejects.toThrow('deadline');
    expect(turns).toBe(3);
  });
});
