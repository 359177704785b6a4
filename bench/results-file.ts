import { existsSync, readFileSync, writeFileSync } from 'node:fs';

import { format, resolveConfig } from 'prettier';

/** Where a results file's hand-written analysis starts; everything below it survives a re-run. */
export const ANALYSIS_MARKER = '<!-- analysis: kept across runs of the bench -->';

/**
 * Writes a bench's results file: `generated` (the heading, how it was run, the table), then the
 * analysis written by hand below {@link ANALYSIS_MARKER} in the file as it was (update its
 * numbers by hand), laid out as Prettier lays it out so the file passes the format check.
 */
export async function writeResultsFile(path: string, generated: string): Promise<void> {
  const previous = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const analysis = previous.includes(ANALYSIS_MARKER)
    ? previous.slice(previous.indexOf(ANALYSIS_MARKER))
    : `${ANALYSIS_MARKER}\n`;
  const written = `${generated.trimEnd()}\n\n${analysis}`;
  writeFileSync(path, await format(written, { ...(await resolveConfig(path)), filepath: path }));
}
