/**
 * The sheets of a workbook part (ECMA-376 Part 1 §18.2): their names, and the indexes that move
 * when macro or dialog sheets are removed.
 */
import { Rejection } from '../../_internal/rejection.ts';
import { DROP, walkXml } from '../../_internal/xml-rewrite.ts';
import type { ElementDecision, XmlElementNode } from '../../_internal/xml-rewrite.ts';
import type { FindingTally } from '../../findings.ts';
import { attribute, NS } from './namespaces.ts';

/** Workbook parts (ECMA-376 Part 1 §18.2; the macro-enabled, template and add-in forms). */
export const WORKBOOK_TYPES: ReadonlySet<string> = new Set([
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml',
  'application/vnd.ms-excel.sheet.macroenabled.main+xml',
  'application/vnd.ms-excel.template.macroenabled.main+xml',
  'application/vnd.ms-excel.addin.macroenabled.main+xml',
]);

/** Whether a lower-cased content type is a workbook part (xlsx, xlsm, xltx, xltm, xlam). */
export function isWorkbookType(contentType: string): boolean {
  return WORKBOOK_TYPES.has(contentType.toLowerCase());
}

/**
 * The sheets a workbook part names (ECMA-376 Part 1 §18.2.19): relationship id -> sheet name.
 * @throws {Rejection} `invalid_file` when the part does not read as XML.
 */
export function sheetNamesById(bytes: Uint8Array, what: string): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  walkXml(bytes, what, {
    open(element, ancestors) {
      if (element.uri !== NS.s || element.localName !== 'sheet') return;
      if (ancestors.at(-1)?.localName !== 'sheets') return;
      const id = attribute(element, NS.r, 'id');
      const name = attribute(element, '', 'name');
      if (id !== undefined && name !== undefined) names.set(id, name);
    },
  });
  return names;
}

/** Where each sheet of a workbook goes once the sheets whose parts were dropped are gone. */
export interface SheetPlan {
  /** Old sheet index -> new index, or -1 for a dropped sheet. */
  readonly newIndex: readonly number[];
  /** Old index of a kept hidden sheet made visible, when no visible sheet would be left. */
  readonly reveal: number | undefined;
  /** `<sheet>` elements met so far by the rewrite. */
  seen: number;
}

/**
 * Sheets are counted by position (ECMA-376 Part 1 §18.2.5 `activeTab`, `firstSheet`; §18.2.5
 * `localSheetId`): when a macro or dialog sheet goes, every index after it moves. A workbook
 * needs a sheet, and Excel one it shows: if only hidden sheets are left, the first becomes
 * visible. Undefined when no sheet goes.
 * @throws {Rejection} `invalid_file` when no sheet is left (a workbook of macro sheets only).
 */
export function planSheets(
  bytes: Uint8Array,
  what: string,
  keptIds: ReadonlySet<string>,
): SheetPlan | undefined {
  const sheets: { kept: boolean; visible: boolean }[] = [];
  walkXml(bytes, what, {
    open(element, ancestors) {
      if (element.uri !== NS.s || element.localName !== 'sheet') return;
      if (ancestors.at(-1)?.localName !== 'sheets') return;
      const id = attribute(element, NS.r, 'id') ?? '';
      const state = attribute(element, '', 'state');
      sheets.push({
        kept: id !== '' && keptIds.has(id),
        visible: (state ?? 'visible') === 'visible',
      });
    },
  });
  if (sheets.every((sheet) => sheet.kept)) return undefined;
  let next = 0;
  const newIndex = sheets.map((sheet) => (sheet.kept ? next++ : -1));
  if (next === 0) {
    throw new Rejection(
      'invalid_file',
      `${what} holds nothing but macro or dialog sheets: no sheet is left once they are removed`,
    );
  }
  const visibleLeft = sheets.some((sheet) => sheet.kept && sheet.visible);
  const reveal = visibleLeft ? undefined : sheets.findIndex((sheet) => sheet.kept);
  return { newIndex, reveal, seen: 0 };
}

/** Moves sheet indexes in `<workbookView>`, `<definedName>` and `<sheet>` by {@link SheetPlan}. */
export function sheetIndexDecision(
  element: XmlElementNode,
  plan: SheetPlan,
  findings: FindingTally,
): ElementDecision | undefined {
  const moved = (value: string | undefined): number | undefined => {
    if (value === undefined || !/^\d+$/.test(value)) return undefined;
    return plan.newIndex[Number(value)] ?? -1;
  };
  const withValues = (values: Record<string, string | undefined>): ElementDecision => ({
    action: 'keep',
    attributes: element.attributes.flatMap((attribute) => {
      if (attribute.uri !== '' || !(attribute.local in values)) return [attribute];
      const value = values[attribute.local];
      return value === undefined ? [] : [{ ...attribute, value }];
    }),
  });
  if (element.localName === 'workbookView') {
    // The tab shown on open: the sheet made visible, or where the old one went (else the first).
    const shown = plan.reveal !== undefined ? plan.newIndex[plan.reveal] : undefined;
    const active = shown ?? Math.max(0, moved(attribute(element, '', 'activeTab')) ?? 0);
    const first = Math.max(0, moved(attribute(element, '', 'firstSheet')) ?? 0);
    return withValues({ activeTab: String(active), firstSheet: String(first) });
  }
  if (element.localName === 'definedName') {
    const scope = moved(attribute(element, '', 'localSheetId'));
    if (scope === undefined) return undefined;
    if (scope < 0) {
      // A name local to a dropped (macro) sheet goes with it.
      findings.add('xlm-macro');
      return DROP;
    }
    return withValues({ localSheetId: String(scope) });
  }
  if (element.localName === 'sheet') {
    // Sheets come in order: this one's old index is how many came before it.
    const index = plan.seen;
    plan.seen += 1;
    if (index === plan.reveal) return withValues({ state: undefined });
  }
  return undefined;
}
