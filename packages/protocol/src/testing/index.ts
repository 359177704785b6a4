export { describeBlobStoreContract } from './blob-store-contract.ts';
export type { BlobStoreContractHandle } from './blob-store-contract.ts';
export { describeStateStoreContract } from './store-contract.ts';
export type { StoreContractHandle } from './store-contract.ts';
export { createOpenApiValidator } from './openapi-validator.ts';
export type { OpenApiValidator, ResponseToValidate } from './openapi-validator.ts';
