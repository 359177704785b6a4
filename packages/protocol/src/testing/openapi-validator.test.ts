import { beforeAll, describe, expect, it } from 'vitest';

import { createOpenApiDocument } from '../openapi/document.ts';
import { createOpenApiValidator } from './openapi-validator.ts';
import type { OpenApiValidator, ResponseToValidate } from './openapi-validator.ts';

const BASE = 'https://cdr.example.com';
const DOC_URL = `${BASE}/v1/documents/doc_1`;
const RATE = {
  RateLimit: '"status-reads";r=599;t=60',
  'RateLimit-Policy': '"status-reads";q=600;w=60',
};

let validator: OpenApiValidator;
beforeAll(async () => {
  validator = await createOpenApiValidator(
    createOpenApiDocument({ publicBaseUrl: BASE, testMode: true }),
  );
});

function problem(code: string, status: number, members: Record<string, unknown> = {}) {
  return {
    type: `${BASE}/problems/${code}`,
    title: code,
    status,
    code,
    detail: 'details',
    ...members,
  };
}

/** A response with JSON or problem content-type defaults. */
function response(
  method: string,
  path: string,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): ResponseToValidate {
  const contentType =
    body === undefined
      ? {}
      : typeof body === 'object' && body !== null && 'code' in body
        ? { 'Content-Type': 'application/problem+json' }
        : { 'Content-Type': 'application/json; charset=utf-8' };
  return { method, path, status, headers: new Headers({ ...contentType, ...headers }), body };
}

const pending = {
  id: 'doc_1',
  status: 'pending',
  statusUrl: DOC_URL,
  submittedAt: '2025-03-01T10:00:00Z',
  pollAfterSeconds: 2,
};
const completed = {
  id: 'doc_1',
  status: 'completed',
  statusUrl: DOC_URL,
  outcome: 'cleaned',
  modifications: ['rebuilt'],
  findings: [
    {
      kind: 'pdf-javascript',
      count: 2,
      locations: [{ member: ['bundle.zip', 'a.pdf'], page: 2, count: 1 }],
    },
    { kind: 'vba-macro', count: 1, locations: [{ part: 'xl/vbaProject.bin', count: 1 }] },
  ],
  submittedAt: '2025-03-01T10:00:00Z',
  completedAt: '2025-03-01T10:00:02Z',
  downloadUrl: 'https://storage.example.com/blobs/x?sig=1',
  downloadExpiresAt: '2025-03-02T10:00:02Z',
};
/** A copy of `value` without `key`. */
function without<T extends Record<string, unknown>>(
  value: T,
  key: keyof T,
): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([name]) => name !== key));
}

const accepted = { Location: DOC_URL, 'Retry-After': '2', ...RATE };

describe('createOpenApiValidator', () => {
  it('accepts conforming responses', () => {
    expect(validator.validate(response('POST', '/v1/documents', 202, pending, accepted))).toEqual(
      [],
    );
    expect(
      validator.validate(
        response('get', '/v1/documents/doc_1?statusStyle=202', 200, completed, RATE),
      ),
    ).toEqual([]);
    expect(
      validator.validate(
        response('GET', '/v1/documents/doc_1/download', 302, undefined, {
          Location: 'https://storage.example.com/blobs/x?sig=1',
          'Cache-Control': 'private, no-store',
          'Referrer-Policy': 'no-referrer',
        }),
      ),
    ).toEqual([]);
    expect(
      validator.validate(response('DELETE', '/v1/documents/doc_1', 204, undefined, RATE)),
    ).toEqual([]);
    expect(
      validator.validate(
        response('GET', '/v1/account', 401, problem('Unauthorized', 401), {
          'WWW-Authenticate': 'Bearer',
        }),
      ),
    ).toEqual([]);
    expect(
      validator.validate({
        method: 'GET',
        path: '/docs',
        status: 200,
        headers: new Headers({
          'Content-Type': 'text/html; charset=utf-8',
          'Content-Security-Policy': "default-src 'self'",
        }),
        body: '<!doctype html>',
      }),
    ).toEqual([]);
  });

  it('fails a path no template matches, unless it is the documented 404', () => {
    expect(validator.validate(response('GET', '/v2/nothing', 200, {}))).toEqual([
      'GET /v2/nothing -> 200: no path template of the document matches this path',
    ]);
    expect(
      validator.validate(response('GET', '/v2/nothing', 404, problem('NotFound', 404))),
    ).toEqual([]);
    expect(
      validator.validate(response('GET', '/v2/nothing', 404, problem('DocumentNotFound', 404))),
    ).toEqual([expect.stringContaining('problem code "DocumentNotFound" is not one of')]);
  });

  it('fails an undescribed method unless it is 405 with an exact Allow', () => {
    const notAllowed = problem('MethodNotAllowed', 405);
    expect(validator.validate(response('PUT', '/v1/documents/doc_1', 200, pending))).toEqual([
      expect.stringContaining('does not describe PUT: expected 405'),
    ]);
    expect(
      validator.validate(
        response('PUT', '/v1/documents/doc_1', 405, notAllowed, {
          Allow: 'GET, DELETE, HEAD',
        }),
      ),
    ).toEqual([]);
    expect(
      validator.validate(
        response('PUT', '/v1/documents/doc_1', 405, notAllowed, { Allow: 'GET, POST' }),
      ),
    ).toEqual([
      expect.stringContaining('Allow omits DELETE'),
      expect.stringContaining('Allow omits HEAD'),
      expect.stringContaining('Allow lists POST'),
    ]);
    expect(validator.validate(response('PUT', '/v1/documents/doc_1', 405, notAllowed))).toEqual([
      expect.stringContaining('header Allow is required but missing'),
      expect.stringContaining('Allow omits GET'),
      expect.stringContaining('Allow omits DELETE'),
      expect.stringContaining('Allow omits HEAD'),
    ]);
  });

  it('checks HEAD against the GET of the same path: its statuses and headers, and no content', async () => {
    const fresh = await createOpenApiValidator(
      createOpenApiDocument({ publicBaseUrl: BASE, testMode: true }),
    );
    expect(fresh.validate(response('HEAD', '/v1/documents/doc_1', 200, undefined, RATE))).toEqual(
      [],
    );
    // A HEAD exercises nothing: the GET still has to be seen.
    expect(fresh.unexercised()).toContain('GET /v1/documents/{id} 200');
    expect(
      validator.validate(response('HEAD', '/v1/documents/doc_1', 200, undefined, RATE)),
    ).toEqual([]);
    expect(
      validator.validate(response('HEAD', '/v1/documents/doc_1', 200, completed, RATE)),
    ).toEqual([expect.stringContaining('has a body, but the document describes none')]);
    expect(validator.validate(response('HEAD', '/v1/documents/doc_1', 200, undefined))).toEqual([
      expect.stringContaining('header RateLimit is required but missing'),
      expect.stringContaining('header RateLimit-Policy is required but missing'),
    ]);
    expect(validator.validate(response('HEAD', '/v1/documents/doc_1', 418, undefined))).toEqual([
      expect.stringContaining('status 418 is not documented for HEAD'),
    ]);
    // Found by `npm run fuzz -- http`: a HEAD of a path with no GET (405) or of no path (404)
    // was held to the problem body its GET-less answer would carry.
    expect(
      validator.validate(
        response('HEAD', '/v1/uploads', 405, undefined, {
          Allow: 'POST',
          'Content-Type': 'application/problem+json',
        }),
      ),
    ).toEqual([]);
    expect(
      validator.validate(
        response('HEAD', '/v1/nothing', 404, undefined, {
          'Content-Type': 'application/problem+json',
        }),
      ),
    ).toEqual([]);
  });

  it('fails an undocumented status', () => {
    expect(
      validator.validate(response('GET', '/v1/account', 418, problem('InternalError', 418))),
    ).toEqual([
      expect.stringMatching(
        /status 418 is not documented for GET \/v1\/account \(documented: 200, 401, 403, 404, 429, 500, 503\)/,
      ),
    ]);
  });

  it('fails an undocumented or missing Content-Type', () => {
    const html = { ...response('GET', '/v1/documents/doc_1', 200, completed, RATE) };
    html.headers.set('Content-Type', 'text/html');
    expect(validator.validate(html)).toEqual([
      expect.stringContaining(
        'Content-Type text/html is not documented (documented: application/json, text/json, text/plain)',
      ),
    ]);
    html.headers.delete('Content-Type');
    expect(validator.validate(html)).toEqual([expect.stringContaining('Content-Type is missing')]);
    // A problem served as plain JSON is not the documented problem+json.
    const plainProblem = response(
      'GET',
      '/v1/documents/doc_1',
      404,
      problem('DocumentNotFound', 404),
      {
        'Content-Type': 'application/json',
      },
    );
    expect(validator.validate(plainProblem)).toEqual([
      expect.stringContaining(
        'Content-Type application/json is not documented (documented: application/problem+json)',
      ),
    ]);
  });

  it('accepts the text/json and text/plain offers, parsing a string body', () => {
    const asText = response('GET', '/v1/documents/doc_1', 200, JSON.stringify(completed), {
      ...RATE,
      'Content-Type': 'text/plain; charset=utf-8',
    });
    expect(validator.validate(asText)).toEqual([]);
    const broken = response('GET', '/v1/documents/doc_1', 200, '{"id":', {
      ...RATE,
      'Content-Type': 'text/json',
    });
    expect(validator.validate(broken)).toEqual([
      expect.stringContaining('body is not JSON (text/json)'),
    ]);
  });

  it('fails a missing required header and a header value outside its schema', () => {
    const withoutLocation = without(accepted, 'Location') as Record<string, string>;
    expect(
      validator.validate(response('POST', '/v1/documents', 202, pending, withoutLocation)),
    ).toEqual([expect.stringContaining('header Location is required but missing')]);
    expect(
      validator.validate(
        response('POST', '/v1/documents', 202, pending, { ...accepted, 'Retry-After': 'soon' }),
      ),
    ).toEqual([expect.stringContaining('header Retry-After must be integer')]);
    expect(
      validator.validate(
        response('POST', '/v1/documents', 202, pending, {
          ...accepted,
          'Idempotency-Replayed': 'yes',
        }),
      ),
    ).toEqual([
      expect.stringContaining(
        'header Idempotency-Replayed must be equal to one of the allowed values',
      ),
    ]);
    expect(
      validator.validate(
        response('GET', '/v1/documents/doc_1', 200, completed, { RateLimit: RATE.RateLimit }),
      ),
    ).toEqual([expect.stringContaining('header RateLimit-Policy is required but missing')]);
    const quota = problem('QuotaExceeded', 429);
    expect(
      validator.validate(
        response('POST', '/v1/documents', 429, quota, {
          'Retry-After': 'Sat, 01 Mar 2025 00:00:00 GMT',
        }),
      ),
    ).toEqual([]);
    expect(
      validator.validate(
        response('POST', '/v1/documents', 429, quota, { 'Retry-After': '2025-03-01' }),
      ),
    ).toEqual([expect.stringContaining('header Retry-After must match pattern')]);
  });

  it('fails bodies outside the envelope schema and its state rules', () => {
    const check = (body: Record<string, unknown>) =>
      validator.validate(response('GET', '/v1/documents/doc_1', 200, body, RATE));
    const withoutStatusUrl = without(pending, 'statusUrl');
    expect(check(withoutStatusUrl)).toEqual([
      expect.stringContaining("body must have required property 'statusUrl'"),
    ]);
    expect(check({ ...pending, colour: 'red' })).toEqual([
      expect.stringContaining('body must NOT have additional properties: colour'),
    ]);
    expect(check({ ...pending, status: 'done' })).toEqual(
      expect.arrayContaining([
        expect.stringContaining('body/status must be equal to one of the allowed values'),
      ]),
    );
    expect(check({ ...pending, outcome: 'cleaned' })).toEqual([
      expect.stringContaining('body must not carry outcome here'),
    ]);
    expect(check({ ...completed, modifications: undefined })).toEqual([
      expect.stringContaining("body must have required property 'modifications'"),
    ]);
    expect(check({ ...completed, modifications: ['converted'] })).toEqual(
      expect.arrayContaining([
        expect.stringContaining('body/modifications must contain at least 1 valid item'),
      ]),
    );
    expect(check({ ...completed, modifications: ['rebuilt', 'converted'] })).toEqual([
      expect.stringContaining("body must have required property 'outputFormat'"),
    ]);
    expect(check({ ...completed, deleteAfterDownload: true })).toEqual([
      expect.stringContaining('body must not carry downloadUrl here'),
    ]);
    // A completed document always says what was removed, `[]` when nothing; with where.
    expect(check({ ...completed, findings: [] })).toEqual([]);
    expect(check(without(completed, 'findings'))).toEqual([
      expect.stringContaining("body must have required property 'findings'"),
    ]);
    const located = (location: Record<string, unknown>): Record<string, unknown> => ({
      ...completed,
      findings: [{ kind: 'pdf-action', count: 1, locations: [{ count: 1, ...location }] }],
    });
    expect(check(located({ page: 3, sheet: 'Sheet1' }))).toEqual([]);
    expect(check(located({ page: 0 }))).toEqual([
      expect.stringContaining('body/findings/0/locations/0/page must be >= 1'),
    ]);
    expect(check(located({ member: [] }))).toEqual([
      expect.stringContaining(
        'body/findings/0/locations/0/member must NOT have fewer than 1 items',
      ),
    ]);
    expect(check(located({ line: 4 }))).toEqual([
      expect.stringContaining('must NOT have additional properties: line'),
    ]);
    expect(check({ ...completed, findings: [{ kind: 'pdf-action', count: 1 }] })).toEqual([
      expect.stringContaining("must have required property 'locations'"),
    ]);
    const failed = {
      id: 'doc_1',
      status: 'failed',
      statusUrl: DOC_URL,
      reason: 'timeout',
      reasonDetail: 'Processing did not finish within the time budget.',
      submittedAt: '2025-03-01T10:00:00Z',
      completedAt: '2025-03-01T10:05:00Z',
      helpUrl: `${BASE}/docs`,
    };
    expect(check(failed)).toEqual([]);
    // reasonDetail goes with reason, both ways, and never on a completed document.
    const withoutDetail: Record<string, unknown> = { ...failed };
    delete withoutDetail.reasonDetail;
    expect(check(withoutDetail)).toEqual(
      expect.arrayContaining([
        expect.stringContaining("must have required property 'reasonDetail'"),
      ]),
    );
    expect(check({ ...completed, reasonDetail: 'x' })).not.toEqual([]);
    // A rejected or failed document says why in reasonDetail, never in findings.
    expect(check({ ...failed, findings: [] })).toEqual([
      expect.stringContaining('body must not carry findings here'),
    ]);
    expect(check({ ...failed, reasonDetail: 'x'.repeat(501) })).toEqual(
      expect.arrayContaining([
        expect.stringContaining('body/reasonDetail must NOT have more than 500 characters'),
      ]),
    );
    expect(check({ ...failed, reason: 'threat_detected' })).toEqual([
      expect.stringContaining(
        'body/reason must be equal to one of the allowed values: "timeout", "internal_error"',
      ),
    ]);
    expect(check({ ...failed, threatNames: ['EICAR'] })).toEqual(
      expect.arrayContaining([expect.stringContaining('body/status must be equal to constant')]),
    );
    expect(check({ ...pending, submittedAt: 'yesterday' })).toEqual([
      expect.stringContaining('body/submittedAt must match format "date-time"'),
    ]);
  });

  it('fails a body where the document describes none', () => {
    expect(
      validator.validate(response('DELETE', '/v1/documents/doc_1', 204, 'gone', RATE)),
    ).toEqual([expect.stringContaining('has a body, but the document describes none')]);
  });

  it('checks problem codes against x-problem-codes, and the status and type members', () => {
    const path = '/v1/documents/doc_1';
    expect(
      validator.validate(response('GET', path, 404, problem('DocumentNotFound', 404))),
    ).toEqual([]);
    expect(validator.validate(response('GET', path, 404, problem('UploadNotFound', 404)))).toEqual([
      expect.stringContaining(
        'problem code "UploadNotFound" is not one of this response\'s x-problem-codes (DocumentNotFound)',
      ),
    ]);
    expect(
      validator.validate(response('GET', path, 404, problem('DocumentNotFound', 400))),
    ).toEqual([expect.stringContaining('problem status 400 differs from the HTTP status 404')]);
    expect(
      validator.validate(
        response('GET', path, 404, {
          ...problem('DocumentNotFound', 404),
          type: `${BASE}/problems/NotFound`,
        }),
      ),
    ).toEqual([expect.stringContaining('does not name the code DocumentNotFound')]);
    const withoutDetail = without(problem('DocumentNotFound', 404), 'detail');
    expect(validator.validate(response('GET', path, 404, withoutDetail))).toEqual([
      expect.stringContaining("body must have required property 'detail'"),
    ]);
    // Extension members are allowed; the ones the catalogue promises are required.
    expect(
      validator.validate(
        response('GET', path, 404, { ...problem('DocumentNotFound', 404), traceId: 'abc' }),
      ),
    ).toEqual([]);
    expect(
      validator.validate(
        response('POST', '/v1/documents', 402, problem('InsufficientCredit', 402)),
      ),
    ).toEqual([
      expect.stringContaining("body must have required property 'balancePence'"),
      expect.stringContaining("body must have required property 'pricePerDocumentPence'"),
    ]);
    expect(
      validator.validate(
        response(
          'POST',
          '/v1/documents',
          413,
          problem('FileTooLargeForPlan', 413, { maxSizeBytes: 10, acceptedByLane: 'multipart' }),
        ),
      ),
    ).toEqual([
      expect.stringContaining(
        'body/acceptedByLane must be equal to one of the allowed values: "upload"',
      ),
    ]);
  });

  it('takes the 409 download envelope as a document, not a problem', () => {
    expect(
      validator.validate(response('GET', '/v1/documents/doc_1/download', 409, pending)),
    ).toEqual([]);
    expect(
      validator.validate(
        response('GET', '/v1/documents/doc_1/download', 409, problem('DocumentNotCompleted', 409)),
      ),
    ).toEqual([expect.stringContaining('Content-Type application/problem+json is not documented')]);
  });

  it('checks the account snapshot per plan type', () => {
    const tier = {
      organisationId: 'org_1',
      organisationName: 'Acme',
      planType: 'tier',
      status: 'active',
      monthlyAllowance: 1000,
      periodStart: '2025-03-01T00:00:00Z',
      periodEnd: '2025-04-01T00:00:00Z',
      periodUsedSubmissions: 3,
      periodRemainingSubmissions: 997,
      creditBalancePence: 0,
      rateLimitPerMinute: 60,
      maxFileSizeBytes: 104857600,
      maxUploadSizeBytes: 262144000,
    };
    const headers = { ...RATE, 'Cache-Control': 'no-store' };
    const check = (body: Record<string, unknown>, extra: Record<string, string> = headers) =>
      validator.validate(response('GET', '/v1/account', 200, body, extra));
    expect(check(tier)).toEqual([]);
    expect(check({ ...tier, pricePerDocumentPence: 10 })).toEqual([
      expect.stringContaining('body must not carry pricePerDocumentPence here'),
    ]);
    expect(check({ ...tier, planType: 'payg', periodRemainingSubmissions: null })).toEqual([
      expect.stringContaining("body must have required property 'pricePerDocumentPence'"),
    ]);
    expect(
      check({
        ...tier,
        planType: 'payg',
        periodRemainingSubmissions: null,
        pricePerDocumentPence: 10,
      }),
    ).toEqual([]);
    expect(check(tier, RATE)).toEqual([
      expect.stringContaining('header Cache-Control is required but missing'),
    ]);
    expect(check(tier, { ...RATE, 'Cache-Control': 'max-age=60' })).toEqual([
      expect.stringContaining('header Cache-Control must match pattern'),
    ]);
  });

  it('matches paths under the server URL’s base path, and literal paths before templates', async () => {
    const prefixed = await createOpenApiValidator(
      createOpenApiDocument({ publicBaseUrl: 'https://example.com/cdr', testMode: false }),
    );
    expect(
      prefixed.validate(
        response('GET', '/cdr/v1/account', 401, problem('Unauthorized', 401), {
          'WWW-Authenticate': 'Bearer',
        }),
      ),
    ).toEqual([]);
    expect(
      prefixed.validate(response('POST', '/cdr/v1/admin/clock', 404, problem('NotFound', 404))),
    ).toEqual([]);
  });

  it('works on the document as served (parsed JSON) and lists what is not exercised yet', async () => {
    const served = JSON.parse(
      JSON.stringify(createOpenApiDocument({ publicBaseUrl: BASE, testMode: false })),
    ) as Record<string, unknown>;
    const fresh = await createOpenApiValidator(served);
    const before = fresh.unexercised();
    expect(before).toContain('GET /v1/account 200');
    expect(
      fresh.validate(
        response('GET', '/v1/account', 401, problem('Unauthorized', 401), {
          'WWW-Authenticate': 'Bearer',
        }),
      ),
    ).toEqual([]);
    expect(fresh.unexercised()).not.toContain('GET /v1/account 401');
    expect(fresh.unexercised()).toHaveLength(before.length - 1);
  });

  it('throws for a document whose schemas do not compile or whose $ref dangles', async () => {
    const document = createOpenApiDocument({ publicBaseUrl: BASE, testMode: false });
    const badSchema = {
      ...document,
      components: {
        ...document.components,
        schemas: { ...document.components.schemas, Account: { type: 'object', requird: ['x'] } },
      },
    };
    await expect(createOpenApiValidator(badSchema)).rejects.toThrow(/does not compile/);
    const dangling = {
      ...document,
      paths: { '/x': { get: { responses: { '200': { $ref: '#/components/responses/Nope' } } } } },
    };
    await expect(createOpenApiValidator(dangling)).rejects.toThrow();
  });
});
