import { ProblemError } from './problem-error.ts';
import { BodyNotUtf8Error, BodyTooLargeError, readBodyText } from './read-body.ts';
import { ValidationError } from './validation.ts';

/** Largest JSON request body any route takes. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/**
 * Reads and parses a JSON request body of at most {@link MAX_JSON_BODY_BYTES}.
 * @throws {ProblemError} `PayloadTooLarge` past the cap
 * @throws {ValidationError} for an empty body or malformed JSON
 */
export async function readJsonBody(request: Request): Promise<unknown> {
  let text: string;
  try {
    text = await readBodyText(request, MAX_JSON_BODY_BYTES);
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      throw new ProblemError('PayloadTooLarge', {
        detail: `JSON bodies are limited to ${MAX_JSON_BODY_BYTES} bytes.`,
      });
    }
    if (error instanceof BodyNotUtf8Error) {
      throw new ValidationError([{ field: 'body', message: 'the body is not valid UTF-8' }]);
    }
    throw error;
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
