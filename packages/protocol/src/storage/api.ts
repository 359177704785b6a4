import type { Logger } from '../config.ts';
import { problemResponse } from '../http/problem-response.ts';
import type { ProblemCode } from '../http/problems.ts';
import { BlobDigestMismatchError, BlobTooLargeError, StorageUnavailableError } from '../ports.ts';
import type { BlobStore, Clock, StateStore } from '../ports.ts';
import { STORAGE_PATH_PREFIX } from './signer.ts';
import type { LinkSigner } from './signer.ts';
import { bufferedResponse } from '../http/buffered-response.ts';
import { problemInstance, REQUEST_ID_HEADER, requestIdOf } from '../http/request-id.ts';
import { unavailableProblem } from '../http/unavailable.ts';
import { addResponseHeaders } from '../http/response-headers.ts';
import { cryptoRandom } from '../domain/ids.ts';

/** What the storage origin needs. */
export interface StorageApiOptions {
  readonly store: StateStore;
  readonly blobs: BlobStore;
  readonly signer: LinkSigner;
  readonly clock: Clock;
  /** Base URL of the storage origin. */
  readonly storageBaseUrl: string;
  /**
   * Base URL that serves the problem catalogue (`/problems/{code}`): the API's public base URL,
   * so every problem `type` link resolves. @default `storageBaseUrl`
   */
  readonly problemsBaseUrl?: string;
  readonly logger?: Logger;
}

/** The content type an upload PUT must declare (listed in `requiredHeaders`). */
export const UPLOAD_CONTENT_TYPE = 'application/octet-stream';

/** RFC 1864 Content-MD5: base64 of the 16-byte digest. */
const CONTENT_MD5 = /^[A-Za-z0-9+/]{22}==$/;

/**
 * The embedded blob store's own origin: signed GET links serve cleaned files, signed PUT links
 * receive staged uploads. It is a separate fetch handler on a separate port, so a client that
 * follows the API's download redirect drops its bearer token (cross-origin) — and a request that
 * still carries an `Authorization` header is refused, never served.
 */
export function createStorageApi(options: StorageApiOptions): {
  fetch(request: Request): Promise<Response>;
} {
  const { store, blobs, signer, clock } = options;
  const problemsBaseUrl = options.problemsBaseUrl ?? options.storageBaseUrl;
  /** Problems of one request, whose `instance` names it (path and request id). */
  const problemsOf =
    (instance: string): Problem =>
    (code, detail, headers) =>
      problemResponse(problemsBaseUrl, code, {
        instance,
        ...(detail !== undefined ? { detail } : {}),
        ...(headers !== undefined ? { headers } : {}),
      });

  async function download(request: Request, url: URL, problem: Problem): Promise<Response> {
    const claims = await signer.verify(url, 'get', clock.now());
    if (claims === 'invalid_signature') return problem('InvalidSignature');
    if (claims === 'expired') return problem('LinkExpired');
    if (claims.operation !== 'get') return problem('InvalidSignature');
    const size = await blobs.stat(claims.key);
    const body = size ? await blobs.get(claims.key) : undefined;
    if (!size || !body) {
      return problem('NotFound', 'The file is no longer stored (deleted or expired).');
    }
    const headers = new Headers({
      'Content-Type': claims.contentType || 'application/octet-stream',
      'Content-Length': String(size.sizeBytes),
      'Content-Disposition': contentDisposition(claims.fileName),
      'Cache-Control': 'private, no-store',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Content-Security-Policy': "default-src 'none'; sandbox",
    });
    if (request.method === 'HEAD') {
      await body.cancel();
      return bufferedResponse(null, { status: 200, headers });
    }
    return new Response(body, { status: 200, headers });
  }

  async function upload(request: Request, url: URL, problem: Problem): Promise<Response> {
    const claims = await signer.verify(url, 'put', clock.now());
    if (claims === 'invalid_signature') return problem('InvalidSignature');
    if (claims === 'expired')
      return problem('LinkExpired', 'The upload link was valid for 60 minutes.');
    if (claims.operation !== 'put') return problem('InvalidSignature');
    const uploadId = claims.key.split('/').pop() ?? '';
    const record = await store.getUploadById(uploadId);
    if (record?.blobKey !== claims.key) return problem('NotFound');
    if (record.uploadedAt !== null) return problem('UploadAlreadyUploaded');
    const contentType = (request.headers.get('Content-Type') ?? '')
      .split(';')[0]
      ?.trim()
      .toLowerCase();
    if (contentType !== UPLOAD_CONTENT_TYPE) {
      return problem(
        'ValidationFailed',
        `Send the bytes with Content-Type: ${UPLOAD_CONTENT_TYPE}.`,
      );
    }
    if (request.headers.has('Content-Encoding')) {
      return problem('UnsupportedContentEncoding');
    }
    const declared = request.headers.get('Content-Length');
    if (declared !== null && Number(declared) > claims.maxBytes) {
      return problem('FileTooLargeForPlan', `The upload ceiling is ${claims.maxBytes} bytes.`);
    }
    const md5 = request.headers.get('Content-MD5') ?? undefined;
    if (md5 !== undefined && !CONTENT_MD5.test(md5)) {
      return problem('ValidationFailed', 'Content-MD5 must be the base64 of a 16-byte MD5 digest.');
    }
    if (!request.body) return problem('NoFileProvided');
    try {
      const { sizeBytes } = await blobs.put(claims.key, request.body, {
        maxBytes: claims.maxBytes,
        ...(md5 !== undefined ? { contentMd5: md5 } : {}),
      });
      if (sizeBytes === 0) {
        await blobs.delete(claims.key);
        return problem('NoFileProvided', 'The upload body is empty.');
      }
      let recorded: boolean;
      try {
        recorded = await store.markUploaded(uploadId, sizeBytes, clock.now());
      } catch (error) {
        // Unrecorded bytes are nobody's: the link stays usable for a retry, which finds no blob.
        await blobs.delete(claims.key).catch(() => undefined);
        throw error;
      }
      if (!recorded) return problem('UploadAlreadyUploaded');
      return bufferedResponse(null, { status: 201, headers: { 'Cache-Control': 'no-store' } });
    } catch (error) {
      if (error instanceof BlobTooLargeError) {
        return problem('FileTooLargeForPlan', `The upload ceiling is ${error.maxBytes} bytes.`);
      }
      if (error instanceof BlobDigestMismatchError) return problem('DigestMismatch');
      throw error;
    }
  }

  return {
    async fetch(request) {
      const requestId = requestIdOf(request, cryptoRandom);
      const response = await answer(request, requestId);
      return addResponseHeaders(response, [[REQUEST_ID_HEADER, requestId]], true);
    },
  };

  async function answer(request: Request, requestId: string): Promise<Response> {
    let problem = problemsOf(problemInstance('/', requestId));
    try {
      const url = new URL(request.url);
      problem = problemsOf(problemInstance(url.pathname, requestId));
      // Pre-authorised links only: a bearer token must never be accepted (or logged) here.
      if (request.headers.has('Authorization')) return problem('AuthorizationHeaderNotAllowed');
      // Only signed links live here: any other path names nothing (404, not a signature fault).
      if (!url.pathname.startsWith(STORAGE_PATH_PREFIX)) {
        return problem('NotFound', 'The storage origin serves signed links only.');
      }
      switch (request.method) {
        case 'GET':
        case 'HEAD':
          return await download(request, url, problem);
        case 'PUT':
          return await upload(request, url, problem);
        default:
          return problem('MethodNotAllowed', undefined, { Allow: 'GET, HEAD, PUT' });
      }
    } catch (error) {
      if (error instanceof StorageUnavailableError) {
        const { detail, headers } = unavailableProblem(error);
        options.logger?.debug?.({ err: error, requestId }, 'storage request refused: unavailable');
        return problem('ServiceUnavailable', detail, headers);
      }
      options.logger?.error({ err: error, requestId }, 'storage request failed');
      return problem('InternalError', 'The storage request failed.');
    }
  }
}

/** Answers a storage request with a problem of the catalogue. */
type Problem = (code: ProblemCode, detail?: string, headers?: HeadersInit) => Response;

/** RFC 6266 attachment with an ASCII fallback and the UTF-8 name (RFC 8187). */
export function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  // RFC 8187 3.2.1 attr-char: encodeURIComponent leaves ' ( ) * ! unescaped; of those only ! is allowed.
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
