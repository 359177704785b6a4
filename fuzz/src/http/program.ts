/**
 * An HTTP fuzz input: a short program of requests against the v1 API and its storage origin,
 * encoded as JSON (bodies in base64) so that the campaign handles it as bytes like any file.
 * Placeholders (`{apiKey}`, `{adminToken}`, `{documentId}`, `{uploadId}`, `{uploadPath}`,
 * `{organisationId}`) are filled in by the executor from its own state and earlier answers.
 */
import type { HttpRequestSpec } from '../exec/protocol.ts';

/** Requests in one program. */
export const MAX_PROGRAM_REQUESTS = 8;

interface EncodedRequest {
  readonly origin: 'api' | 'storage';
  readonly method: string;
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: string;
}

/** The bytes of a program. */
export function encodeProgram(requests: readonly HttpRequestSpec[]): Uint8Array {
  const encoded: EncodedRequest[] = requests.slice(0, MAX_PROGRAM_REQUESTS).map((request) => ({
    origin: request.origin,
    method: request.method,
    target: request.target,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: Buffer.from(request.body).toString('base64') }),
  }));
  return Buffer.from(JSON.stringify(encoded), 'utf8');
}

/** The program in `bytes`, or `undefined` when they are not one. */
export function decodeProgram(bytes: Uint8Array): HttpRequestSpec[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value)) return undefined;
  const requests: HttpRequestSpec[] = [];
  for (const item of value.slice(0, MAX_PROGRAM_REQUESTS) as unknown[]) {
    if (typeof item !== 'object' || item === null) return undefined;
    const { origin, method, target, headers, body } = item as Record<string, unknown>;
    if (
      (origin !== 'api' && origin !== 'storage') ||
      typeof method !== 'string' ||
      typeof target !== 'string'
    )
      return undefined;
    if (!Array.isArray(headers)) return undefined;
    const pairs = headers.filter(
      (pair): pair is [string, string] =>
        Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string',
    );
    requests.push({
      origin,
      method,
      target,
      headers: pairs,
      ...(typeof body === 'string' ? { body: new Uint8Array(Buffer.from(body, 'base64')) } : {}),
    });
  }
  return requests;
}
