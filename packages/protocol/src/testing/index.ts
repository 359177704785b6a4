export { describeStateStoreContract } from './store-contract.ts';
export type { StoreContractHandle } from './store-contract.ts';
export { createOpenApiValidator } from './openapi-validator.ts';
export type { OpenApiValidator, ResponseToValidate } from './openapi-validator.ts';
