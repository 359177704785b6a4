/** HTML §13.2.3.2: the prescan for a `<meta>` charset reads this far into the bytes. */
const PRESCAN_BYTES = 1024;

/**
 * Encodings whose bytes are not ASCII where ASCII is (WHATWG Encoding §4.2 lists UTF-16 and the
 * `replacement` family; UTF-7 and its IMAP variant are no WHATWG encoding at all but old readers
 * honour them): a `<meta>` naming one is ignored, so `+ADw-script+AD4-` stays the text it is.
 */
const NOT_ASCII_COMPATIBLE =
  /^(?:utf-?16|utf-?32|ucs-?2|utf-?7|x-imap4-modified-utf7|unicode-1-1-utf-7|csunicode11utf7|replacement|iso-?2022|hz-gb-2312|csiso2022)/i;

/** How a document's text was decoded. */
export interface DecodedMarkup {
  readonly text: string;
  /** The WHATWG name of the encoding used. */
  readonly encoding: string;
  /** True when a `<meta>` named an encoding that was refused (UTF-7 and the like). */
  readonly refusedLabel: boolean;
}

/**
 * Decodes an HTML document's bytes as HTML §13.2.3 determines the encoding, minus the network:
 * a byte-order mark wins; then a `<meta charset>` or `<meta http-equiv="Content-Type">` in the
 * first 1024 bytes, when it names an ASCII-compatible encoding the platform knows (UTF-16 there
 * means UTF-8, §13.2.3.2 step 4); then UTF-8 when the bytes are valid UTF-8, else windows-1252,
 * the default of most locales.
 */
export function decodeHtml(bytes: Uint8Array): DecodedMarkup {
  const bom = sniffBom(bytes);
  if (bom !== undefined) {
    return { text: new TextDecoder(bom).decode(bytes), encoding: bom, refusedLabel: false };
  }
  const label = prescanMeta(bytes.subarray(0, PRESCAN_BYTES));
  let refusedLabel = false;
  if (label !== undefined) {
    const encoding = knownEncoding(label);
    if (
      NOT_ASCII_COMPATIBLE.test(label) ||
      (encoding !== undefined && NOT_ASCII_COMPATIBLE.test(encoding))
    ) {
      refusedLabel = !/^utf-?16/i.test(label);
    } else if (encoding !== undefined) {
      return { text: new TextDecoder(encoding).decode(bytes), encoding, refusedLabel };
    }
  }
  try {
    return {
      text: new TextDecoder('utf-8', { fatal: true }).decode(bytes),
      encoding: 'utf-8',
      refusedLabel,
    };
  } catch {
    return {
      text: new TextDecoder('windows-1252').decode(bytes),
      encoding: 'windows-1252',
      refusedLabel,
    };
  }
}

function sniffBom(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return undefined;
}

/** The WHATWG name of `label`, or `undefined` when the platform knows no such encoding. */
function knownEncoding(label: string): string | undefined {
  try {
    return new TextDecoder(label.trim()).encoding;
  } catch {
    return undefined;
  }
}

/**
 * The charset a `<meta>` in `head` declares (HTML §13.2.3.2, simplified: tags are found
 * lexically, comments skipped): `charset=` on any meta, or the `charset=` parameter of the
 * `content` of a meta whose `http-equiv` is `content-type`.
 */
function prescanMeta(head: Uint8Array): string | undefined {
  const text = new TextDecoder('windows-1252').decode(head).replace(/<!--[\s\S]*?-->/g, '');
  for (const tag of text.matchAll(/<meta[\s/]([^>]*)>?/gi)) {
    const attributes = tag[1] ?? '';
    const charset = /(?:^|[\s/"'])charset\s*=\s*["']?([^\s"'/>;]+)/i.exec(attributes);
    if (charset?.[1] !== undefined) return charset[1];
    if (/http-equiv\s*=\s*["']?content-type/i.test(attributes)) {
      const content = /content\s*=\s*(?:"([^"]*)"|'([^']*)')/i.exec(attributes);
      const inner = /charset\s*=\s*["']?([^\s"';]+)/i.exec(content?.[1] ?? content?.[2] ?? '');
      if (inner?.[1] !== undefined) return inner[1];
    }
  }
  return undefined;
}
