import $RefParser from '@apidevtools/json-schema-ref-parser';
import type { JSONSchema } from '@apidevtools/json-schema-ref-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';

import type { OpenApiDocument } from '../openapi/types.ts';

/** One real response, as a test saw it. */
export interface ResponseToValidate {
  /** The request method, any case. */
  readonly method: string;
  /** The request path as sent (`/v1/documents/doc_123`); a query string is ignored. */
  readonly path: string;
  readonly status: number;
  readonly headers: Headers;
  /** The body: parsed JSON, a string (HTML, or JSON not yet parsed), or `undefined` when empty. */
  readonly body: unknown;
}

/** Checks real responses against the OpenAPI document. */
export interface OpenApiValidator {
  /**
   * Every way `response` departs from the document; empty when it conforms. Checks: a path
   * template and method match; the status is documented; the Content-Type is documented for
   * that status; required headers are present and every documented header's value fits its
   * schema; the body fits its schema; a problem's `code` is one of the response's
   * `x-problem-codes`, its `status` is the HTTP status and its `type` names the code.
   */
  validate(response: ResponseToValidate): string[];
  /**
   * Documented `METHOD /template STATUS` triples no validated response has exercised yet, for a
   * conformance suite that wants to know what it has not covered.
   */
  unexercised(): string[];
}

type JsonRecord = Readonly<Record<string, unknown>>;

interface CompiledHeader {
  readonly name: string;
  readonly required: boolean;
  readonly schema: JsonRecord | undefined;
  readonly validate: ValidateFunction | undefined;
}

interface CompiledResponse {
  readonly headers: readonly CompiledHeader[];
  /** Media type (lower case) -> body validator (`undefined`: any body). `undefined`: no body. */
  readonly content: ReadonlyMap<string, CompiledBody> | undefined;
  readonly problemCodes: ReadonlySet<string> | undefined;
}

interface CompiledBody {
  readonly schema: JsonRecord | undefined;
  readonly validate: ValidateFunction | undefined;
}

interface CompiledOperation {
  /** Status key (`200`, `4XX`, `default`) -> response. */
  readonly responses: ReadonlyMap<string, CompiledResponse>;
}

interface CompiledPath {
  readonly template: string;
  readonly regex: RegExp;
  readonly parameterCount: number;
  readonly operations: ReadonlyMap<string, CompiledOperation>;
  readonly otherMethods: CompiledResponse | undefined;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const PROBLEM_MEDIA_TYPE = 'application/problem+json';

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function recordAt(value: JsonRecord, key: string): JsonRecord | undefined {
  const member = value[key];
  return isRecord(member) ? member : undefined;
}

function mediaTypeOf(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

function typesOf(schema: JsonRecord | undefined): readonly unknown[] {
  const type = schema?.type;
  return Array.isArray(type) ? type : [type];
}

/** Header values are text: read numbers and booleans the schema asks for. */
function headerValue(raw: string, schema: JsonRecord | undefined): unknown {
  const types = typesOf(schema);
  if (
    (types.includes('integer') || types.includes('number')) &&
    /^-?\d+(?:\.\d+)?$/.test(raw.trim())
  ) {
    return Number(raw.trim());
  }
  if (types.includes('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}

function describeErrors(
  where: string,
  errors: readonly ErrorObject[] | null | undefined,
): string[] {
  const all = errors ?? [];
  // An `if` error only says "must match then"; the error inside `then` says what is wrong.
  const useful = all.filter((error) => error.keyword !== 'if');
  return (useful.length > 0 ? useful : all).map((error) => {
    const at = `${where}${error.instancePath}`;
    const params = error.params as Record<string, unknown>;
    let detail = error.message ?? 'is invalid';
    const forbidden = forbiddenMembers(error);
    if (forbidden.length > 0) {
      detail = `must not carry ${forbidden.join(', ')} here (${error.schemaPath})`;
    } else if (typeof params.additionalProperty === 'string') {
      detail += `: ${params.additionalProperty}`;
    } else if (Array.isArray(params.allowedValues)) {
      detail += `: ${params.allowedValues.map((value) => JSON.stringify(value)).join(', ')}`;
    } else if (error.keyword === 'not' || error.keyword === 'const') {
      detail += ` (${error.schemaPath})`;
    }
    return `${at} ${detail}`;
  });
}

/** For `not: { anyOf: [{ required: [m] }, ...] }` failures: the members that are present. */
function forbiddenMembers(error: ErrorObject): string[] {
  if (error.keyword !== 'not' || !isRecord(error.schema) || !isRecord(error.data)) return [];
  const alternatives = error.schema.anyOf;
  if (!Array.isArray(alternatives)) return [];
  const data = error.data;
  return alternatives.flatMap((alternative) => {
    const required = isRecord(alternative) ? alternative.required : undefined;
    return Array.isArray(required)
      ? required.filter((member): member is string => typeof member === 'string' && member in data)
      : [];
  });
}

/** `/v1/documents/{id}` -> a regex matching one non-empty segment per parameter. */
function templateRegex(template: string): { regex: RegExp; parameterCount: number } {
  let parameterCount = 0;
  const source = template
    .split(/(\{[^}/]+\})/)
    .map((part) => {
      if (/^\{[^}/]+\}$/.test(part)) {
        parameterCount += 1;
        return '[^/]+';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { regex: new RegExp(`^${source}$`), parameterCount };
}

/**
 * A validator for `document` (the object `createOpenApiDocument` returns, or the JSON served at
 * `/v1/openapi.json`). The document is dereferenced (internal `$ref`s only) and every response
 * schema is compiled up front as JSON Schema 2020-12, so a broken document throws here.
 *
 * @example
 * ```ts
 * const validator = await createOpenApiValidator(createOpenApiDocument({ publicBaseUrl, testMode: true }));
 * const response = await api.fetch(new Request(`${publicBaseUrl}/v1/account`, { headers }));
 * expect(validator.validate({ method: 'GET', path: '/v1/account', status: response.status,
 *   headers: response.headers, body: await response.json() })).toEqual([]);
 * ```
 */
export async function createOpenApiValidator(
  document: OpenApiDocument | JsonRecord,
): Promise<OpenApiValidator> {
  // A deep copy: the parser rewrites `$ref`s in place.
  const copy = JSON.parse(JSON.stringify(document)) as JSONSchema;
  const dereferenced: unknown = await $RefParser.dereference(copy, {
    resolve: { external: false },
    dereference: { circular: false },
  });
  if (!isRecord(dereferenced)) throw new TypeError('the OpenAPI document is not an object');

  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allowUnionTypes: true,
    allErrors: true,
    // Errors carry the failing schema and data, for readable "must not carry" messages.
    verbose: true,
  });
  ajvFormats.default(ajv);
  // OpenAPI's own schema keywords (annotations to a validator).
  ajv.addVocabulary(['example', 'xml', 'externalDocs', 'discriminator']);

  const compile = (schema: unknown, where: string): ValidateFunction | undefined => {
    if (schema === undefined) return undefined;
    if (!isRecord(schema) && typeof schema !== 'boolean') {
      throw new TypeError(`${where}: a schema must be an object or a boolean`);
    }
    try {
      return ajv.compile(schema);
    } catch (error) {
      throw new TypeError(`${where}: the schema does not compile: ${String(error)}`, {
        cause: error,
      });
    }
  };

  const compileResponse = (response: unknown, where: string): CompiledResponse => {
    if (!isRecord(response)) throw new TypeError(`${where}: not a response object`);
    const headers: CompiledHeader[] = [];
    for (const [name, header] of Object.entries(recordAt(response, 'headers') ?? {})) {
      if (!isRecord(header)) continue;
      const schema = recordAt(header, 'schema');
      headers.push({
        name,
        required: header.required === true,
        schema,
        validate: compile(schema, `${where} header ${name}`),
      });
    }
    const contentObject = recordAt(response, 'content');
    let content: Map<string, CompiledBody> | undefined;
    if (contentObject !== undefined) {
      content = new Map();
      for (const [mediaType, media] of Object.entries(contentObject)) {
        const schema = isRecord(media) ? recordAt(media, 'schema') : undefined;
        content.set(mediaType.toLowerCase(), {
          schema,
          validate: compile(schema, `${where} ${mediaType}`),
        });
      }
    }
    const codes = response['x-problem-codes'];
    return {
      headers,
      content,
      problemCodes: Array.isArray(codes) ? new Set(codes.map(String)) : undefined,
    };
  };

  const servers = dereferenced.servers;
  const firstServer = Array.isArray(servers) && isRecord(servers[0]) ? servers[0] : undefined;
  const serverUrl = typeof firstServer?.url === 'string' ? firstServer.url : '/';
  const basePath = new URL(serverUrl, 'http://base.invalid').pathname.replace(/\/+$/, '');

  const paths: CompiledPath[] = [];
  const documented: string[] = [];
  for (const [template, item] of Object.entries(recordAt(dereferenced, 'paths') ?? {})) {
    if (template.startsWith('x-') || !isRecord(item)) continue;
    const operations = new Map<string, CompiledOperation>();
    for (const method of METHODS) {
      const operation = recordAt(item, method);
      if (operation === undefined) continue;
      const responses = new Map<string, CompiledResponse>();
      for (const [status, response] of Object.entries(recordAt(operation, 'responses') ?? {})) {
        if (status.startsWith('x-')) continue;
        responses.set(
          status.toUpperCase(),
          compileResponse(response, `${method.toUpperCase()} ${template} ${status}`),
        );
        documented.push(`${method.toUpperCase()} ${template} ${status.toUpperCase()}`);
      }
      operations.set(method, { responses });
    }
    const other = item['x-other-methods'];
    paths.push({
      template,
      ...templateRegex(template),
      operations,
      otherMethods:
        other === undefined ? undefined : compileResponse(other, `${template} x-other-methods`),
    });
  }
  // Literal paths win over templates, then the template with fewer parameters.
  paths.sort((a, b) => a.parameterCount - b.parameterCount);
  const unknownPathSource = dereferenced['x-unknown-path'];
  const unknownPath =
    unknownPathSource === undefined
      ? undefined
      : compileResponse(unknownPathSource, 'x-unknown-path');
  const exercised = new Set<string>();

  const checkResponse = (
    documentedResponse: CompiledResponse,
    response: ResponseToValidate,
    errors: string[],
  ): void => {
    for (const header of documentedResponse.headers) {
      const raw = response.headers.get(header.name);
      if (raw === null) {
        if (header.required) errors.push(`header ${header.name} is required but missing`);
        continue;
      }
      if (header.validate && !header.validate(headerValue(raw, header.schema))) {
        errors.push(...describeErrors(`header ${header.name}`, header.validate.errors));
      }
    }

    const empty = response.body === undefined || response.body === null || response.body === '';
    if (documentedResponse.content === undefined) {
      if (!empty) errors.push('has a body, but the document describes none');
      return;
    }
    const contentType = response.headers.get('Content-Type');
    if (contentType === null) {
      errors.push(
        `Content-Type is missing (documented: ${[...documentedResponse.content.keys()].join(', ')})`,
      );
      return;
    }
    const mediaType = mediaTypeOf(contentType);
    const body =
      documentedResponse.content.get(mediaType) ??
      documentedResponse.content.get(`${mediaType.split('/')[0] ?? ''}/*`) ??
      documentedResponse.content.get('*/*');
    if (body === undefined) {
      errors.push(
        `Content-Type ${mediaType} is not documented (documented: ${[...documentedResponse.content.keys()].join(', ')})`,
      );
      return;
    }
    let value = response.body;
    if (typeof value === 'string' && !typesOf(body.schema).includes('string')) {
      try {
        value = JSON.parse(value) as unknown;
      } catch {
        errors.push(`body is not JSON (${mediaType})`);
        return;
      }
    }
    if (body.validate && !body.validate(value)) {
      errors.push(...describeErrors('body', body.validate.errors));
    }
    if (mediaType === PROBLEM_MEDIA_TYPE)
      checkProblem(documentedResponse, value, response.status, errors);
  };

  const checkProblem = (
    documentedResponse: CompiledResponse,
    value: unknown,
    status: number,
    errors: string[],
  ): void => {
    if (!isRecord(value)) return;
    const code = value.code;
    if (documentedResponse.problemCodes === undefined) {
      errors.push('the document gives this problem response no x-problem-codes');
    } else if (typeof code !== 'string' || !documentedResponse.problemCodes.has(code)) {
      errors.push(
        `problem code ${JSON.stringify(code)} is not one of this response's x-problem-codes (${[...documentedResponse.problemCodes].join(', ')})`,
      );
    }
    if (value.status !== status) {
      errors.push(
        `problem status ${JSON.stringify(value.status)} differs from the HTTP status ${status}`,
      );
    }
    const type = value.type;
    if (
      typeof code === 'string' &&
      typeof type === 'string' &&
      !type.endsWith(`/problems/${code}`)
    ) {
      errors.push(`problem type ${type} does not name the code ${code}`);
    }
  };

  return {
    validate(response) {
      const method = response.method.toLowerCase();
      let path = response.path.split(/[?#]/)[0] ?? '';
      if (basePath !== '' && (path === basePath || path.startsWith(`${basePath}/`))) {
        path = path.slice(basePath.length) || '/';
      }
      const label = `${response.method.toUpperCase()} ${response.path} -> ${response.status}`;
      const errors: string[] = [];
      const match = paths.find((candidate) => candidate.regex.test(path));
      // RFC 9110 9.3.2: a HEAD response never has content, whatever the GET's would be.
      const bodyless = (documented: CompiledResponse): CompiledResponse =>
        method === 'head' ? { ...documented, content: undefined } : documented;

      if (match === undefined) {
        if (unknownPath !== undefined && response.status === 404) {
          checkResponse(bodyless(unknownPath), response, errors);
        } else {
          errors.push('no path template of the document matches this path');
        }
        return errors.map((error) => `${label}: ${error}`);
      }

      // RFC 9110 9.3.2, as the document's description says: every GET also answers HEAD.
      const headOfGet = method === 'head' && !match.operations.has('head');
      const operation = match.operations.get(headOfGet ? 'get' : method);
      if (operation === undefined) {
        if (match.otherMethods === undefined) {
          errors.push(`${match.template} does not describe ${method.toUpperCase()}`);
        } else if (response.status !== 405) {
          errors.push(`${match.template} does not describe ${method.toUpperCase()}: expected 405`);
        } else {
          checkResponse(bodyless(match.otherMethods), response, errors);
          const allowed = new Set(
            (response.headers.get('Allow') ?? '')
              .split(',')
              .map((token) => token.trim().toUpperCase())
              .filter((token) => token !== ''),
          );
          const described = new Set([...match.operations.keys()].map((name) => name.toUpperCase()));
          if (described.has('GET')) described.add('HEAD');
          for (const name of described) {
            if (!allowed.has(name))
              errors.push(`Allow omits ${name}, which ${match.template} describes`);
          }
          for (const name of allowed) {
            if (!described.has(name))
              errors.push(`Allow lists ${name}, which ${match.template} does not describe`);
          }
        }
        return errors.map((error) => `${label}: ${error}`);
      }

      const statusKey = String(response.status);
      const rangeKey = `${statusKey[0] ?? ''}XX`;
      const key = operation.responses.has(statusKey)
        ? statusKey
        : operation.responses.has(rangeKey)
          ? rangeKey
          : operation.responses.has('DEFAULT')
            ? 'DEFAULT'
            : undefined;
      const documentedResponse = key === undefined ? undefined : operation.responses.get(key);
      if (key === undefined || documentedResponse === undefined) {
        errors.push(
          `status ${statusKey} is not documented for ${method.toUpperCase()} ${match.template} (documented: ${[...operation.responses.keys()].join(', ')})`,
        );
      } else if (headOfGet) {
        // The GET's status and headers, and no content (whatever the GET's Content-Type).
        checkResponse({ ...documentedResponse, content: undefined }, response, errors);
      } else {
        exercised.add(`${method.toUpperCase()} ${match.template} ${key}`);
        checkResponse(documentedResponse, response, errors);
      }
      return errors.map((error) => `${label}: ${error}`);
    },
    unexercised() {
      return documented.filter((entry) => !exercised.has(entry));
    },
  };
}
