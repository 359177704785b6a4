import { uploadKeyOf } from '../domain/blob-ownership.ts';
import { newId } from '../domain/ids.ts';
import type { UploadRecord } from '../domain/types.ts';
import { assertFileName } from '../documents/file-name.ts';
import { organisationOf } from '../documents/routes.ts';
import { refusalProblem } from '../documents/refusals.ts';
import type { Handler, RequestContext } from '../http/context.ts';
import { ProblemError } from '../http/problem-error.ts';
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
    blobKey: uploadKeyOf(id),
    createdAt: now,
    putExpiresAt: new Date(now.getTime() + UPLOAD_LINK_MS),
    expiresAt: new Date(now.getTime() + UPLOAD_WINDOW_MS),
    maxSizeBytes: organisation.maxUploadSizeBytes,
    uploadedAt: null,
    sizeBytes: null,
    submittedAt: null,
    documentId: null,
  };
  const claim = context.idempotency;
  const created = await api.store.createUpload(
    record,
    claim === undefined
      ? undefined
      : {
          organisationId: claim.organisationId,
          key: claim.key,
          owner: claim.owner,
          requestHash: await claim.requestHash(),
        },
  );
  if (!created) {
    throw new ProblemError('IdempotencyKeyInFlight', {
      detail:
        'A retry with this Idempotency-Key took it over while this request ran; that retry answers for it.',
    });
  }
  api.settings.failpoint?.('upload-created');
  api.logger.info({ uploadId: id, organisationId: organisation.id }, 'upload created');
  return uploadAnswer(context, record, usageHeaders(organisation));
};

/** The 201 of an upload: its envelope with a link signed now. */
async function uploadAnswer(
  context: RequestContext,
  record: UploadRecord,
  headers: Record<string, string>,
): Promise<Response> {
  const { api, request } = context;
  const link = await api.blobs.signedUploadUrl(record.blobKey, {
    expiresAt: record.putExpiresAt,
    maxBytes: record.maxSizeBytes,
  });
  return jsonResponse(
    request,
    {
      uploadId: record.id,
      uploadUrl: link.url,
      method: link.method,
      requiredHeaders: link.requiredHeaders,
      maxSizeBytes: record.maxSizeBytes,
      expiresAt: record.putExpiresAt.toISOString(),
    },
    // Nothing is charged yet: the usage is what a submission would be measured against.
    { status: 201, headers },
  );
}

/**
 * `POST /v1/uploads` retried under an `Idempotency-Key` whose first request created `uploadId`
 * and died before its response was stored: the 201 of that upload (its link signed again, with
 * the same expiry), never a second upload.
 */
export const resumeUpload = async (
  context: RequestContext,
  uploadId: string,
): Promise<Response> => {
  const organisation = await organisationOf(context);
  const record = await context.api.store.getUpload(organisation.id, uploadId);
  if (!record) throw new Error(`upload ${uploadId} recorded on an idempotency key is gone`);
  return uploadAnswer(context, record, usageHeaders(organisation));
};
