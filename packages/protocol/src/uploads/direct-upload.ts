import type { ApiContext } from '../http/context.ts';

/**
 * Records an upload whose bytes went straight to the blob store. With a bucket's presigned links
 * (S3) the PUT never passes through the service, so nothing has marked the upload uploaded: the
 * object's presence is the record. The size is measured from the stored object, so the plan's
 * upload ceiling is checked on what arrived, not on what a client claimed. An empty object counts
 * as nothing uploaded. With the embedded storage origin the PUT already recorded it: no-op.
 */
export async function recordDirectUpload(
  api: ApiContext,
  organisationId: string,
  uploadId: string,
): Promise<void> {
  const upload = await api.store.getUpload(organisationId, uploadId);
  // Unknown (undefined), already recorded, or already submitted: nothing to do.
  if (upload?.uploadedAt !== null || upload.submittedAt !== null) return;
  const stored = await api.blobs.stat(upload.blobKey);
  // An empty object is no upload, as the storage origin refuses an empty PUT.
  if (stored === undefined || stored.sizeBytes === 0) return;
  // A second caller racing here loses markUploaded (false) harmlessly: the size is the same object's.
  await api.store.markUploaded(upload.id, stored.sizeBytes, api.clock.now());
}
