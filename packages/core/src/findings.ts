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

/**
 * Most locations listed for one finding kind: a hostile file with 100 000 annotations still yields
 * a report of bounded size. The kind's `count` keeps counting past it.
 */
export const MAX_FINDING_LOCATIONS = 50;

/**
 * Most characters the names of one location may hold together (member path, part, sheet): names
 * come from the file (a zip entry name may be 65 535 bytes long), and a location that runs past
 * this is not listed, so the report stays small. The kind's `count` still counts it.
 */
export const MAX_LOCATION_CHARS = 1024;

/**
 * Where items of one kind were removed, as far as the format tells: each field is present only
 * when it applies, so a document-level PDF script in a top-level file has no location at all.
 */
export interface FindingLocation {
  /**
   * The archive member path, outermost archive first: `["bundle.zip", "docs/report.pdf"]` is
   * `docs/report.pdf` inside `bundle.zip` inside the submitted archive. Names are the submitted
   * ones (before a converted member takes its new extension).
   */
  readonly member?: readonly string[];
  /** Package part (OOXML, ODF): its path in the package, e.g. `word/document.xml`, `content.xml`. */
  readonly part?: string;
  /** Sheet name when the part is a sheet of a workbook (xlsx, xlsm, xlsb and their kin). */
  readonly sheet?: string;
  /** PDF page, 1-based. */
  readonly page?: number;
  /** Items of the kind removed at this location. */
  readonly count: number;
}

/** Where something was found, without the count: what a handler scopes its tally to. */
export type FindingPlace = Omit<FindingLocation, 'count'>;

/**
 * One line of a rebuild's report: how many items of one kind were removed, and where. `count`
 * covers every item; `locations` (omitted when none is known) lists at most
 * {@link MAX_FINDING_LOCATIONS} places, in the order found, so their counts add up to `count` or
 * less: the rest were document-wide (nowhere more precise to name) or past the limits (see also
 * {@link MAX_LOCATION_CHARS}).
 */
export interface Finding {
  readonly kind: FindingKind;
  readonly count: number;
  readonly locations?: readonly FindingLocation[];
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

interface KindEntry {
  count: number;
  /** Location key -> location, in the order first found; at most {@link MAX_FINDING_LOCATIONS}. */
  readonly locations: Map<string, { readonly place: FindingPlace; count: number }>;
}

/**
 * Accumulates finding counts during a rebuild, with where they were found. A handler scopes the
 * tally to a place ({@link FindingTally.at}) and hands that view to the code that reads the page
 * or part; every view records into the same report.
 */
export class FindingTally {
  #kinds = new Map<FindingKind, KindEntry>();
  #place: FindingPlace = {};

  /**
   * A view of this tally that records everything at `place`, inside this view's own place: a
   * member path is appended to, the other fields are set.
   */
  at(place: FindingPlace): FindingTally {
    const view = new FindingTally();
    view.#kinds = this.#kinds;
    view.#place = within(this.#place, place);
    return view;
  }

  /** Records `count` removed items of `kind` at this view's place (ignored when `count` is 0). */
  add(kind: FindingKind, count = 1): void {
    if (count <= 0) return;
    const entry = this.#entry(kind);
    entry.count += count;
    record(entry, this.#place, count);
  }

  /**
   * Adds every finding of another report (a member's, a picture's), its locations placed inside
   * this view's place; what the report could not locate is recorded at this place itself.
   */
  addAll(findings: readonly Finding[]): void {
    for (const finding of findings) {
      if (finding.count <= 0) continue;
      const entry = this.#entry(finding.kind);
      entry.count += finding.count;
      let located = 0;
      for (const location of finding.locations ?? []) {
        const { count, ...place } = location;
        record(entry, within(this.#place, place), count);
        located += count;
      }
      record(entry, this.#place, finding.count - located);
    }
  }

  /** The findings, sorted by kind for stable output; locations in the order found. */
  toArray(): Finding[] {
    return [...this.#kinds.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([kind, { count, locations }]) =>
        locations.size === 0
          ? { kind, count }
          : {
              kind,
              count,
              locations: [...locations.values()].map(({ place, count: at }) => ({
                ...place,
                count: at,
              })),
            },
      );
  }

  #entry(kind: FindingKind): KindEntry {
    let entry = this.#kinds.get(kind);
    if (!entry) {
      entry = { count: 0, locations: new Map() };
      this.#kinds.set(kind, entry);
    }
    return entry;
  }
}

/** `inner` as seen from `outer`: member paths joined, the other fields of `inner` winning. */
function within(outer: FindingPlace, inner: FindingPlace): FindingPlace {
  const member = [...(outer.member ?? []), ...(inner.member ?? [])];
  const part = inner.part ?? outer.part;
  const sheet = inner.sheet ?? outer.sheet;
  const page = inner.page ?? outer.page;
  return {
    ...(member.length > 0 && { member }),
    ...(part !== undefined && { part }),
    ...(sheet !== undefined && { sheet }),
    ...(page !== undefined && { page }),
  };
}

/** Adds `count` at `place`; a place with no field, or one past the limits, adds nothing. */
function record(entry: KindEntry, place: FindingPlace, count: number): void {
  const nowhere =
    place.member === undefined &&
    place.part === undefined &&
    place.sheet === undefined &&
    place.page === undefined;
  if (count <= 0 || nowhere || charsOf(place) > MAX_LOCATION_CHARS) return;
  const key = JSON.stringify([place.member, place.part, place.sheet, place.page]);
  const known = entry.locations.get(key);
  if (known) known.count += count;
  else if (entry.locations.size < MAX_FINDING_LOCATIONS) entry.locations.set(key, { place, count });
}

/** The characters of a place's names. */
function charsOf(place: FindingPlace): number {
  let chars = (place.part?.length ?? 0) + (place.sheet?.length ?? 0);
  for (const name of place.member ?? []) chars += name.length;
  return chars;
}
