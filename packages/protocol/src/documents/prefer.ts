/** What the `Prefer` header (RFC 7240) asks of a submission. */
export interface Preferences {
  /** `respond-sync`: hold the request for the result. */
  readonly respondSync: boolean;
  /** `wait=N` (RFC 7240 4.3): the client will wait at most N seconds. */
  readonly waitSeconds: number | undefined;
}

/** Parses every `Prefer` header value; unknown preferences are ignored (RFC 7240 2). */
export function parsePrefer(values: string | null): Preferences {
  let respondSync = false;
  let waitSeconds: number | undefined;
  for (const preference of (values ?? '').split(',')) {
    const [token = '', ...rest] = preference.split(';')[0]?.split('=') ?? [];
    const name = token.trim().toLowerCase();
    const value = rest
      .join('=')
      .trim()
      .replace(/^"(.*)"$/, '$1');
    if (name === 'respond-sync') respondSync = true;
    if (name === 'wait' && /^\d{1,9}$/.test(value)) waitSeconds = Number(value);
  }
  return { respondSync, waitSeconds };
}
