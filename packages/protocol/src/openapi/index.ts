export { createOpenApiDocument, isStorageOnlyProblem, OPENAPI_PATH } from './document.ts';
export type { OpenApiDocumentOptions } from './document.ts';
export {
  DOCS_ASSET_TYPES,
  DOCS_ASSETS_PATH,
  DOCS_CSP,
  DOCS_INIT_SCRIPT,
  DOCS_PATH,
  docsHtml,
  docsInitScript,
  isDocsAssetName,
  PROBLEM_PAGE_CSP,
  problemPageHtml,
  PROBLEMS_PATH,
  problemsIndexHtml,
} from './docs-page.ts';
export type { DocsAssetName, DocsPageOptions } from './docs-page.ts';
export { HTTP_METHODS } from './types.ts';
export type {
  ExampleObject,
  HeaderObject,
  HttpMethod,
  JsonObject,
  JsonValue,
  MediaTypeObject,
  OpenApiDocument,
  OperationObject,
  ParameterObject,
  PathItemObject,
  ProblemCatalogueEntry,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
  SecurityRequirement,
  SecuritySchemeObject,
} from './types.ts';
