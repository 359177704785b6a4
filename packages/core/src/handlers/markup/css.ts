import postcss from 'postcss';
import type { AtRule, ChildNode, Container, Declaration } from 'postcss';

import type { FindingTally } from '../../findings.ts';

/**
 * At-rules a style sheet keeps: they only group or describe rules. `@import`, `@font-face` (its
 * `src` loads a font), `@namespace`, `@property` and any rule a later CSS level adds are dropped.
 */
const KEPT_AT_RULES: ReadonlySet<string> = new Set([
  'media',
  'supports',
  'page',
  'keyframes',
  '-webkit-keyframes',
  'layer',
  'container',
]);

/** At-rules that load something from elsewhere, reported as external resources when dropped. */
const LOADING_AT_RULES: ReadonlySet<string> = new Set(['import', 'font-face']);

/** Properties that bind behaviour (IE `behavior`, Gecko XBL), whatever their value. */
const ACTIVE_PROPERTIES: ReadonlySet<string> = new Set(['behavior', '-moz-binding']);

/**
 * CSS functions that fetch an image or document by address (CSS Images 3 §2, CSS Images 4 §2-3):
 * `url()` is looked into, the others are dropped whatever they hold.
 */
const FETCHING_FUNCTION =
  /(?:^|[^a-z0-9_-])(?:-webkit-)?(?:image-set|image|cross-fade|element|src)\(/;
const URL_FUNCTION = /url\(\s*(?:"([^"]*)"|'([^']*)'|([^)'"\s]*))\s*\)?/g;

/** The only addresses a style may name: raster images inline in the document, or a fragment. */
export const SAFE_DATA_IMAGE = /^data:image\/(?:png|jpeg|gif|webp)[;,]/i;

/**
 * CSS Syntax 3 §4.3.7: an escape is a hex code point of up to six digits and one optional white
 * space, or any other character as itself; comments (§4.3.2) separate tokens and vanish. The
 * decoded, lower-cased text is what a browser matches names against, so `\75 rl(` and `URL(` are
 * both `url(`. Comments are removed without a gap, which joins `u/**\/rl(` into `url(` too: a
 * declaration that reads as a fetch either way is dropped.
 */
function decodeCss(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?(?:\*\/|$)/g, '')
    .replace(
      /\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\\([\s\S])/g,
      (_, hex: string | undefined, char: string | undefined) => {
        if (hex === undefined) return char ?? '';
        const code = Number.parseInt(hex, 16);
        return code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)
          ? '\uFFFD'
          : String.fromCodePoint(code);
      },
    )
    .toLowerCase();
}

/** True when a declaration's value reaches nothing but inline raster images and fragments. */
function isInlineValue(value: string): boolean {
  if (value.includes('expression(') || FETCHING_FUNCTION.test(value)) return false;
  for (const match of value.matchAll(URL_FUNCTION)) {
    const address = (match[1] ?? match[2] ?? match[3] ?? '').trim();
    if (!address.startsWith('#') && !SAFE_DATA_IMAGE.test(address)) return false;
  }
  return true;
}

/** Drops what a declaration list or a rule tree must not hold; counts what loaded or ran. */
function clean(container: Container, findings: FindingTally): void {
  container.each((node: ChildNode) => {
    switch (node.type) {
      case 'comment':
        node.remove();
        return;
      case 'atrule':
        cleanAtRule(node, findings);
        return;
      case 'decl':
        cleanDeclaration(node, findings);
        return;
      case 'rule':
        clean(node, findings);
        return;
    }
  });
}

function cleanAtRule(rule: AtRule, findings: FindingTally): void {
  const name = decodeCss(rule.name);
  if (!KEPT_AT_RULES.has(name) || !isInlineValue(decodeCss(rule.params))) {
    if (LOADING_AT_RULES.has(name)) findings.add('external-resource');
    rule.remove();
    return;
  }
  clean(rule, findings);
}

function cleanDeclaration(declaration: Declaration, findings: FindingTally): void {
  const property = decodeCss(declaration.prop);
  const value = decodeCss(declaration.raws.value?.raw ?? declaration.value);
  if (ACTIVE_PROPERTIES.has(property) || value.includes('expression(')) {
    findings.add('script');
    declaration.remove();
  } else if (!isInlineValue(value) || !isInlineValue(decodeCss(declaration.value))) {
    findings.add('external-resource');
    declaration.remove();
  }
}

/**
 * CSS text (a `<style>` element's sheet or a `style` attribute's declarations) with everything
 * that loads or runs removed: `@import`, `@font-face`, `url()` to anything but an inline PNG,
 * JPEG, GIF or WebP image or a fragment, `image-set()` and its kin, `expression()`, `behavior`,
 * `-moz-binding`. Removals are counted in `findings`.
 * @returns the cleaned text, or `''` when it does not parse: a browser recovers from what postcss
 *   refuses, so nothing of it is kept rather than something read differently.
 */
export function sanitiseCss(css: string, findings: FindingTally): string {
  let root;
  try {
    root = postcss.parse(css);
  } catch {
    if (!isInlineValue(decodeCss(css))) findings.add('external-resource');
    return '';
  }
  clean(root, findings);
  const text = root.toString();
  // The text goes back between `<style>` tags or into an attribute: nothing in it may end them.
  return /<\/?style|<!--|-->|<!\[CDATA\[|]]>/i.test(text) ? '' : text;
}
