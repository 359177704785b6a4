import { parse } from 'parse5';
import type { DefaultTreeAdapterMap } from 'parse5';
import { SaxesParser } from 'saxes';

import { INLINE_IMAGE_ADDRESS, LINK_ADDRESS, normaliseAddress } from './allowlist.ts';

/**
 * Checks before release of the markup a renderer was given, written apart from the sanitisers:
 * a short list of what must never be there, looked for in the tree a reader independent of the
 * sanitiser builds (parse5 as a browser parses HTML; saxes for SVG). Each returns what it found,
 * or `undefined` when the markup is clean.
 */

/** Elements that run, embed, load, submit or navigate, in any namespace (lower case). */
const FORBIDDEN_ELEMENTS = new Set([
  'script',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'portal',
  'form',
  'input',
  'button',
  'select',
  'textarea',
  'base',
  'link',
  'meta',
  'noscript',
  'template',
  'audio',
  'video',
  'source',
  'track',
  'foreignobject',
  'feimage',
  'animate',
  'set',
  'animatemotion',
  'animatetransform',
  'handler',
  'listener',
  'mglyph',
  'math',
]);

/** CSS that loads or runs, once escapes and comments are out of the way. */
const ACTIVE_CSS =
  /@import|@font-face|expression\(|behavior\s*:|-moz-binding\s*:|image-set\(|\bimage\(|cross-fade\(|element\(|\bsrc\(/;

function cssProblem(css: string): string | undefined {
  const decoded = css
    .replace(/\/\*[\s\S]*?(?:\*\/|$)/g, '')
    .replace(/\\([0-9a-fA-F]{1,6})\s?/g, (_, hex: string) =>
      String.fromCodePoint(Math.min(Number.parseInt(hex, 16), 0x10ffff)),
    )
    .replace(/\\(.)/g, '$1')
    .toLowerCase();
  if (ACTIVE_CSS.test(decoded)) return 'active CSS';
  for (const match of decoded.matchAll(/url\(\s*["']?([^"')\s]*)/g)) {
    const address = match[1] ?? '';
    if (!address.startsWith('#') && !INLINE_IMAGE_ADDRESS.test(address))
      return `CSS url(${address})`;
  }
  return undefined;
}

function attributeProblem(element: string, name: string, value: string): string | undefined {
  if (/^on/i.test(name)) return `${element} ${name}`;
  if (name === 'style') return cssProblem(value);
  if (name === 'href' || name === 'xlink:href' || name === 'src') {
    const address = normaliseAddress(value);
    const ok =
      element === 'a'
        ? LINK_ADDRESS.test(address)
        : element === 'img' || element === 'image'
          ? INLINE_IMAGE_ADDRESS.test(address)
          : address.startsWith('#');
    return ok ? undefined : `${element} ${name}=${address.slice(0, 60)}`;
  }
  if (
    /^(?:srcset|srcdoc|action|formaction|data|poster|background|ping|codebase|lowsrc|dynsrc)$/i.test(
      name,
    )
  ) {
    return `${element} ${name}`;
  }
  return undefined;
}

/** What the HTML holds that it must not, as a browser parses it. */
export function findForbiddenHtml(markup: string): string | undefined {
  const pending: DefaultTreeAdapterMap['parentNode'][] = [parse(markup)];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    for (const child of node.childNodes) {
      if (!('tagName' in child)) continue;
      const tag = child.tagName.toLowerCase();
      if (FORBIDDEN_ELEMENTS.has(tag)) {
        if (tag !== 'meta' || child.attrs.some((attribute) => attribute.name !== 'charset')) {
          return `<${tag}>`;
        }
      }
      for (const attribute of child.attrs) {
        const name =
          attribute.prefix === undefined ? attribute.name : `${attribute.prefix}:${attribute.name}`;
        const problem = attributeProblem(tag, name, attribute.value);
        if (problem !== undefined) return problem;
      }
      if (tag === 'style') {
        const css = child.childNodes.map((text) => ('value' in text ? text.value : '')).join('');
        const problem = cssProblem(css);
        if (problem !== undefined) return problem;
      }
      pending.push(child);
    }
  }
  return undefined;
}

/** What the SVG holds that it must not, read as XML; a DOCTYPE is one such thing. */
export function findForbiddenSvg(markup: string): string | undefined {
  let found: string | undefined;
  let style: string[] | undefined;
  const parser = new SaxesParser({ xmlns: true });
  parser.on('doctype', () => {
    found ??= 'a DOCTYPE';
  });
  parser.on('opentag', (tag) => {
    const name = tag.local.toLowerCase();
    if (FORBIDDEN_ELEMENTS.has(name)) found ??= `<${tag.name}>`;
    for (const attribute of Object.values(tag.attributes)) {
      const problem = attributeProblem(
        name,
        attribute.local === 'href' ? 'href' : attribute.name,
        attribute.value,
      );
      if (problem !== undefined) found ??= problem;
    }
    if (name === 'style') style = [];
  });
  parser.on('text', (text) => style?.push(text));
  parser.on('closetag', (tag) => {
    if (tag.local.toLowerCase() === 'style' && style !== undefined) {
      found ??= cssProblem(style.join(''));
      style = undefined;
    }
  });
  try {
    parser.write(markup).close();
  } catch (error) {
    return `not well-formed XML (${error instanceof Error ? error.message : String(error)})`;
  }
  return found;
}
