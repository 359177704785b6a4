/** Pivot caches of a kept workbook (ECMA-376 Part 1 §18.10): what they may read to be kept. */
import { walkXml } from '../../_internal/xml-rewrite.ts';
import type { FindingKind } from '../../findings.ts';
import { classifyFormula } from '../office/formulas.ts';
import { attribute, NS } from './namespaces.ts';

/**
 * Why a pivot cache (ECMA-376 Part 1 §18.10.1.67 `pivotCacheDefinition`) may not be kept, or
 * `undefined` when it reads nothing but this workbook. Refused: a source of type `external` or
 * naming a data connection (§18.10.1.12 `cacheSource` `connectionId`; the connections are not
 * kept), a source range in another workbook (an `r:id` under the source: §18.10.1.99
 * `worksheetSource` and §18.10.1.76 `rangeSet` name an `externalLinkPath`), OLAP calculated
 * members (MDX run by a server, §18.10.1.8), and a calculated field or item whose formula
 * {@link classifyFormula} refuses (§18.10.1.3 `cacheField`, §18.10.1.9 `calculatedItem`). Excel
 * can refresh a kept cache (`refreshOnLoad`) only from this workbook's own cells.
 */
export function pivotCacheRefusal(bytes: Uint8Array, what: string): FindingKind | undefined {
  let refusal: FindingKind | undefined;
  let sources = 0;
  const refuse = (kind: FindingKind): void => {
    refusal ??= kind;
  };
  walkXml(bytes, what, {
    open(element, ancestors) {
      if (ancestors.length === 0) {
        if (element.uri !== NS.s || element.localName !== 'pivotCacheDefinition') {
          refuse('hidden-data');
        }
        return;
      }
      if (element.uri !== NS.s) return;
      const inSource = ancestors.some((a) => a.uri === NS.s && a.localName === 'cacheSource');
      if (inSource && element.attributes.some((a) => a.uri === NS.r)) {
        refuse('external-relationship');
      }
      if (element.localName === 'cacheSource' && ancestors.length === 1) {
        sources += 1;
        const type = attribute(element, '', 'type');
        if (type === 'external' || attribute(element, '', 'connectionId') !== undefined) {
          refuse('data-connection');
        }
      } else if (element.localName === 'calculatedMember') {
        refuse('data-connection');
      } else if (element.localName === 'cacheField' || element.localName === 'calculatedItem') {
        const kind = classifyFormula(attribute(element, '', 'formula') ?? '');
        if (kind !== undefined) refuse(kind);
      }
    },
  });
  // §18.10.1.67: exactly one source; without one Excel cannot tell what the cache reads.
  return refusal ?? (sources === 1 ? undefined : 'hidden-data');
}
