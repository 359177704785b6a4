import { Rejection } from '../../_internal/rejection.ts';
import type { TableCell } from './_flow.ts';
import { A4_PAGE, PdfFlow } from './_flow.ts';
import { tokenizeHtml } from './_html-tokens.ts';
import { dataUrlBytes, decodePicture, MAX_PICTURES } from './_pictures.ts';

/**
 * Most table cells one HTML document draws (about 2,000 pages of them); a document with more is
 * refused (`file_too_large`) rather than drawn for the rest of its time budget.
 */
export const MAX_HTML_TABLE_CELLS = 200_000;

/** Elements that end the text before them and start a new block. */
const BLOCK_ELEMENTS = new Set([
  'address',
  'article',
  'aside',
  'blockquote',
  'body',
  'center',
  'dd',
  'details',
  'div',
  'dl',
  'dt',
  'fieldset',
  'figcaption',
  'figure',
  'footer',
  'form',
  'header',
  'hgroup',
  'legend',
  'li',
  'main',
  'nav',
  'ol',
  'p',
  'pre',
  'section',
  'summary',
  'ul',
  'caption',
]);
const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** One block of the drawing, in document order. */
type Block =
  | { readonly type: 'heading'; readonly level: number; readonly text: string }
  | {
      readonly type: 'paragraph';
      readonly text: string;
      readonly pre: boolean;
      readonly indent: number;
      readonly marker?: string;
    }
  | { readonly type: 'table'; readonly rows: TableCell[][] }
  | { readonly type: 'image'; readonly bytes: Uint8Array }
  | { readonly type: 'rule' };

interface ListState {
  readonly ordered: boolean;
  counter: number;
}

interface TableState {
  readonly rows: TableCell[][];
  cell: { text: string; header: boolean } | undefined;
}

/**
 * Draws a sanitised HTML document as a plain PDF on A4: its headings, paragraphs, lists, tables,
 * preformatted text and inline (`data:`) pictures, in the standard fonts. Styles, layout and any
 * picture not inline are not drawn; nothing is fetched.
 */
export async function renderHtml(markup: string, check: () => void): Promise<Uint8Array> {
  const blocks = readBlocks(markup);
  const flow = await PdfFlow.create(A4_PAGE, check);
  let pictures = 0;
  for (const block of blocks) {
    switch (block.type) {
      case 'heading':
        flow.heading(block.text, block.level);
        break;
      case 'paragraph':
        flow.paragraph(block.text, {
          font: block.pre ? 'mono' : 'regular',
          indent: block.indent,
          ...(block.marker === undefined ? {} : { marker: block.marker }),
        });
        break;
      case 'table':
        flow.table(block.rows);
        break;
      case 'rule':
        flow.rule();
        break;
      case 'image': {
        if (pictures >= MAX_PICTURES) break;
        pictures += 1;
        check();
        const picture = await decodePicture(block.bytes);
        if (picture !== undefined) flow.picture(picture);
        break;
      }
    }
  }
  return flow.save();
}

/** The blocks of `markup`: text gathered between block boundaries, white space collapsed. */
function readBlocks(markup: string): Block[] {
  const blocks: Block[] = [];
  const lists: ListState[] = [];
  const tables: TableState[] = [];
  let cells = 0;
  let text = '';
  let marker: string | undefined;
  let heading = 0;
  let pre = 0;
  let quote = 0;

  const indent = (): number => 18 * (lists.length + quote);
  const flush = (): void => {
    const table = tables.at(-1);
    if (table !== undefined) return;
    const content = pre > 0 ? text.replace(/^\n|\n$/g, '') : text.trim();
    if (content !== '' || marker !== undefined) {
      if (heading > 0) blocks.push({ type: 'heading', level: heading, text: content });
      else {
        blocks.push({
          type: 'paragraph',
          text: content,
          pre: pre > 0,
          indent: indent(),
          ...(marker === undefined ? {} : { marker }),
        });
      }
    }
    text = '';
    marker = undefined;
  };
  const append = (value: string): void => {
    const cell = tables.at(-1)?.cell;
    if (cell !== undefined) {
      cell.text += value;
      return;
    }
    if (tables.length > 0) return;
    text += value;
  };
  const collapse = (value: string): string => {
    if (pre > 0) return value;
    const spaced = value.replace(/[\t\n\f\r ]+/g, ' ');
    const current = tables.at(-1)?.cell?.text ?? text;
    return current === '' || current.endsWith(' ') || current.endsWith('\n')
      ? spaced.replace(/^ /, '')
      : spaced;
  };

  for (const token of tokenizeHtml(markup)) {
    if (token.type === 'text') {
      append(collapse(token.text));
      continue;
    }
    const { name } = token;
    const table = tables.at(-1);
    if (token.type === 'start') {
      if (name === 'br') {
        append('\n');
      } else if (name === 'hr') {
        flush();
        if (table === undefined) blocks.push({ type: 'rule' });
      } else if (name === 'img') {
        const bytes = dataUrlBytes(token.attributes.get('src') ?? '');
        const alt = token.attributes.get('alt') ?? '';
        if (bytes !== undefined && table === undefined) {
          flush();
          blocks.push({ type: 'image', bytes });
        } else if (alt !== '') {
          append(collapse(` [${alt}] `));
        }
      } else if (name === 'table') {
        flush();
        // A table inside a cell is drawn as that cell's text.
        if (table?.cell === undefined) tables.push({ rows: [], cell: undefined });
        else append(' ');
      } else if (name === 'tr' && table !== undefined) {
        closeCell(table);
        table.rows.push([]);
      } else if ((name === 'td' || name === 'th') && table !== undefined) {
        closeCell(table);
        cells += 1;
        if (cells > MAX_HTML_TABLE_CELLS) {
          throw new Rejection(
            'file_too_large',
            `the HTML document has more than ${MAX_HTML_TABLE_CELLS} table cells to print`,
          );
        }
        if (table.rows.length === 0) table.rows.push([]);
        table.cell = { text: '', header: name === 'th' };
      } else if (HEADINGS.has(name)) {
        flush();
        heading = Number(name.slice(1));
      } else if (name === 'ul' || name === 'ol') {
        flush();
        lists.push({ ordered: name === 'ol', counter: Number(token.attributes.get('start') ?? 1) });
      } else if (name === 'li') {
        flush();
        const list = lists.at(-1);
        if (list === undefined) marker = '•';
        else if (list.ordered) marker = `${Number.isFinite(list.counter) ? list.counter : 1}.`;
        else marker = lists.length % 2 === 1 ? '•' : '-';
        if (list !== undefined) list.counter += 1;
      } else if (name === 'pre') {
        flush();
        pre += 1;
      } else if (name === 'blockquote') {
        flush();
        quote += 1;
      } else if (BLOCK_ELEMENTS.has(name)) {
        flush();
      }
      continue;
    }
    // An end tag.
    if (name === 'table' && table !== undefined && table.cell === undefined) {
      tables.pop();
      if (tables.length === 0) {
        const rows = table.rows.filter((row) => row.length > 0);
        if (rows.length > 0) blocks.push({ type: 'table', rows });
      }
    } else if (name === 'table' && table !== undefined) {
      append(' ');
    } else if ((name === 'td' || name === 'th' || name === 'tr') && table !== undefined) {
      closeCell(table);
    } else if (HEADINGS.has(name)) {
      flush();
      heading = 0;
    } else if (name === 'ul' || name === 'ol') {
      flush();
      lists.pop();
    } else if (name === 'pre') {
      flush();
      pre = Math.max(0, pre - 1);
    } else if (name === 'blockquote') {
      flush();
      quote = Math.max(0, quote - 1);
    } else if (BLOCK_ELEMENTS.has(name)) {
      flush();
    }
  }
  while (tables.length > 0) {
    const table = tables.pop();
    if (table === undefined) break;
    closeCell(table);
    const rows = table.rows.filter((row) => row.length > 0);
    if (rows.length > 0) blocks.push({ type: 'table', rows });
  }
  flush();
  return blocks;
}

function closeCell(table: TableState): void {
  if (table.cell === undefined) return;
  const row = table.rows.at(-1);
  row?.push({ text: table.cell.text.trim(), header: table.cell.header });
  table.cell = undefined;
}
