/**
 * The HTTP API section of `bench/RESULTS.md`: written by `bench/api.ts` between two marker
 * lines, and kept as it is when `bench/run.ts` rewrites the rest of the file.
 */
export const API_SECTION_START = '<!-- api-bench:start -->';
export const API_SECTION_END = '<!-- api-bench:end -->';

/** The API section of `text` (markers included), or `undefined`. */
export function findApiSection(text: string): string | undefined {
  const start = text.indexOf(API_SECTION_START);
  const end = text.indexOf(API_SECTION_END);
  return start !== -1 && end > start ? text.slice(start, end + API_SECTION_END.length) : undefined;
}

/** `text` with its API section replaced by `section` (appended when it has none). */
export function withApiSection(text: string, section: string): string {
  const current = findApiSection(text);
  const next =
    current === undefined
      ? `${text.trimEnd()}\n\n${section.trim()}\n`
      : text.replace(current, section.trim());
  return next.endsWith('\n') ? next : `${next}\n`;
}
