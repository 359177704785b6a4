/**
 * Field codes of Word documents, as OOXML (ECMA-376 Part 1 §17.16), Word 97-2003 ([MS-DOC] field
 * characters 0x13, 0x14, 0x15 in the text), RTF (`\field`) and ODF text fields carry them: which
 * instructions only compute from the document itself and may stay, and what the others are
 * removed as.
 */
import type { FindingKind } from '../../findings.ts';
import { isSafeHyperlink } from './hyperlinks.ts';

/**
 * Word field codes (ECMA-376 Part 1 §17.16.5) that only compute from the document itself. Any
 * other field is replaced by its last displayed result: DDE/DDEAUTO run programs, INCLUDETEXT,
 * INCLUDEPICTURE, IMPORT, LINK, RD and DATABASE fetch from outside, MACROBUTTON runs a macro.
 */
const SAFE_FIELDS = new Set([
  'PAGE', 'NUMPAGES', 'SECTIONPAGES', 'SECTION', 'DATE', 'TIME', 'CREATEDATE', 'SAVEDATE',
  'PRINTDATE', 'EDITTIME', 'TOC', 'TOA', 'TA', 'TC', 'XE', 'INDEX', 'REF', 'PAGEREF', 'NOTEREF',
  'STYLEREF', 'SEQ', 'LISTNUM', 'AUTONUM', 'AUTONUMLGL', 'AUTONUMOUT', 'BIDIOUTLINE', 'SYMBOL',
  'EQ', 'ADVANCE', 'FORMTEXT', 'FORMCHECKBOX', 'FORMDROPDOWN', 'AUTHOR', 'TITLE', 'SUBJECT',
  'KEYWORDS', 'COMMENTS', 'LASTSAVEDBY', 'NUMWORDS', 'NUMCHARS', 'FILESIZE', 'DOCPROPERTY',
  'DOCVARIABLE', 'TEMPLATE', 'FILENAME', 'USERNAME', 'USERINITIALS', 'USERADDRESS', 'INFO',
  'REVNUM', 'MERGEFIELD', 'MERGEREC', 'MERGESEQ', 'NEXT', 'NEXTIF', 'SKIPIF', 'IF', 'COMPARE',
  'SET', 'QUOTE', 'GREETINGLINE', 'ADDRESSBLOCK', 'BIBLIOGRAPHY', 'CITATION', 'GOTOBUTTON',
  'PRIVATE', 'BARCODE', 'DISPLAYBARCODE', '=',
]); // prettier-ignore

const FIELD_KINDS: Readonly<Record<string, FindingKind>> = {
  DDE: 'dde-link',
  DDEAUTO: 'dde-link',
  INCLUDETEXT: 'external-relationship',
  INCLUDEPICTURE: 'external-relationship',
  INCLUDE: 'external-relationship',
  IMPORT: 'external-relationship',
  LINK: 'external-relationship',
  RD: 'external-relationship',
  DATABASE: 'data-connection',
  MACROBUTTON: 'vba-macro',
  HYPERLINK: 'external-relationship',
};

/**
 * The finding a field instruction is removed as, or `undefined` when it may stay. HYPERLINK
 * stays only for an http, https or mailto target or a bookmark (`\l`).
 */
export function classifyField(instruction: string): FindingKind | undefined {
  const trimmed = instruction.trim();
  const keyword = (/^(=|[A-Za-z]+)/.exec(trimmed)?.[1] ?? '').toUpperCase();
  if (keyword === '') return trimmed === '' ? undefined : 'hidden-data';
  if (SAFE_FIELDS.has(keyword)) return undefined;
  if (keyword === 'HYPERLINK') {
    const argument = trimmed.slice(keyword.length).trim();
    if (/^\\l\b/i.test(argument)) return undefined;
    const target = argument.startsWith('"')
      ? argument.slice(1, argument.indexOf('"', 1))
      : argument;
    if (isSafeHyperlink(target.split(/\s/)[0] ?? '')) return undefined;
  }
  return FIELD_KINDS[keyword] ?? 'hidden-data';
}

/**
 * The text a `MACROBUTTON` field shows (ECMA-376 Part 1 §17.16.5, MACROBUTTON: the field's
 * display text follows the macro name in the instruction; the field has no result of its own), or
 * `undefined` for another field. Templates write their "[Click here and type]" prompts so.
 */
export function macroButtonText(instruction: string): string | undefined {
  const match = /^\s*MACROBUTTON\s+\S+\s*([\s\S]*)$/i.exec(instruction);
  return match?.[1] === undefined || match[1] === '' ? undefined : match[1];
}
