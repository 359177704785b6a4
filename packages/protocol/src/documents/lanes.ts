import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

import { Busboy } from '@fastify/busboy';

import type { ApiContext } from '../http/context.ts';
import { ProblemError } from '../http/problem-error.ts';
import { parseBoolean, ValidationError } from '../http/validation.ts';
import { BlobTooLargeError } from '../ports.ts';
import { assertFileName } from './file-name.ts';

/** What a lane received. */
export interface ReceivedFile {
  readonly fileName: string;
  readonly sizeBytes: number;
  readonly deleteAfterDownload: boolean | undefined;
}

/** Ceilings of the lanes of one organisation. */
export interface LaneLimits {
  readonly maxFileSizeBytes: number;
  readonly maxUploadSizeBytes: number;
}

/** Room for multipart boundaries and part headers beyond the file itself. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

/** 413 for a file over the lane's ceiling, naming the upload lane when it would take the file. */
export function tooLargeForLane(limits: LaneLimits, sizeBytes: number | undefined): ProblemError {
  const uploadLaneTakesIt = sizeBytes !== undefined && sizeBytes <= limits.maxUploadSizeBytes;
  return new ProblemError('FileTooLargeForPlan', {
    detail: uploadLaneTakesIt
      ? `Files over ${limits.maxFileSizeBytes} bytes go through the upload lane: POST /v1/uploads, PUT the bytes, then submit the uploadId.`
      : `The file is over the ${limits.maxFileSizeBytes}-byte ceiling of this lane.`,
    extensions: {
      maxSizeBytes: limits.maxFileSizeBytes,
      ...(uploadLaneTakesIt ? { acceptedByLane: 'upload' } : {}),
    },
  });
}

/**
 * `body`, reaching the test-mode failpoint `intake-partial` when the blob store asks for more
 * after taking the first chunk (so some bytes are in the intake, and the rest are not). Without a
 * failpoint hook, `body` itself.
 */
function withIntakeFailpoint(
  api: ApiContext,
  body: ReadableStream<Uint8Array>,
): ReadableStream<Uint8Array> {
  const failpoint = api.settings.failpoint;
  if (failpoint === undefined) return body;
  const reader = body.getReader();
  let chunks = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (chunks > 0) failpoint('intake-partial');
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        chunks += 1;
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    // Pulled only when the store reads: the second pull means the first chunk was written.
    { highWaterMark: 0 },
  );
}

function declaredLength(request: Request): number | undefined {
  const value = request.headers.get('Content-Length');
  if (value === null || !/^\d+$/.test(value.trim())) return undefined;
  return Number(value.trim());
}

/**
 * Raw-binary lane: `application/octet-stream` with `?filename=`. The body is streamed straight
 * into the blob store; `Content-Length` is required and a content encoding is refused (the API
 * never decodes raw bodies).
 */
export async function receiveRaw(
  api: ApiContext,
  request: Request,
  fileName: string,
  intakeKey: string,
  limits: LaneLimits,
): Promise<ReceivedFile> {
  if (request.headers.has('Content-Encoding')) {
    throw new ProblemError('UnsupportedContentEncoding', {
      detail: `Raw bodies are stored as sent and never decoded; send them without Content-Encoding (got "${request.headers.get('Content-Encoding') ?? ''}").`,
    });
  }
  const length = declaredLength(request);
  if (length === undefined) {
    throw new ProblemError('LengthRequired', {
      detail: 'Send the raw file with a Content-Length header.',
    });
  }
  if (length > limits.maxFileSizeBytes) throw tooLargeForLane(limits, length);
  if (length === 0 || !request.body) {
    throw new ProblemError('NoFileProvided', { detail: 'The request body is empty.' });
  }
  let sizeBytes: number;
  try {
    ({ sizeBytes } = await api.blobs.put(intakeKey, withIntakeFailpoint(api, request.body), {
      maxBytes: length,
    }));
  } catch (error) {
    if (error instanceof BlobTooLargeError) {
      throw new ValidationError([
        { field: 'header.Content-Length', message: 'the body is longer than its Content-Length' },
      ]);
    }
    throw error;
  }
  if (sizeBytes !== length) {
    await api.blobs.delete(intakeKey);
    throw new ValidationError([
      { field: 'header.Content-Length', message: 'the body is shorter than its Content-Length' },
    ]);
  }
  return { fileName, sizeBytes, deleteAfterDownload: undefined };
}

/**
 * Multipart lane: one `file` part (streamed into the blob store as it arrives, never buffered)
 * and an optional `deleteAfterDownload` field. Anything else is refused.
 */
export async function receiveMultipart(
  api: ApiContext,
  request: Request,
  contentType: string,
  intakeKey: string,
  limits: LaneLimits,
): Promise<ReceivedFile> {
  const length = declaredLength(request);
  if (length !== undefined && length > limits.maxFileSizeBytes + MULTIPART_OVERHEAD_BYTES) {
    throw tooLargeForLane(limits, Math.max(0, length - MULTIPART_OVERHEAD_BYTES));
  }
  if (!request.body) throw new ProblemError('NoFileProvided');
  const body = request.body;

  let busboy: ReturnType<typeof Busboy>;
  try {
    busboy = Busboy({
      headers: { 'content-type': contentType },
      // The name as sent: `../../x.png` is refused as on every other lane, never shortened.
      preservePath: true,
      limits: {
        files: 1,
        fields: 8,
        parts: 16,
        fieldSize: 1024,
        fieldNameSize: 100,
        headerPairs: 16,
        fileSize: limits.maxFileSizeBytes,
      },
    });
  } catch (error) {
    throw new ValidationError([
      {
        field: 'header.Content-Type',
        message: `not a usable multipart/form-data type: ${error instanceof Error ? error.message : 'invalid'}`,
      },
    ]);
  }

  return new Promise<ReceivedFile>((resolve, reject) => {
    let settled = false;
    let stored: Promise<{ sizeBytes: number } | undefined> | undefined;
    let fileName: string | undefined;
    let deleteAfterDownload: boolean | undefined;
    let failure: Error | undefined;
    let fileStream: Readable | undefined;
    const unknownFields: string[] = [];
    const source = Readable.fromWeb(body as NodeReadableStream<Uint8Array>);

    const fail = (error: Error): void => {
      failure ??= error;
      if (settled) return;
      settled = true;
      source.unpipe(busboy);
      source.resume();
      // Busboy ends a file part only at its closing boundary, which an unpiped parser never
      // sees: end the part here so the blob store's put settles and removes its temporary file.
      fileStream?.destroy(error);
      void (stored ?? Promise.resolve(undefined))
        .catch(() => undefined)
        .then(() => api.blobs.delete(intakeKey))
        // A store that cannot delete now (out of reach) must not turn this into an unhandled
        // rejection; the refusal below is the answer either way.
        .catch(() => undefined)
        .finally(() => {
          reject(failure ?? error);
        });
    };

    busboy.on('file', (name, stream, partFileName) => {
      if (name !== 'file') {
        stream.resume();
        unknownFields.push(name);
        return;
      }
      if (stored) {
        stream.resume();
        fail(new ValidationError([{ field: 'form.file', message: 'send exactly one file' }]));
        return;
      }
      try {
        fileName = assertFileName(partFileName, 'form.file');
      } catch (error) {
        stream.resume();
        fail(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      stream.on('limit', () => {
        fail(
          tooLargeForLane(
            limits,
            length === undefined ? undefined : length - MULTIPART_OVERHEAD_BYTES,
          ),
        );
      });
      fileStream = stream;
      stored = api.blobs.put(
        intakeKey,
        withIntakeFailpoint(api, Readable.toWeb(stream) as ReadableStream<Uint8Array>),
        { maxBytes: limits.maxFileSizeBytes },
      );
      stored.catch((error: unknown) => {
        fail(
          error instanceof BlobTooLargeError
            ? tooLargeForLane(limits, undefined)
            : error instanceof Error
              ? error
              : new Error(String(error)),
        );
      });
    });
    busboy.on('field', (name, value, _nameTruncated, valueTruncated) => {
      if (name === 'deleteAfterDownload' && !valueTruncated) {
        const parsed = parseBoolean(value);
        if (parsed === undefined) {
          fail(
            new ValidationError([
              { field: 'form.deleteAfterDownload', message: 'must be true or false' },
            ]),
          );
        } else {
          deleteAfterDownload = parsed;
        }
      } else if (name === 'file') {
        fail(
          new ProblemError('NoFileProvided', {
            detail: 'The file field must be a file upload (with a file name), not a text field.',
          }),
        );
      } else {
        unknownFields.push(name);
      }
    });
    busboy.on('filesLimit', () => {
      fail(new ValidationError([{ field: 'form.file', message: 'send exactly one file' }]));
    });
    busboy.on('partsLimit', () => {
      fail(new ValidationError([{ field: 'form', message: 'too many form parts' }]));
    });
    busboy.on('fieldsLimit', () => {
      fail(new ValidationError([{ field: 'form', message: 'too many form fields' }]));
    });
    busboy.on('error', (error: unknown) => {
      fail(
        new ValidationError([
          {
            field: 'body',
            message: `malformed multipart body: ${error instanceof Error ? error.message : 'cannot parse'}`,
          },
        ]),
      );
    });
    source.on('error', (error: Error) => {
      fail(error);
    });
    busboy.on('finish', () => {
      if (settled) return;
      // No `file` field is NoFileProvided whatever else was sent (a file under another name
      // included, the usual slip); unknown fields beside a file are ValidationFailed.
      if (!stored || fileName === undefined) {
        const others = unknownFields.length === 0 ? '' : ` (it has ${formatNames(unknownFields)})`;
        fail(
          new ProblemError('NoFileProvided', {
            detail: `The multipart body has no file field${others}.`,
          }),
        );
        return;
      }
      if (unknownFields.length > 0) {
        fail(
          new ValidationError(
            unknownFields.map((field) => ({
              field: `form.${field}`,
              message: 'unknown form field; only file and deleteAfterDownload are allowed',
            })),
          ),
        );
        return;
      }
      const name = fileName;
      stored.then(
        (result) => {
          if (settled) return;
          if (!result || result.sizeBytes === 0) {
            fail(new ProblemError('NoFileProvided', { detail: 'The uploaded file is empty.' }));
            return;
          }
          settled = true;
          resolve({ fileName: name, sizeBytes: result.sizeBytes, deleteAfterDownload });
        },
        () => undefined,
      );
    });
    source.pipe(busboy);
  });
}

/** Form field names for a message: `a`, `a and b`, `a, b and c`, JSON-quoted. */
function formatNames(names: readonly string[]): string {
  const quoted = names.map((name) => JSON.stringify(name));
  return quoted.length === 1
    ? `a field named ${quoted[0] ?? ''}`
    : `fields named ${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1) ?? ''}`;
}
