import { describe, expect, it } from 'vitest';

import { classifyFormula, mayHoldRefusedField } from './content.ts';

const instruction = (text: string, element = 'w:instrText'): string =>
  `<w:r><${element} xml:space="preserve">${text}</${element}></w:r>`;

describe('mayHoldRefusedField (whether a part needs the first walk for its fields)', () => {
  it('is false when every instruction piece is kept on its own and cannot join the next', () => {
    expect(
      mayHoldRefusedField(instruction(' PAGE ') + instruction(' TOC \\o "1-3" \\h \\z \\u ')),
    ).toBe(false);
    expect(
      mayHoldRefusedField(instruction(' HYPERLINK \\l "_Toc1" ') + instruction(' = 1+2 ')),
    ).toBe(false);
    expect(mayHoldRefusedField(instruction(' HYPERLINK "https://example.com/" '))).toBe(false);
    expect(mayHoldRefusedField('<w:instrText/>' + instruction(''))).toBe(false);
  });

  it('is true for an instruction that is removed, also deleted or under another prefix', () => {
    expect(mayHoldRefusedField(instruction(' PAGE ') + instruction(' DDEAUTO cmd '))).toBe(true);
    expect(mayHoldRefusedField(instruction(' INCLUDETEXT "http://x/" ', 'w:delInstrText'))).toBe(
      true,
    );
    expect(mayHoldRefusedField(instruction(' MACROBUTTON Run text ', 'word:instrText'))).toBe(true);
    expect(mayHoldRefusedField(instruction(' HYPERLINK "file:///c:/x" '))).toBe(true);
  });

  it('is true when a piece cannot be judged alone', () => {
    // Split keyword: " PA" + "GE " is PAGE, but " INCLU" + "DETEXT " would not be.
    expect(mayHoldRefusedField(instruction(' PA') + instruction('GE '))).toBe(true);
    // A continuation piece without a keyword of its own.
    expect(mayHoldRefusedField(instruction(' PAGEREF _Toc1 ') + instruction('\\h '))).toBe(true);
    // A reference can spell anything; markup inside joins text around it.
    expect(mayHoldRefusedField(instruction(' &#68;DE cmd '))).toBe(true);
    expect(mayHoldRefusedField('<w:instrText> PAGE <!-- x --> </w:instrText>')).toBe(true);
    // Never closed.
    expect(mayHoldRefusedField('<w:instrText> PAGE ')).toBe(true);
  });
});

describe('classifyFormula', () => {
  it('refuses formulas that fetch, IMAGE among them, and keeps those that only compute', () => {
    expect(classifyFormula('_xlfn.IMAGE("https://attacker.example/t.png",,1)')).toBe(
      'external-relationship',
    );
    expect(classifyFormula('IMAGE(A1)')).toBe('external-relationship');
    expect(classifyFormula('_xlfn.WEBSERVICE("http://x/")')).toBe('external-relationship');
    expect(classifyFormula('EXEC("calc")')).toBe('xlm-macro');
    // Names that only end or start like one, and the word in a string, are not calls.
    expect(classifyFormula('MYIMAGE(A1)+IMAGES!A1')).toBeUndefined();
    expect(classifyFormula('"IMAGE(x)"&A1')).toBeUndefined();
    expect(classifyFormula('_xlfn.TEXTJOIN(",",TRUE,A1:A3)')).toBeUndefined();
  });

  it('refuses a HYPERLINK whose written target a hyperlink relationship could not keep', () => {
    for (const unsafe of [
      'HYPERLINK("file:///\\\\attacker\\share\\x.exe","Report")',
      'HYPERLINK( "\\\\attacker\\share" )',
      'IF(A1,HYPERLINK("ms-msdt:/id PCWDiagnostic"),0)',
      'HYPERLINK("report.xlsx")',
    ]) {
      expect(classifyFormula(unsafe), unsafe).toBe('external-relationship');
    }
    for (const kept of [
      'HYPERLINK("https://example.com/q?a=1","Open")',
      'HYPERLINK("mailto:"&B2)',
      'HYPERLINK("#Sheet2!A1","Go")',
      'HYPERLINK(A2,B2)',
      '"HYPERLINK(""file://x"")"&A1',
    ]) {
      expect(classifyFormula(kept), kept).toBeUndefined();
    }
  });
});
