export { createLocalBlobStore } from './create-local-blob-store.ts';
export type { LocalBlobStore, LocalBlobStoreOptions } from './create-local-blob-store.ts';
export { LIFECYCLE_EXPIRE_DAYS, openBlobStore, S3_PUBLIC_ENDPOINT_ENV } from './open-blob-store.ts';
