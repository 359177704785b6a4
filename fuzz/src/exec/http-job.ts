/**
 * The HTTP front under fuzzing: `createDisarmApi` and `createStorageApi` in this process, on a
 * real SQLite store and a local blob folder in a temporary directory, with OAuth on and a manual
 * clock (test mode). Each job is a short program of requests; every answer must be a
 * well-formed answer from the spec: never a 500, never a thrown handler, and every API response
 * as the served OpenAPI document describes it (status, headers, body).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  createDocumentEvents,
  createLocalBlobStore,
  createManualClock,
  hashAdminToken,
} from '@disarm/node';
import { createDisarmApi, createLinkSigner, createStorageApi } from '@disarm/protocol';
import { createOpenApiValidator } from '@disarm/protocol/testing';
import { createSqliteStore } from '@disarm/sqlite';

import type { HttpRequestSpec, Job, Verdict } from './protocol.ts';

const API_URL = 'http://api.fuzz.invalid';
const STORAGE_URL = 'http://storage.fuzz.invalid';
/** Sync waits are held this long at most, so a program never waits long on a pending document. */
const SYNC_WAIT_SECONDS = 1;
/** Requests between clock jumps past the rate-limit window, so fuzzing is not all 429s. */
const REQUESTS_PER_RATE_WINDOW = 400;
/** Response bodies read back (the contract's documents are small; a large one is cut). */
const MAX_RESPONSE_BODY_BYTES = 4 * 1024 * 1024;

type HttpJob = Extract<Job, { kind: 'http' }>;

/** Builds the front and returns the runner of HTTP jobs. */
export async function createHttpRunner(): Promise<(job: HttpJob) => Promise<Verdict>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'disarm-fuzz-http-'));
  process.once('exit', () => {
    void rm(dataDir, { recursive: true, force: true });
  });
  const clock = createManualClock(new Date());
  const store = createSqliteStore({ path: join(dataDir, 'disarm.sqlite') });
  const signer = createLinkSigner(randomBytes(32), STORAGE_URL);
  const blobs = createLocalBlobStore({ directory: join(dataDir, 'blobs'), signer });
  const events = createDocumentEvents();
  const adminToken = randomBytes(24).toString('hex');
  const api = createDisarmApi(
    { store, blobs, events, clock },
    {
      publicBaseUrl: API_URL,
      syncWaitSeconds: SYNC_WAIT_SECONDS,
      adminTokenHashes: [hashAdminToken(adminToken)],
      manualClock: clock,
      oauth: { keyEncryptionKey: randomBytes(32) },
    },
  );
  const storage = createStorageApi({
    store,
    blobs,
    signer,
    clock,
    storageBaseUrl: STORAGE_URL,
    problemsBaseUrl: API_URL,
  });
  // The organisation and its key are made through the admin API, as an operator makes them.
  const admin = (path: string, body: unknown): Promise<Response> =>
    api.fetch(
      new Request(`${API_URL}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    );
  const organisation = (await (
    await admin('/v1/admin/organisations', { name: 'Fuzz', plan: 'internal' })
  ).json()) as { id: string };
  const key = (await (
    await admin(`/v1/admin/organisations/${organisation.id}/keys`, { name: 'fuzz' })
  ).json()) as { key: string };
  if (typeof organisation.id !== 'string' || typeof key.key !== 'string') {
    throw new Error('the admin API did not provision the fuzzing organisation');
  }
  const contract = (await (
    await api.fetch(new Request(`${API_URL}/v1/openapi.json`))
  ).json()) as Record<string, unknown>;
  const validator = await createOpenApiValidator(contract);
  let requests = 0;

  return async (job) => {
    const state: Record<string, string> = {
      apiKey: key.key,
      adminToken,
      organisationId: organisation.id,
      documentId: 'doc_missing00000000000000',
      uploadId: 'upl_missing00000000000000',
      uploadPath: '/blobs/uploads/missing',
    };
    let served = 0;
    for (const spec of job.requests) {
      requests += 1;
      if (requests % REQUESTS_PER_RATE_WINDOW === 0) clock.advance(61_000);
      const request = toRequest(spec, state);
      if (!request) continue;
      let response: Response;
      try {
        response = await (spec.origin === 'api' ? api.fetch(request) : storage.fetch(request));
      } catch (error) {
        return failure(
          'http-exception',
          `${spec.method} ${spec.target}: the fetch handler threw`,
          error,
        );
      }
      let bytes: Uint8Array;
      try {
        bytes = await readBody(response);
      } catch (error) {
        return failure(
          'http-exception',
          `${spec.method} ${spec.target} -> ${response.status}: the body stream failed`,
          error,
        );
      }
      served += 1;
      const label = `${request.method} ${new URL(request.url).pathname} -> ${response.status}`;
      if (response.status >= 500 && response.status !== 503) {
        return {
          ok: false,
          kind: 'http-500',
          message: `${label}: ${Buffer.from(bytes).toString('utf8').slice(0, 300)}`,
        };
      }
      const body = parseBody(response, bytes);
      if (spec.origin === 'api') {
        const errors = validator.validate({
          method: request.method,
          path: new URL(request.url).pathname,
          status: response.status,
          headers: response.headers,
          body,
        });
        if (errors.length > 0)
          return { ok: false, kind: 'http-contract', message: errors.slice(0, 3).join('; ') };
      } else if (response.status >= 400 && !isProblem(response, body)) {
        return {
          ok: false,
          kind: 'http-contract',
          message: `${label}: a storage refusal that is not a problem document`,
        };
      }
      learn(state, body);
    }
    return { ok: true, outcome: `served:${served}` };
  };
}

function failure(kind: 'http-exception', message: string, error: unknown): Verdict {
  const described = error instanceof Error ? error : new Error(String(error));
  return {
    ok: false,
    kind,
    message: `${message}: ${described.name}: ${described.message}`,
    ...(described.stack === undefined ? {} : { stack: described.stack }),
  };
}

function fill(text: string, state: Readonly<Record<string, string>>): string {
  return text.replace(
    /\{(apiKey|adminToken|organisationId|documentId|uploadId|uploadPath)\}/g,
    (_, name: string) => state[name] ?? '',
  );
}

/** The fetch `Request` of a spec, or `undefined` when a `Request` cannot carry it. */
function toRequest(
  spec: HttpRequestSpec,
  state: Readonly<Record<string, string>>,
): Request | undefined {
  try {
    const base = spec.origin === 'api' ? API_URL : STORAGE_URL;
    const headers = new Headers();
    for (const [name, value] of spec.headers) headers.append(name, fill(value, state));
    const body =
      spec.body === undefined
        ? undefined
        : Buffer.from(fill(Buffer.from(spec.body).toString('latin1'), state), 'latin1');
    // A socket would carry Content-Length for a body; a bare Request does not (the lanes need it).
    if (body !== undefined && !headers.has('content-length'))
      headers.set('content-length', String(body.length));
    const method = spec.method;
    const carriesBody = body !== undefined && method !== 'GET' && method !== 'HEAD';
    return new Request(`${base}${fill(spec.target, state)}`, {
      method,
      headers,
      redirect: 'manual',
      ...(carriesBody ? { body, duplex: 'half' } : {}),
    });
  } catch {
    return undefined;
  }
}

async function readBody(response: Response): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_RESPONSE_BODY_BYTES) {
      await reader.cancel();
      break;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

function parseBody(response: Response, bytes: Uint8Array): unknown {
  const text = Buffer.from(bytes).toString('utf8');
  if (text === '') return undefined;
  const type = response.headers.get('content-type') ?? '';
  if (type.includes('json') || type.startsWith('text/plain')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

function isProblem(response: Response, body: unknown): boolean {
  if (!(response.headers.get('content-type') ?? '').startsWith('application/problem+json'))
    return false;
  if (typeof body !== 'object' || body === null) return false;
  const { status, code, type } = body as Record<string, unknown>;
  return status === response.status && typeof code === 'string' && typeof type === 'string';
}

/** Remembers ids from an answer, so later requests of the program can name them. */
function learn(state: Record<string, string>, body: unknown): void {
  if (typeof body !== 'object' || body === null) return;
  const record = body as Record<string, unknown>;
  if (typeof record.id === 'string' && record.id.startsWith('doc_')) state.documentId = record.id;
  if (typeof record.id === 'string' && record.id.startsWith('org_'))
    state.organisationId = record.id;
  if (typeof record.uploadId === 'string') state.uploadId = record.uploadId;
  if (typeof record.uploadUrl === 'string') {
    try {
      const url = new URL(record.uploadUrl);
      state.uploadPath = `${url.pathname}${url.search}`;
    } catch {
      // Not a URL: the next PUT goes to the placeholder path.
    }
  }
  if (typeof record.key === 'string' && record.key.length > 20) state.apiKey = record.key;
}
