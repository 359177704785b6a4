import { Rejection } from './rejection.ts';
import { XmlReader } from './xml-reader.ts';

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
 * Reads a well-formed XML document with the rebuild's {@link XmlReader} and reports every element
 * start. A document type declaration with an internal subset is refused: that is where
 * entity-expansion ("billion laughs") attacks live; one without (as OpenOffice.org wrote) is read
 * past, and the reader expands and fetches nothing.
 * @throws {Rejection} `invalid_file` for malformed XML, a DOCTYPE with an internal subset, or more
 *   than `maxElements`.
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
  new XmlReader(decodeXmlText(bytes), what, {
    open(element) {
      if (element.index >= maxElements) {
        throw new Rejection('invalid_file', `${what} has more than ${maxElements} elements`);
      }
      const attributes: Record<string, string> = {};
      const namespacedAttributes: XmlAttribute[] = [];
      for (const attribute of element.attributes) {
        attributes[attribute.name] = attribute.value;
        namespacedAttributes.push({
          uri: attribute.uri,
          localName: attribute.local,
          value: attribute.value,
        });
      }
      onStart({ uri: element.uri, localName: element.localName, attributes, namespacedAttributes });
    },
  }).read();
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
