import { PDFName, PDFRawStream } from '@cantoo/pdf-lib';
import type { PDFContext, PDFDict, PDFRef } from '@cantoo/pdf-lib';

import type { FindingTally } from '../../findings.ts';
import type { Deadline } from '../../limits.ts';
import { salvageContent } from './content.ts';
import { decodeContentStream } from './streams.ts';
import type { StreamBudget } from './streams.ts';

/** A page and the content streams its `/Contents` names, in order. */
export interface PageContents {
  readonly page: PDFDict;
  readonly streams: readonly PDFRef[];
}

/** What {@link salvageSplitContents} needs besides the pages. */
export interface SplitContentOptions {
  readonly context: PDFContext;
  readonly budget: StreamBudget;
  readonly findings: FindingTally;
  readonly deadline: Deadline;
}

/** White space between two content streams of a page: ISO 32000-1 7.8.2 splits at token bounds. */
const STREAM_SEPARATOR = Buffer.from('\n', 'latin1');

/**
 * Salvages the pages whose `/Contents` is an array of streams (ISO 32000-1 7.8.2): readers read
 * them as one stream, so an array or dictionary may open in one and close in the next, and damage
 * in one loses the rest of the page. Their streams are decoded here (once, counted against the
 * budget; the writer only compresses them), read together, and a page damaged part-way gets one
 * new content stream holding what {@link salvageContent} keeps (counted as `damaged-content`).
 * Streams with image codec or predicted data are left to the writer unread.
 * @returns the content streams that are a page's only one: the writer salvages them on its own.
 * @throws {Rejection} `invalid_file` when nothing of a page can be drawn; `file_too_large` when a
 *   page's streams read together pass what one stream may decode to.
 */
export function salvageSplitContents(
  pages: readonly PageContents[],
  { context, budget, findings, deadline }: SplitContentOptions,
): ReadonlySet<PDFRef> {
  const single = new Set<PDFRef>();
  for (const { page, streams } of pages) {
    if (streams.length === 1 && streams[0] !== undefined) {
      single.add(streams[0]);
      continue;
    }
    deadline.check();
    const parts: Uint8Array[] = [];
    let pageBytes = 0;
    for (const ref of streams) {
      const stream = context.lookup(ref);
      const decoded =
        stream instanceof PDFRawStream ? decodeContentStream(stream, context, budget) : undefined;
      if (decoded === undefined) break;
      context.assign(ref, decoded);
      // A stream listed many times is decoded once but read each time, as readers do: the
      // page's content as read must stay within one stream's ceiling.
      pageBytes += decoded.contents.length + STREAM_SEPARATOR.length;
      if (pageBytes >= budget.maxLayerBytes) throw budget.tooLarge();
      if (parts.length > 0) parts.push(STREAM_SEPARATOR);
      parts.push(decoded.contents);
    }
    if (parts.length !== 2 * streams.length - 1) continue;
    const salvaged = salvageContent(Buffer.concat(parts));
    if (salvaged === undefined) continue;
    findings.add('damaged-content');
    const merged = PDFRawStream.of(context.obj({}), salvaged.data);
    page.set(PDFName.of('Contents'), context.register(merged));
  }
  return single;
}
