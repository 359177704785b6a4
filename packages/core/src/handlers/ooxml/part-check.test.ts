import { describe, expect, it } from 'vitest';

import { VerifyFailure } from '../types.ts';
import { checkXmlPart } from './part-check.ts';

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/**
 * Verify's verdict on one part: `passed` (with `naming`, followed by the relationship ids it
 * names), or the check that failed and why.
 */
function verdictOn(xml: string, name: string, naming = false): string {
  try {
    const named = [...checkXmlPart(Buffer.from(xml), name).references.keys()];
    return naming ? `passed ${named.join()}` : 'passed';
  } catch (error) {
    if (error instanceof VerifyFailure) return `${error.check}: ${error.message}`;
    throw error;
  }
}

/** Verify's verdict on a Word main part whose body is `body`. */
function verdict(body: string): string {
  return verdictOn(
    `<w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`,
    '/word/document.xml',
  );
}

const run = (inner: string): string => `<w:r>${inner}</w:r>`;
const begin = run('<w:fldChar w:fldCharType="begin"/>');
const separate = run('<w:fldChar w:fldCharType="separate"/>');
const end = run('<w:fldChar w:fldCharType="end"/>');
const instruction = (text: string, element = 'instrText'): string =>
  run(`<w:${element} xml:space="preserve">${text}</w:${element}>`);

describe('verify of Word fields', () => {
  it('passes fields that compute from the document and text where a button was', () => {
    expect(
      verdict(`<w:p>${begin}${instruction(' PAGE ')}${separate}${run('<w:t>1</w:t>')}${end}</w:p>`),
    ).toBe('passed');
    // Split over runs, as Word writes long instructions.
    expect(verdict(`<w:p>${begin}${instruction(' PA')}${instruction('GE ')}${end}</w:p>`)).toBe(
      'passed',
    );
    expect(verdict(`<w:p>${run('<w:t xml:space="preserve">[Click here] </w:t>')}</w:p>`)).toBe(
      'passed',
    );
  });

  it('fails a field that runs or fetches, also one left open at the end of the part', () => {
    expect(verdict(`<w:p>${begin}${instruction(' DDEAUTO cmd ')}${separate}${end}</w:p>`)).toMatch(
      /^ooxml\.active-content: .* a field$/,
    );
    expect(verdict(`<w:p>${begin}${instruction(' MACROBUTTON Run shown ')}</w:p>`)).toMatch(
      /^ooxml\.active-content: .* a field$/,
    );
    // Open but harmless stays harmless.
    expect(verdict(`<w:p>${begin}${instruction(' PAGE ')}</w:p>`)).toBe('passed');
  });

  it('fails a deleted instruction that would come back when the change is rejected', () => {
    expect(
      verdict(
        `<w:p>${begin}<w:del w:id="1" w:author="a">${instruction(' INCLUDETEXT "http://x/" ', 'delInstrText')}</w:del>${end}</w:p>`,
      ),
    ).toMatch(/^ooxml\.active-content: .* a field$/);
  });

  it('reads Strict Open XML names as their Transitional twins', () => {
    const strict = (body: string): string =>
      verdictOn(
        `<w:document xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main" xmlns:r="http://purl.oclc.org/ooxml/officeDocument/relationships"><w:body>${body}</w:body></w:document>`,
        '/word/document.xml',
        true,
      );
    expect(strict('<w:p><w:fldSimple w:instr=" DDEAUTO cmd "/></w:p>')).toMatch(/a field$/);
    expect(strict('<w:p><w:object><w:objectEmbed/></w:object></w:p>')).toMatch(
      /^ooxml\.active-content/,
    );
    // The relationship ids a part names, for the dangling-reference check.
    expect(strict('<w:p><w:hyperlink r:id="rId7"/></w:p>')).toBe('passed rId7');
  });

  it('fails an instruction outside a field (the rebuild keeps none)', () => {
    expect(verdict(`<w:p>${instruction(' PAGE ')}</w:p>`)).toMatch(
      /^ooxml\.active-content: .* a field instruction outside a field$/,
    );
    expect(
      verdict(
        `<w:p>${begin}${instruction(' PAGE ')}${separate}${instruction(' PAGE ')}${end}</w:p>`,
      ),
    ).toMatch(/outside a field$/);
  });
});

describe('verify of pivot caches', () => {
  const S = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
  const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
  /** Verify's verdict on a pivot cache definition holding `inner`. */
  const cache = (inner: string): string =>
    verdictOn(
      `<pivotCacheDefinition xmlns="${S}" xmlns:r="${R}" r:id="rId1" refreshOnLoad="1">${inner}</pivotCacheDefinition>`,
      '/xl/pivotCache/pivotCacheDefinition1.xml',
    );
  const field = (formula?: string): string =>
    `<cacheFields count="1"><cacheField name="F"${formula === undefined ? '' : ` formula="${formula}"`} numFmtId="0"/></cacheFields>`;

  it('passes a cache reading this workbook, also with a calculated field that computes', () => {
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource ref="A1:B9" sheet="Data"/></cacheSource>${field('Sales*2')}`,
      ),
    ).toBe('passed');
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource name="Table1"/></cacheSource>${field()}`,
      ),
    ).toBe('passed');
  });

  it('fails a cache reading a connection, another workbook or an OLAP server, or a formula calling out', () => {
    expect(cache(`<cacheSource type="external" connectionId="1"/>${field()}`)).toMatch(
      /^ooxml\.active-content: .* a pivot cache reading a data connection$/,
    );
    expect(
      cache(
        `<cacheSource type="worksheet" connectionId="2"><worksheetSource ref="A1:B2" sheet="D"/></cacheSource>`,
      ),
    ).toMatch(/a data connection$/);
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource ref="A1:B2" sheet="Payroll" r:id="rId2"/></cacheSource>`,
      ),
    ).toMatch(/a pivot cache source in another workbook$/);
    expect(
      cache(
        `<cacheSource type="consolidation"><consolidation><rangeSets count="1"><rangeSet ref="A1:B2" sheet="S" r:id="rId3"/></rangeSets></consolidation></cacheSource>`,
      ),
    ).toMatch(/another workbook$/);
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource ref="A1:B2" sheet="D"/></cacheSource><calculatedMembers count="1"><calculatedMember name="[M]" mdx="1"/></calculatedMembers>`,
      ),
    ).toMatch(/an OLAP calculated member$/);
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource ref="A1:B2" sheet="D"/></cacheSource>${field('WEBSERVICE(&quot;http://x/&quot;)')}`,
      ),
    ).toMatch(/a pivot formula that calls out$/);
    expect(
      cache(
        `<cacheSource type="worksheet"><worksheetSource ref="A1:B2" sheet="D"/></cacheSource><calculatedItems count="1"><calculatedItem formula="cmd|'/c calc'!A0"/></calculatedItems>`,
      ),
    ).toMatch(/a pivot formula that calls out$/);
  });
});
