/**
 * The check verify before release holds every written ODF XML stream to, on its own: parses
 * without a DTD and holds no script, event listener, embedded object, DDE or script URL, and links
 * nothing outside the package but web and mail hyperlinks. It reads a stream in chunks, so it runs
 * on the main thread over a stream read back from the written package, or in a check worker while
 * the stream is written (see `office/part-checks.ts`). Which members exist is known only from
 * the package, so the check collects the package paths the stream links and verify holds them to
 * the members afterwards.
 */
import { isSafeHyperlink } from '../office/hyperlinks.ts';
import { checkWhole, WalkedPartCheck } from '../office/part-checks.ts';
import type { PartReport } from '../office/part-checks.ts';
import type { XmlWalker } from '../../_internal/xml-rewrite.ts';
import { VerifyFailure } from '../types.ts';
import { classifyField } from '../office/fields.ts';
import {
  anchoredFolder,
  classifyFormulaAttribute,
  fieldCode,
  internalPath,
  isXformsUrl,
  ODF_DROPPED,
  ODF_NS,
  ODF_UNWRAPPED,
  SCRIPT_URL,
} from './content.ts';

/**
 * One stream checked as its bytes come; its report lists the package paths it links (path -> the
 * link as written).
 * @throws {VerifyFailure} from `write` or `end`: `odf.xml-parse` when the stream is not
 *   well-formed or declares a DOCTYPE with an internal subset, `odf.active-content` for what may
 *   not be there.
 */
export class OdfStreamCheck extends WalkedPartCheck {
  constructor(name: string) {
    super(name, 'odf.xml-parse', (links) => streamWalker(name, links));
  }
}

/** The walk of one stream: fails on what may not be there, records the package paths linked. */
function streamWalker(name: string, links: Map<string, string>): XmlWalker {
  return {
    open(element) {
      const key = element.key;
      // An object stays only as a link into the package, which verify resolves to a kept chart.
      const anchoredObject = anchoredFolder(element) !== undefined;
      if (!anchoredObject && (ODF_DROPPED.has(key) || ODF_UNWRAPPED.has(key))) {
        throw new VerifyFailure('odf.active-content', `${name} still holds ${element.name}`);
      }
      // A fieldmark's Word instruction, wherever it sits: the rebuild keeps only harmless ones.
      const code = fieldCode(element);
      if (code !== undefined && classifyField(code) !== undefined) {
        throw new VerifyFailure('odf.active-content', `${name} still holds the field ${code}`);
      }
      for (const attribute of element.attributes) {
        if (isXformsUrl(element, attribute)) {
          throw new VerifyFailure('odf.active-content', `${name} still holds an XForms URL`);
        }
        if (classifyFormulaAttribute(attribute) !== undefined) {
          throw new VerifyFailure(
            'odf.active-content',
            `${name} still holds a formula that calls out`,
          );
        }
        if (SCRIPT_URL.test(attribute.value)) {
          throw new VerifyFailure('odf.active-content', `${name} still holds a script URL`);
        }
        if (attribute.uri !== ODF_NS.xlink || attribute.local !== 'href') continue;
        const path = internalPath(attribute.value);
        if (path !== undefined) {
          if (!links.has(path)) links.set(path, attribute.value);
          continue;
        }
        const safe =
          attribute.value.trim().startsWith('#') ||
          (element.localName === 'a' && isSafeHyperlink(attribute.value));
        if (!safe)
          throw new VerifyFailure('odf.active-content', `${name} links ${attribute.value}`);
      }
    },
  };
}

/** Checks a whole stream at once. */
export function checkOdfStream(bytes: Uint8Array, name: string): PartReport {
  return checkWhole(new OdfStreamCheck(name), bytes);
}
