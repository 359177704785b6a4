import { Busboy } from '@fastify/busboy';
import { sha256 } from '@noble/hashes/sha2.js';

import { MAX_JSON_BODY_BYTES } from '../http/json-body.ts';

/** Most multipart parts a fingerprint describes; a body with more is fingerprinted by its bytes. */
const MAX_FINGERPRINT_PARTS = 64;
/** Longest text field a fingerprint keeps; longer is fingerprinted by the body's bytes. */
const MAX_FINGERPRINT_FIELD_BYTES = 4096;

const encoder = new TextEncoder();

function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}

/** JSON with object keys sorted at every depth, so key order and spacing do not count. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What a body means, learnt chunk by chunk. */
interface BodyMeaning {
  write(chunk: Uint8Array): Promise<void>;
  /** The meaning as canonical text, or `undefined` when only the bytes themselves can say it. */
  end(): Promise<string | undefined>;
}

/** A JSON body: its canonical form (within the JSON routes' size cap). */
function jsonMeaning(): BodyMeaning {
  const chunks: Uint8Array[] = [];
  let total = 0;
  return {
    write(chunk) {
      total += chunk.byteLength;
      if (total <= MAX_JSON_BODY_BYTES) chunks.push(chunk);
      return Promise.resolve();
    },
    end() {
      if (total > MAX_JSON_BODY_BYTES) return Promise.resolve(undefined);
      try {
        const bytes = new Uint8Array(total);
        let offset = 0;
        for (const chunk of chunks) {
          bytes.set(chunk, offset);
          offset += chunk.byteLength;
        }
        const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
        return Promise.resolve(canonicalJson(JSON.parse(text)));
      } catch {
        return Promise.resolve(undefined);
      }
    },
  };
}

/**
 * A multipart body: each file part as (field name, file name, SHA-256 and size of its bytes),
 * each text field as (name, value), in a sorted list. The boundary, part order, part headers'
 * spelling and the part's own Content-Type are framing a client chooses afresh per request.
 */
function multipartMeaning(contentType: string): BodyMeaning | undefined {
  let parser: ReturnType<typeof Busboy>;
  try {
    parser = Busboy({
      headers: { 'content-type': contentType },
      // The caller's file name exactly as sent: `../x.png` and `x.png` are different requests.
      preservePath: true,
      limits: { parts: MAX_FINGERPRINT_PARTS, fieldSize: MAX_FINGERPRINT_FIELD_BYTES },
    });
  } catch {
    return undefined;
  }
  const parts: Promise<string>[] = [];
  let unusable = false;
  const finished = new Promise<void>((resolve) => {
    parser.on('finish', resolve);
    parser.on('error', () => {
      unusable = true;
      resolve();
    });
  });
  parser.on('file', (name, stream, fileName) => {
    const hash = sha256.create();
    let sizeBytes = 0;
    parts.push(
      new Promise<string>((resolve) => {
        stream.on('data', (chunk: Uint8Array) => {
          sizeBytes += chunk.byteLength;
          hash.update(chunk);
        });
        stream.on('end', () => {
          resolve(JSON.stringify(['file', name, fileName, toHex(hash.digest()), sizeBytes]));
        });
        stream.on('error', () => {
          unusable = true;
          resolve('');
        });
      }),
    );
  });
  parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
    if (valueTruncated) unusable = true;
    parts.push(Promise.resolve(JSON.stringify(['field', name, value])));
  });
  parser.on('partsLimit', () => {
    unusable = true;
  });
  return {
    write(chunk) {
      if (unusable) return Promise.resolve();
      return new Promise((resolve) => {
        parser.write(chunk, () => {
          resolve();
        });
      });
    },
    async end() {
      parser.end();
      await finished;
      const described = (await Promise.all(parts)).sort();
      return unusable ? undefined : `[${described.join(',')}]`;
    },
  };
}

/**
 * What makes two submissions "the same request" for `Idempotency-Key`: method, path, the query
 * parameters in a canonical order, the media type without its parameters, and what the body
 * means — the canonical form of a JSON body, the file parts' names and byte hashes and the
 * fields of a multipart body, the bytes of a raw body. A retry that only re-frames the request
 * (a new multipart boundary, parts reordered, JSON keys reordered) has the same fingerprint.
 *
 * The body is hashed as it passes into the handler ({@link tap}), never buffered beyond a JSON
 * route's small cap.
 */
export class RequestFingerprint {
  readonly #head: string;
  readonly #bytes = sha256.create();
  readonly #meaning: BodyMeaning | undefined;
  #complete = false;
  #markComplete: () => void = () => undefined;
  /** Resolves once the body has been read to its end. */
  readonly #completed = new Promise<void>((resolve) => {
    this.#markComplete = resolve;
  });
  #digest: Promise<string> | undefined;

  constructor(request: Request, url: URL) {
    const query = [...url.searchParams.entries()]
      .sort(([a, x], [b, y]) => (a === b ? x.localeCompare(y) : a.localeCompare(b)))
      .map(([name, value]) => [name, value]);
    const contentType = request.headers.get('Content-Type') ?? '';
    const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
    this.#head = JSON.stringify([request.method, url.pathname, query, mediaType]);
    this.#meaning =
      mediaType === 'multipart/form-data'
        ? multipartMeaning(contentType)
        : mediaType === 'application/json'
          ? jsonMeaning()
          : undefined;
    if (!request.body) this.#finish();
  }

  #finish(): void {
    this.#complete = true;
    this.#markComplete();
  }

  /** The body, passing every chunk through the fingerprint on its way. */
  tap(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: async (chunk, controller) => {
          this.#bytes.update(chunk);
          await this.#meaning?.write(chunk);
          controller.enqueue(chunk);
        },
        flush: () => {
          this.#finish();
        },
      }),
    );
  }

  /** Reads the rest of a body into the fingerprint (for a retry that will not be processed). */
  async drain(body: ReadableStream<Uint8Array> | null): Promise<void> {
    if (body) {
      const reader = this.tap(body).getReader();
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
      }
    }
    this.#finish();
  }

  /** The hex digest, or `undefined` while the body has not been read to its end. */
  async digest(): Promise<string | undefined> {
    if (!this.#complete) return undefined;
    return this.#computed();
  }

  /**
   * The hex digest once the body has been read to its end (by the handler it was tapped for).
   * Waits for that end: call it once the body has been consumed.
   */
  async settledDigest(): Promise<string> {
    await this.#completed;
    return this.#computed();
  }

  /** Computed once: the hashes and the meaning's parser can be finished only once. */
  #computed(): Promise<string> {
    this.#digest ??= (async () => {
      const bytes = toHex(this.#bytes.digest());
      const meaning = (await this.#meaning?.end()) ?? `bytes:${bytes}`;
      return toHex(sha256(encoder.encode(`${this.#head}\n${meaning}`)));
    })();
    return this.#digest;
  }
}
