/**
 * Hyperlink targets a rebuilt Office document may keep, whatever writes them: a relationship, a
 * field instruction, a `HYPERLINK()` formula, an interactive action or an ODF link.
 */

/** Whether a URL may stay as a hyperlink: http, https or mailto only. */
export function isSafeHyperlink(target: string): boolean {
  return /^(https?:\/\/|mailto:)/i.test(target.trim()) && !/[\p{Cc}\s]/u.test(target.trim());
}

/**
 * Whether a `HYPERLINK()` target written in a formula (XML or binary) goes where a hyperlink
 * relationship could not: anything but http, https, mailto or a place in the workbook.
 */
export function isRefusedHyperlinkTarget(target: string): boolean {
  return !target.startsWith('#') && !isSafeHyperlink(target);
}
