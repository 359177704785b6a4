import { BodyNotUtf8Error, BodyTooLargeError, readBodyText } from '../http/read-body.ts';

/** Largest token request body read (a form of a handful of short fields). */
export const MAX_TOKEN_REQUEST_BYTES = 8 * 1024;
/** Most form fields read from one token request. */
const MAX_FORM_FIELDS = 32;

/** A malformed request, answered `invalid_request` (RFC 6749 5.2). */
export class InvalidRequest extends Error {
  override readonly name = 'InvalidRequest';
}

/** Credentials from `Authorization: Basic` (RFC 6749 2.3.1). */
export interface BasicCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
}

/**
 * Reads an `application/x-www-form-urlencoded` body of at most {@link MAX_TOKEN_REQUEST_BYTES}.
 * RFC 6749 3.1: a parameter sent twice is an error, one sent without a value counts as absent.
 * @throws {InvalidRequest} for another media type, an oversized or non-UTF-8 body, or a
 *   repeated parameter.
 */
export async function readTokenForm(request: Request): Promise<Map<string, string>> {
  const mediaType = (request.headers.get('Content-Type') ?? '').split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/x-www-form-urlencoded') {
    throw new InvalidRequest('The body must be application/x-www-form-urlencoded.');
  }
  let text: string;
  try {
    text = await readBodyText(request, MAX_TOKEN_REQUEST_BYTES);
  } catch (error) {
    if (error instanceof BodyTooLargeError) throw new InvalidRequest('The body is too large.');
    if (error instanceof BodyNotUtf8Error) throw new InvalidRequest('The body is not valid UTF-8.');
    throw error;
  }
  const fields = new Map<string, string>();
  let count = 0;
  for (const [name, value] of new URLSearchParams(text)) {
    count += 1;
    if (count > MAX_FORM_FIELDS) throw new InvalidRequest('The body has too many fields.');
    if (value === '') continue;
    if (fields.has(name)) throw new InvalidRequest(`The parameter ${safe(name)} is repeated.`);
    fields.set(name, value);
  }
  return fields;
}

/**
 * Parses `Authorization: Basic` as RFC 6749 2.3.1 defines it for client credentials: base64 of
 * the form-urlencoded client id, a colon, and the form-urlencoded secret.
 * @returns `undefined` when the header is not Basic or is malformed.
 */
export function parseBasicCredentials(authorization: string): BasicCredentials | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(authorization);
  if (!match?.[1]) return undefined;
  let decoded: string;
  try {
    const binary = atob(match[1]);
    const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  try {
    const formDecode = (part: string): string => decodeURIComponent(part.replace(/\+/g, ' '));
    const clientId = formDecode(decoded.slice(0, colon));
    const clientSecret = formDecode(decoded.slice(colon + 1));
    return clientId === '' || clientSecret === '' ? undefined : { clientId, clientSecret };
  } catch {
    return undefined;
  }
}

/**
 * RFC 6749 5.2: `error_description` is limited to %x20-21 / %x23-5B / %x5D-7E; anything echoed
 * from the request is reduced to that and kept short.
 */
export function safe(value: string): string {
  return value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?').slice(0, 64);
}
