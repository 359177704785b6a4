/**
 * The manifest of a real-world corpus (`manifest.tsv`): one row per file with the format to
 * submit it as, its category and the outcome expected of the engine.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** `completed-cleaned`, `rejected:<reason>` or `failed:<reason>`. */
export type OutcomeLabel = string;

export interface ManifestRow {
  /** Path of the file below the corpus folder. */
  readonly file: string;
  /** Extension to submit the file with (it may differ from the stored name). */
  readonly format: string;
  /** `active`, `hostile`, `malformed` or `benign`. */
  readonly category: string;
  readonly what: string;
  readonly expected: OutcomeLabel;
  readonly notes: string;
}

const REQUIRED_COLUMNS = ['file', 'format', 'category', 'expected_outcome'] as const;
const EXPECTED = /^(?:completed-cleaned|rejected:[a-z_]+|failed:[a-z_]+)$/;

/** Thrown for a manifest that cannot be read as one; the message names the line. */
export class ManifestError extends Error {
  override name = 'ManifestError';
}

/** Reads `<dir>/manifest.tsv`. */
export async function readManifest(dir: string): Promise<ManifestRow[]> {
  return parseManifest(await readFile(join(dir, 'manifest.tsv'), 'utf8'));
}

/** Parses manifest text: a header line naming the columns, then one tab-separated row per file. */
export function parseManifest(text: string): ManifestRow[] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? '').split('\t');
  const column = (name: string): number => header.indexOf(name);
  for (const name of REQUIRED_COLUMNS) {
    if (column(name) < 0) throw new ManifestError(`manifest.tsv: no "${name}" column`);
  }
  const rows: ManifestRow[] = [];
  for (const [index, line] of lines.entries()) {
    if (index === 0 || line.trim() === '') continue;
    const cells = line.split('\t');
    const cell = (name: string): string => cells[column(name)]?.trim() ?? '';
    const row: ManifestRow = {
      file: cell('file'),
      format: cell('format').toLowerCase(),
      category: cell('category'),
      what: cell('what_it_contains'),
      expected: cell('expected_outcome'),
      notes: cell('notes'),
    };
    if (row.file === '' || row.file.split(/[\\/]/).includes('..') || row.file.startsWith('/')) {
      throw new ManifestError(`manifest.tsv line ${index + 1}: bad file "${row.file}"`);
    }
    if (!/^[a-z0-9]+$/.test(row.format)) {
      throw new ManifestError(`manifest.tsv line ${index + 1}: bad format "${row.format}"`);
    }
    if (!EXPECTED.test(row.expected)) {
      throw new ManifestError(
        `manifest.tsv line ${index + 1}: bad expected_outcome "${row.expected}"`,
      );
    }
    rows.push(row);
  }
  return rows;
}
