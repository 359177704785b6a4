/**
 * The subset of OpenAPI 3.1 object types the disarm contract uses: plain JSON, so the document
 * serialises as is and a validator can walk it without a library's model.
 */

import type { ProblemCode } from '../http/problems.ts';

/** A JSON value. */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | JsonObject;

/** A JSON object (`undefined` members are dropped by `JSON.stringify`). */
export interface JsonObject {
  readonly [member: string]: JsonValue | undefined;
}

/** A JSON Schema 2020-12 schema (the OpenAPI 3.1 dialect), or a `$ref` to one. */
export type SchemaObject = JsonObject;

/** `{ "$ref": "#/components/..." }`. */
export interface ReferenceObject {
  readonly $ref: string;
}

/** An example value with an optional one-line summary. */
export interface ExampleObject {
  readonly summary?: string;
  readonly value: JsonValue;
}

/** A response or parameter header. */
export interface HeaderObject {
  readonly description: string;
  readonly required?: boolean;
  readonly schema: SchemaObject;
  readonly example?: JsonValue;
}

/** One media type of a request or response body. */
export interface MediaTypeObject {
  readonly schema?: SchemaObject;
  readonly examples?: Readonly<Record<string, ExampleObject>>;
  readonly encoding?: Readonly<Record<string, { readonly contentType: string }>>;
}

/**
 * A response. `x-problem-codes` lists the catalogue codes an `application/problem+json` body of
 * this response may carry; validators check the body's `code` against it.
 */
export interface ResponseObject {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderObject>>;
  readonly content?: Readonly<Record<string, MediaTypeObject>>;
  readonly 'x-problem-codes'?: readonly ProblemCode[];
  /** The catalogue code a response stands for when its body is not a problem (409 DocumentNotCompleted). */
  readonly 'x-catalogue-code'?: ProblemCode;
}

/** A path, query or header parameter. */
export interface ParameterObject {
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly description: string;
  readonly required?: boolean;
  readonly schema: SchemaObject;
  readonly example?: JsonValue;
}

/** A request body. */
export interface RequestBodyObject {
  readonly description: string;
  readonly required: boolean;
  readonly content: Readonly<Record<string, MediaTypeObject>>;
}

/** Alternatives of security schemes (any one object of the array satisfies the operation). */
export type SecurityRequirement = Readonly<Record<string, readonly string[]>>;

/** One operation (method on a path). */
export interface OperationObject {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly security?: readonly SecurityRequirement[];
  readonly parameters?: readonly (ParameterObject | ReferenceObject)[];
  readonly requestBody?: RequestBodyObject;
  readonly responses: Readonly<Record<string, ResponseObject | ReferenceObject>>;
}

/** The HTTP methods a path item can hold, in OpenAPI's lower case. */
export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';

/** Every {@link HttpMethod}. */
export const HTTP_METHODS: readonly HttpMethod[] = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
];

/**
 * The operations of one path. `x-other-methods` is the answer to any method the path item does
 * not list (405 MethodNotAllowed with `Allow`).
 */
export type PathItemObject = {
  readonly summary?: string;
  readonly description?: string;
  readonly parameters?: readonly (ParameterObject | ReferenceObject)[];
  readonly 'x-other-methods'?: ResponseObject | ReferenceObject;
} & Readonly<Partial<Record<HttpMethod, OperationObject>>>;

/** A security scheme (API key header, HTTP bearer, OAuth 2.0 flows). */
export type SecuritySchemeObject =
  | {
      readonly type: 'apiKey';
      readonly in: 'header';
      readonly name: string;
      readonly description: string;
    }
  | {
      readonly type: 'http';
      readonly scheme: 'bearer' | 'basic';
      readonly bearerFormat?: string;
      readonly description: string;
    }
  | {
      readonly type: 'oauth2';
      readonly description: string;
      readonly flows: {
        readonly clientCredentials: {
          readonly tokenUrl: string;
          readonly scopes: Readonly<Record<string, string>>;
        };
      };
    };

/** One row of the problem catalogue as the document carries it (`components.x-problem-catalogue`). */
export interface ProblemCatalogueEntry {
  readonly type: string;
  readonly status: number;
  readonly title: string;
  readonly description: string;
  /** Which origin answers with it: the API, the storage links, or both. */
  readonly servedBy: readonly ('api' | 'storage')[];
}

/** The OpenAPI 3.1 document of the disarm v1 API. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: {
    readonly title: string;
    readonly version: string;
    readonly summary: string;
    readonly description: string;
    readonly license: { readonly name: string; readonly identifier: string };
  };
  readonly servers: readonly { readonly url: string; readonly description?: string }[];
  readonly tags: readonly { readonly name: string; readonly description: string }[];
  readonly security: readonly SecurityRequirement[];
  readonly paths: Readonly<Record<string, PathItemObject>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, SchemaObject>>;
    readonly responses: Readonly<Record<string, ResponseObject>>;
    readonly parameters: Readonly<Record<string, ParameterObject>>;
    readonly securitySchemes: Readonly<Record<string, SecuritySchemeObject>>;
    readonly 'x-problem-catalogue': Readonly<Record<ProblemCode, ProblemCatalogueEntry>>;
  };
  /** The answer to a path no template matches (404 NotFound). */
  readonly 'x-unknown-path': ReferenceObject;
}
