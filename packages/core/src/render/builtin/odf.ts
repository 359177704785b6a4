import type { PDFFont } from '@cantoo/pdf-lib';

import { decodeXmlText, MAX_XML_PART_BYTES } from '../../_internal/xml.ts';
import { XmlReader } from '../../_internal/xml-reader.ts';
import type { XmlElementNode } from '../../_internal/xml-reader.ts';
import { openZip, readMember } from '../../_internal/zip-reader.ts';
import { Rejection } from '../../_internal/rejection.ts';
import type { PageSize, TableCell } from './_flow.ts';
import {
  A4_LANDSCAPE_PAGE,
  drawTextRuns,
  MAX_DRAWN_PAGES,
  MAX_PAGE_SIDE_POINTS,
  MIN_PAGE_SIDE_POINTS,
  PdfFlow,
  wrapText,
} from './_flow.ts';
import { decodePicture, drawPicture, MAX_PICTURES } from './_pictures.ts';

/**
 * Most cells one spreadsheet draws, counting each repeated one: a sheet beyond it is refused
 * (`file_too_large`). 200,000 cells print on about 2,000 landscape pages.
 */
export const MAX_SHEET_CELLS = 200_000;
/** Most parts a package may list: a disarmed one lists its content, styles and pictures. */
const MAX_PACKAGE_ENTRIES = 10_000;
/** 16:9 slide in LibreOffice Impress, 28 cm by 15.75 cm, used when styles.xml names no size. */
const DEFAULT_SLIDE: PageSize = { width: 793.7, height: 446.46 };
const MIN_SLIDE_FONT_POINTS = 6;

const NS = {
  office: 'urn:oasis:names:tc:opendocument:xmlns:office:1.0',
  table: 'urn:oasis:names:tc:opendocument:xmlns:table:1.0',
  text: 'urn:oasis:names:tc:opendocument:xmlns:text:1.0',
  draw: 'urn:oasis:names:tc:opendocument:xmlns:drawing:1.0',
  presentation: 'urn:oasis:names:tc:opendocument:xmlns:presentation:1.0',
  style: 'urn:oasis:names:tc:opendocument:xmlns:style:1.0',
  fo: 'urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0',
  svg: 'urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0',
  xlink: 'http://www.w3.org/1999/xlink',
} as const;

/** Points per unit of the ODF lengths (ODF 1.3 part 3 §18.3.18, XSL-FO units). */
const POINTS_PER_UNIT: Readonly<Record<string, number>> = {
  pt: 1,
  pc: 12,
  in: 72,
  cm: 72 / 2.54,
  mm: 72 / 25.4,
  px: 0.75,
};

/** A disarmed OpenDocument package's parts by name, read on demand. */
interface OdfPackage {
  read(name: string): Promise<Uint8Array | undefined>;
}

async function withPackage<T>(bytes: Uint8Array, use: (pkg: OdfPackage) => Promise<T>): Promise<T> {
  const listing = await openZip(bytes, MAX_PACKAGE_ENTRIES);
  try {
    const members = new Map(listing.members.map((member) => [member.name, member]));
    return await use({
      async read(name) {
        const member = members.get(name);
        if (member === undefined || member.isDirectory) return undefined;
        return readMember(listing, member, MAX_XML_PART_BYTES, name);
      },
    });
  } finally {
    listing.file.close();
  }
}

function attribute(element: XmlElementNode, uri: string, local: string): string | undefined {
  return element.attributes.find((item) => item.uri === uri && item.local === local)?.value;
}

function is(element: XmlElementNode, uri: string, local: string): boolean {
  return element.uri === uri && element.localName === local;
}

/** An ODF length (`2.5cm`, `12pt`) in points, or `undefined`. */
function toPoints(value: string | undefined): number | undefined {
  const match = /^\s*(-?[0-9]*\.?[0-9]+)\s*(pt|pc|in|cm|mm|px)\s*$/.exec(value ?? '');
  if (match === null) return undefined;
  const points = Number(match[1]) * (POINTS_PER_UNIT[match[2] ?? ''] ?? 1);
  return Number.isFinite(points) ? points : undefined;
}

/** A count attribute (`table:number-rows-repeated`), at least 1. */
function repeatOf(element: XmlElementNode, local: string): number {
  const value = Number(attribute(element, NS.table, local) ?? 1);
  return Number.isSafeInteger(value) && value > 0 ? value : 1;
}

/**
 * Gathers the text of ODF paragraphs (ODF 1.3 part 3 §6.1: `text:s` spaces, `text:tab`,
 * `text:line-break`) as lines. Annotations and notes are not printed, so their text is skipped.
 */
class ParagraphText {
  lines: string[] = [];
  #current: string | undefined;
  #skipped = 0;

  open(element: XmlElementNode): void {
    if (
      is(element, NS.office, 'annotation') ||
      is(element, NS.presentation, 'notes') ||
      is(element, NS.text, 'note-body') ||
      is(element, NS.text, 'note-citation')
    ) {
      this.#skipped += 1;
    }
    if (this.#skipped > 0) return;
    if (is(element, NS.text, 'p') || is(element, NS.text, 'h')) {
      this.#current = '';
    } else if (is(element, NS.text, 's')) {
      const count = Number(attribute(element, NS.text, 'c') ?? 1);
      this.#append(' '.repeat(Number.isSafeInteger(count) ? Math.min(Math.max(count, 1), 256) : 1));
    } else if (is(element, NS.text, 'tab')) {
      this.#append('    ');
    } else if (is(element, NS.text, 'line-break')) {
      this.#append('\n');
    }
  }

  close(element: XmlElementNode): void {
    if (
      is(element, NS.office, 'annotation') ||
      is(element, NS.presentation, 'notes') ||
      is(element, NS.text, 'note-body') ||
      is(element, NS.text, 'note-citation')
    ) {
      this.#skipped -= 1;
      return;
    }
    if (this.#skipped > 0) return;
    if ((is(element, NS.text, 'p') || is(element, NS.text, 'h')) && this.#current !== undefined) {
      this.lines.push(this.#current);
      this.#current = undefined;
    }
  }

  text(text: string): void {
    if (this.#skipped === 0) this.#append(text);
  }

  #append(text: string): void {
    if (this.#current !== undefined) this.#current += text;
  }

  /** The lines gathered since the last call, and a fresh start. */
  take(): string[] {
    const lines = this.lines;
    this.lines = [];
    this.#current = undefined;
    return lines;
  }
}

interface Sheet {
  readonly name: string;
  readonly rows: TableCell[][];
}

/**
 * Draws a disarmed spreadsheet (`.ods`) as a PDF on A4 landscape: every sheet from a new page,
 * its name as a heading, its used cells as a grid (the displayed values, as written in each
 * cell's paragraphs). Empty rows and columns past the last used cell are not printed, and wide
 * sheets print in bands of columns.
 * @throws {Rejection} `file_too_large` past {@link MAX_SHEET_CELLS}.
 */
export async function renderSpreadsheet(bytes: Uint8Array, check: () => void): Promise<Uint8Array> {
  const content = await withPackage(bytes, (pkg) => pkg.read('content.xml'));
  const sheets = content === undefined ? [] : readSheets(content);
  const flow = await PdfFlow.create(A4_LANDSCAPE_PAGE, check);
  for (const sheet of sheets) {
    flow.newPage();
    flow.heading(sheet.name, 2);
    flow.table(sheet.rows, 8);
  }
  return flow.save();
}

function readSheets(content: Uint8Array): Sheet[] {
  const sheets: Sheet[] = [];
  const text = new ParagraphText();
  let cells = 0;
  let sheet: Sheet | undefined;
  let row: TableCell[] | undefined;
  let rowRepeat = 1;
  /** Rows with no text yet to be printed, waiting for a later row with text. */
  let emptyRows = 0;
  /** Cells with no text in the row being read, waiting for a later cell with text. */
  let emptyCells = 0;
  let cellRepeat = 1;
  let depth = 0;
  const count = (added: number): void => {
    cells += added;
    if (cells > MAX_SHEET_CELLS) {
      throw new Rejection(
        'file_too_large',
        `the spreadsheet has more than ${MAX_SHEET_CELLS} cells with content to print`,
      );
    }
  };
  new XmlReader(decodeXmlText(content), 'content.xml', {
    open(element) {
      if (is(element, NS.table, 'table')) {
        depth += 1;
        // A table inside a cell (ODF 1.3 §9.1.7, sub-tables) is printed as that cell's text.
        if (depth === 1) {
          sheet = {
            name: attribute(element, NS.table, 'name') ?? `Sheet ${sheets.length + 1}`,
            rows: [],
          };
          sheets.push(sheet);
          emptyRows = 0;
        }
      } else if (depth === 1 && is(element, NS.table, 'table-row')) {
        row = [];
        rowRepeat = repeatOf(element, 'number-rows-repeated');
        emptyCells = 0;
      } else if (
        depth === 1 &&
        (is(element, NS.table, 'table-cell') || is(element, NS.table, 'covered-table-cell'))
      ) {
        cellRepeat = repeatOf(element, 'number-columns-repeated');
        text.take();
      }
      text.open(element);
    },
    close(element) {
      text.close(element);
      if (is(element, NS.table, 'table')) {
        depth -= 1;
      } else if (
        depth === 1 &&
        row !== undefined &&
        (is(element, NS.table, 'table-cell') || is(element, NS.table, 'covered-table-cell'))
      ) {
        const value = text.take().join('\n');
        if (value.trim() === '') {
          emptyCells += cellRepeat;
          return;
        }
        count(emptyCells + cellRepeat);
        for (let index = 0; index < emptyCells; index += 1) row.push({ text: '' });
        for (let index = 0; index < cellRepeat; index += 1) row.push({ text: value });
        emptyCells = 0;
      } else if (depth === 1 && sheet !== undefined && is(element, NS.table, 'table-row')) {
        const current = row ?? [];
        row = undefined;
        if (current.length === 0) {
          emptyRows += rowRepeat;
          return;
        }
        count(emptyRows + current.length * rowRepeat);
        for (let index = 0; index < emptyRows; index += 1) sheet.rows.push([]);
        for (let index = 0; index < rowRepeat; index += 1) sheet.rows.push(current);
        emptyRows = 0;
      }
    },
    text(value) {
      text.text(value);
    },
  }).read();
  // An empty row between two used ones still takes its line.
  for (const each of sheets) {
    for (let index = 0; index < each.rows.length; index += 1) {
      if (each.rows[index]?.length === 0) each.rows[index] = [{ text: '' }];
    }
  }
  return sheets;
}

interface SlideItem {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly lines: readonly string[];
  readonly title: boolean;
  readonly picture?: string;
}

interface Slide {
  readonly masterPage: string | undefined;
  readonly items: SlideItem[];
}

/**
 * Draws a disarmed presentation (`.odp`) as a PDF: one page per slide at the slide's size (from
 * its master page's layout in `styles.xml`), each shape's text where the shape stands, shrunk
 * to fit it, and each picture in its frame. Speaker notes are not printed.
 */
export async function renderPresentation(
  bytes: Uint8Array,
  check: () => void,
): Promise<Uint8Array> {
  const { slides, sizes, pictures } = await withPackage(bytes, async (pkg) => {
    const content = await pkg.read('content.xml');
    const styles = await pkg.read('styles.xml');
    const read = content === undefined ? [] : readSlides(content);
    const pictureBytes = new Map<string, Uint8Array>();
    for (const slide of read) {
      for (const item of slide.items) {
        if (item.picture === undefined || pictureBytes.has(item.picture)) continue;
        if (pictureBytes.size >= MAX_PICTURES) break;
        const picture = await pkg.read(item.picture);
        if (picture !== undefined) pictureBytes.set(item.picture, picture);
      }
    }
    return {
      slides: read,
      sizes: styles === undefined ? new Map<string, PageSize>() : readSlideSizes(styles),
      pictures: pictureBytes,
    };
  });
  const fallback = sizes.values().next().value ?? DEFAULT_SLIDE;
  const flow = await PdfFlow.create(fallback, check);
  const { document, fonts } = flow;
  for (const slide of slides) {
    check();
    const size =
      (slide.masterPage === undefined ? undefined : sizes.get(slide.masterPage)) ?? fallback;
    const page = document.addPage([size.width, size.height]);
    if (document.getPageCount() > MAX_DRAWN_PAGES) {
      throw new Rejection(
        'file_too_large',
        `the presentation has more than ${MAX_DRAWN_PAGES} slides to print`,
      );
    }
    for (const item of slide.items) {
      const top = size.height - item.y;
      if (item.picture !== undefined) {
        const source = pictures.get(item.picture);
        const picture = source === undefined ? undefined : await decodePicture(source);
        if (picture === undefined || item.width <= 0 || item.height <= 0) continue;
        drawPicture(document, page, picture, {
          x: item.x,
          y: top - item.height,
          width: item.width,
          height: item.height,
        });
        continue;
      }
      const font = fonts.fonts[item.title ? 'bold' : 'regular'];
      const width = Math.max(item.width, 24);
      const text = fonts.encodable(item.lines.join('\n'));
      const { size: fontSize, lines } = fitText(
        text,
        font,
        width,
        item.height,
        item.title ? 32 : 18,
      );
      const lineHeight = fontSize * 1.2;
      drawTextRuns(
        page,
        font,
        fontSize,
        lines.map((line, index) => ({
          x: item.x,
          y: top - (index + 1) * lineHeight + fontSize * 0.25,
          text: line,
        })),
      );
    }
  }
  if (document.getPageCount() === 0) document.addPage([fallback.width, fallback.height]);
  return document.save({ useObjectStreams: false });
}

/** The largest size up to `start` at which `text` wrapped to `width` fits `height`. */
function fitText(
  text: string,
  font: PDFFont,
  width: number,
  height: number,
  start: number,
): { size: number; lines: string[] } {
  let size = start;
  for (;;) {
    const lines = wrapText(text, font, size, width);
    if (lines.length * size * 1.2 <= height || size <= MIN_SLIDE_FONT_POINTS)
      return { size, lines };
    size = Math.max(MIN_SLIDE_FONT_POINTS, size * 0.85);
  }
}

/** Shapes that stand on a slide with a position and size (ODF 1.3 part 3 §10.3, §10.4). */
const SHAPES = new Set([
  'frame',
  'rect',
  'custom-shape',
  'ellipse',
  'circle',
  'polygon',
  'polyline',
  'path',
  'caption',
  'measure',
  'regular-polygon',
]);

function readSlides(content: Uint8Array): Slide[] {
  const slides: Slide[] = [];
  const text = new ParagraphText();
  let slide: Slide | undefined;
  let shape: { item: Omit<SlideItem, 'lines'>; depth: number } | undefined;
  let depth = 0;
  new XmlReader(decodeXmlText(content), 'content.xml', {
    open(element) {
      depth += 1;
      if (is(element, NS.draw, 'page')) {
        slide = { masterPage: attribute(element, NS.draw, 'master-page-name'), items: [] };
        slides.push(slide);
      } else if (
        slide !== undefined &&
        shape === undefined &&
        element.uri === NS.draw &&
        SHAPES.has(element.localName)
      ) {
        text.take();
        const x = toPoints(attribute(element, NS.svg, 'x')) ?? 0;
        const y = toPoints(attribute(element, NS.svg, 'y')) ?? 0;
        shape = {
          depth,
          item: {
            x,
            y,
            width: toPoints(attribute(element, NS.svg, 'width')) ?? 0,
            height: toPoints(attribute(element, NS.svg, 'height')) ?? 0,
            title: (attribute(element, NS.presentation, 'class') ?? '').includes('title'),
          },
        };
      } else if (
        shape !== undefined &&
        is(element, NS.draw, 'image') &&
        shape.item.picture === undefined
      ) {
        const href = attribute(element, NS.xlink, 'href');
        // Only a picture inside the package: a disarmed package links nothing outside it.
        if (href !== undefined && /^(?:\.\/)?Pictures\/[^/]+$/.test(href)) {
          shape.item = { ...shape.item, picture: href.replace(/^\.\//, '') };
        }
      }
      text.open(element);
    },
    close(element) {
      text.close(element);
      if (shape?.depth === depth && slide !== undefined) {
        const lines = text.take();
        if (shape.item.picture !== undefined || lines.some((line) => line.trim() !== '')) {
          slide.items.push({ ...shape.item, lines });
        }
        shape = undefined;
      }
      depth -= 1;
    },
    text(value) {
      if (shape !== undefined) text.text(value);
    },
  }).read();
  return slides;
}

/** Slide sizes by master page name, from the page layouts of `styles.xml` (ODF 1.3 §16.5). */
function readSlideSizes(styles: Uint8Array): Map<string, PageSize> {
  const layouts = new Map<string, PageSize>();
  const masters = new Map<string, string>();
  let layout: string | undefined;
  new XmlReader(decodeXmlText(styles), 'styles.xml', {
    open(element) {
      if (is(element, NS.style, 'page-layout')) {
        layout = attribute(element, NS.style, 'name');
      } else if (is(element, NS.style, 'page-layout-properties') && layout !== undefined) {
        const width = toPoints(attribute(element, NS.fo, 'page-width'));
        const height = toPoints(attribute(element, NS.fo, 'page-height'));
        if (width !== undefined && height !== undefined) {
          layouts.set(layout, {
            width: clampSide(width),
            height: clampSide(height),
          });
        }
      } else if (is(element, NS.style, 'master-page')) {
        const name = attribute(element, NS.style, 'name');
        const pageLayout = attribute(element, NS.style, 'page-layout-name');
        if (name !== undefined && pageLayout !== undefined) masters.set(name, pageLayout);
      }
    },
  }).read();
  const sizes = new Map<string, PageSize>();
  for (const [master, pageLayout] of masters) {
    const size = layouts.get(pageLayout);
    if (size !== undefined) sizes.set(master, size);
  }
  return sizes;
}

function clampSide(points: number): number {
  return Math.min(MAX_PAGE_SIDE_POINTS, Math.max(MIN_PAGE_SIDE_POINTS, points));
}
