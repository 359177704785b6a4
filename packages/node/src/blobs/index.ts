export { createLocalBlobStore } from './create-local-blob-store.ts';
export type { LocalBlobStore, LocalBlobStoreOptions } from './create-local-blob-store.ts';
