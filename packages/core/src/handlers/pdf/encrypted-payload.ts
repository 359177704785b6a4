import { PDFArray, PDFDict, PDFHexString, PDFName, PDFString } from '@cantoo/pdf-lib';
import type { PDFContext, PDFObject } from '@cantoo/pdf-lib';

import { Rejection } from '../../_internal/rejection.ts';

/** Name-tree nodes visited under `/Names /EmbeddedFiles` (ISO 32000-1 7.9.6). */
const MAX_NAME_TREE_NODES = 10_000;
/** Name-tree levels followed (real trees have two or three). */
const MAX_NAME_TREE_DEPTH = 32;
/** File specifications examined, from `/AF` and the name tree together. */
const MAX_FILE_SPECS = 10_000;
/** Characters of a payload's name or filter quoted in the detail. */
const MAX_QUOTED_CHARS = 80;

const key = (text: string): PDFName => PDFName.of(text);

/**
 * Refuses an unencrypted wrapper document (ISO 32000-2 7.6.7): a PDF whose real content is an
 * encrypted payload document attached to it, listed in the catalogue's `/AF` or `/Names
 * /EmbeddedFiles` with `/AFRelationship /EncryptedPayload` and an `/EP` encrypted-payload
 * dictionary (Microsoft Purview and Word write these for protected PDFs). Its pages are only a
 * cover telling readers to get a reader with the cryptographic filter; rebuilding it would return
 * that cover as if it were the document, so the file is `password_protected` like any PDF that
 * needs a key. Reads the parsed document, so object streams, indirect objects and incremental
 * updates (the newest revision of each object) count as a reader sees them.
 * @throws {Rejection} `password_protected` naming the payload and its cryptographic filter.
 */
export function assertNoEncryptedPayload(context: PDFContext): void {
  const catalog = context.lookup(context.trailerInfo.Root);
  if (!(catalog instanceof PDFDict)) return;
  for (const spec of fileSpecs(catalog, context)) {
    const payload = context.lookup(spec.get(key('EP')));
    const relationship = nameOf(context.lookup(spec.get(key('AFRelationship'))));
    if (relationship !== 'EncryptedPayload' && !(payload instanceof PDFDict)) continue;
    const filter =
      payload instanceof PDFDict ? nameOf(context.lookup(payload.get(key('Subtype')))) : undefined;
    const name =
      textOf(context.lookup(spec.get(key('UF')))) ?? textOf(context.lookup(spec.get(key('F'))));
    throw new Rejection(
      'password_protected',
      `the PDF is an unencrypted wrapper (ISO 32000-2 7.6.7) around an encrypted payload document${
        name === undefined ? '' : ` "${quoted(name)}"`
      }, protected with ${
        filter === undefined
          ? 'an unnamed cryptographic filter'
          : `the /${quoted(filter)} cryptographic filter`
      }; its pages are only a cover, and the document cannot be opened without the filter's key`,
    );
  }
}

/** The file specifications the catalogue lists in `/AF` and under `/Names /EmbeddedFiles`. */
function fileSpecs(catalog: PDFDict, context: PDFContext): PDFDict[] {
  const specs: PDFDict[] = [];
  const add = (value: PDFObject | undefined): void => {
    const spec = context.lookup(value);
    if (spec instanceof PDFDict && specs.length < MAX_FILE_SPECS) specs.push(spec);
  };
  const associated = context.lookup(catalog.get(key('AF')));
  if (associated instanceof PDFArray) {
    for (let index = 0; index < Math.min(associated.size(), MAX_FILE_SPECS); index += 1) {
      add(associated.get(index));
    }
  }
  const names = context.lookup(catalog.get(key('Names')));
  const tree =
    names instanceof PDFDict ? context.lookup(names.get(key('EmbeddedFiles'))) : undefined;
  // ISO 32000-1 7.9.6: leaves hold [key value ...] in /Names, inner nodes /Kids; a cycle or an
  // absurd tree stops at the node budget.
  const stack: [PDFObject | undefined, number][] = [[tree, 0]];
  const seen = new Set<PDFObject>();
  while (stack.length > 0 && seen.size < MAX_NAME_TREE_NODES) {
    const [value, depth] = stack.pop() ?? [undefined, 0];
    const node = context.lookup(value);
    if (!(node instanceof PDFDict) || seen.has(node) || depth > MAX_NAME_TREE_DEPTH) continue;
    seen.add(node);
    const leaves = context.lookup(node.get(key('Names')));
    if (leaves instanceof PDFArray) {
      for (let index = 1; index < Math.min(leaves.size(), 2 * MAX_FILE_SPECS); index += 2) {
        add(leaves.get(index));
      }
    }
    const kids = context.lookup(node.get(key('Kids')));
    if (kids instanceof PDFArray) {
      for (let index = 0; index < Math.min(kids.size(), MAX_NAME_TREE_NODES); index += 1) {
        stack.push([kids.get(index), depth + 1]);
      }
    }
  }
  return specs;
}

function nameOf(value: PDFObject | undefined): string | undefined {
  return value instanceof PDFName ? value.decodeText() : undefined;
}

function textOf(value: PDFObject | undefined): string | undefined {
  return value instanceof PDFString || value instanceof PDFHexString
    ? value.decodeText()
    : undefined;
}

/** A name from the file, safe to quote: printable characters only, and not too many. */
function quoted(text: string): string {
  const printable = text.replace(/[\p{C}\p{Zl}\p{Zp}]/gu, '?');
  return printable.length > MAX_QUOTED_CHARS
    ? `${printable.slice(0, MAX_QUOTED_CHARS)}…`
    : printable;
}
