import { newId } from '../domain/ids.ts';
import type { UploadRecord } from '../domain/types.ts';
import { assertFileName } from '../documents/file-name.ts';
import { organisationOf } from '../documents/routes.ts';
import { refusalProblem } from '../documents/refusals.ts';
import type { Handler } from '../http/context.ts';
import { asJsonObject, readJsonBody } from '../http/json-body.ts';
import { jsonResponse } from '../http/negotiation.ts';
import { FieldErrors } from '../http/validation.ts';
import { usageHeaders } from '../documents/usage.ts';

/** The PUT link works for 60 minutes (README "Large files: the upload lane"). */
export const UPLOAD_LINK_MS = 60 * 60 * 1000;
/** Uploads stay submittable 24 hours from creation (README "Large files: the upload lane"). */
export const UPLOAD_WINDOW_MS = 24 * 60 * 60 * 1000;

function parseFileName(value: unknown): string {
  const body = asJsonObject(value);
  const errors = new FieldErrors();
  for (const key of Object.keys(body)) {
    if (key !== 'fileName') errors.add(`body.${key}`, 'unknown property; only fileName is allowed');
  }
  if (typeof body.fileName !== 'string') errors.add('body.fileName', 'required, a string');
  errors.throwIfAny();
  return assertFileName(body.fileName as string, 'body.fileName');
}

/**
 * `POST /v1/uploads`: the file name is checked first, then the account (refused up front if it
 * could not submit); nothing is metered until the upload is submitted by reference.
 */
export const createUpload: Handler = async (context) => {
  const { api, request } = context;
  const organisation = await organisationOf(context);
  const fileName = parseFileName(await readJsonBody(request));
  const now = api.clock.now();
  const refusal = await api.store.checkCanSubmit(organisation.id, now);
  if (refusal) throw refusalProblem(refusal, now);
  const id = newId('upl', api.random);
  const record: UploadRecord = {
    id,
    organisationId: organisation.id,
    fileName,
    blobKey: `uploads/${id}`,
    createdAt: now,
    putExpiresAt: new Date(now.getTime() + UPLOAD_LINK_MS),
    expiresAt: new Date(now.getTime() + UPLOAD_WINDOW_MS),
    maxSizeBytes: organisation.maxUploadSizeBytes,
    uploadedAt: null,
    sizeBytes: null,
    submittedAt: null,
    documentId: null,
  };
  await api.store.createUpload(record);
  const link = await api.blobs.signedUploadUrl(record.blobKey, {
    expiresAt: record.putExpiresAt,
    maxBytes: record.maxSizeBytes,
  });
  api.logger.info({ uploadId: id, organisationId: organisation.id }, 'upload created');
  return jsonResponse(
    request,
    {
      uploadId: id,
      uploadUrl: link.url,
      method: link.method,
      requiredHeaders: link.requiredHeaders,
      maxSizeBytes: record.maxSizeBytes,
      expiresAt: record.putExpiresAt.toISOString(),
    },
    // Nothing is charged yet: the usage is what a submission would be measured against.
    { status: 201, headers: usageHeaders(organisation) },
  );
};
