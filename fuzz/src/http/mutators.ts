/**
 * Mutators of HTTP request programs: requests dropped, duplicated, reordered and spliced in from
 * other programs; methods, paths, query strings and headers swapped for the values that break
 * parsers; multipart bodies cut into parts and the parts dropped, duplicated, reordered and given
 * hostile headers; JSON bodies with members dropped, duplicated, retyped and nested; and the byte
 * mutators on any body.
 */
import type { HttpRequestSpec } from '../exec/protocol.ts';
import { BYTE_MUTATORS } from '../mutate/bytes.ts';
import type { MutationContext, Mutator } from '../mutate/types.ts';
import type { Choices } from '../random.ts';
import { decodeProgram, encodeProgram, MAX_PROGRAM_REQUESTS } from './program.ts';

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'get', 'FOO'];
const PATHS = [
  '/v1/documents',
  '/v1/documents/{documentId}',
  '/v1/documents/{documentId}/download',
  '/v1/documents/doc_0000000000000000000000',
  '/v1/documents/%00',
  '/v1/documents/..%2F..%2Fetc',
  `/v1/documents/${'a'.repeat(300)}`,
  '/v1/documents/\u00e9t\u00e9',
  '//v1/documents',
  '/v1/documents/',
  '/v1/uploads',
  '/v1/account',
  '/v1/openapi.json',
  '/v1/admin/organisations',
  '/v1/admin/organisations/{organisationId}',
  '/v1/admin/organisations/{organisationId}/keys',
  '/v1/admin/organisations/{organisationId}/keys/key_x',
  '/v1/admin/clock',
  '/connect/token',
  '/.well-known/jwks.json',
  '/problems/ValidationFailed',
  '/problems/%ZZ',
  '/docs',
  '/readyz',
  '/metrics',
];
const QUERY_NAMES = [
  'wait',
  'waitSeconds',
  'statusStyle',
  'filename',
  'deleteAfterDownload',
  'expires',
  'signature',
  'key',
];
const QUERY_VALUES = [
  'true',
  'false',
  '1',
  '0',
  '-1',
  'yes',
  '',
  '202',
  '203',
  '99999999999999999999',
  '1e3',
  'a.png',
  '../../a.pdf',
  'a.exe',
  'noext',
  'a.PNG',
  `${'x'.repeat(300)}.pdf`,
  '%zz',
  '%00',
  'a%2Fb.png',
  'ä.docx',
];
const HEADER_CHOICES: readonly (readonly [string, string])[] = [
  ['authorization', 'Bearer {apiKey}'],
  ['authorization', 'Bearer {adminToken}'],
  ['authorization', 'Bearer '],
  ['authorization', 'Bearer cdr_live_0000000000000000000000000000000000'],
  ['authorization', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'],
  ['authorization', 'Basic Zm9vOmJhcg=='],
  ['authorization', 'bearer {apiKey}'],
  ['x-api-key', '{apiKey}'],
  ['x-api-key', 'nope'],
  ['content-type', 'multipart/form-data'],
  ['content-type', 'multipart/form-data; boundary='],
  ['content-type', 'multipart/form-data; boundary="fuzzBoundary7MA4YWxk"'],
  ['content-type', `multipart/form-data; boundary=${'b'.repeat(100)}`],
  ['content-type', 'multipart/mixed; boundary=fuzzBoundary7MA4YWxk'],
  ['content-type', 'application/json'],
  ['content-type', 'application/json; charset=utf-16'],
  ['content-type', 'application/octet-stream'],
  ['content-type', 'text/plain'],
  ['content-type', 'application/x-www-form-urlencoded'],
  ['content-type', ';;;'],
  ['content-length', '0'],
  ['content-length', '-1'],
  ['content-length', '99999999999'],
  ['content-length', 'abc'],
  ['content-encoding', 'gzip'],
  ['content-encoding', 'identity'],
  ['content-md5', 'AAAAAAAAAAAAAAAAAAAAAA=='],
  ['content-md5', 'not-base64'],
  ['idempotency-key', 'k-1'],
  ['idempotency-key', ''],
  ['idempotency-key', 'k'.repeat(201)],
  ['idempotency-key', 'k\u00e9y'],
  ['prefer', 'respond-sync'],
  ['prefer', 'respond-async, wait=1'],
  ['accept', 'application/problem+json'],
  ['accept', 'text/html'],
  ['accept', '*/*;q=0'],
  ['x-request-id', 'r'.repeat(300)],
  ['x-request-id', 'bad id with spaces'],
  ['transfer-encoding', 'chunked'],
  ['host', 'evil.example'],
];
const JSON_VALUES: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1e308,
  2 ** 53 + 1,
  '',
  'x'.repeat(5000),
  [],
  {},
  [1, 'a'],
  { nested: { deeper: [] } },
  '{uploadId}',
  'upl_missing',
  'a.png',
  'a.exe',
  '\u0000',
  '../x.pdf',
];
const JSON_KEYS = [
  'fileName',
  'uploadId',
  'deleteAfterDownload',
  'name',
  'plan',
  'creditPence',
  'creditDeltaPence',
  'status',
  'terms',
  'policy',
  '__proto__',
  'constructor',
  'extra',
];

function withProgram(
  operation: (requests: HttpRequestSpec[], context: MutationContext) => boolean,
): Mutator['apply'] {
  return (bytes, context) => {
    const requests = decodeProgram(bytes);
    if (!requests || requests.length === 0) return undefined;
    return operation(requests, context) ? encodeProgram(requests) : undefined;
  };
}

function withRequest(
  operation: (
    request: HttpRequestSpec,
    choices: Choices,
    context: MutationContext,
  ) => HttpRequestSpec | undefined,
): Mutator['apply'] {
  return withProgram((requests, context) => {
    const index = context.choices.below(requests.length);
    const request = requests[index];
    if (!request) return false;
    const changed = operation(request, context.choices, context);
    if (!changed) return false;
    requests[index] = changed;
    return true;
  });
}

function splitTarget(target: string): { path: string; query: [string, string][] } {
  const at = target.indexOf('?');
  const path = at < 0 ? target : target.slice(0, at);
  const query =
    at < 0
      ? []
      : target
          .slice(at + 1)
          .split('&')
          .filter((pair) => pair !== '')
          .map((pair): [string, string] => {
            const eq = pair.indexOf('=');
            return eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
          });
  return { path, query };
}

function joinTarget(path: string, query: readonly (readonly [string, string])[]): string {
  return query.length === 0
    ? path
    : `${path}?${query.map(([name, value]) => `${name}=${value}`).join('&')}`;
}

/** The parts of a multipart body, cut at its boundary, and the boundary. */
function splitMultipart(
  request: HttpRequestSpec,
): { boundary: string; parts: Buffer[]; tail: Buffer } | undefined {
  const type = request.headers.find(([name]) => name.toLowerCase() === 'content-type')?.[1] ?? '';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!boundary || !request.body) return undefined;
  const body = Buffer.from(request.body);
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Buffer[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) return undefined;
  for (;;) {
    const next = body.indexOf(delimiter, at + delimiter.length);
    if (next < 0) return { boundary, parts, tail: body.subarray(at) };
    parts.push(body.subarray(at, next));
    at = next;
  }
}

const PART_HEADERS = [
  'Content-Disposition: form-data; name="file"; filename="a.png"',
  'Content-Disposition: form-data; name="file"; filename="../../etc/passwd.png"',
  'Content-Disposition: form-data; name="file"; filename*=UTF-8\'\'%C3%A9.pdf',
  'Content-Disposition: form-data; name="file"; filename=""',
  'Content-Disposition: form-data; name="file"',
  'Content-Disposition: form-data; name="deleteAfterDownload"',
  'Content-Disposition: form-data; name="unknown"',
  'Content-Disposition: attachment; filename="x.pdf"',
  'Content-Disposition: form-data; name=file; filename=a.exe',
  'Content-Type: application/pdf',
  'Content-Transfer-Encoding: base64',
  `Content-Disposition: form-data; name="file"; filename="${'n'.repeat(400)}.png"`,
];

function mutateJson(value: unknown, choices: Choices, depth: number): unknown {
  if (Array.isArray(value) && value.length > 0 && depth < 4 && choices.chance(0.5)) {
    const copy: unknown[] = [...(value as unknown[])];
    const at = choices.below(copy.length);
    copy[at] = mutateJson(copy[at], choices, depth + 1);
    return copy;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && depth < 4) {
    const copy = new Map(Object.entries(value as Record<string, unknown>));
    const keys = [...copy.keys()];
    const action = choices.below(4);
    if (action === 0 && keys.length > 0) copy.delete(choices.pick(keys));
    else if (action === 1) copy.set(choices.pick(JSON_KEYS), choices.pick(JSON_VALUES));
    else if (action === 2 && keys.length > 0) {
      const key = choices.pick(keys);
      copy.set(key, mutateJson(copy.get(key), choices, depth + 1));
    } else if (keys.length > 0) copy.set(choices.pick(keys), choices.pick(JSON_VALUES));
    return Object.fromEntries(copy);
  }
  return choices.pick(JSON_VALUES);
}

/** The HTTP target's mutators. */
export const HTTP_MUTATORS: readonly Mutator[] = [
  {
    name: 'http.drop-request',
    apply: withProgram((requests, { choices }) => {
      if (requests.length < 2) return false;
      requests.splice(choices.below(requests.length), 1);
      return true;
    }),
  },
  {
    name: 'http.duplicate-request',
    apply: withProgram((requests, { choices }) => {
      if (requests.length >= MAX_PROGRAM_REQUESTS) return false;
      const request = choices.pick(requests);
      requests.splice(choices.below(requests.length + 1), 0, request);
      return true;
    }),
  },
  {
    name: 'http.reorder-requests',
    apply: withProgram((requests, { choices }) => {
      if (requests.length < 2) return false;
      const [request] = requests.splice(choices.below(requests.length), 1);
      if (!request) return false;
      requests.splice(choices.below(requests.length + 1), 0, request);
      return true;
    }),
  },
  {
    name: 'http.splice-request',
    apply: withProgram((requests, { choices, donors }) => {
      const donor = donors.length === 0 ? undefined : decodeProgram(choices.pick(donors));
      if (!donor || donor.length === 0 || requests.length >= MAX_PROGRAM_REQUESTS) return false;
      requests.splice(choices.below(requests.length + 1), 0, choices.pick(donor));
      return true;
    }),
  },
  {
    name: 'http.method',
    apply: withRequest((request, choices) => ({ ...request, method: choices.pick(METHODS) })),
  },
  {
    name: 'http.path',
    apply: withRequest((request, choices) => {
      const { query } = splitTarget(request.target);
      return { ...request, origin: 'api', target: joinTarget(choices.pick(PATHS), query) };
    }),
  },
  {
    name: 'http.query',
    apply: withRequest((request, choices) => {
      const { path, query } = splitTarget(request.target);
      const action = choices.below(3);
      if (action === 0 && query.length > 0) query.splice(choices.below(query.length), 1);
      else if (action === 1 && query.length > 0) {
        const at = choices.below(query.length);
        const pair = query[at];
        if (pair) query[at] = [pair[0], choices.pick(QUERY_VALUES)];
      } else query.push([choices.pick(QUERY_NAMES), choices.pick(QUERY_VALUES)]);
      return { ...request, target: joinTarget(path, query) };
    }),
  },
  {
    name: 'http.header',
    apply: withRequest((request, choices) => {
      const headers = [...request.headers];
      const action = choices.below(3);
      if (action === 0 && headers.length > 0) headers.splice(choices.below(headers.length), 1);
      else {
        const header = choices.pick(HEADER_CHOICES);
        const existing = headers.findIndex(([name]) => name === header[0]);
        if (action === 1 && existing >= 0) headers[existing] = header;
        else headers.push(header);
      }
      return { ...request, headers };
    }),
  },
  {
    name: 'http.body-bytes',
    apply: withRequest((request, choices, context) => {
      const body = request.body ?? new Uint8Array();
      const mutated = choices.pick(BYTE_MUTATORS).apply(body, context);
      return mutated ? { ...request, body: mutated } : undefined;
    }),
  },
  {
    name: 'http.multipart',
    apply: withRequest((request, choices) => {
      const split = splitMultipart(request);
      if (!split) return undefined;
      const { parts, tail, boundary } = split;
      const action = choices.below(6);
      if (action === 0 && parts.length > 0) parts.splice(choices.below(parts.length), 1);
      else if (action === 1 && parts.length > 0)
        parts.splice(choices.below(parts.length + 1), 0, choices.pick(parts));
      else if (action === 2 && parts.length > 1) parts.reverse();
      else if (action === 3 && parts.length > 0) {
        const at = choices.below(parts.length);
        const part = parts[at];
        if (part) {
          const headerEnd = part.indexOf('\r\n\r\n');
          const head = `--${boundary}\r\n${choices.pick(PART_HEADERS)}${choices.chance(0.5) ? `\r\n${choices.pick(PART_HEADERS)}` : ''}`;
          parts[at] = Buffer.concat([
            Buffer.from(head),
            headerEnd < 0 ? Buffer.from('\r\n\r\nx\r\n') : part.subarray(headerEnd),
          ]);
        }
      } else if (action === 4) {
        // The closing delimiter lost, doubled, or followed by an epilogue.
        return {
          ...request,
          body: Buffer.concat([
            ...parts,
            choices.pick([
              Buffer.alloc(0),
              Buffer.from(`--${boundary}--\r\n--${boundary}--`),
              Buffer.from(`--${boundary}`),
              Buffer.concat([tail, Buffer.from('epilogue')]),
            ]),
          ]),
        };
      } else {
        // A preamble, or the body cut inside a part.
        const whole = Buffer.concat([...parts, tail]);
        return {
          ...request,
          body: choices.chance(0.5)
            ? Buffer.concat([Buffer.from('preamble\r\n'), whole])
            : whole.subarray(0, choices.below(whole.length)),
        };
      }
      return { ...request, body: Buffer.concat([...parts, tail]) };
    }),
  },
  {
    name: 'http.json',
    apply: withRequest((request, choices) => {
      if (!request.body) return undefined;
      let value: unknown;
      try {
        value = JSON.parse(Buffer.from(request.body).toString('utf8'));
      } catch {
        return undefined;
      }
      const mutated = mutateJson(value, choices, 0);
      let text = (JSON.stringify(mutated) as string | undefined) ?? 'null';
      if (choices.chance(0.15)) {
        text = choices.pick([
          `${text}garbage`,
          `[${'['.repeat(5000)}`,
          text.replace(/}$/, ',"uploadId":"dup"}'),
          text.slice(0, Math.max(0, text.length - 1)),
          '\uFEFF' + text,
        ]);
      }
      return { ...request, body: Buffer.from(text, 'utf8') };
    }),
  },
  {
    name: 'http.file-swap',
    apply: withRequest((request, choices, context) => {
      const split = splitMultipart(request);
      const donor =
        context.donors.length > 0 ? decodeProgram(choices.pick(context.donors)) : undefined;
      const bodies = (donor ?? [])
        .map((other) => other.body)
        .filter((body): body is Uint8Array => body !== undefined);
      if (!split || bodies.length === 0)
        return { ...request, body: bodies.length > 0 ? choices.pick(bodies) : choices.bytes(64) };
      return { ...request, body: choices.pick(bodies) };
    }),
  },
];
