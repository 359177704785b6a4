import $RefParser from '@apidevtools/json-schema-ref-parser';
import type { JSONSchema } from '@apidevtools/json-schema-ref-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';

import { PROBLEMS } from '../http/problems.ts';
import type { ProblemCode } from '../http/problems.ts';
import { createOpenApiDocument, isStorageOnlyProblem, OPENAPI_PATH } from './document.ts';
import type { OpenApiDocument } from './types.ts';
import { HTTP_METHODS } from './types.ts';

const BASE = 'https://cdr.example.com';
const document = createOpenApiDocument({ publicBaseUrl: BASE, testMode: true });
const json = JSON.parse(JSON.stringify(document)) as Record<string, unknown>;

/**
 * Codes the API origin never answers with, and why. Everything else in PROBLEMS must be some
 * response's `x-problem-codes`.
 */
const NOT_SERVED_BY_API: Partial<Record<ProblemCode, string>> = {};

/** Where a code is served with another status than its catalogue row (`getAccount` documents it). */
const STATUS_EXCEPTIONS = new Set(['GET /v1/account 404 NotProvisioned']);

type Json = Readonly<Record<string, unknown>>;
const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every `[pointer, value]` below `value`. */
function* walk(value: unknown, pointer = ''): Generator<[string, unknown]> {
  yield [pointer, value];
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) yield* walk(item, `${pointer}/${index}`);
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      yield* walk(item, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    }
  }
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** Every operation: `[method, template, operation, pathItem]`. */
function operations(doc: OpenApiDocument = document) {
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    HTTP_METHODS.flatMap((method) => {
      const operation = item[method];
      return operation ? [{ method, template, operation, item }] : [];
    }),
  );
}

function newAjv() {
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: true,
  });
  ajvFormats.default(ajv);
  return ajv;
}

/**
 * A structural check of OpenAPI 3.1 (no official schema ships in node_modules): the fixed fields
 * of each object we use, no unknown fixed fields (only `x-` extensions), status keys, parameter
 * locations, security schemes, and `$ref` objects with nothing beside `summary`/`description`.
 */
const OAS31_STRUCTURE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $defs: {
    extensible: { patternProperties: { '^x-': true } },
    ref: {
      type: 'object',
      required: ['$ref'],
      properties: { $ref: { type: 'string', pattern: '^#/' }, summary: true, description: true },
      additionalProperties: false,
    },
    schema: { type: ['object', 'boolean'] },
    header: {
      anyOf: [
        { $ref: '#/$defs/ref' },
        {
          type: 'object',
          required: ['schema'],
          properties: {
            description: { type: 'string' },
            required: { type: 'boolean' },
            schema: { $ref: '#/$defs/schema' },
            example: true,
          },
          additionalProperties: false,
        },
      ],
    },
    mediaType: {
      type: 'object',
      properties: {
        schema: { $ref: '#/$defs/schema' },
        example: true,
        examples: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            properties: {
              summary: { type: 'string' },
              description: { type: 'string' },
              value: true,
            },
            additionalProperties: false,
          },
        },
        encoding: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            properties: { contentType: { type: 'string' } },
            additionalProperties: false,
          },
        },
      },
      additionalProperties: false,
    },
    content: {
      type: 'object',
      propertyNames: { pattern: '^[a-z*]+/[a-z0-9.+*-]+$' },
      additionalProperties: { $ref: '#/$defs/mediaType' },
    },
    response: {
      anyOf: [
        { $ref: '#/$defs/ref' },
        {
          type: 'object',
          required: ['description'],
          properties: {
            description: { type: 'string', minLength: 1 },
            headers: { type: 'object', additionalProperties: { $ref: '#/$defs/header' } },
            content: { $ref: '#/$defs/content' },
            links: { type: 'object' },
          },
          patternProperties: { '^x-': true },
          additionalProperties: false,
        },
      ],
    },
    parameter: {
      anyOf: [
        { $ref: '#/$defs/ref' },
        {
          type: 'object',
          required: ['name', 'in', 'schema'],
          properties: {
            name: { type: 'string', minLength: 1 },
            in: { enum: ['path', 'query', 'header', 'cookie'] },
            description: { type: 'string' },
            required: { type: 'boolean' },
            deprecated: { type: 'boolean' },
            schema: { $ref: '#/$defs/schema' },
            example: true,
          },
          additionalProperties: false,
          if: { properties: { in: { const: 'path' } } },
          then: { required: ['required'], properties: { required: { const: true } } },
        },
      ],
    },
    security: {
      type: 'array',
      items: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
    },
    operation: {
      type: 'object',
      required: ['responses'],
      properties: {
        operationId: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9]*$' },
        summary: { type: 'string' },
        description: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' } },
        security: { $ref: '#/$defs/security' },
        parameters: { type: 'array', items: { $ref: '#/$defs/parameter' } },
        requestBody: {
          type: 'object',
          required: ['content'],
          properties: {
            description: { type: 'string' },
            required: { type: 'boolean' },
            content: { $ref: '#/$defs/content' },
          },
          additionalProperties: false,
        },
        responses: {
          type: 'object',
          minProperties: 1,
          propertyNames: { pattern: '^(?:[1-5](?:[0-9]{2}|XX)|default|x-.+)$' },
          additionalProperties: { $ref: '#/$defs/response' },
        },
        deprecated: { type: 'boolean' },
      },
      patternProperties: { '^x-': true },
      additionalProperties: false,
    },
    pathItem: {
      type: 'object',
      properties: {
        summary: { type: 'string' },
        description: { type: 'string' },
        parameters: { type: 'array', items: { $ref: '#/$defs/parameter' } },
        get: { $ref: '#/$defs/operation' },
        put: { $ref: '#/$defs/operation' },
        post: { $ref: '#/$defs/operation' },
        delete: { $ref: '#/$defs/operation' },
        options: { $ref: '#/$defs/operation' },
        head: { $ref: '#/$defs/operation' },
        patch: { $ref: '#/$defs/operation' },
        trace: { $ref: '#/$defs/operation' },
        'x-other-methods': { $ref: '#/$defs/response' },
      },
      patternProperties: { '^x-': true },
      additionalProperties: false,
    },
    securityScheme: {
      type: 'object',
      required: ['type'],
      oneOf: [
        {
          properties: { type: { const: 'apiKey' }, in: { enum: ['header', 'query', 'cookie'] } },
          required: ['name', 'in'],
        },
        { properties: { type: { const: 'http' } }, required: ['scheme'] },
        {
          properties: {
            type: { const: 'oauth2' },
            flows: {
              type: 'object',
              properties: {
                clientCredentials: {
                  type: 'object',
                  required: ['tokenUrl', 'scopes'],
                  properties: {
                    tokenUrl: { type: 'string', format: 'uri' },
                    scopes: { type: 'object', additionalProperties: { type: 'string' } },
                  },
                },
              },
              additionalProperties: false,
            },
          },
          required: ['flows'],
        },
      ],
    },
  },
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.[0-9]+$' },
    info: {
      type: 'object',
      required: ['title', 'version'],
      properties: {
        title: { type: 'string' },
        version: { type: 'string' },
        summary: { type: 'string' },
        description: { type: 'string' },
        license: {
          type: 'object',
          required: ['name'],
          properties: { name: { type: 'string' }, identifier: { type: 'string' } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    servers: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['url'],
        properties: { url: { type: 'string' }, description: { type: 'string' } },
        additionalProperties: false,
      },
    },
    tags: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: { name: { type: 'string' }, description: { type: 'string' } },
        additionalProperties: false,
      },
    },
    security: { $ref: '#/$defs/security' },
    paths: {
      type: 'object',
      propertyNames: { pattern: '^(?:/|x-)' },
      additionalProperties: { $ref: '#/$defs/pathItem' },
    },
    components: {
      type: 'object',
      properties: {
        schemas: { type: 'object', additionalProperties: { $ref: '#/$defs/schema' } },
        responses: { type: 'object', additionalProperties: { $ref: '#/$defs/response' } },
        parameters: { type: 'object', additionalProperties: { $ref: '#/$defs/parameter' } },
        securitySchemes: {
          type: 'object',
          additionalProperties: { $ref: '#/$defs/securityScheme' },
        },
      },
      propertyNames: {
        pattern:
          '^(?:schemas|responses|parameters|securitySchemes|headers|examples|requestBodies|links|callbacks|pathItems|x-.+)$',
      },
    },
  },
  patternProperties: { '^x-': true },
  additionalProperties: false,
};

describe('createOpenApiDocument', () => {
  it('is structurally valid OpenAPI 3.1', () => {
    const validate = newAjv().compile(OAS31_STRUCTURE);
    expect(validate(json), JSON.stringify(validate.errors, null, 2)).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: BASE }]);
  });

  it('serialises to JSON without loss (no undefined, no functions)', () => {
    expect(json).toEqual(document);
    expect(JSON.stringify(document)).toBe(
      JSON.stringify(createOpenApiDocument({ publicBaseUrl: BASE, testMode: true })),
    );
  });

  it('resolves every $ref', async () => {
    const refs = [...walk(json)].flatMap(([pointer, value]) =>
      isRecord(value) && typeof value.$ref === 'string' ? [[pointer, value.$ref] as const] : [],
    );
    expect(refs.length).toBeGreaterThan(50);
    for (const [pointer, ref] of refs) {
      expect(resolvePointer(json, ref), `${pointer} -> ${ref}`).toBeDefined();
    }
    await expect(
      $RefParser.dereference(structuredClone(json) as JSONSchema, { resolve: { external: false } }),
    ).resolves.toBeDefined();
  });

  it('compiles every schema as JSON Schema 2020-12 and every example fits its schema', async () => {
    const dereferenced = (await $RefParser.dereference(structuredClone(json) as JSONSchema, {
      resolve: { external: false },
    })) as unknown;
    const ajv = newAjv();
    ajv.addVocabulary(['example']);
    let examples = 0;
    for (const [pointer, value] of walk(dereferenced)) {
      if (!isRecord(value)) continue;
      const schema = value.schema;
      if (isRecord(schema) && !pointer.includes('/properties/')) {
        const validate = ajv.compile(schema);
        for (const [name, example] of Object.entries(
          isRecord(value.examples) ? value.examples : {},
        )) {
          examples += 1;
          const ok = validate(isRecord(example) ? example.value : undefined);
          expect(ok, `${pointer}/examples/${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
        }
      }
    }
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      const resolved = resolvePointer(dereferenced, `#/components/schemas/${name}`);
      expect(isRecord(resolved), name).toBe(true);
      const validate = ajv.compile(resolved as Json);
      for (const example of Array.isArray(schema.examples) ? schema.examples : []) {
        examples += 1;
        expect(validate(example), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
    }
    expect(examples).toBeGreaterThan(5);
  });

  it('carries every problem code of PROBLEMS in its catalogue', () => {
    const catalogue = document.components['x-problem-catalogue'];
    for (const [code, row] of Object.entries(PROBLEMS)) {
      expect(catalogue[code as ProblemCode], code).toEqual(
        expect.objectContaining({
          status: row.status,
          title: row.title,
          type: `${BASE}/problems/${code}`,
        }),
      );
    }
    expect(Object.keys(catalogue).sort()).toEqual(Object.keys(PROBLEMS).sort());
    expect((document.components.schemas.ProblemCode as { enum: string[] }).enum.sort()).toEqual(
      Object.keys(PROBLEMS).sort(),
    );
  });

  it('names every API problem code on some response, with the status of its catalogue row', () => {
    const used = new Set<string>();
    for (const [pointer, value] of walk(json)) {
      if (isRecord(value) && typeof value['x-catalogue-code'] === 'string') {
        used.add(value['x-catalogue-code']);
      }
      if (!isRecord(value) || !Array.isArray(value['x-problem-codes'])) continue;
      const codes = value['x-problem-codes'] as string[];
      expect(codes.length, pointer).toBeGreaterThan(0);
      expect(Object.keys(isRecord(value.content) ? value.content : {}), pointer).toContain(
        'application/problem+json',
      );
      const match = /^\/paths\/([^/]+)\/([a-z]+)\/responses\/(\d{3})$/.exec(pointer);
      for (const code of codes) {
        used.add(code);
        const row = PROBLEMS[code as ProblemCode];
        expect(row, `${pointer}: ${code}`).toBeDefined();
        const status = match?.[3];
        if (status === undefined) continue;
        const route = `${match?.[2]?.toUpperCase() ?? ''} ${decodeURIComponent(match?.[1] ?? '').replace(/~1/g, '/')} ${status} ${code}`;
        if (!STATUS_EXCEPTIONS.has(route)) expect(String(row.status), route).toBe(status);
      }
    }
    for (const code of Object.keys(PROBLEMS) as ProblemCode[]) {
      if (isStorageOnlyProblem(code) || NOT_SERVED_BY_API[code] !== undefined) {
        expect(used.has(code), `${code} is documented as not served by the API`).toBe(false);
      } else {
        expect(used.has(code), `${code} appears in no x-problem-codes`).toBe(true);
      }
    }
  });

  it('gives every operation a unique operationId, and describes every route the API serves', () => {
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const routes = operations().map(
      ({ method, template }) => `${method.toUpperCase()} ${template}`,
    );
    expect(routes).toEqual(
      expect.arrayContaining([
        'GET /v1/account',
        'POST /v1/documents',
        'GET /v1/documents/{id}',
        'DELETE /v1/documents/{id}',
        'GET /v1/documents/{id}/download',
        'POST /v1/uploads',
        `GET ${OPENAPI_PATH}`,
        'GET /docs',
        'GET /problems/{code}',
        'GET /healthz',
        'GET /readyz',
        'POST /v1/admin/organisations',
        'GET /v1/admin/organisations',
        'GET /v1/admin/organisations/{organisationId}',
        'PATCH /v1/admin/organisations/{organisationId}',
        'POST /v1/admin/organisations/{organisationId}/keys',
        'GET /v1/admin/organisations/{organisationId}/keys',
        'DELETE /v1/admin/organisations/{organisationId}/keys/{keyId}',
        'POST /v1/admin/clock',
      ]),
    );
  });

  it('declares every path parameter, and no path parameter without its template', () => {
    for (const { method, template, operation, item } of operations()) {
      const inTemplate = [...template.matchAll(/\{([^}]+)\}/g)].map((found) => found[1]).sort();
      const declared = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
        .map((parameter) =>
          '$ref' in parameter ? resolvePointer(json, parameter.$ref) : parameter,
        )
        .filter((parameter): parameter is Json => isRecord(parameter) && parameter.in === 'path');
      for (const parameter of declared) expect(parameter.required, template).toBe(true);
      expect(declared.map((parameter) => parameter.name).sort(), `${method} ${template}`).toEqual(
        inTemplate,
      );
    }
  });

  it('answers 401 on exactly the authenticated operations, and 405 on every path', () => {
    for (const { method, template, operation, item } of operations()) {
      const security = operation.security ?? document.security;
      const route = `${method} ${template}`;
      expect(security.length > 0, route).toBe(operation.responses['401'] !== undefined);
      expect(item['x-other-methods'], route).toEqual({
        $ref: '#/components/responses/MethodNotAllowed',
      });
      expect(operation.responses['500'], route).toBeDefined();
    }
    expect(document['x-unknown-path']).toEqual({ $ref: '#/components/responses/NotFound' });
  });

  it('offers every successful JSON body as application/json, text/json and text/plain', () => {
    for (const { method, template, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if ('$ref' in response || !status.startsWith('2') || !response.content) continue;
        if (!('application/json' in response.content)) continue;
        expect(Object.keys(response.content).sort(), `${method} ${template} ${status}`).toEqual([
          'application/json',
          'text/json',
          'text/plain',
        ]);
      }
    }
  });

  it('uses admin security on admin routes and none on the public ones', () => {
    for (const { template, operation } of operations()) {
      if (template.startsWith('/v1/admin/')) {
        expect(operation.security).toEqual([{ bearer: ['cdr.admin'] }, { oauth2: ['cdr.admin'] }]);
      } else if (!template.startsWith('/v1/') || template === OPENAPI_PATH) {
        expect(operation.security, template).toEqual([]);
      }
    }
    expect(document.components.securitySchemes.oauth2).toMatchObject({
      flows: { clientCredentials: { tokenUrl: `${BASE}/connect/token` } },
    });
  });

  it('describes the clock only in test mode', () => {
    const production = createOpenApiDocument({ publicBaseUrl: BASE, testMode: false });
    expect(production.paths['/v1/admin/clock']).toBeUndefined();
    expect(document.paths['/v1/admin/clock']?.post?.operationId).toBe('advanceClock');
  });

  it('adds extraPaths, refusing a path that is already described or has no operation', () => {
    const token = {
      post: {
        operationId: 'issueToken',
        summary: 'Issue an access token',
        tags: ['Meta'],
        security: [],
        responses: { '200': { description: 'A token.' } },
      },
    };
    const extended = createOpenApiDocument({
      publicBaseUrl: BASE,
      testMode: false,
      extraPaths: { '/connect/token': token },
    });
    expect(extended.paths['/connect/token']?.post?.operationId).toBe('issueToken');
    expect(extended.paths['/connect/token']?.['x-other-methods']).toBeDefined();
    expect(() =>
      createOpenApiDocument({
        publicBaseUrl: BASE,
        testMode: false,
        extraPaths: { '/v1/account': token },
      }),
    ).toThrow(TypeError);
    expect(() =>
      createOpenApiDocument({ publicBaseUrl: BASE, testMode: false, extraPaths: { '/x': {} } }),
    ).toThrow(TypeError);
  });

  it('refuses a publicBaseUrl that is not absolute, and drops a trailing slash', () => {
    expect(() =>
      createOpenApiDocument({ publicBaseUrl: 'cdr.example.com', testMode: false }),
    ).toThrow(TypeError);
    const withSlash = createOpenApiDocument({ publicBaseUrl: `${BASE}/`, testMode: false });
    expect(withSlash.servers[0]?.url).toBe(BASE);
  });
});

describe('createOpenApiDocument with oauth', () => {
  const withOAuth = createOpenApiDocument({ publicBaseUrl: BASE, testMode: true, oauth: true });
  const oauthJson = JSON.parse(JSON.stringify(withOAuth)) as Record<string, unknown>;
  const OAUTH_ROUTES = [
    'POST /connect/token',
    'GET /.well-known/jwks.json',
    'POST /v1/admin/organisations/{organisationId}/clients',
    'GET /v1/admin/organisations/{organisationId}/clients',
    'DELETE /v1/admin/organisations/{organisationId}/clients/{clientId}',
    'POST /v1/admin/organisations/{organisationId}/clients/{clientId}/rotate',
    'DELETE /v1/admin/organisations/{organisationId}/clients/{clientId}/previous-secret',
    'GET /v1/admin/signing-keys',
    'POST /v1/admin/signing-keys/rotate',
  ];
  const routesOf = (doc: OpenApiDocument): string[] =>
    operations(doc).map(({ method, template }) => `${method.toUpperCase()} ${template}`);

  it('describes the OAuth routes only when asked, leaving the rest as it was', () => {
    expect(routesOf(withOAuth)).toEqual(expect.arrayContaining(OAUTH_ROUTES));
    for (const route of OAUTH_ROUTES) expect(routesOf(document)).not.toContain(route);
    expect(routesOf(withOAuth).filter((route) => !OAUTH_ROUTES.includes(route))).toEqual(
      routesOf(document),
    );
    expect(withOAuth.components.securitySchemes.clientSecretBasic).toMatchObject({
      type: 'http',
      scheme: 'basic',
    });
    expect(document.components.securitySchemes.clientSecretBasic).toBeUndefined();
  });

  it('is structurally valid OpenAPI 3.1 and resolves every $ref', async () => {
    const validate = newAjv().compile(OAS31_STRUCTURE);
    expect(validate(oauthJson), JSON.stringify(validate.errors, null, 2)).toBe(true);
    for (const [pointer, value] of walk(oauthJson)) {
      if (isRecord(value) && typeof value.$ref === 'string') {
        expect(resolvePointer(oauthJson, value.$ref), `${pointer} -> ${value.$ref}`).toBeDefined();
      }
    }
    const dereferenced = (await $RefParser.dereference(structuredClone(oauthJson) as JSONSchema, {
      resolve: { external: false },
    })) as unknown;
    const ajv = newAjv();
    ajv.addVocabulary(['example']);
    let examples = 0;
    for (const [pointer, value] of walk(dereferenced)) {
      if (!isRecord(value) || !isRecord(value.schema) || pointer.includes('/properties/')) continue;
      const check = ajv.compile(value.schema);
      for (const [name, example] of Object.entries(
        isRecord(value.examples) ? value.examples : {},
      )) {
        examples += 1;
        const ok = check(isRecord(example) ? example.value : undefined);
        expect(ok, `${pointer}/examples/${name}: ${JSON.stringify(check.errors)}`).toBe(true);
      }
    }
    expect(examples).toBeGreaterThan(6);
  });

  it('keeps operationIds unique, declares path parameters, 401 exactly where a credential is asked', () => {
    const ids = operations(withOAuth).map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { method, template, operation, item } of operations(withOAuth)) {
      const route = `${method} ${template}`;
      const inTemplate = [...template.matchAll(/\{([^}]+)\}/g)].map((found) => found[1]).sort();
      const declared = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
        .map((parameter) =>
          '$ref' in parameter ? resolvePointer(oauthJson, parameter.$ref) : parameter,
        )
        .filter((parameter): parameter is Json => isRecord(parameter) && parameter.in === 'path')
        .map((parameter) => parameter.name)
        .sort();
      expect(declared, route).toEqual(inTemplate);
      const security = operation.security ?? withOAuth.security;
      expect(security.length > 0, route).toBe(operation.responses['401'] !== undefined);
      expect(operation.responses['500'], route).toBeDefined();
      if (template.startsWith('/v1/admin/')) {
        expect(operation.security, route).toEqual([
          { bearer: ['cdr.admin'] },
          { oauth2: ['cdr.admin'] },
        ]);
      }
    }
    expect(withOAuth.paths['/.well-known/jwks.json']?.get?.security).toEqual([]);
    // Basic, or the credentials in the form (the empty requirement).
    expect(withOAuth.paths['/connect/token']?.post?.security).toEqual([
      { clientSecretBasic: [] },
      {},
    ]);
  });

  it('names the OAuth client problem codes with the statuses of their catalogue rows', () => {
    const responses = withOAuth.components.responses;
    expect(responses.OAuthClientNotFound?.['x-problem-codes']).toEqual([
      'OAuthClientNotFound',
      'OrganisationNotFound',
    ]);
    expect(PROBLEMS.OAuthClientNotFound.status).toBe(404);
    expect(PROBLEMS.OAuthClientRevoked.status).toBe(409);
    const rotate =
      withOAuth.paths['/v1/admin/organisations/{organisationId}/clients/{clientId}/rotate']?.post;
    expect(rotate?.responses['404']).toEqual({
      $ref: '#/components/responses/OAuthClientNotFound',
    });
    expect(rotate?.responses['409']).toEqual({ $ref: '#/components/responses/OAuthClientRevoked' });
  });

  it('still takes extraPaths beside the OAuth routes, refusing one it already describes', () => {
    expect(() =>
      createOpenApiDocument({
        publicBaseUrl: BASE,
        testMode: false,
        oauth: true,
        extraPaths: { '/connect/token': { get: withOAuth.paths['/healthz']!.get! } },
      }),
    ).toThrow(TypeError);
  });
});
