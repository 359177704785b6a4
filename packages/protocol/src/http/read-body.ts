/** Thrown by {@link readBodyText} past its byte limit. */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';
}

/** Thrown by {@link readBodyText} for bytes that are not UTF-8. */
export class BodyNotUtf8Error extends Error {
  override readonly name = 'BodyNotUtf8Error';
}

/**
 * Reads a small request body as UTF-8 text, refusing it as soon as it passes `maxBytes` (by its
 * Content-Length or while streaming), so a large body is never buffered.
 * @throws {BodyTooLargeError} past `maxBytes`
 * @throws {BodyNotUtf8Error} for invalid UTF-8
 */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  if (Number(request.headers.get('Content-Length') ?? '0') > maxBytes)
    throw new BodyTooLargeError();
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.length;
      if (total > maxBytes) {
        await reader.cancel();
        throw new BodyTooLargeError();
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
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new BodyNotUtf8Error();
  }
}
