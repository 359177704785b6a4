import { SCOPE_API } from '../auth/principal.ts';
import { intakeKeyOf } from '../domain/blob-ownership.ts';
import { newId } from '../domain/ids.ts';
import type { DocumentRecord, Lane, Organisation } from '../domain/types.ts';
import type { ApiContext, Handler, RequestContext } from '../http/context.ts';
import { asJsonObject, readJsonBody } from '../http/json-body.ts';
import { jsonResponse } from '../http/negotiation.ts';
import { organisationGone, ProblemError } from '../http/problem-error.ts';
import { FieldErrors, parseBoolean, parseNonNegativeInt32 } from '../http/validation.ts';
import { StorageUnavailableError } from '../ports.ts';
import type { AcceptResult, NewDocument } from '../ports.ts';
import { toEnvelope, isDownloadable, statusUrlOf } from './envelope.ts';
import { assertFileName } from './file-name.ts';
import { receiveMultipart, receiveRaw } from './lanes.ts';
import type { ReceivedFile } from './lanes.ts';
import { parsePrefer } from './prefer.ts';
import { usageHeaders } from './usage.ts';
import { refusalProblem } from './refusals.ts';
import { isInFlight, isTerminal } from './state-machine.ts';
import { bufferedResponse } from '../http/buffered-response.ts';
import { recordDirectUpload } from '../uploads/direct-upload.ts';

/** Longest id the document routes look up; anything longer cannot exist. */
const MAX_ID_CHARS = 64;
/** uploadId bounds (`submitDocument`: 1 to 64 characters). */
const MAX_UPLOAD_ID_CHARS = 64;

/** The organisation id of an authenticated document-API caller (no read: its own rows are scoped by it). */
export function callerOrganisationId(context: RequestContext): string {
  const principal = context.principal;
  const id = principal?.organisationId;
  if (!principal || !id || !principal.scopes.has(SCOPE_API)) {
    throw new ProblemError('Forbidden', { detail: `This route needs scope ${SCOPE_API}.` });
  }
  return id;
}

/** The organisation of an authenticated document-API caller, read now. */
export async function organisationOf(context: RequestContext): Promise<Organisation> {
  const id = callerOrganisationId(context);
  const organisation = await context.api.store.getOrganisation(id, context.api.clock.now());
  // A credential whose organisation is gone is no credential.
  if (!organisation) throw organisationGone();
  return organisation;
}

interface SubmitQuery {
  readonly wait: boolean | undefined;
  readonly waitSeconds: number | undefined;
  readonly statusStyle202: boolean;
  readonly filename: string | undefined;
  readonly deleteAfterDownload: boolean | undefined;
}

function parseSubmitQuery(url: URL, lane: Lane): SubmitQuery {
  const errors = new FieldErrors();
  const query = url.searchParams;
  const single = (name: string): string | undefined => {
    const values = query.getAll(name);
    if (values.length > 1) errors.add(`query.${name}`, 'give this parameter once');
    return values[0];
  };
  const waitText = single('wait');
  const wait = waitText === undefined ? undefined : parseBoolean(waitText);
  if (waitText !== undefined && wait === undefined)
    errors.add('query.wait', 'must be true or false');
  const waitSecondsText = single('waitSeconds');
  const waitSeconds =
    waitSecondsText === undefined ? undefined : parseNonNegativeInt32(waitSecondsText);
  if (waitSecondsText !== undefined && waitSeconds === undefined) {
    errors.add('query.waitSeconds', 'must be a whole number of seconds, 0 or more');
  }
  const statusStyle = single('statusStyle');
  if (statusStyle !== undefined && statusStyle !== '202') {
    errors.add('query.statusStyle', 'the only value is 202');
  }
  const filename = single('filename');
  const dadText = single('deleteAfterDownload');
  const deleteAfterDownload = dadText === undefined ? undefined : parseBoolean(dadText);
  if (dadText !== undefined && deleteAfterDownload === undefined) {
    errors.add('query.deleteAfterDownload', 'must be true or false');
  }
  if (lane === 'raw') {
    if (filename === undefined)
      errors.add('query.filename', 'required with application/octet-stream');
  } else {
    if (filename !== undefined) {
      errors.add('query.filename', 'only for application/octet-stream bodies');
    }
    if (dadText !== undefined) {
      errors.add(
        'query.deleteAfterDownload',
        lane === 'multipart' ? 'send it as a form field' : 'send it in the JSON body',
      );
    }
  }
  errors.throwIfAny();
  return {
    wait,
    waitSeconds,
    statusStyle202: statusStyle === '202',
    filename,
    deleteAfterDownload,
  };
}

/** The lane a submission takes, by its media type. */
function laneOf(contentType: string | null): Lane {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  switch (mediaType) {
    case 'multipart/form-data':
      return 'multipart';
    case 'application/json':
      return 'reference';
    case 'application/octet-stream':
      return 'raw';
    default:
      throw new ProblemError('UnsupportedMediaType', {
        detail:
          mediaType === ''
            ? 'Send the file as multipart/form-data, application/octet-stream, or submit an upload by reference with application/json.'
            : `${mediaType} is not accepted here: use multipart/form-data, application/octet-stream or application/json.`,
      });
  }
}

interface ReferenceBody {
  readonly uploadId: string;
  readonly deleteAfterDownload: boolean;
}

function parseReferenceBody(value: unknown): ReferenceBody {
  const body = asJsonObject(value);
  const errors = new FieldErrors();
  for (const key of Object.keys(body)) {
    if (key !== 'uploadId' && key !== 'deleteAfterDownload') {
      errors.add(
        `body.${key}`,
        'unknown property; only uploadId and deleteAfterDownload are allowed',
      );
    }
  }
  const { uploadId, deleteAfterDownload } = body;
  if (typeof uploadId !== 'string') {
    errors.add('body.uploadId', 'required, a string');
  } else if (uploadId.length < 1 || uploadId.length > MAX_UPLOAD_ID_CHARS) {
    errors.add('body.uploadId', `must be 1 to ${MAX_UPLOAD_ID_CHARS} characters`);
  }
  if (deleteAfterDownload !== undefined && typeof deleteAfterDownload !== 'boolean') {
    errors.add('body.deleteAfterDownload', 'must be a boolean');
  }
  errors.throwIfAny();
  return { uploadId: uploadId as string, deleteAfterDownload: deleteAfterDownload === true };
}

function acceptProblem(
  api: ApiContext,
  result: Exclude<AcceptResult, { kind: 'accepted' }>,
  now: Date,
): ProblemError {
  switch (result.kind) {
    case 'upload_not_found':
      return new ProblemError('UploadNotFound', {
        detail: 'No such upload in this organisation, or its 24-hour window has passed.',
      });
    case 'upload_already_submitted':
      return new ProblemError('UploadAlreadySubmitted', {
        detail: 'This upload was already submitted; an upload can be submitted once.',
      });
    case 'upload_not_uploaded':
      return new ProblemError('ValidationFailed', {
        detail:
          'Nothing has been uploaded to this upload yet: PUT the bytes to its uploadUrl first.',
        extensions: {
          errors: [
            { field: 'body.uploadId', message: 'no bytes have been uploaded for this upload yet' },
          ],
        },
      });
    case 'upload_too_large':
      return new ProblemError('FileTooLargeForPlan', {
        detail: `The uploaded file is over the plan's ${result.maxSizeBytes}-byte upload ceiling.`,
        extensions: { maxSizeBytes: result.maxSizeBytes },
      });
    case 'claim_lost':
      // A retry took the key over while this request ran (this one looked gone): it answers.
      return new ProblemError('IdempotencyKeyInFlight', {
        detail:
          'A retry with this Idempotency-Key took it over while this request ran; that retry answers for it.',
      });
    default:
      return refusalProblem(result, now);
  }
}

/** How long a sync submission may wait, or `undefined` for no wait. */
function syncBudgetMs(
  api: ApiContext,
  query: SubmitQuery,
  prefer: ReturnType<typeof parsePrefer>,
): number | undefined {
  const asked =
    query.wait === true ||
    query.waitSeconds !== undefined ||
    prefer.respondSync ||
    prefer.waitSeconds !== undefined;
  if (!asked || query.wait === false) return undefined;
  let budget = api.settings.syncWaitMs;
  // waitSeconds and Prefer: wait=N only ever lower the server's budget.
  if (query.waitSeconds !== undefined) budget = Math.min(budget, query.waitSeconds * 1000);
  if (prefer.waitSeconds !== undefined) budget = Math.min(budget, prefer.waitSeconds * 1000);
  return budget;
}

async function waitForTerminal(
  api: ApiContext,
  document: DocumentRecord,
  budgetMs: number,
  clientGone: AbortSignal,
): Promise<DocumentRecord> {
  const deadline = Date.now() + budgetMs;
  let current = document;
  while (!isTerminal(current.status)) {
    const remaining = deadline - Date.now();
    if (remaining <= 0 || clientGone.aborted) break;
    // Woken by the finish event; also re-read every second in case a notification was missed.
    if (api.closing.aborted) break;
    const stop = AbortSignal.any([
      clientGone,
      api.closing,
      AbortSignal.timeout(Math.min(remaining, 1000)),
    ]);
    await api.events.waitForFinish(current.id, stop).catch(() => undefined);
    try {
      current = (await api.store.getDocument(current.organisationId, current.id)) ?? current;
    } catch (error) {
      // The document is accepted and charged: a 503 now would read as "not accepted, send it
      // again" and bill it twice. Stop waiting and answer 202; the caller polls once it is back.
      if (error instanceof StorageUnavailableError) break;
      throw error;
    }
  }
  return current;
}

/** `POST /v1/documents`: the three lanes, sync mode, both polling contracts. */
export const submitDocument: Handler = async (context) => {
  const { api, request, url } = context;
  const lane = laneOf(request.headers.get('Content-Type'));
  const query = parseSubmitQuery(url, lane);
  const prefer = parsePrefer(request.headers.get('Prefer'));
  // Everything knowable before the body is checked before the account (as for uploads).
  const rawFileName =
    lane === 'raw' ? assertFileName(query.filename ?? '', 'query.filename') : undefined;
  const organisation = await organisationOf(context);
  const refusal = await api.store.checkCanSubmit(organisation.id, api.clock.now());
  if (refusal) throw refusalProblem(refusal, api.clock.now());

  const documentId = newId('doc', api.random);
  const limits = {
    maxFileSizeBytes: organisation.maxFileSizeBytes,
    maxUploadSizeBytes: organisation.maxUploadSizeBytes,
  };
  let input: NewDocument;
  if (lane === 'reference') {
    const body = parseReferenceBody(await readJsonBody(request));
    await recordDirectUpload(api, organisation.id, body.uploadId);
    input = {
      id: documentId,
      organisationId: organisation.id,
      lane,
      fileName: '',
      sizeBytes: 0,
      intakeKey: '',
      deleteAfterDownload: body.deleteAfterDownload,
      statusStyle202: query.statusStyle202,
      uploadId: body.uploadId,
    };
  } else {
    const intakeKey = intakeKeyOf(documentId);
    let received: ReceivedFile;
    if (rawFileName !== undefined) {
      received = await receiveRaw(api, request, rawFileName, intakeKey, limits);
    } else {
      received = await receiveMultipart(
        api,
        request,
        request.headers.get('Content-Type') ?? '',
        intakeKey,
        limits,
      );
    }
    input = {
      id: documentId,
      organisationId: organisation.id,
      lane,
      fileName: received.fileName,
      sizeBytes: received.sizeBytes,
      intakeKey,
      deleteAfterDownload:
        (lane === 'raw' ? query.deleteAfterDownload : received.deleteAfterDownload) ?? false,
      statusStyle202: query.statusStyle202,
    };
    api.settings.failpoint?.('intake-stored');
  }

  const claim = context.idempotency;
  if (claim !== undefined) {
    // Recorded on the key with the document, in its transaction (README "Idempotency").
    input = {
      ...input,
      idempotency: {
        organisationId: claim.organisationId,
        key: claim.key,
        owner: claim.owner,
        requestHash: await claim.requestHash(),
      },
    };
  }
  const now = api.clock.now();
  let result: AcceptResult;
  try {
    result = await api.store.acceptDocument(input, now);
  } catch (error) {
    // Not accepted (the database out of reach or full): the bytes stored for it are nobody's.
    // Should the commit have landed with its answer lost, the document then fails for want of
    // its bytes and is refunded, so a caller told 503 never pays for what it sends again.
    if (input.intakeKey !== '') await api.blobs.delete(input.intakeKey).catch(() => undefined);
    throw error;
  }
  if (result.kind !== 'accepted') {
    // Refused after the bytes arrived (a race with another submission): nothing is kept.
    if (input.intakeKey !== '') await api.blobs.delete(input.intakeKey);
    throw acceptProblem(api, result, now);
  }
  api.settings.failpoint?.('document-accepted');
  api.events.queued(result.document.id);
  api.observer.accepted({
    planType: result.organisation.planType,
    chargedPence: result.document.chargedPence,
    countedInAllowance: result.document.countedInAllowance,
  });
  api.logger.info(
    {
      documentId: result.document.id,
      organisationId: organisation.id,
      lane,
      sizeBytes: result.document.sizeBytes,
    },
    'document accepted',
  );

  return answerSubmission(context, {
    document: result.document,
    organisation: result.organisation,
    lane,
    query,
    prefer,
  });
};

/** What {@link answerSubmission} answers for. */
interface Submission {
  readonly document: DocumentRecord;
  /** The organisation after the document's charge (for usage headers). */
  readonly organisation: Organisation;
  readonly lane: Lane;
  readonly query: SubmitQuery;
  readonly prefer: ReturnType<typeof parsePrefer>;
}

/** The answer to an accepted submission: 202, or in sync mode the wait and then 200 or 202. */
async function answerSubmission(
  context: RequestContext,
  submission: Submission,
): Promise<Response> {
  const { api, request } = context;
  const { lane, query, prefer, organisation } = submission;
  // Usage after this document's charge (README "Plans, metering and usage").
  const headers = new Headers(usageHeaders(organisation));
  // The upload lane skips the sync wait (`submitDocument` 202): large files are not held open.
  const budget = lane === 'reference' ? undefined : syncBudgetMs(api, query, prefer);
  let document = submission.document;
  if (budget !== undefined) {
    const applied: string[] = [];
    if (prefer.respondSync) applied.push('respond-sync');
    if (prefer.waitSeconds !== undefined) applied.push(`wait=${prefer.waitSeconds}`);
    if (applied.length > 0) headers.set('Preference-Applied', applied.join(', '));
    document = await waitForTerminal(api, document, budget, request.signal);
  }
  const envelope = await toEnvelope(api, document, api.clock.now());
  if (isTerminal(document.status) && budget !== undefined) {
    if (document.status === 'failed') {
      // A failed document was credited back: the usage headers show the account after that.
      const refunded = await api.store
        .getOrganisation(organisation.id, api.clock.now())
        .catch((error: unknown) => {
          // The answer is known; only its usage headers would be stale. Never a 503 for it.
          if (error instanceof StorageUnavailableError) return undefined;
          throw error;
        });
      if (refunded) {
        for (const [name, value] of Object.entries(usageHeaders(refunded))) {
          headers.set(name, value);
        }
      }
    }
    return jsonResponse(request, envelope, { status: 200, headers });
  }
  headers.set('Location', statusUrlOf(api, document));
  headers.set('Retry-After', String(api.settings.pollAfterSeconds));
  return jsonResponse(request, envelope, { status: 202, headers });
}

/**
 * `POST /v1/documents` retried under an `Idempotency-Key` whose first request accepted
 * `documentId` (charged once, with the key recording it) and then died before its response was
 * stored: the answer is that document's, as the first request would have given it now — 202
 * with `Location` and `Retry-After`, or the sync wait when asked — and nothing is created or
 * charged again. The retry's fingerprint equals the first request's, so its query is the same.
 */
export const resumeSubmission = async (
  context: RequestContext,
  documentId: string,
): Promise<Response> => {
  const { api, request, url } = context;
  const lane = laneOf(request.headers.get('Content-Type'));
  const query = parseSubmitQuery(url, lane);
  const prefer = parsePrefer(request.headers.get('Prefer'));
  const organisation = await organisationOf(context);
  const document = await api.store.getDocument(organisation.id, documentId);
  // Documents are never removed, only their files: a missing one is a bug, not the caller's.
  if (!document) throw new Error(`document ${documentId} recorded on an idempotency key is gone`);
  api.logger.info(
    { documentId, organisationId: organisation.id },
    'idempotent retry answered for the document its first request accepted',
  );
  return answerSubmission(context, { document, organisation, lane, query, prefer });
};

function documentIdParam(context: RequestContext): string {
  const id = context.params.id ?? '';
  if (id.length === 0 || id.length > MAX_ID_CHARS) {
    throw new ProblemError('DocumentNotFound', {
      detail: 'No such document in this organisation.',
    });
  }
  return id;
}

async function loadDocument(context: RequestContext): Promise<DocumentRecord> {
  const document = await context.api.store.getDocument(
    callerOrganisationId(context),
    documentIdParam(context),
  );
  if (!document) {
    throw new ProblemError('DocumentNotFound', {
      detail: 'No such document in this organisation.',
    });
  }
  return document;
}

/** `GET /v1/documents/{id}`: the envelope; with `statusStyle=202`, 202 while in flight. */
export const getDocument: Handler = async (context) => {
  const { api, request, url } = context;
  const statusStyle = url.searchParams.get('statusStyle');
  if (statusStyle !== null && statusStyle !== '202') {
    const errors = new FieldErrors();
    errors.add('query.statusStyle', 'the only value is 202');
    errors.throwIfAny();
  }
  const document = await loadDocument(context);
  const envelope = await toEnvelope(api, document, api.clock.now());
  if (statusStyle === '202' && isInFlight(document.status)) {
    const self = `${api.settings.publicBaseUrl}/v1/documents/${encodeURIComponent(document.id)}?statusStyle=202`;
    return jsonResponse(request, envelope, {
      status: 202,
      headers: { Location: self, 'Retry-After': String(api.settings.pollAfterSeconds) },
    });
  }
  return jsonResponse(request, envelope);
};

/** `DELETE /v1/documents/{id}`: removes the cleaned file; idempotent; 409 while in flight. */
export const deleteDocument: Handler = async (context) => {
  const { api } = context;
  const id = documentIdParam(context);
  const result = await api.store.deleteDocumentFile(
    callerOrganisationId(context),
    id,
    api.clock.now(),
  );
  switch (result.kind) {
    case 'not_found':
      throw new ProblemError('DocumentNotFound', {
        detail: 'No such document in this organisation.',
      });
    case 'in_flight':
      throw new ProblemError('DocumentNotDeletable', {
        detail: `The document is ${result.document.status}; delete it once processing has ended.`,
      });
    case 'deleted':
      if (result.blobKey !== null) await api.blobs.delete(result.blobKey);
      api.logger.info({ documentId: id }, 'cleaned file deleted');
      return bufferedResponse(null, { status: 204, headers: { 'Cache-Control': 'no-store' } });
    case 'nothing_to_delete':
      return bufferedResponse(null, { status: 204, headers: { 'Cache-Control': 'no-store' } });
  }
};

/** `GET /v1/documents/{id}/download`: 302 to the signed link while the file is there. */
export const downloadDocument: Handler = async (context) => {
  const { api, request } = context;
  let document = await loadDocument(context);
  const now = api.clock.now();
  if (document.status !== 'completed' || !document.output) {
    const envelope = await toEnvelope(api, document, now);
    return jsonResponse(request, envelope, { status: 409 });
  }
  const graceMs = api.settings.deleteAfterDownloadGraceMs;
  const graceOver =
    document.deleteAfterDownload &&
    document.firstDownloadAt !== null &&
    now.getTime() >= document.firstDownloadAt.getTime() + graceMs;
  if (document.deletedAt !== null || graceOver) {
    // The sweep of a delete-after-download document deletes at first download + grace; any
    // earlier deletion was a DELETE request.
    const swept =
      document.deleteAfterDownload &&
      document.firstDownloadAt !== null &&
      (document.deletedAt === null ||
        document.deletedAt.getTime() >= document.firstDownloadAt.getTime() + graceMs);
    throw new ProblemError('DocumentDeleted', {
      detail: swept
        ? 'The cleaned file was deleted after its first download (delete-after-download).'
        : 'The cleaned file was deleted by a DELETE request on this document.',
    });
  }
  if (!isDownloadable(document, now)) {
    throw new ProblemError('DownloadExpired', {
      detail: 'Cleaned files are kept for 24 hours after completion; submit the document again.',
    });
  }
  let expiresAt = document.downloadExpiresAt ?? now;
  if (document.deleteAfterDownload) {
    // The first call starts the grace clock; the link works for the grace, never past 24 h. A
    // HEAD only asks where the file is, so it starts nothing.
    if (request.method !== 'HEAD') {
      document =
        (await api.store.recordDownload(document.organisationId, document.id, now)) ?? document;
    }
    const graceEnd = (document.firstDownloadAt ?? now).getTime() + graceMs;
    expiresAt = new Date(Math.min(expiresAt.getTime(), graceEnd));
  }
  const output = document.output;
  if (!output) throw new ProblemError('DownloadExpired');
  const link = await api.blobs.signedDownloadUrl(output.blobKey, {
    expiresAt,
    fileName: output.fileName,
    contentType: output.mediaType,
  });
  return bufferedResponse(null, {
    status: 302,
    headers: { Location: link, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' },
  });
};
