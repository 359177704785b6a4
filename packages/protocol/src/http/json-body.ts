import { ProblemError } from './problem-error.ts';
import { ValidationError } from './validation.ts';

/** Largest JSON request body any route takes. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/**
 * Reads and parses a JSON request body of at most {@link MAX_JSON_BODY_BYTES}.
 * @throws {ProblemError} `PayloadTooLarge` past the cap
 * @throws {ValidationError} for an empty body or malformed JSON
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  const declared = Number(request.headers.get('Content-Length') ?? '0');
  if (declared > MAX_JSON_BODY_BYTES) {
    throw new ProblemError('PayloadTooLarge', {
      detail: `JSON bodies are limited to ${MAX_JSON_BODY_BYTES} bytes.`,
    });
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > MAX_JSON_BODY_BYTES) {
        await reader.cancel();
        throw new ProblemError('PayloadTooLarge', {
          detail: `JSON bodies are limited to ${MAX_JSON_BODY_BYTES} bytes.`,
        });
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ValidationError([{ field: 'body', message: 'the body is not valid UTF-8' }]);
  }
  if (text.trim() === '') {
    throw new ValidationError([{ field: 'body', message: 'a JSON object is required' }]);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ValidationError([
      {
        field: 'body',
        message: `malformed JSON: ${error instanceof Error ? error.message : 'cannot parse'}`,
      },
    ]);
  }
}

/** Narrows to a plain JSON object or reports `body` as not an object. */
export function asJsonObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError([{ field: 'body', message: 'the body must be a JSON object' }]);
  }
  return value as Record<string, unknown>;
}
