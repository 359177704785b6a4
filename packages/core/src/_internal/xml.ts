import { SaxesParser } from 'saxes';

import { Rejection } from './rejection.ts';

/** An element start as the probes and rebuilders see it. */
export interface XmlStartTag {
  /** Namespace URI, `''` when none. */
  readonly uri: string;
  readonly localName: string;
  /** Attributes by qualified name, as written. */
  readonly attributes: Readonly<Record<string, string>>;
  /** Attributes with their resolved namespace URI (`''` for unprefixed ones). */
  readonly namespacedAttributes: readonly XmlAttribute[];
}

/** One attribute with its namespace resolved. */
export interface XmlAttribute {
  readonly uri: string;
  readonly localName: string;
  readonly value: string;
}

/** The value of the attribute `{uri}localName`, whatever prefix the document used for it. */
export function attributeNs(tag: XmlStartTag, uri: string, localName: string): string | undefined {
  return tag.namespacedAttributes.find((a) => a.uri === uri && a.localName === localName)?.value;
}

/** Largest XML part parsed in one piece. */
export const MAX_XML_PART_BYTES = 64 * 1024 * 1024;

/**
 * Parses a well-formed XML document and reports every element start. A document type declaration
 * is refused outright: OOXML and ODF packages never need one and it is where entity-expansion
 * ("billion laughs") and external-entity attacks live. saxes itself never expands or fetches
 * entities, so nothing here can grow or reach out.
 * @throws {Rejection} `invalid_file` for malformed XML, a DOCTYPE, or more than `maxElements`.
 */
export function scanXmlStartTags(
  bytes: Uint8Array,
  what: string,
  onStart: (tag: XmlStartTag) => void,
  maxElements = 1_000_000,
): void {
  if (bytes.length > MAX_XML_PART_BYTES) {
    throw new Rejection('file_too_large', `${what} is larger than ${MAX_XML_PART_BYTES} bytes`);
  }
  const parser = new SaxesParser({ xmlns: true, position: false });
  let elements = 0;
  let failure: Rejection | undefined;
  parser.on('doctype', () => {
    failure ??= new Rejection('invalid_file', `${what} declares a DOCTYPE, which is not allowed`);
  });
  parser.on('opentag', (tag) => {
    elements += 1;
    if (elements > maxElements) {
      failure ??= new Rejection('invalid_file', `${what} has more than ${maxElements} elements`);
      return;
    }
    const attributes: Record<string, string> = {};
    const namespacedAttributes: XmlAttribute[] = [];
    for (const [name, attribute] of Object.entries(tag.attributes)) {
      attributes[name] = attribute.value;
      namespacedAttributes.push({
        uri: attribute.uri,
        localName: attribute.local,
        value: attribute.value,
      });
    }
    onStart({ uri: tag.uri, localName: tag.local, attributes, namespacedAttributes });
  });
  parser.on('error', (error) => {
    failure ??= new Rejection('invalid_file', `${what} is not well-formed XML: ${error.message}`);
  });
  try {
    parser.write(decodeXmlText(bytes)).close();
  } catch (error) {
    failure ??= new Rejection(
      'invalid_file',
      `${what} is not well-formed XML: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (failure) throw failure;
}

/** XML 1.0 F.1: the encoding is told by a byte-order mark, else UTF-8. */
export function decodeXmlText(bytes: Uint8Array): string {
  return xmlDecoder(bytes).decode(bytes);
}

/** The decoder for a document that starts with `head` (at least its first two bytes). */
export function xmlDecoder(head: Uint8Array): TextDecoder {
  if (head[0] === 0xff && head[1] === 0xfe) return new TextDecoder('utf-16le');
  if (head[0] === 0xfe && head[1] === 0xff) return new TextDecoder('utf-16be');
  return new TextDecoder('utf-8', { ignoreBOM: false });
}
