/**
 * What a spreadsheet or presentation may ask a renderer to lay out, counted while its
 * `content.xml` is rewritten, so a document that would take LibreOffice past the time budget is
 * refused as `file_too_large` before it is handed over. Each limit is what the engine converted
 * end to end (rebuild, the warm LibreOffice pool, PDF rebuild and verify) in about 30 s, a quarter
 * of the default two-minute budget, on the project's two shared cores under a load average of 18:
 * 500,000 cells in 31 s, 200 sheets in 14 s and 500 in 61 s, 2,000 slides in 12 s, 20,000 shapes
 * on one slide in 29 s.
 */
import { Rejection } from '../../_internal/rejection.ts';
import type { XmlElementNode } from '../../_internal/xml-rewrite.ts';
import { isCell, ODF_NS } from './content.ts';

/**
 * Cells in the used areas of all sheets together, each sheet's area running from A1 to its last
 * row and column holding something: what Calc prints when no print range is set.
 */
export const MAX_PRINTED_CELLS = 500_000;
/** Sheets of a spreadsheet (each costs Calc a page layout of its own). */
export const MAX_SHEETS = 250;
/** Slides of a presentation. */
export const MAX_SLIDES = 2_000;
/** Drawing shapes on all sheets or slides together. */
export const MAX_SHAPES = 20_000;
/** Elements of `content.xml` (cells, paragraphs, spans, shapes as written). */
export const MAX_RENDERED_ELEMENTS = 1_500_000;

/** ODF 1.3 Part 3, drawing shapes: what LibreOffice lays out and draws one by one. */
const SHAPES: ReadonlySet<string> = new Set([
  'frame',
  'custom-shape',
  'rect',
  'line',
  'polyline',
  'polygon',
  'regular-polygon',
  'path',
  'circle',
  'ellipse',
  'connector',
  'caption',
  'measure',
  'g',
]);

/**
 * Calc's sheet size (LibreOffice 7.4 without jumbo sheets): a repeat count beyond it is cut to
 * it, as Calc cuts it when it loads the sheet.
 */
const SHEET_ROWS = 1_048_576;
const SHEET_COLUMNS = 16_384;

/** What is rendered, as counted so far. */
export interface RenderCounts {
  readonly sheets: number;
  readonly slides: number;
  readonly shapes: number;
  readonly elements: number;
  readonly printedCells: number;
}

/**
 * Counts one `content.xml` as its elements are read, and refuses past a limit. Repeated rows and
 * columns count only where a cell holds something (a value, a formula, text, a shape): the
 * `number-rows-repeated="1048553"` LibreOffice writes for the empty rows after the data adds
 * nothing to what is printed.
 */
export class RenderBudget {
  readonly #what: string;
  #sheets = 0;
  #slides = 0;
  #shapes = 0;
  #elements = 0;
  /** Cells of the used areas of the sheets before the current one. */
  #finishedCells = 0;
  /** The current sheet: next row, used rows and columns. */
  #nextRow = 0;
  #usedRows = 0;
  #usedColumns = 0;
  /** The current row: its first index and repeat, and the next column. */
  #rowStart = 0;
  #rowRepeat = 1;
  #nextColumn = 0;
  /** The current cell: its first column and repeat; whether it was counted as used. */
  #cellStart = 0;
  #cellRepeat = 1;
  #cellUsed = true;

  constructor(what: string) {
    this.#what = what;
  }

  /** What was counted. */
  get counts(): RenderCounts {
    return {
      sheets: this.#sheets,
      slides: this.#slides,
      shapes: this.#shapes,
      elements: this.#elements,
      printedCells: this.#finishedCells + this.#usedRows * this.#usedColumns,
    };
  }

  /**
   * Counts an element of `content.xml`.
   * @throws {Rejection} `file_too_large` past a limit.
   */
  observe(element: XmlElementNode, ancestors: readonly XmlElementNode[]): void {
    this.#elements += 1;
    if (this.#elements > MAX_RENDERED_ELEMENTS) {
      this.#refuse(`more than ${MAX_RENDERED_ELEMENTS} elements`);
    }
    const parent = ancestors.at(-1);
    if (parent !== undefined && isCell(parent) && !this.#cellUsed) {
      this.#use();
      return;
    }
    if (element.uri === ODF_NS.draw) {
      const inPresentation = parent?.uri === ODF_NS.office && parent.localName === 'presentation';
      if (element.localName === 'page' && inPresentation) {
        this.#slides += 1;
        if (this.#slides > MAX_SLIDES) this.#refuse(`more than ${MAX_SLIDES} slides`);
      } else if (SHAPES.has(element.localName)) {
        this.#shapes += 1;
        if (this.#shapes > MAX_SHAPES) this.#refuse(`more than ${MAX_SHAPES} shapes`);
      }
      return;
    }
    if (element.uri !== ODF_NS.table) return;
    if (element.localName === 'table') {
      if (parent?.uri !== ODF_NS.office || parent.localName !== 'spreadsheet') return;
      this.#finishedCells += this.#usedRows * this.#usedColumns;
      this.#nextRow = 0;
      this.#usedRows = 0;
      this.#usedColumns = 0;
      this.#sheets += 1;
      if (this.#sheets > MAX_SHEETS) this.#refuse(`more than ${MAX_SHEETS} sheets`);
    } else if (element.localName === 'table-row') {
      // A table in a cell (a text box's) is no row of the sheet.
      if (ancestors.some(isCell)) return;
      this.#rowStart = this.#nextRow;
      this.#rowRepeat = repeat(element, 'number-rows-repeated', SHEET_ROWS);
      this.#nextRow = Math.min(this.#nextRow + this.#rowRepeat, SHEET_ROWS);
      this.#nextColumn = 0;
    } else if (isCell(element)) {
      if (ancestors.some(isCell)) return;
      this.#cellStart = this.#nextColumn;
      this.#cellRepeat = repeat(element, 'number-columns-repeated', SHEET_COLUMNS);
      this.#nextColumn = Math.min(this.#nextColumn + this.#cellRepeat, SHEET_COLUMNS);
      this.#cellUsed = false;
      const holdsValue = element.attributes.some(
        (a) =>
          (a.uri === ODF_NS.office && a.local === 'value-type') ||
          (a.uri === ODF_NS.table && a.local === 'formula'),
      );
      if (holdsValue) this.#use();
    }
  }

  /** The current cell holds something: its rows and columns are in the sheet's used area. */
  #use(): void {
    this.#cellUsed = true;
    this.#usedRows = Math.max(
      this.#usedRows,
      Math.min(this.#rowStart + this.#rowRepeat, SHEET_ROWS),
    );
    this.#usedColumns = Math.max(
      this.#usedColumns,
      Math.min(this.#cellStart + this.#cellRepeat, SHEET_COLUMNS),
    );
    const cells = this.#finishedCells + this.#usedRows * this.#usedColumns;
    if (cells > MAX_PRINTED_CELLS) {
      this.#refuse(`sheets whose used areas hold more than ${MAX_PRINTED_CELLS} cells`);
    }
  }

  #refuse(what: string): never {
    throw new Rejection(
      'file_too_large',
      `${this.#what} has ${what}, more than is rendered within the time budget`,
    );
  }
}

/** A repeat count as written, cut to `ceiling`; 1 when it is not a count. */
function repeat(element: XmlElementNode, local: string, ceiling: number): number {
  const value = element.attributes.find((a) => a.uri === ODF_NS.table && a.local === local)?.value;
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return 1;
  const count = Number.parseInt(value, 10);
  return count < 1 ? 1 : Math.min(count, ceiling);
}
