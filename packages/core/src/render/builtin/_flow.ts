/**
 * A small flowing-text layout over pdf-lib, shared by the built-in renderer's html, spreadsheet
 * and presentation drawings: headings, paragraphs, list items, tables and images, wrapped and
 * paginated on pages of one size, in the standard fonts (Helvetica, Courier).
 */
import {
  beginText,
  endText,
  lineTo,
  moveTo,
  PDFDocument,
  popGraphicsState,
  pushGraphicsState,
  rectangle,
  setFontAndSize,
  setLineWidth,
  setStrokingGrayscaleColor,
  setTextMatrix,
  showText,
  StandardFonts,
  stroke,
} from '@cantoo/pdf-lib';
import type { PDFFont, PDFName, PDFOperator, PDFPage } from '@cantoo/pdf-lib';

import { Rejection } from '../../_internal/rejection.ts';
import { drawPicture } from './_pictures.ts';
import type { Picture } from './_pictures.ts';

/** A page size in PDF points (1/72 inch). */
export interface PageSize {
  readonly width: number;
  readonly height: number;
}

/** ISO 216 A4 portrait, in points. */
export const A4_PAGE: PageSize = { width: 595.28, height: 841.89 };
/** ISO 216 A4 landscape, in points: a spreadsheet's usual print orientation. */
export const A4_LANDSCAPE_PAGE: PageSize = { width: 841.89, height: 595.28 };
/**
 * Largest page side in points: ISO 32000-1 Annex C.2 gives 14,400 units as the implementation
 * limit readers keep to.
 */
export const MAX_PAGE_SIDE_POINTS = 14_400;
/** Smallest page side in points (ISO 32000-1 Annex C.2). */
export const MIN_PAGE_SIDE_POINTS = 3;
/**
 * Most pages one drawing may take. A document that needs more is refused (`file_too_large`)
 * rather than drawn for the rest of its time budget.
 */
export const MAX_DRAWN_PAGES = 5_000;
/** Shown where the standard fonts' WinAnsi encoding has no glyph for a character. */
const REPLACEMENT_CHARACTER = '?';
const PAGE_MARGIN_POINTS = 48;
const CELL_PADDING_POINTS = 3;
const LINE_HEIGHT_RATIO = 1.25;
/** Widest a table column may start before wrapping, as a share of the text width. */
const MAX_COLUMN_SHARE = 0.45;
const MIN_COLUMN_POINTS = 24;
/** Grey of table grids and rules (DeviceGray). */
const GRID_GREY = 0.7;
const GRID_LINE_POINTS = 0.5;

/** Typefaces of the standard 14 fonts this layout uses. */
export type FontStyle = 'regular' | 'bold' | 'italic' | 'mono';

/** The four standard fonts, embedded once per document, and the text they can encode. */
export interface FontSet {
  readonly fonts: Readonly<Record<FontStyle, PDFFont>>;
  /**
   * `text` with every character the WinAnsi encoding cannot show replaced by `?`, and tabs and
   * other controls but line feeds by spaces, so drawing never throws on foreign scripts.
   */
  encodable(text: string): string;
}

/** Embeds Helvetica (regular, bold, oblique) and Courier into `document`. */
async function embedFonts(document: PDFDocument): Promise<FontSet> {
  const fonts = {
    regular: await document.embedFont(StandardFonts.Helvetica),
    bold: await document.embedFont(StandardFonts.HelveticaBold),
    italic: await document.embedFont(StandardFonts.HelveticaOblique),
    mono: await document.embedFont(StandardFonts.Courier),
  };
  // All four share the WinAnsi encoding (ISO 32000-1 Annex D.2).
  const supported = new Set(fonts.regular.getCharacterSet());
  return {
    fonts,
    encodable(text) {
      let out = '';
      for (const character of text) {
        const code = character.codePointAt(0) ?? 0;
        if (character === '\n') out += character;
        else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += ' ';
        else out += supported.has(code) ? character : REPLACEMENT_CHARACTER;
      }
      return out;
    },
  };
}

/** Glyph widths of each font at size 1, by character. */
const GLYPH_WIDTHS = new WeakMap<PDFFont, Map<string, number>>();

/**
 * The width of `text` at `size` as `Tj` draws it: glyph widths summed, without the kerning that
 * pdf-lib's own measure adds but its `drawText` does not apply.
 */
function textWidth(font: PDFFont, text: string, size: number): number {
  let widths = GLYPH_WIDTHS.get(font);
  if (widths === undefined) {
    widths = new Map();
    GLYPH_WIDTHS.set(font, widths);
  }
  let total = 0;
  for (const character of text) {
    let glyph = widths.get(character);
    if (glyph === undefined) {
      glyph = font.widthOfTextAtSize(character, 1);
      widths.set(character, glyph);
    }
    total += glyph;
  }
  return total * size;
}

/**
 * Wraps `text` into lines no wider than `width` at `size`; `\n` always breaks a line. Linear in
 * the text: each word is measured once.
 */
export function wrapText(text: string, font: PDFFont, size: number, width: number): string[] {
  const space = textWidth(font, ' ', size);
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    // `words` keeps the empty words between repeated spaces, so preformatted text keeps its
    // indentation; `fresh` tells a line that has nothing yet from one holding an empty word.
    let line = '';
    let lineWidth = 0;
    let fresh = true;
    for (const word of paragraph.split(' ')) {
      const wordWidth = textWidth(font, word, size);
      const joined = fresh ? wordWidth : lineWidth + space + wordWidth;
      if (joined <= width) {
        line = fresh ? word : `${line} ${word}`;
        lineWidth = joined;
        fresh = false;
        continue;
      }
      if (!fresh) lines.push(line);
      line = word;
      lineWidth = wordWidth;
      fresh = false;
      if (wordWidth <= width) continue;
      // A word wider than the line (a URL, a long number) is cut where it reaches the edge.
      line = '';
      lineWidth = 0;
      for (const character of word) {
        const glyph = textWidth(font, character, size);
        if (line !== '' && lineWidth + glyph > width) {
          lines.push(line);
          line = '';
          lineWidth = 0;
        }
        line += character;
        lineWidth += glyph;
      }
    }
    lines.push(line);
  }
  return lines;
}

/** A line of text to draw at a baseline position, in points. */
export interface TextRun {
  readonly x: number;
  readonly y: number;
  readonly text: string;
}

/** Resource names of the fonts used on each page. */
const FONT_NAMES = new WeakMap<PDFPage, Map<PDFFont, PDFName>>();

/**
 * Draws `runs` (already encodable) in one text object (ISO 32000-1 9.4): pdf-lib's `drawText`
 * writes about ten operators per line, and a page of table cells made the garbage collector the
 * renderer's main cost.
 */
export function drawTextRuns(
  page: PDFPage,
  font: PDFFont,
  size: number,
  runs: readonly TextRun[],
): void {
  const shown = runs.filter((run) => run.text !== '');
  if (shown.length === 0) return;
  let names = FONT_NAMES.get(page);
  if (names === undefined) {
    names = new Map();
    FONT_NAMES.set(page, names);
  }
  let name = names.get(font);
  if (name === undefined) {
    name = page.node.newFontDictionary(font.name, font.ref);
    names.set(font, name);
  }
  const operators: PDFOperator[] = [pushGraphicsState(), beginText(), setFontAndSize(name, size)];
  for (const run of shown) {
    operators.push(setTextMatrix(1, 0, 0, 1, run.x, run.y), showText(font.encodeText(run.text)));
  }
  operators.push(endText(), popGraphicsState());
  page.pushOperators(...operators);
}

/** Strokes thin grey rectangles and lines, in one path. */
function drawGrid(
  page: PDFPage,
  rectangles: readonly { x: number; y: number; width: number; height: number }[],
  lines: readonly { x1: number; y1: number; x2: number; y2: number }[] = [],
): void {
  page.pushOperators(
    pushGraphicsState(),
    setLineWidth(GRID_LINE_POINTS),
    setStrokingGrayscaleColor(GRID_GREY),
    ...rectangles.map((box) => rectangle(box.x, box.y, box.width, box.height)),
    ...lines.flatMap((line) => [moveTo(line.x1, line.y1), lineTo(line.x2, line.y2)]),
    stroke(),
    popGraphicsState(),
  );
}

/** How a paragraph is set. */
export interface ParagraphStyle {
  readonly font?: FontStyle;
  /** Points. @default 10 */
  readonly size?: number;
  /** Left indent in points. */
  readonly indent?: number;
  /** Drawn in the indent before the first line, e.g. a list bullet. */
  readonly marker?: string;
  /** Space after, in points. @default half the line height */
  readonly spaceAfter?: number;
}

/** A table cell: its text, bold for a header cell. */
export interface TableCell {
  readonly text: string;
  readonly header?: boolean;
}

/**
 * A document being drawn top to bottom. `check` runs before each block, so a drawing stops when
 * the caller's time runs out.
 */
export class PdfFlow {
  readonly document: PDFDocument;
  readonly #fonts: FontSet;
  readonly #size: PageSize;
  readonly #check: () => void;
  #page: PDFPage | undefined;
  #y = 0;

  private constructor(document: PDFDocument, fonts: FontSet, size: PageSize, check: () => void) {
    this.document = document;
    this.#fonts = fonts;
    this.#size = size;
    this.#check = check;
  }

  /** A new document with no page yet; the first block opens one of `size`. */
  static async create(size: PageSize, check: () => void): Promise<PdfFlow> {
    const document = await PDFDocument.create({ updateMetadata: false });
    return new PdfFlow(document, await embedFonts(document), size, check);
  }

  /** The fonts of this document. */
  get fonts(): FontSet {
    return this.#fonts;
  }

  get #textWidth(): number {
    return this.#size.width - 2 * PAGE_MARGIN_POINTS;
  }

  /** Starts the next block on a new page (a new sheet, a new slide). */
  newPage(): PDFPage {
    this.#check();
    if (this.document.getPageCount() >= MAX_DRAWN_PAGES) {
      throw new Rejection(
        'file_too_large',
        `the document would take more than ${MAX_DRAWN_PAGES} pages to print`,
      );
    }
    const page = this.document.addPage([this.#size.width, this.#size.height]);
    this.#page = page;
    this.#y = this.#size.height - PAGE_MARGIN_POINTS;
    return page;
  }

  /** The current page with at least `height` points left, a new one when it has not. */
  #room(height: number): PDFPage {
    if (this.#page !== undefined && this.#y - height >= PAGE_MARGIN_POINTS) return this.#page;
    return this.newPage();
  }

  /** A heading of level 1 (largest) to 6. */
  heading(text: string, level: number): void {
    const size = [20, 16, 14, 12, 11, 10][Math.min(Math.max(level, 1), 6) - 1] ?? 10;
    this.#y -= size * 0.5;
    this.paragraph(text, { font: 'bold', size, spaceAfter: size * 0.4 });
  }

  /** A block of text, wrapped to the text width (preformatted text keeps its line breaks). */
  paragraph(text: string, style: ParagraphStyle = {}): void {
    this.#check();
    const font = this.#fonts.fonts[style.font ?? 'regular'];
    const size = style.size ?? 10;
    const indent = style.indent ?? 0;
    const lineHeight = size * LINE_HEIGHT_RATIO;
    const lines = wrapText(this.#fonts.encodable(text), font, size, this.#textWidth - indent);
    lines.forEach((line, index) => {
      const page = this.#room(lineHeight);
      this.#y -= lineHeight;
      const baseline = this.#y + (lineHeight - size) / 2 + size * 0.2;
      const runs: TextRun[] = [{ x: PAGE_MARGIN_POINTS + indent, y: baseline, text: line }];
      if (index === 0 && style.marker !== undefined) {
        const marker = this.#fonts.encodable(style.marker);
        const x = PAGE_MARGIN_POINTS + indent - textWidth(font, marker, size) - 4;
        runs.push({ x: Math.max(x, 0), y: baseline, text: marker });
      }
      drawTextRuns(page, font, size, runs);
    });
    this.#y -= style.spaceAfter ?? lineHeight / 2;
  }

  /** A thin line across the text width. */
  rule(): void {
    const page = this.#room(12);
    this.#y -= 6;
    const right = PAGE_MARGIN_POINTS + this.#textWidth;
    drawGrid(page, [], [{ x1: PAGE_MARGIN_POINTS, y1: this.#y, x2: right, y2: this.#y }]);
    this.#y -= 6;
  }

  /**
   * A grid of cells. Columns take the width their text needs up to a share of the page; a table
   * wider than the page is printed in bands of columns, one after the other, and a row taller
   * than what is left of a page goes on over the next.
   */
  table(rows: readonly (readonly TableCell[])[], size = 9): void {
    const columns = Math.max(0, ...rows.map((row) => row.length));
    if (columns === 0) return;
    const padding = CELL_PADDING_POINTS;
    const widths = Array.from({ length: columns }, (_, column) => {
      let natural = MIN_COLUMN_POINTS;
      for (const row of rows) {
        const cell = row[column];
        if (cell === undefined) continue;
        const font = this.#fonts.fonts[cell.header === true ? 'bold' : 'regular'];
        for (const line of this.#fonts.encodable(cell.text).split('\n')) {
          natural = Math.max(natural, Math.ceil(textWidth(font, line, size) + 2 * padding));
        }
      }
      return Math.min(natural, this.#textWidth * MAX_COLUMN_SHARE);
    });
    let first = 0;
    while (first < columns) {
      let last = first;
      let total = widths[first] ?? 0;
      while (last + 1 < columns && total + (widths[last + 1] ?? 0) <= this.#textWidth) {
        last += 1;
        total += widths[last] ?? 0;
      }
      this.#band(rows, widths, first, last, size);
      first = last + 1;
    }
  }

  #band(
    rows: readonly (readonly TableCell[])[],
    widths: readonly number[],
    first: number,
    last: number,
    size: number,
  ): void {
    const lineHeight = size * LINE_HEIGHT_RATIO;
    const padding = CELL_PADDING_POINTS;
    for (const row of rows) {
      this.#check();
      const cells: { lines: string[]; font: PDFFont; width: number }[] = [];
      for (let column = first; column <= last; column += 1) {
        const cell = row[column];
        const font = this.#fonts.fonts[cell?.header === true ? 'bold' : 'regular'];
        const width = widths[column] ?? MIN_COLUMN_POINTS;
        const text = this.#fonts.encodable(cell?.text ?? '');
        cells.push({ lines: wrapText(text, font, size, width - 2 * padding), font, width });
      }
      const height = Math.max(...cells.map((cell) => cell.lines.length));
      let from = 0;
      while (from < height) {
        const page = this.#room(lineHeight + 2 * padding);
        const fit = Math.max(
          1,
          Math.floor((this.#y - PAGE_MARGIN_POINTS - 2 * padding) / lineHeight),
        );
        const count = Math.min(fit, height - from);
        const rowHeight = count * lineHeight + 2 * padding;
        const boxes: { x: number; y: number; width: number; height: number }[] = [];
        const runs = new Map<PDFFont, TextRun[]>();
        let x = PAGE_MARGIN_POINTS;
        for (const cell of cells) {
          boxes.push({ x, y: this.#y - rowHeight, width: cell.width, height: rowHeight });
          const fontRuns = runs.get(cell.font) ?? [];
          runs.set(cell.font, fontRuns);
          cell.lines.slice(from, from + count).forEach((line, index) => {
            const y =
              this.#y - padding - (index + 1) * lineHeight + (lineHeight - size) / 2 + size * 0.2;
            fontRuns.push({ x: x + padding, y, text: line });
          });
          x += cell.width;
        }
        drawGrid(page, boxes);
        for (const [font, fontRuns] of runs) drawTextRuns(page, font, size, fontRuns);
        this.#y -= rowHeight;
        from += count;
        // A row split over pages goes on at the top of the next.
        if (from < height) this.newPage();
      }
    }
    this.#y -= lineHeight;
  }

  /** A picture, at 96 pixels per inch, shrunk to the text width and page height. */
  picture(picture: Picture): void {
    this.#check();
    const maxHeight = this.#size.height - 2 * PAGE_MARGIN_POINTS;
    const scale = Math.min(0.75, this.#textWidth / picture.width, maxHeight / picture.height);
    const width = picture.width * scale;
    const height = picture.height * scale;
    const page = this.#room(height + 6);
    this.#y -= height;
    drawPicture(this.document, page, picture, { x: PAGE_MARGIN_POINTS, y: this.#y, width, height });
    this.#y -= 6;
  }

  /** The PDF, with at least one page. */
  async save(): Promise<Uint8Array> {
    if (this.document.getPageCount() === 0) this.newPage();
    return this.document.save({ useObjectStreams: false });
  }
}
