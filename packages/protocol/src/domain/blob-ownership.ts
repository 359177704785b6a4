import { isInFlight } from '../documents/state-machine.ts';
import type { DocumentRecord, UploadRecord } from './types.ts';

/*
 * Which blobs are still someone's, once for every store and blob store. A blob is written before
 * the row that names it commits (the body streams into `intake/<id>` before the document is
 * accepted), so a crash in between leaves bytes no row knows; the sweeper lists the blob store
 * itself and deletes whatever no live document or upload owns once it is older than
 * {@link ORPHAN_BLOB_GRACE_MS} (README "Downloading and retention", the spec's "a processing
 * pipeline, not storage").
 */

/** Blob key of a document's submitted bytes (multipart and raw lanes). */
export function intakeKeyOf(documentId: string): string {
  return `intake/${documentId}`;
}

/** Blob key of a document's cleaned file (every attempt writes the same key). */
export function outputKeyOf(documentId: string): string {
  return `output/${documentId}`;
}

/** Blob key of a staged upload's bytes (the storage link's target). */
export function uploadKeyOf(uploadId: string): string {
  return `uploads/${uploadId}`;
}

/** The key prefixes the service writes under: all the orphan sweep looks at. */
export const BLOB_KEY_PREFIXES = ['intake/', 'output/', 'uploads/'] as const;

/**
 * How old a blob no row owns must be before the sweeper deletes it: longer than anything alive
 * can take between writing a blob and committing the row that names it. The longest is an API
 * request: its body may stream for 15 minutes (the API's request timeout, `disarm serve`), and an
 * S3 object's time is when its upload began; then the acceptance commits. A worker writes its
 * output while its document is in flight, which owns the key already. One hour leaves a wide
 * margin over both; an intake no row will ever name is the customer's file, and goes then.
 */
export const ORPHAN_BLOB_GRACE_MS = 60 * 60 * 1000;

/** Most keys one ownership question may name (`StateStore.ownedBlobKeys`). */
export const MAX_OWNERSHIP_KEYS = 1_000;

/** An upload as ownership sees it. */
export interface UploadBlobState {
  readonly blobKey: UploadRecord['blobKey'];
  readonly submittedAt: UploadRecord['submittedAt'];
  /** When the sweeper removed the staged bytes of an upload never submitted. */
  readonly blobRemovedAt: Date | null;
}

/**
 * The blob keys `document` owns now: its intake until the bytes are deleted; while in flight,
 * the output key its worker writes to; once completed, its cleaned file until removed.
 */
export function blobKeysOwnedBy(document: DocumentRecord): string[] {
  const keys: string[] = [];
  if (document.intakeKey !== null) keys.push(document.intakeKey);
  if (isInFlight(document.status)) keys.push(outputKeyOf(document.id));
  else if (document.output !== null && document.outputRemovedAt === null) {
    keys.push(document.output.blobKey);
  }
  return keys;
}

/**
 * The blob key `upload` owns now: its staged bytes until they are submitted (then the document
 * owns them, as its intake) or removed with the expired upload.
 */
export function blobKeyOwnedByUpload(upload: UploadBlobState): string | null {
  return upload.submittedAt === null && upload.blobRemovedAt === null ? upload.blobKey : null;
}

/**
 * The ids of the documents that may own one of `keys` through the key's name (`intake/<id>`,
 * `output/<id>`): a store reads these documents, and those whose intake or output column names a
 * key, and asks {@link ownedBlobKeys}.
 */
export function documentIdsNamedBy(keys: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const key of keys) {
    for (const prefix of ['intake/', 'output/']) {
      if (key.startsWith(prefix) && key.length > prefix.length) ids.add(key.slice(prefix.length));
    }
  }
  return [...ids];
}

/**
 * Of `keys`, those some of `documents` or `uploads` owns (in `keys`' order): what the orphan
 * sweep must keep. The store passes every document and upload that could own one of them.
 * @throws {TypeError} for more than {@link MAX_OWNERSHIP_KEYS} keys (a bug in the caller).
 */
export function ownedBlobKeys(
  keys: readonly string[],
  documents: readonly DocumentRecord[],
  uploads: readonly UploadBlobState[],
): string[] {
  assertOwnershipKeys(keys);
  const owned = new Set<string>();
  for (const document of documents) for (const key of blobKeysOwnedBy(document)) owned.add(key);
  for (const upload of uploads) {
    const key = blobKeyOwnedByUpload(upload);
    if (key !== null) owned.add(key);
  }
  return keys.filter((key) => owned.has(key));
}

/** @throws {TypeError} unless `keys` is a list of at most {@link MAX_OWNERSHIP_KEYS} strings. */
export function assertOwnershipKeys(keys: readonly string[]): void {
  if (!Array.isArray(keys) || keys.length > MAX_OWNERSHIP_KEYS) {
    throw new TypeError(`ask about at most ${MAX_OWNERSHIP_KEYS} blob keys at once`);
  }
  for (const key of keys) {
    if (typeof key !== 'string') throw new TypeError('blob keys are strings');
  }
}
