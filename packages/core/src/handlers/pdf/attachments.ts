import {
  PDFArray,
  PDFDict,
  PDFHexString,
  PDFName,
  PDFRawStream,
  PDFRef,
  PDFString,
} from '@cantoo/pdf-lib';
import type { PDFContext, PDFObject } from '@cantoo/pdf-lib';

import { Rejection, ThreatReport } from '../../_internal/rejection.ts';
import type { EngineContext, SourcedFile } from '../types.ts';
import { decodedForScan } from './streams.ts';
import type { StreamBudget } from './streams.ts';

/** Deepest nesting of direct arrays and dictionaries searched for file specifications. */
const MAX_SEARCH_DEPTH = 32;
/** Longest attachment name shown in a detail. */
const MAX_SHOWN_NAME_CHARS = 100;

/** One embedded file stream and the name its file specification gives it. */
interface Attachment {
  readonly stream: PDFRawStream;
  readonly name: string;
}

/**
 * Hands every embedded file of the PDF to the engine's scanners before the rebuild leaves it out,
 * so that malware attached to a document is reported (`threat_detected`, with the attachment's
 * name) instead of silently dropped. An embedded file is a stream a file specification's `/EF`
 * names (ISO 32000-1 7.11.4, table 43: `/F`, `/UF`, `/DOS`, `/Mac`, `/Unix`), from the
 * `/EmbeddedFiles` name tree, a `FileAttachment` annotation or anywhere else, or any stream typed
 * `/EmbeddedFile` (7.11.4.1, table 44). Each is decoded (its filters undone, counted against the
 * content budget) and scanned like an archive member; an attachment that is itself an archive is
 * scanned through. Attachments count like archive entries: more than `maxEntries` refuse the file.
 * @returns what was found where (empty when nothing was).
 * @throws {Rejection} `file_too_large` past the content budget; `policy_violation` past
 *   `maxEntries`.
 */
export async function attachmentThreats(
  pdf: PDFContext,
  input: SourcedFile,
  context: EngineContext,
  budget: StreamBudget,
): Promise<ThreatReport> {
  const attachments = findAttachments(pdf);
  if (attachments.length > context.limits.maxEntries) {
    throw new Rejection(
      'policy_violation',
      `the PDF embeds ${attachments.length} files; the limit is ${context.limits.maxEntries}`,
    );
  }
  const threats = new ThreatReport();
  for (const attachment of attachments) {
    context.deadline.check();
    const bytes = decodedForScan(attachment.stream, pdf, budget);
    const found = await context.scanMember({ bytes, fileName: attachment.name }, input.source);
    threats.add(found, `attachment "${attachment.name}"`);
  }
  return threats;
}

/** Every embedded file stream once, in object order, named by its file specification. */
function findAttachments(pdf: PDFContext): Attachment[] {
  const named = new Map<PDFRawStream, string>();
  const typed: PDFRawStream[] = [];
  for (const [ref, object] of pdf.enumerateIndirectObjects()) {
    if (object instanceof PDFRawStream) {
      if (nameOf(object.dict.get(PDFName.of('Type'))) === 'EmbeddedFile') typed.push(object);
      continue;
    }
    collectFileSpecs(object, pdf, named, 0, `object ${ref.objectNumber}`);
  }
  const attachments: Attachment[] = [...named].map(([stream, name]) => ({ stream, name }));
  for (const stream of typed) {
    if (named.has(stream)) continue;
    attachments.push({ stream, name: 'embedded file' });
  }
  return attachments;
}

/** Finds file specifications with embedded files in `object` and its direct children. */
function collectFileSpecs(
  object: PDFObject,
  pdf: PDFContext,
  named: Map<PDFRawStream, string>,
  depth: number,
  fallbackName: string,
): void {
  if (depth > MAX_SEARCH_DEPTH) return;
  if (object instanceof PDFArray) {
    for (const item of object.asArray()) {
      if (!(item instanceof PDFRef)) collectFileSpecs(item, pdf, named, depth + 1, fallbackName);
    }
    return;
  }
  if (!(object instanceof PDFDict)) return;
  const embedded = pdf.lookup(object.get(PDFName.of('EF')));
  if (embedded instanceof PDFDict) {
    const name = fileNameOf(object, pdf) ?? fallbackName;
    for (const value of embedded.values()) {
      const stream = pdf.lookup(value);
      if (stream instanceof PDFRawStream && !named.has(stream)) named.set(stream, name);
    }
  }
  for (const value of object.values()) {
    if (!(value instanceof PDFRef)) collectFileSpecs(value, pdf, named, depth + 1, fallbackName);
  }
}

/** The file name a file specification shows (`/UF` before `/F`, ISO 32000-1 7.11.3). */
function fileNameOf(spec: PDFDict, pdf: PDFContext): string | undefined {
  for (const key of ['UF', 'F']) {
    const value = pdf.lookup(spec.get(PDFName.of(key)));
    if (value instanceof PDFString || value instanceof PDFHexString) {
      // Shown in a detail: control characters and quotes cannot change its sentence.
      const text = value
        .decodeText()
        .replace(/[^\x20-\x7e\u00a0-\uffff]|"/g, '?')
        .slice(0, MAX_SHOWN_NAME_CHARS);
      if (text !== '') return text;
    }
  }
  return undefined;
}

function nameOf(value: PDFObject | undefined): string | undefined {
  return value instanceof PDFName ? value.decodeText() : undefined;
}
