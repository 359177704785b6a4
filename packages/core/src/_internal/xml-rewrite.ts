import { SaxesParser } from 'saxes';
import type { SaxesTagNS } from 'saxes';

import { Rejection } from './rejection.ts';
import { transitional } from './strict-ooxml.ts';
import { MAX_XML_ELEMENTS, XmlReader } from './xml-reader.ts';
import type { XmlAttributeNode, XmlElementNode, XmlWalker } from './xml-reader.ts';
import { decodeXmlText, MAX_XML_PART_BYTES, xmlDecoder } from './xml.ts';

export type { XmlAttributeNode, XmlElementNode, XmlWalker } from './xml-reader.ts';

/** What a rewrite does with an element. */
export type ElementDecision =
  /** Written, with these attributes (default: all of them). */
  | { readonly action: 'keep'; readonly attributes?: readonly XmlAttributeNode[] }
  /** Left out with everything inside it. */
  | { readonly action: 'drop' }
  /** Its tags are left out, its children are written in its place. */
  | { readonly action: 'unwrap' }
  /**
   * Written in its place: an element `name` (a qualified name whose prefix is bound where the
   * element stands) with `attributes` and only `text` inside; the element's content is left out.
   */
  | {
      readonly action: 'replace';
      readonly name: string;
      readonly attributes: readonly XmlAttributeNode[];
      readonly text: string;
    };

/** The decisions without attributes, made once (a rewrite decides once per element). */
export const KEEP: ElementDecision = Object.freeze({ action: 'keep' });
export const DROP: ElementDecision = Object.freeze({ action: 'drop' });
export const UNWRAP: ElementDecision = Object.freeze({ action: 'unwrap' });

/** Rules of one rewrite. */
export interface XmlRewriteRules {
  element(element: XmlElementNode, ancestors: readonly XmlElementNode[]): ElementDecision;
  /**
   * Containers that are left out when nothing of their content survives (a `<definedNames>`
   * whose names were all removed would not be schema-valid).
   */
  dropWhenEmpty?(element: XmlElementNode): boolean;
}

/**
 * Called between slices of a long part: gives the event loop a turn (zlib, deflating the part
 * written before, needs the main thread between its steps) and may throw to stop the walk (a
 * deadline).
 */
export type Pace = () => Promise<void>;

/** Gives the event loop one turn. */
export const nextTurn: Pace = () =>
  new Promise<void>((resolve) => {
    setImmediate(resolve);
  });

/**
 * A pace that gives the event loop a turn and then checks the file's deadline (the engine's
 * `Deadline`, whose `check` throws once the time is spent).
 */
export function paceWith(deadline: { check(): void }): Pace {
  return async () => {
    await nextTurn();
    deadline.check();
  };
}

/**
 * UTF-16 units read between two turns of a paced walk. zlib deflates a stream in steps of 16 KB
 * of output, each of which needs a turn of the main thread to start the next. Chosen with saxes
 * reading (then half a millisecond of work; twice as long let the deflate of a long part fall
 * behind: 5 MB Word file 0.59-0.60 -> 0.54-0.56 s); with XmlReader, three to four times faster,
 * 32K and 64K units measured no different from 16K.
 */
const SLICE_UNITS = 16 * 1024;

/**
 * Walks a part's elements and text with the rebuild's {@link XmlReader}. A document type
 * declaration with an internal subset makes the part `invalid_file` (entity expansion and
 * attribute defaults live there); one without is read past and never fetched, so no entity but
 * the predefined ones exists. Comments and processing instructions are not reported.
 * @throws {Rejection} `invalid_file` for malformed XML or a DOCTYPE with an internal subset;
 *   `file_too_large` past
 *   {@link MAX_XML_PART_BYTES}.
 */
export function walkXml(bytes: Uint8Array, what: string, walker: XmlWalker): void {
  new XmlReader(partText(bytes, what), what, walker).read();
}

/**
 * {@link walkXml} over a part's {@link partText}, in slices, with `pace` awaited between them: a
 * long part does not hold the main thread for its whole parse.
 */
export async function walkXmlPaced(
  text: string,
  what: string,
  walker: XmlWalker,
  pace: Pace,
): Promise<void> {
  const reader = new XmlReader(text, what, walker);
  while (!reader.done) {
    reader.read(SLICE_UNITS);
    await pace();
  }
}

/**
 * A walk over a part that arrives in chunks, with saxes: each chunk is decoded and parsed as it
 * comes, so a part can be checked while it is still being written. This is the verify step's
 * reader, independent of the rebuild's {@link XmlReader}: malformed XML or a DOCTYPE with an
 * internal subset is `invalid_file` here too.
 */
export class XmlChunkWalk {
  readonly #what: string;
  readonly #walk: SaxesWalk;
  #decoder: TextDecoder | undefined;
  /** The first byte, kept until the second tells whether the two are a UTF-16 byte-order mark. */
  #head: Uint8Array | undefined;
  #bytes = 0;

  constructor(what: string, walker: XmlWalker) {
    this.#what = what;
    this.#walk = new SaxesWalk(what, walker);
  }

  write(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#bytes += chunk.length;
    if (this.#bytes > MAX_XML_PART_BYTES) throw tooLarge(this.#what);
    if (this.#decoder === undefined) {
      const head = this.#head ? Buffer.concat([this.#head, chunk]) : chunk;
      if (head.length < 2) {
        this.#head = head;
        return;
      }
      this.#head = undefined;
      this.#decoder = xmlDecoder(head);
      chunk = head;
    }
    this.#walk.write(this.#decoder.decode(chunk, { stream: true }));
  }

  close(): void {
    const decoder = this.#decoder ?? xmlDecoder(this.#head ?? new Uint8Array(0));
    this.#walk.write(decoder.decode(this.#head ?? new Uint8Array(0)));
    this.#walk.close();
  }
}

function tooLarge(what: string): Rejection {
  return new Rejection('file_too_large', `${what} is larger than ${MAX_XML_PART_BYTES} bytes`);
}

/**
 * A part's text (XML 1.0 F.1: UTF-8 unless a byte-order mark says UTF-16), decoded once for
 * every walk over it.
 * @throws {Rejection} `file_too_large` past {@link MAX_XML_PART_BYTES}.
 */
export function partText(bytes: Uint8Array, what: string): string {
  if (bytes.length > MAX_XML_PART_BYTES) throw tooLarge(what);
  return decodeXmlText(bytes);
}

/** One saxes parse reporting to a walker; `write` and `close` throw the part's rejection. */
class SaxesWalk {
  readonly #parser = new SaxesParser({ xmlns: true, position: false });
  #failure: Rejection | undefined;

  constructor(what: string, walker: XmlWalker) {
    const parser = this.#parser;
    const keyOf = elementKeys();
    const stack: XmlElementNode[] = [];
    let count = 0;
    // The rebuild's rule (see `XmlReader`): a DOCTYPE without an internal subset is read past,
    // never fetched; saxes declares no entity from one and gives no attribute a default.
    parser.on('doctype', (doctype: string) => {
      if (hasInternalSubset(doctype)) {
        this.#failure ??= new Rejection(
          'invalid_file',
          `${what} declares a DOCTYPE with an internal subset, which is not allowed (entity and attribute declarations are never read)`,
        );
      }
    });
    parser.on('opentag', (tag: SaxesTagNS) => {
      if (this.#failure) return;
      if (count >= MAX_XML_ELEMENTS) {
        this.#failure = new Rejection(
          'invalid_file',
          `${what} has more than ${MAX_XML_ELEMENTS} elements`,
        );
        return;
      }
      // A Strict OOXML name reads as its Transitional twin, as the rebuild's reader reads it.
      const uri = transitional(tag.uri);
      const element: XmlElementNode = {
        index: count,
        name: tag.name,
        uri,
        localName: tag.local,
        key: keyOf(uri, tag.local),
        attributes: attributesOf(tag),
      };
      count += 1;
      walker.open?.(element, stack);
      stack.push(element);
    });
    parser.on('closetag', () => {
      const element = stack.pop();
      if (element && !this.#failure) walker.close?.(element);
    });
    const onText = (text: string): void => {
      if (!this.#failure && stack.length > 0) walker.text?.(text, stack);
    };
    parser.on('text', onText);
    parser.on('cdata', onText);
    parser.on('error', (error) => {
      this.#failure ??= new Rejection(
        'invalid_file',
        `${what} is not well-formed XML: ${error.message}`,
      );
    });
  }

  write(text: string): void {
    this.#run(() => this.#parser.write(text));
  }

  close(): void {
    this.#run(() => this.#parser.close());
  }

  #run(step: () => void): void {
    if (!this.#failure) {
      try {
        step();
      } catch (error) {
        // A walker stops the walk by throwing: its rejection is the part's, anything else is
        // not ours.
        if (!(error instanceof Rejection)) throw error;
        this.#failure ??= error;
      }
    }
    if (this.#failure) throw this.#failure;
  }
}

/** Whether a DOCTYPE's text (as saxes reports it) opens an internal subset: `[` outside quotes. */
function hasInternalSubset(doctype: string): boolean {
  let quote = '';
  for (const c of doctype) {
    if (quote !== '') {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '[') {
      return true;
    }
  }
  return false;
}

const NO_ATTRIBUTES: readonly XmlAttributeNode[] = Object.freeze([]);

/** Distinct names one walk remembers per namespace; past this, keys are built afresh. */
const MAX_CACHED_KEYS = 4096;

/**
 * Element keys built once per distinct name in a walk: the same key string for every `<w:t>`, so
 * rule tables hash it once instead of hashing a fresh string per element.
 */
function elementKeys(): (uri: string, localName: string) => string {
  const byUri = new Map<string, Map<string, string>>();
  return (uri, localName) => {
    let byLocal = byUri.get(uri);
    if (byLocal === undefined) {
      byLocal = new Map();
      if (byUri.size < MAX_CACHED_KEYS) byUri.set(uri, byLocal);
    }
    let key = byLocal.get(localName);
    if (key === undefined) {
      key = `${uri} ${localName}`;
      if (byLocal.size < MAX_CACHED_KEYS) byLocal.set(localName, key);
    }
    return key;
  };
}

function attributesOf(tag: SaxesTagNS): readonly XmlAttributeNode[] {
  // saxes keeps attributes in a prototype-less object; its keys listed once are cheaper to walk
  // than `for...in` over it (about a quarter, measured).
  const names = Object.keys(tag.attributes);
  if (names.length === 0) return NO_ATTRIBUTES;
  const attributes: XmlAttributeNode[] = [];
  for (const name of names) {
    const attribute = tag.attributes[name];
    if (attribute === undefined) continue;
    const uri = transitional(attribute.uri);
    attributes.push(
      uri === attribute.uri
        ? attribute
        : { name: attribute.name, uri, local: attribute.local, value: attribute.value },
    );
  }
  return attributes;
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

/** Output handed on in chunks of at least this many bytes while a part is rewritten. */
export const CHUNK_BYTES = 256 * 1024;

/** Text collected before it is encoded: one native call per this many UTF-16 units, not per tag. */
const ENCODE_EVERY = 64 * 1024;

/**
 * UTF-8 output of a rewrite. Text is gathered in a string (V8 joins it cheaply) and encoded into
 * one growing buffer every {@link ENCODE_EVERY} units: no list of millions of pieces, and no
 * native call per tag. Positions count UTF-16 units written so far. Text after `hold` (the start
 * of an open container that may still be rolled back) stays unencoded until the hold moves. The
 * last piece written is kept apart from the rest, so that turning the `>` of a start tag just
 * written into `/>` touches that piece only (changing the end of the gathered string would copy
 * all of it, for every empty element: 0.18 s of a 12 MB table of contents).
 */
class Utf8Output {
  #buffer = Buffer.allocUnsafe(64 * 1024);
  #bytes = 0;
  #encodedUnits = 0;
  /** Text gathered and not encoded yet, but for the last piece. */
  #pending = '';
  /** The last piece written. */
  #last = '';
  #nextEncode = ENCODE_EVERY;

  get position(): number {
    return this.#encodedUnits + this.#pending.length + this.#last.length;
  }

  /** Appends text; encodes what is gathered up to `hold()` once enough is gathered. */
  write(text: string, hold: () => number): void {
    this.#pending += this.#last;
    this.#last = text;
    if (this.#pending.length < this.#nextEncode) return;
    const units = Math.min(this.#pending.length, Math.max(0, hold() - this.#encodedUnits));
    this.#encode(units);
    // A hold that keeps most text back is asked again only after as much again is gathered.
    this.#nextEncode = this.#pending.length + ENCODE_EVERY;
  }

  /** Forgets everything written from `position` on (never before a hold, see `write`). */
  rollback(position: number): void {
    if (position < this.#encodedUnits) throw new Error('rollback past encoded output');
    this.#pending = (this.#pending + this.#last).slice(0, position - this.#encodedUnits);
    this.#last = '';
  }

  /** Turns the `>` just written into `/>`. */
  closeEmpty(): void {
    if (this.#last.length > 0) {
      this.#last = `${this.#last.slice(0, -1)}/>`;
      return;
    }
    // After a rollback the `>` ends the gathered text, or was encoded already.
    if (this.#pending.length > 0) {
      this.#pending = `${this.#pending.slice(0, -1)}/>`;
      return;
    }
    // The `>` was encoded already: one unit, one byte.
    this.#bytes -= 1;
    this.#encodedUnits -= 1;
    this.#pending = '/>';
  }

  /**
   * The bytes encoded so far once there are at least {@link CHUNK_BYTES} of them, but the last
   * (the `>` that {@link closeEmpty} may still turn into `/>`); those are then forgotten.
   */
  take(): Uint8Array | undefined {
    if (this.#bytes < CHUNK_BYTES) return undefined;
    const chunk = new Uint8Array(this.#buffer.subarray(0, this.#bytes - 1));
    this.#buffer[0] = this.#buffer[this.#bytes - 1] ?? 0;
    this.#bytes = 1;
    return chunk;
  }

  /** Everything not taken yet, to the end. */
  rest(): Uint8Array {
    this.#pending += this.#last;
    this.#last = '';
    this.#encode(this.#pending.length);
    return new Uint8Array(this.#buffer.subarray(0, this.#bytes));
  }

  #encode(units: number): void {
    if (units <= 0) return;
    const text = units === this.#pending.length ? this.#pending : this.#pending.slice(0, units);
    // At most 3 bytes per UTF-16 unit.
    if (this.#bytes + text.length * 3 > this.#buffer.length) {
      const next = Buffer.allocUnsafe(
        Math.max(this.#buffer.length * 2, this.#bytes + text.length * 3),
      );
      this.#buffer.copy(next, 0, 0, this.#bytes);
      this.#buffer = next;
    }
    this.#bytes += this.#buffer.write(text, this.#bytes, 'utf8');
    this.#encodedUnits += units;
    this.#pending = units === this.#pending.length ? '' : this.#pending.slice(units);
  }
}

/**
 * Re-serialises a part (its {@link partText}) from parser events: UTF-8, a fresh XML
 * declaration, namespaces and attributes as written, no comments, no processing instructions, no
 * DOCTYPE (see {@link walkXml}). Each element passes through `rules.element`. The part
 * is parsed in slices with `pace` between them and its output handed on in chunks as it is made,
 * so the zip writer deflates the start of a long part while the rest is rewritten. A rejection
 * can come after chunks were handed on: a consumer that must not see part of a refused part
 * collects first.
 */
export async function* rewriteXml(
  source: string,
  what: string,
  rules: XmlRewriteRules,
  pace: Pace = nextTurn,
): AsyncGenerator<Uint8Array, void, undefined> {
  const out = new Utf8Output();
  const frames: Frame[] = [];
  // Output from the start of the outermost open lazy container that has no content yet may
  // still be rolled back, so it is not encoded yet.
  const hold = (): number => {
    for (const frame of frames) {
      if (frame.lazy && !frame.hasContent) return frame.start;
    }
    return Number.POSITIVE_INFINITY;
  };
  out.write('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n', hold);
  let dropDepth = 0;
  const markContent = (): void => {
    for (let i = frames.length - 1; i >= 0; i -= 1) {
      const frame = frames[i];
      if (!frame || frame.hasContent) break;
      frame.hasContent = true;
    }
  };
  const reader = new XmlReader(source, what, {
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
      if (decision.action === 'replace') {
        markContent();
        out.write(
          `${startTag(decision.name, decision.attributes)}${escapeText(decision.text)}</${decision.name}>`,
          hold,
        );
        dropDepth = 1;
        return;
      }
      const written = decision.action === 'keep';
      const lazy = written && rules.dropWhenEmpty?.(element) === true;
      if (written && !lazy) markContent();
      const start = out.position;
      if (written) {
        out.write(startTag(element.name, decision.attributes ?? element.attributes), hold);
      }
      frames.push({ element, written, start, startTagEnd: out.position, lazy, hasContent: false });
    },
    close() {
      if (dropDepth > 0) {
        dropDepth -= 1;
        return;
      }
      const frame = frames.pop();
      if (!frame?.written) return;
      if (frame.lazy && !frame.hasContent) {
        out.rollback(frame.start);
        return;
      }
      if (frame.lazy) markContent();
      // `<a></a>` is written `<a/>`, as the input most likely had it.
      if (out.position === frame.startTagEnd) out.closeEmpty();
      else out.write(`</${frame.element.name}>`, hold);
    },
    text(text) {
      if (dropDepth > 0) return;
      // Only text that is not all white space gives its containers content (and only when the
      // innermost one has none yet is it worth looking).
      if (frames.at(-1)?.hasContent === false && /\S/.test(text)) markContent();
      out.write(escapeText(text), hold);
    },
  });
  while (!reader.done) {
    reader.read(SLICE_UNITS);
    const chunk = out.take();
    if (chunk) yield chunk;
    await pace();
  }
  yield out.rest();
}

/** All of a rewrite's output in one array. */
export async function collectChunks(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

function startTag(name: string, attributes: readonly XmlAttributeNode[]): string {
  let tag = `<${name}`;
  for (const attribute of attributes) {
    tag += ` ${attribute.name}="${escapeAttribute(attribute.value)}"`;
  }
  return `${tag}>`;
}

function escapeText(text: string): string {
  if (!/[&<>]/.test(text)) return text;
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

function escapeAttribute(value: string): string {
  if (!/[&<>"\t\n\r]/.test(value)) return value;
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
