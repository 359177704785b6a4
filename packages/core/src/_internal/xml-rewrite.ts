import { SaxesParser } from 'saxes';
import type { SaxesTagNS } from 'saxes';

import { Rejection } from './rejection.ts';
import { decodeXmlText, MAX_XML_PART_BYTES } from './xml.ts';

/** One attribute as written, with its namespace resolved. */
export interface XmlAttributeNode {
  /** Qualified name as written, e.g. `r:id` or `xmlns:w`. */
  readonly name: string;
  readonly uri: string;
  readonly localName: string;
  readonly value: string;
}

/** An element start, numbered in document order (0 for the root). */
export interface XmlElementNode {
  /** Ordinal of the element in document order; the same in every walk of the same bytes. */
  readonly index: number;
  readonly name: string;
  readonly uri: string;
  readonly localName: string;
  /** `uri localName`, the key the rule tables are looked up by (built once per element). */
  readonly key: string;
  readonly attributes: readonly XmlAttributeNode[];
}

/** What a rewrite does with an element. */
export type ElementDecision =
  /** Written, with these attributes (default: all of them). */
  | { readonly action: 'keep'; readonly attributes?: readonly XmlAttributeNode[] }
  /** Left out with everything inside it. */
  | { readonly action: 'drop' }
  /** Its tags are left out, its children are written in its place. */
  | { readonly action: 'unwrap' };

/** Element and text events of one walk over a part. */
export interface XmlWalker {
  open?(element: XmlElementNode, ancestors: readonly XmlElementNode[]): void;
  close?(element: XmlElementNode): void;
  text?(text: string, ancestors: readonly XmlElementNode[]): void;
}

/** Rules of one rewrite. */
export interface XmlRewriteRules {
  element(element: XmlElementNode, ancestors: readonly XmlElementNode[]): ElementDecision;
  /**
   * Containers that are left out when nothing of their content survives (a `<definedNames>`
   * whose names were all removed would not be schema-valid).
   */
  dropWhenEmpty?(element: XmlElementNode): boolean;
}

/** Elements one part may hold; beyond this the part is refused, not parsed on. */
const MAX_XML_ELEMENTS = 5_000_000;

/**
 * Walks a part's elements and text with saxes. A document type declaration makes the part
 * `invalid_file` (the documented rule: OOXML and ODF parts never need one, and entity expansion
 * and external entities live there); saxes itself never loads a DTD, expands a non-predefined
 * entity or fetches anything, so an undeclared entity reference is a well-formedness error.
 * Comments and processing instructions are not reported.
 * @throws {Rejection} `invalid_file` for malformed XML or a DOCTYPE; `file_too_large` past
 *   {@link MAX_XML_PART_BYTES}.
 */
export function walkXml(bytes: Uint8Array, what: string, walker: XmlWalker): void {
  if (bytes.length > MAX_XML_PART_BYTES) {
    throw new Rejection('file_too_large', `${what} is larger than ${MAX_XML_PART_BYTES} bytes`);
  }
  const parser = new SaxesParser({ xmlns: true, position: false });
  const stack: XmlElementNode[] = [];
  let count = 0;
  let failure: Rejection | undefined;
  parser.on('doctype', () => {
    failure ??= new Rejection('invalid_file', `${what} declares a DOCTYPE, which is not allowed`);
  });
  parser.on('opentag', (tag: SaxesTagNS) => {
    if (failure) return;
    if (count >= MAX_XML_ELEMENTS) {
      failure = new Rejection('invalid_file', `${what} has more than ${MAX_XML_ELEMENTS} elements`);
      return;
    }
    const element: XmlElementNode = {
      index: count,
      name: tag.name,
      uri: tag.uri,
      localName: tag.local,
      key: `${tag.uri} ${tag.local}`,
      attributes: attributesOf(tag),
    };
    count += 1;
    walker.open?.(element, stack);
    stack.push(element);
  });
  parser.on('closetag', () => {
    const element = stack.pop();
    if (element && !failure) walker.close?.(element);
  });
  const onText = (text: string): void => {
    if (!failure && stack.length > 0) walker.text?.(text, stack);
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('error', (error) => {
    failure ??= new Rejection('invalid_file', `${what} is not well-formed XML: ${error.message}`);
  });
  try {
    parser.write(decodeXmlText(bytes)).close();
  } catch (error) {
    // A walker stops the walk by throwing: its rejection is the part's, anything else is not ours.
    if (!(error instanceof Rejection)) throw error;
    failure ??= error;
  }
  if (failure) throw failure;
}

const NO_ATTRIBUTES: readonly XmlAttributeNode[] = Object.freeze([]);

function attributesOf(tag: SaxesTagNS): readonly XmlAttributeNode[] {
  let attributes: XmlAttributeNode[] | undefined;
  for (const qualified in tag.attributes) {
    const attribute = tag.attributes[qualified];
    if (attribute === undefined) continue;
    (attributes ??= []).push({
      name: attribute.name,
      uri: attribute.uri,
      localName: attribute.local,
      value: attribute.value,
    });
  }
  return attributes ?? NO_ATTRIBUTES;
}

interface Frame {
  readonly element: XmlElementNode;
  /** Whether the element's own tags are written. */
  readonly written: boolean;
  /** Output length before the element's start tag (lazy containers roll back to it). */
  readonly start: number;
  /** Output length right after the element's start tag (`<a></a>` is then written `<a/>`). */
  readonly startTagEnd: number;
  readonly lazy: boolean;
  hasContent: boolean;
}

/**
 * UTF-8 output written straight into one growing buffer: no list of pieces and no join (a 13 MB
 * part used to become millions of small strings, most of the rewrite's memory and GC).
 */
class Utf8Output {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  length = 0;

  write(text: string): void {
    // At most 3 bytes per UTF-16 unit.
    if (this.length + text.length * 3 > this.#buffer.length) {
      const next = Buffer.allocUnsafe(
        Math.max(this.#buffer.length * 2, this.length + text.length * 3),
      );
      this.#buffer.copy(next, 0, 0, this.length);
      this.#buffer = next;
    }
    this.length += this.#buffer.write(text, this.length, 'utf8');
  }

  /** Turns the `>` just written into `/>`. */
  closeEmpty(): void {
    this.length -= 1;
    this.write('/>');
  }

  bytes(): Uint8Array {
    return new Uint8Array(this.#buffer.buffer, this.#buffer.byteOffset, this.length).slice();
  }
}

/**
 * Re-serialises a part from parser events: UTF-8, a fresh XML declaration, namespaces and
 * attributes as written, no comments, no processing instructions, no DOCTYPE (refused, see
 * {@link walkXml}). Each element passes through `rules.element`.
 */
export function rewriteXml(bytes: Uint8Array, what: string, rules: XmlRewriteRules): Uint8Array {
  const out = new Utf8Output();
  out.write('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n');
  const frames: Frame[] = [];
  let dropDepth = 0;
  const markContent = (): void => {
    for (let i = frames.length - 1; i >= 0; i -= 1) {
      const frame = frames[i];
      if (!frame || frame.hasContent) break;
      frame.hasContent = true;
    }
  };
  walkXml(bytes, what, {
    open(element, ancestors) {
      if (dropDepth > 0) {
        dropDepth += 1;
        return;
      }
      const decision = rules.element(element, ancestors);
      if (decision.action === 'drop') {
        dropDepth = 1;
        return;
      }
      const written = decision.action === 'keep';
      const lazy = written && rules.dropWhenEmpty?.(element) === true;
      if (written && !lazy) markContent();
      const start = out.length;
      if (written) {
        const attributes = decision.attributes ?? element.attributes;
        let tag = `<${element.name}`;
        for (const attribute of attributes) {
          tag += ` ${attribute.name}="${escapeAttribute(attribute.value)}"`;
        }
        out.write(`${tag}>`);
      }
      frames.push({ element, written, start, startTagEnd: out.length, lazy, hasContent: false });
    },
    close() {
      if (dropDepth > 0) {
        dropDepth -= 1;
        return;
      }
      const frame = frames.pop();
      if (!frame?.written) return;
      if (frame.lazy && !frame.hasContent) {
        out.length = frame.start;
        return;
      }
      if (frame.lazy) markContent();
      // `<a></a>` is written `<a/>`, as the input most likely had it.
      if (out.length === frame.startTagEnd) out.closeEmpty();
      else out.write(`</${frame.element.name}>`);
    },
    text(text) {
      if (dropDepth > 0) return;
      if (text.trim() !== '') markContent();
      out.write(escapeText(text));
    },
  });
  return out.bytes();
}

function escapeText(text: string): string {
  if (!/[&<>]/.test(text)) return text;
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

function escapeAttribute(value: string): string {
  return value.replace(/[&<>"\t\n\r]/g, (c) => {
    switch (c) {
      case '&':
        return '&amp;';
      case '<':
        return '&lt;';
      case '>':
        return '&gt;';
      case '"':
        return '&quot;';
      default:
        return `&#${c.charCodeAt(0)};`;
    }
  });
}
