/**
 * The paths the disarm API answers, as prefixes: each stands for itself and everything under it
 * (`/v1`, `/v1/documents/...`). Every other path belongs to the app around it.
 */
export const DISARM_PATH_PREFIXES = ['/v1', '/docs', '/problems', '/healthz', '/readyz'] as const;

/** Whether `pathname` (no query) is one of the disarm API's, per {@link DISARM_PATH_PREFIXES}. */
export function isDisarmPath(pathname: string): boolean {
  return DISARM_PATH_PREFIXES.some(
    (prefix) => pathname === prefix || pathname.startsWith(`${prefix}/`),
  );
}
