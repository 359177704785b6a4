/**
 * The check verify before release holds every written OOXML XML part to, on its own: parses
 * without a DTD and holds nothing that runs or fetches. It reads a part in chunks, so the same
 * check runs on the main thread over a part read back from the written package, or in a check
 * worker over the chunks of a part while it is being written (see `office/part-checks.ts`).
 * Which relationships the part may name is known only from the package, so the check reports the
 * ids it names (relationship id -> the first element naming it) and {@link assertReferences}
 * holds them to the part's relationships afterwards.
 */
import { checkWhole, WalkedPartCheck } from '../office/part-checks.ts';
import type { PartReport } from '../office/part-checks.ts';
import type { XmlAttributeNode, XmlElementNode, XmlWalker } from '../../_internal/xml-rewrite.ts';
import { VerifyFailure } from '../types.ts';
import { classifyField } from '../office/fields.ts';
import { classifyFormula } from '../office/formulas.ts';
import { classifyDefinedName, RULE_FORMULAS } from './content.ts';
import { attribute, NS } from './namespaces.ts';

/** Elements no rebuilt part may hold. */
const FORBIDDEN = new Set([
  `${NS.w} control`, `${NS.w} objectEmbed`, `${NS.w} objectLink`, `${NS.w} movie`, `${NS.w} subDoc`, `${NS.w} altChunk`, `${NS.w} frameset`,
  `${NS.w} docVars`, `${NS.w} mailMerge`, `${NS.o} OLEObject`, `${NS.p} oleObj`, `${NS.p} control`,
  `${NS.s} oleObjects`, `${NS.s} controls`, `${NS.s} externalReferences`, `${NS.x} FmlaMacro`,
]); // prettier-ignore

/**
 * One XML part checked as its bytes come.
 * @throws {VerifyFailure} from `write` or `end`: `ooxml.xml-parse` when the part is not well-formed
 *   or declares a DOCTYPE with an internal subset, `ooxml.active-content` when it holds an
 *   OLE/ActiveX anchor, a fetching or running field, a formula that calls out, a defined name that
 *   runs, or a macro action.
 */
export class XmlPartCheck extends WalkedPartCheck {
  constructor(name: string) {
    super(name, 'ooxml.xml-parse', (references) => partWalker(name, references));
  }
}

/** The walk of one part: fails on what may not be there, records the relationship ids named. */
function partWalker(name: string, references: Map<string, string>): XmlWalker {
  const fail = (what: string): never => {
    throw new VerifyFailure('ooxml.active-content', `${name} still holds ${what}`);
  };
  const fields: { instruction: string; inInstruction: boolean }[] = [];
  let collecting: 'instr' | 'formula' | 'name' | undefined;
  let text = '';
  let nameAttributes: readonly XmlAttributeNode[] = [];
  let formulaElement: XmlElementNode | undefined;
  /** The pivot cache's `cacheSource` being read (ECMA-376 Part 1 §18.10.1.12). */
  let cacheSource: XmlElementNode | undefined;
  const pivotCache = pivotCacheChecker(fail);
  return {
    open(element) {
      const key = element.key;
      if (FORBIDDEN.has(key)) fail(element.name);
      if (element.uri === NS.s && pivotCache(element, cacheSource !== undefined)) {
        cacheSource = element;
      }
      for (const a of element.attributes) {
        const naming = a.uri === NS.r || (a.uri === NS.o && a.local === 'relid');
        if (naming && a.value !== '' && !references.has(a.value)) {
          references.set(a.value, element.name);
        }
      }
      if (element.uri === NS.w && element.localName === 'fldSimple') {
        if (classifyField(attribute(element, NS.w, 'instr') ?? '') !== undefined) fail('a field');
      } else if (element.uri === NS.w && element.localName === 'fldChar') {
        const type = attribute(element, NS.w, 'fldCharType');
        const top = fields.at(-1);
        if (type === 'begin') fields.push({ instruction: '', inInstruction: true });
        else if (top && (type === 'separate' || type === 'end')) {
          if (top.inInstruction && classifyField(top.instruction) !== undefined) fail('a field');
          top.inInstruction = false;
          if (type === 'end') fields.pop();
        }
      } else if (element.uri === NS.w && isInstruction(element.localName)) {
        // The rebuild keeps instructions only inside the fields it keeps.
        if (fields.at(-1)?.inInstruction !== true) fail('a field instruction outside a field');
        collecting = 'instr';
      } else if (
        (element.uri === NS.s && element.localName === 'f') ||
        RULE_FORMULAS.has(element.key)
      ) {
        collecting = 'formula';
        formulaElement = element;
        text = '';
      } else if (element.uri === NS.s && element.localName === 'definedName') {
        collecting = 'name';
        nameAttributes = element.attributes;
        text = '';
      } else if (element.uri === NS.a && element.localName.startsWith('hlink')) {
        if (/^ppaction:\/\/(macro|program|ole|ocx)/i.test(attribute(element, '', 'action') ?? '')) {
          fail('a macro action');
        }
      }
    },
    text(value) {
      if (collecting === 'instr') {
        const top = fields.at(-1);
        if (top?.inInstruction === true) top.instruction += value;
      } else if (collecting !== undefined) {
        text += value;
      }
    },
    close(element) {
      if (element === cacheSource) cacheSource = undefined;
      if (collecting === 'formula' && element === formulaElement) {
        if (classifyFormula(text) !== undefined) fail('a formula that calls out');
        collecting = undefined;
      } else if (collecting === 'name' && element.localName === 'definedName') {
        if (classifyDefinedName(nameAttributes, text) !== undefined)
          fail('a defined name that runs');
        collecting = undefined;
      } else if (collecting === 'instr' && isInstruction(element.localName)) {
        collecting = undefined;
      }
      // The root's end: a field left open is judged by the instruction it has.
      if (element.index === 0) {
        for (const field of fields) {
          if (field.inInstruction && classifyField(field.instruction) !== undefined) {
            fail('a field');
          }
        }
      }
    },
  };
}

/**
 * The pivot cache rules, checked on their own: a kept cache reads nothing but this workbook (no
 * data connection, no source range in another workbook, no OLAP member, no calculated field or
 * item calling out). Fed the main-namespace elements; true for the `cacheSource` itself.
 */
function pivotCacheChecker(
  fail: (what: string) => never,
): (element: XmlElementNode, inSource: boolean) => boolean {
  return (element, inSource) => {
    if (inSource && element.attributes.some((a) => a.uri === NS.r)) {
      fail('a pivot cache source in another workbook');
    }
    switch (element.localName) {
      case 'cacheSource':
        if (
          attribute(element, '', 'type') === 'external' ||
          attribute(element, '', 'connectionId') !== undefined
        ) {
          fail('a pivot cache reading a data connection');
        }
        return true;
      case 'calculatedMember':
        fail('an OLAP calculated member');
        break;
      case 'cacheField':
      case 'calculatedItem':
        if (classifyFormula(attribute(element, '', 'formula') ?? '') !== undefined) {
          fail('a pivot formula that calls out');
        }
    }
    return false;
  };
}

/** A field instruction, or one deleted in a tracked change (which rejecting it restores). */
function isInstruction(localName: string): boolean {
  return localName === 'instrText' || localName === 'delInstrText';
}

/** Checks a whole part at once. */
export function checkXmlPart(bytes: Uint8Array, name: string): PartReport {
  return checkWhole(new XmlPartCheck(name), bytes);
}

/**
 * Holds the relationship ids a part names to the relationships it has.
 * @throws {VerifyFailure} `ooxml.dangling-reference`
 */
export function assertReferences(report: PartReport, ids: ReadonlySet<string>, name: string): void {
  for (const [id, element] of report.references) {
    if (!ids.has(id)) {
      throw new VerifyFailure(
        'ooxml.dangling-reference',
        `${name}: ${element} names relationship ${id}, which the part does not have`,
      );
    }
  }
}
