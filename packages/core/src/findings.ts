/**
 * What a rebuild removed, by kind. Handlers report counts; the caller sees them in the outcome and
 * an organisation's {@link Policy} can refuse a kind outright instead of receiving a stripped copy.
 */
export type FindingKind =
  | 'image-metadata'
  | 'colour-profile'
  | 'trailing-data'
  | 'archive-comment'
  | 'archive-metadata'
  | 'vba-macro'
  | 'xlm-macro'
  | 'odf-macro'
  | 'pdf-javascript'
  | 'pdf-action'
  | 'pdf-embedded-file'
  | 'pdf-xfa'
  | 'embedded-object'
  | 'activex-control'
  | 'external-relationship'
  | 'dde-link'
  | 'data-connection'
  | 'script'
  | 'event-handler'
  | 'external-resource'
  | 'document-metadata'
  | 'hidden-data'
  | 'damaged-content';

/** One line of a rebuild's report: how many items of one kind were removed. */
export interface Finding {
  readonly kind: FindingKind;
  readonly count: number;
}

/** Human description of each {@link FindingKind}, for reports and docs. */
export const FINDING_KINDS: Readonly<Record<FindingKind, string>> = {
  'image-metadata': 'Image metadata (EXIF, XMP, IPTC, comments, text chunks, thumbnails)',
  'colour-profile':
    'Colour profiles not recognised as a standard colour space (pixels converted to sRGB)',
  'trailing-data': 'Bytes after the end of the format (appended payloads, polyglot tails)',
  'archive-comment': 'Archive or member comments',
  'archive-metadata': 'Unrecognised archive extra fields (data hidden in member or gzip headers)',
  'vba-macro': 'VBA macro project',
  'xlm-macro': 'Excel 4.0 (XLM) macro sheet',
  'odf-macro': 'OpenDocument Basic/script macros and script event listeners',
  'pdf-javascript': 'PDF JavaScript (document, page, annotation or form actions)',
  'pdf-action': 'PDF actions that launch, submit, import or go to remote targets',
  'pdf-embedded-file': 'PDF embedded files and file attachment annotations',
  'pdf-xfa': 'PDF XFA forms',
  'embedded-object': 'Embedded OLE objects and packages',
  'activex-control': 'ActiveX controls',
  'external-relationship': 'Relationships to external targets (remote templates, links)',
  'dde-link': 'DDE links and DDE formulas',
  'data-connection': 'External data connections and queries',
  script: 'Scripts in markup (script elements, javascript: URLs)',
  'event-handler': 'Event handler attributes in markup',
  'external-resource': 'References to external resources in markup',
  'document-metadata': 'Document metadata (author, custom properties)',
  'hidden-data': 'Hidden or unreferenced data',
  'damaged-content':
    'Damaged content readers cannot draw (the broken tail of a PDF page content stream)',
};

/** Accumulates finding counts during a rebuild. */
export class FindingTally {
  readonly #counts = new Map<FindingKind, number>();

  /** Records `count` removed items of `kind` (ignored when `count` is 0). */
  add(kind: FindingKind, count = 1): void {
    if (count <= 0) return;
    this.#counts.set(kind, (this.#counts.get(kind) ?? 0) + count);
  }

  /** Adds every finding of another report. */
  addAll(findings: readonly Finding[]): void {
    for (const finding of findings) this.add(finding.kind, finding.count);
  }

  /** The findings, sorted by kind for stable output. */
  toArray(): Finding[] {
    return [...this.#counts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, count]) => ({ kind, count }));
  }
}
