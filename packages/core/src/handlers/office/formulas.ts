/**
 * Spreadsheet formula text, as xlsx cells and rules (ECMA-376 Part 1 §18.17) and Excel defined
 * names write it: the functions that run code or fetch, DDE and external references, `HYPERLINK`
 * targets, and the defined names Excel runs by themselves. The token tables of binary formulas
 * (xlsb, xls) are in `formula-tokens.ts`.
 */
import type { FindingKind } from '../../findings.ts';
import { isRefusedHyperlinkTarget } from './hyperlinks.ts';

/**
 * Functions that call into DLLs or XLM, or fetch from outside ([MS-XLSX], Excel 4.0 macros;
 * `IMAGE`, Excel 2022, loads a picture from the URL it is given whenever the sheet calculates;
 * `FILTERXML` parses the XML `WEBSERVICE` fetched, and LibreOffice's parse of it resolves what
 * the XML names).
 */
export const CALLING_FUNCTIONS =
  /(?:^|[^A-Za-z0-9_.])(?:_xlfn\.)?(CALL|REGISTER|REGISTER\.ID|EXEC|FOPEN|FWRITE|FWRITELN|FREAD|FREADLN|RUN|HALT|WEBSERVICE|FILTERXML|IMAGE|RTD|SQL\.REQUEST|IMPORTXML)\s*\(/i;
/** Of {@link CALLING_FUNCTIONS}, those that fetch (the rest run code). */
const FETCHING_FUNCTIONS = new Set([
  'WEBSERVICE',
  'FILTERXML',
  'IMAGE',
  'RTD',
  'SQL.REQUEST',
  'IMPORTXML',
]);

/**
 * The finding an Excel formula is removed as (its cached value stays), or `undefined`. DDE is
 * written `app|topic!item`: a `|` outside string literals; external workbooks are `[n]` indexes
 * into the external links, which are dropped.
 */
export function classifyFormula(formula: string): FindingKind | undefined {
  const code = formula.replace(/"(?:[^"]|"")*"/g, '""');
  if (code.includes('|')) return 'dde-link';
  const call = CALLING_FUNCTIONS.exec(code)?.[1]?.toUpperCase();
  if (call !== undefined && FETCHING_FUNCTIONS.has(call)) return 'external-relationship';
  if (call !== undefined) return 'xlm-macro';
  if (/(?:^|[^A-Za-z0-9_.\]])'?\[\d+\]/.test(code)) return 'external-relationship';
  if (refusedHyperlink(formula)) return 'external-relationship';
  return undefined;
}

/**
 * The finding an OpenDocument formula is removed as (the cell's cached value stays), or
 * `undefined`. ODF 1.3 Part 3 (`table:formula`) prefixes a formula with its syntax's namespace:
 * Excel's (`msoxl:`) is judged as Excel's; OpenFormula (`of:`, ODF 1.3 Part 4, and
 * OpenOffice.org's `oooc:`) calls DDE as a function and names another document as a quoted IRI
 * before `#` (`['file:///b.ods'#$Sheet1.A1]`), both kept in the cell only as last computed; the
 * functions that run code or fetch are the same as Excel's.
 */
export function classifyOdfFormula(formula: string): FindingKind | undefined {
  const namespace = /^\s*([a-z][a-z0-9]*):(?!\/)/i.exec(formula);
  const body = namespace ? formula.slice(namespace[0].length) : formula;
  if (namespace?.[1]?.toLowerCase() === 'msoxl') return classifyFormula(body);
  const code = body.replace(/"(?:[^"]|"")*"/g, '""');
  if (/(?:^|[^A-Za-z0-9_.])DDE\s*\(/i.test(code)) return 'dde-link';
  if (/'(?:[^']|'')*'#/.test(code)) return 'external-relationship';
  return classifyFormula(body);
}

/** String literals and `HYPERLINK(` calls with the literal they start with, if any. */
const HYPERLINK_CALLS = /"(?:[^"]|"")*"|(?<![A-Za-z0-9_.])HYPERLINK\s*\(\s*("(?:[^"]|"")*")?/gi;

/**
 * Whether a `HYPERLINK()` call's target, written in the formula, is one a hyperlink relationship
 * could not keep: anything but http, https, mailto or a place in the workbook (`#Sheet2!A1`) —
 * `file:` and UNC paths hand the user's credentials to whoever serves them. A target computed
 * from cells is the cells' text, which a click follows as it would a URL typed in a cell.
 */
function refusedHyperlink(formula: string): boolean {
  for (const match of formula.matchAll(HYPERLINK_CALLS)) {
    const literal = match[1];
    if (match[0].startsWith('"') || literal === undefined) continue;
    if (isRefusedHyperlinkTarget(literal.slice(1, -1).replace(/""/g, '"'))) return true;
  }
  return false;
}

/**
 * Excel runs these defined names on open, close, activate or deactivate ("Auto_Open",
 * "Auto_Open2", …; [MS-XLS] 2.5.114 built-in names 0x01-0x02 and 0x0A-0x0B). LibreOffice writes
 * the built-in ones it read from a .xls as `Excel_BuiltIn_Auto_Open` or `_xlnm_Auto_Open`, and
 * turns them back into built-in names when the workbook is saved as .xls again.
 */
export const AUTO_RUN_NAME =
  /^(?:_xlnm[._]|Excel_BuiltIn_)?auto_(?:open|close|activate|deactivate)/i;
