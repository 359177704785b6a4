import { createHash } from 'node:crypto';

import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  assertBlobKey,
  assertBlobKeyPrefix,
  assertBlobListOptions,
  BlobDigestMismatchError,
  BlobTooLargeError,
  contentDisposition,
  isBlobKey,
  MAX_BLOB_LIST_LIMIT,
  UPLOAD_CONTENT_TYPE,
} from '@disarm/protocol';
import type { BlobStore, ListedBlob, SignedUpload } from '@disarm/protocol';

import { applyLifecycleRule } from './_lifecycle.ts';
import { toBlobStoreError } from './_unavailable.ts';
import type { LifecycleChange } from './_lifecycle.ts';

/**
 * Part size of streamed writes (8 MiB): S3 needs at least 5 MiB per part but the last, and at
 * most 10,000 parts, so one write can reach 78 GiB — far past every ceiling of the service.
 */
export const DEFAULT_PART_SIZE_BYTES = 8 * 1024 * 1024;
/** Parts of one write in flight at once; memory held per write is about this times the part size. */
export const DEFAULT_PART_CONCURRENCY = 2;
/** Longest life of a presigned link SigV4 allows (7 days, in seconds). */
const MAX_PRESIGN_SECONDS = 7 * 24 * 60 * 60;
/**
 * `If-None-Match: *` on the PUT makes an upload link create-only: S3 answers 412 when the object
 * exists (conditional writes), so a second PUT cannot swap bytes under a pending submission.
 */
const CREATE_ONLY = '*';

/** Options of {@link createS3BlobStore}. */
export interface S3BlobStoreOptions {
  /** The client; see {@link createS3ClientFromEnv} for one configured like the AWS CLI. */
  readonly client: S3Client;
  /**
   * Signs the links handed to clients, when they reach the bucket at another address than this
   * process does (a private endpoint inside the network, a public one outside): SigV4 signs the
   * host, so a link must name the address its user will call. @default `client`
   */
  readonly linkClient?: S3Client;
  /** Bucket holding the blobs. It must exist; the service never creates buckets. */
  readonly bucket: string;
  /**
   * Prepended to every key, e.g. `disarm/` (a trailing `/` is added when missing), so one bucket
   * can hold several deployments or other data. @default `''`: keys at the bucket's root
   */
  readonly prefix?: string;
  /** @default {@link DEFAULT_PART_SIZE_BYTES} */
  readonly partSizeBytes?: number;
  /** @default {@link DEFAULT_PART_CONCURRENCY} */
  readonly partConcurrency?: number;
}

/** A {@link BlobStore} in an S3-compatible bucket. */
export interface S3BlobStore extends BlobStore {
  readonly bucket: string;
  /** The key prefix, `''` or ending in `/`. */
  readonly prefix: string;
  /**
   * Sets the bucket lifecycle rule that expires everything under {@link prefix}
   * `expireAfterDays` days after it was written: a second line of defence behind the retention
   * sweeper, for blobs whose process died before sweeping them. Other rules of the bucket are
   * kept; the rule is only rewritten when it differs, so every node may call this at start.
   * @returns what changed.
   */
  applyLifecycleRule(expireAfterDays: number): Promise<LifecycleChange>;
}

/**
 * A blob store in an S3-compatible bucket (AWS S3, MinIO, Ceph RGW, Cloudflare R2 …): one object
 * per key under `prefix`, written with streamed multipart uploads, read back as streams, and
 * shared with clients through presigned SigV4 links — the API is not in the data path of uploads
 * or downloads.
 *
 * `put` counts the bytes and hashes them as they stream to the bucket: past `maxBytes`, or when
 * the MD5 differs from `contentMd5`, the write is aborted before it completes (a multipart upload
 * is aborted, a single-part one never sent), so nothing is left and an existing object is
 * unchanged.
 *
 * Upload links ({@link BlobStore.signedUploadUrl}) sign `Content-Type` and `If-None-Match: *`
 * (create-only). **A presigned PUT cannot bound its size**: SigV4 signs an exact
 * `Content-Length` or none, and the upload size is not known when the link is made (the upload
 * create request carries only a file name). The ceiling is enforced when the upload is submitted
 * (`upload_too_large`, 413) and the object is swept with the expired upload; S3 itself refuses
 * single PUTs over 5 GiB. A client's optional `Content-MD5` header is verified by S3 (400
 * `BadDigest`); it cannot be signed because its value is the client's.
 *
 * @example
 * ```ts
 * const blobs = createS3BlobStore({ client: createS3ClientFromEnv(), bucket: 'cdr', prefix: 'prod/' });
 * await blobs.applyLifecycleRule(2);
 * ```
 * @throws {TypeError} for an empty bucket name, a bad prefix or bad part settings.
 */
export function createS3BlobStore(options: S3BlobStoreOptions): S3BlobStore {
  const { client, bucket } = options;
  const linkClient = options.linkClient ?? client;
  if (typeof bucket !== 'string' || bucket === '') {
    throw new TypeError('bucket must be a non-empty string');
  }
  const prefix = toPrefix(options.prefix ?? '');
  const partSize = options.partSizeBytes ?? DEFAULT_PART_SIZE_BYTES;
  // S3 refuses parts under 5 MiB (all but the last), so a smaller setting would fail at run time.
  if (!Number.isSafeInteger(partSize) || partSize < 5 * 1024 * 1024) {
    throw new TypeError(`partSizeBytes must be an integer of at least 5 MiB, got ${partSize}`);
  }
  const queueSize = options.partConcurrency ?? DEFAULT_PART_CONCURRENCY;
  if (!Number.isSafeInteger(queueSize) || queueSize < 1) {
    throw new TypeError(`partConcurrency must be a positive integer, got ${queueSize}`);
  }
  const objectKey = (key: string): string => {
    assertBlobKey(key);
    return prefix + key;
  };

  return {
    bucket,
    prefix,

    async put(key, body, { maxBytes, contentMd5 }) {
      const Key = objectKey(key);
      if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
        throw new TypeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
      }
      const checked = checkedStream(body, maxBytes, contentMd5);
      const upload = new Upload({
        client,
        params: {
          Bucket: bucket,
          Key,
          Body: checked.stream,
          ContentType: UPLOAD_CONTENT_TYPE,
        },
        partSize,
        queueSize,
        // A refused or failed write aborts its multipart upload: no orphan parts are billed.
        leavePartsOnError: false,
      });
      try {
        await upload.done();
      } catch (error) {
        await checked.cancel();
        // The refusal that stopped the stream, not the SDK's wrapping of it.
        throw checked.refusal() ?? toBlobStoreError(error);
      }
      return { sizeBytes: checked.sizeBytes() };
    },

    async get(key) {
      try {
        const response = await client.send(
          new GetObjectCommand({ Bucket: bucket, Key: objectKey(key) }),
        );
        return response.Body?.transformToWebStream() as ReadableStream<Uint8Array> | undefined;
      } catch (error) {
        if (error instanceof NoSuchKey || isNotFound(error)) return undefined;
        throw toBlobStoreError(error);
      }
    },

    async stat(key) {
      try {
        const head = await client.send(
          new HeadObjectCommand({ Bucket: bucket, Key: objectKey(key) }),
        );
        return { sizeBytes: head.ContentLength ?? 0 };
      } catch (error) {
        if (error instanceof NotFound || isNotFound(error)) return undefined;
        throw toBlobStoreError(error);
      }
    },

    async delete(key) {
      // S3 answers 204 for an absent key too: deleting is idempotent as the port requires.
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }));
      } catch (error) {
        throw toBlobStoreError(error);
      }
    },

    async list(listPrefix, options) {
      assertBlobKeyPrefix(listPrefix);
      assertBlobListOptions(listPrefix, options, MAX_BLOB_LIST_LIMIT);
      // One ListObjectsV2 page: keys in UTF-8 order (ASCII keys: the folder store's order too).
      // Multipart uploads in progress are not objects yet, so they are never listed.
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: prefix + listPrefix,
          MaxKeys: options.limit,
          ...(options.startAfter === undefined ? {} : { StartAfter: prefix + options.startAfter }),
        }),
      );
      const blobs: ListedBlob[] = [];
      let last: string | undefined;
      for (const object of page.Contents ?? []) {
        const key = (object.Key ?? '').slice(prefix.length);
        last = key;
        // Not a key of ours (another writer in the bucket): stepped over, never touched.
        if (!isBlobKey(key) || object.LastModified === undefined) continue;
        if (object.LastModified.getTime() < options.modifiedBefore.getTime()) {
          blobs.push({ key, modifiedAt: object.LastModified, sizeBytes: object.Size ?? 0 });
        }
      }
      return { blobs, next: page.IsTruncated === true ? last : undefined };
    },

    async signedDownloadUrl(key, { expiresAt, fileName, contentType }) {
      const command = new GetObjectCommand({
        Bucket: bucket,
        Key: objectKey(key),
        // response-content-* are part of the signed query: a client cannot rename the file.
        ResponseContentDisposition: contentDisposition(fileName),
        ResponseContentType: contentType,
      });
      return getSignedUrl(linkClient, command, { expiresIn: secondsUntil(expiresAt) });
    },

    async signedUploadUrl(key, { expiresAt }): Promise<SignedUpload> {
      const command = new PutObjectCommand({
        Bucket: bucket,
        Key: objectKey(key),
        ContentType: UPLOAD_CONTENT_TYPE,
        IfNoneMatch: CREATE_ONLY,
      });
      const url = await getSignedUrl(linkClient, command, {
        expiresIn: secondsUntil(expiresAt),
        // Signed, so a PUT without them (or with other values) fails the signature check.
        signableHeaders: new Set(['content-type', 'if-none-match']),
      });
      return {
        url,
        method: 'PUT',
        requiredHeaders: { 'Content-Type': UPLOAD_CONTENT_TYPE, 'If-None-Match': CREATE_ONLY },
      };
    },

    applyLifecycleRule(expireAfterDays) {
      return applyLifecycleRule(client, { bucket, prefix, expireAfterDays });
    },
  };
}

/** `''`, or the prefix ending in `/`; its segments follow the blob key grammar. */
function toPrefix(value: string): string {
  if (value === '') return '';
  const trimmed = value.replace(/\/+$/, '');
  assertPrefix(trimmed);
  return `${trimmed}/`;
}

function assertPrefix(value: string): void {
  try {
    assertBlobKey(value);
  } catch {
    throw new TypeError(
      `prefix must be /-separated segments of letters, digits, _, - and . (got ${JSON.stringify(value)})`,
    );
  }
}

/** Seconds from now to `expiresAt`, within what SigV4 allows (at least one). */
function secondsUntil(expiresAt: Date): number {
  const seconds = Math.ceil((expiresAt.getTime() - Date.now()) / 1000);
  return Math.min(MAX_PRESIGN_SECONDS, Math.max(1, seconds));
}

function isNotFound(error: unknown): boolean {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata
    ?.httpStatusCode;
  return status === 404;
}

/** A body wrapped so that its size and digest are checked before the last byte is handed on. */
interface CheckedStream {
  readonly stream: ReadableStream<Uint8Array>;
  sizeBytes(): number;
  /** Why the stream was refused or failed, if it was. */
  refusal(): Error | undefined;
  /** Releases the source (after a failed write). */
  cancel(): Promise<void>;
}

function checkedStream(
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  contentMd5: string | undefined,
): CheckedStream {
  const reader = body.getReader();
  const digest = contentMd5 === undefined ? undefined : createHash('md5');
  let sizeBytes = 0;
  let refusal: Error | undefined;
  let released = false;
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    await reader.cancel().catch(() => undefined);
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (error) {
        // The body's own failure (a client gone mid-upload) is what `put` rejects with.
        refusal = error instanceof Error ? error : new Error(String(error));
        throw refusal;
      }
      const { done, value } = next;
      if (done) {
        // Checked before close: the writer sees an error instead of the end, so it never
        // completes the object.
        if (digest && digest.digest('base64') !== contentMd5) {
          refusal = new BlobDigestMismatchError();
          controller.error(refusal);
          return;
        }
        controller.close();
        return;
      }
      if (!(value instanceof Uint8Array)) {
        refusal = new TypeError('the body must yield Uint8Array chunks');
      } else if (sizeBytes + value.byteLength > maxBytes) {
        refusal = new BlobTooLargeError(maxBytes);
      }
      if (refusal) {
        await release();
        controller.error(refusal);
        return;
      }
      sizeBytes += value.byteLength;
      digest?.update(value);
      controller.enqueue(value);
    },
    cancel: release,
  });
  return {
    stream,
    sizeBytes: () => sizeBytes,
    refusal: () => refusal,
    cancel: release,
  };
}
