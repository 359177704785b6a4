/**
 * The HTTP target's seeds: request programs that walk the v1 API the way clients do (each lane of
 * `POST /v1/documents`, status reads in both styles, download, delete, staged uploads with their
 * storage PUT, the account, admin calls with JSON bodies), built from fixture files.
 */
import { buildImage, buildRtf, buildTextPdf } from '@disarm/fixtures';

import type { HttpRequestSpec } from '../exec/protocol.ts';
import type { Seed } from '../seeds.ts';
import { encodeProgram } from './program.ts';

/** The boundary the seeds' multipart bodies use. */
export const BOUNDARY = 'fuzzBoundary7MA4YWxk';

const api = (
  method: string,
  target: string,
  headers: [string, string][] = [],
  body?: Uint8Array | string,
): HttpRequestSpec => ({
  origin: 'api',
  method,
  target,
  headers: [['authorization', 'Bearer {apiKey}'], ...headers],
  ...(body === undefined
    ? {}
    : { body: typeof body === 'string' ? Buffer.from(body, 'utf8') : body }),
});

/** A multipart/form-data body (RFC 7578) with a `file` part and any further fields. */
export function multipartBody(
  file: { name: string; bytes: Uint8Array; type?: string },
  fields: Record<string, string> = {},
): Uint8Array {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    parts.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      ),
    );
  }
  parts.push(
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: ${file.type ?? 'application/octet-stream'}\r\n\r\n`,
    ),
    Buffer.from(file.bytes),
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  );
  return new Uint8Array(Buffer.concat(parts));
}

const MULTIPART: [string, string] = ['content-type', `multipart/form-data; boundary=${BOUNDARY}`];
const JSON_TYPE: [string, string] = ['content-type', 'application/json'];

/** The seed programs. */
export async function buildHttpSeeds(): Promise<Seed[]> {
  const png = await buildImage('png', { width: 8, height: 8 });
  const pdf = buildTextPdf();
  const rtf = buildRtf();
  const programs: Record<string, HttpRequestSpec[]> = {
    'multipart-then-status': [
      api(
        'POST',
        '/v1/documents',
        [MULTIPART, ['idempotency-key', 'k-1']],
        multipartBody(
          { name: 'a.png', bytes: png, type: 'image/png' },
          { deleteAfterDownload: 'false' },
        ),
      ),
      api('GET', '/v1/documents/{documentId}'),
      api('GET', '/v1/documents/{documentId}?statusStyle=202'),
    ],
    'raw-then-download-delete': [
      api(
        'POST',
        '/v1/documents?filename=report.pdf&deleteAfterDownload=true',
        [['content-type', 'application/octet-stream']],
        pdf,
      ),
      api('GET', '/v1/documents/{documentId}/download'),
      api('DELETE', '/v1/documents/{documentId}'),
    ],
    'staged-upload': [
      api(
        'POST',
        '/v1/uploads',
        [JSON_TYPE, ['idempotency-key', 'u-1']],
        JSON.stringify({ fileName: 'notes.rtf' }),
      ),
      {
        origin: 'storage',
        method: 'PUT',
        target: '{uploadPath}',
        headers: [['content-type', 'application/octet-stream']],
        body: rtf,
      },
      api(
        'POST',
        '/v1/documents',
        [JSON_TYPE],
        JSON.stringify({ uploadId: '{uploadId}', deleteAfterDownload: false }),
      ),
    ],
    'account-and-contract': [
      api('GET', '/v1/account'),
      { origin: 'api', method: 'GET', target: '/v1/openapi.json', headers: [] },
      { origin: 'api', method: 'GET', target: '/healthz', headers: [] },
    ],
    'admin-organisation': [
      {
        origin: 'api',
        method: 'POST',
        target: '/v1/admin/organisations',
        headers: [['authorization', 'Bearer {adminToken}'], JSON_TYPE],
        body: Buffer.from(JSON.stringify({ name: 'Fuzz Org', plan: 'payg', creditPence: 500 })),
      },
      {
        origin: 'api',
        method: 'GET',
        target: '/v1/admin/organisations/{organisationId}',
        headers: [['authorization', 'Bearer {adminToken}']],
      },
      {
        origin: 'api',
        method: 'PATCH',
        target: '/v1/admin/organisations/{organisationId}',
        headers: [['authorization', 'Bearer {adminToken}'], JSON_TYPE],
        body: Buffer.from(JSON.stringify({ status: 'suspended', creditDeltaPence: -100 })),
      },
      {
        origin: 'api',
        method: 'POST',
        target: '/v1/admin/organisations/{organisationId}/keys',
        headers: [['authorization', 'Bearer {adminToken}'], JSON_TYPE],
        body: Buffer.from(JSON.stringify({ name: 'ci' })),
      },
    ],
    'sync-and-api-key-header': [
      {
        origin: 'api',
        method: 'POST',
        target: '/v1/documents?waitSeconds=1&statusStyle=202',
        headers: [['x-api-key', '{apiKey}'], MULTIPART, ['prefer', 'respond-sync']],
        body: multipartBody({ name: 'b.png', bytes: png }),
      },
    ],
  };
  return Object.entries(programs).map(([name, requests]) => ({
    name,
    fileName: `${name}.http`,
    bytes: encodeProgram(requests),
  }));
}
