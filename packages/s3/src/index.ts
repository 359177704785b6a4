export {
  createS3BlobStore,
  DEFAULT_PART_CONCURRENCY,
  DEFAULT_PART_SIZE_BYTES,
} from './create-s3-blob-store.ts';
export type { S3BlobStore, S3BlobStoreOptions } from './create-s3-blob-store.ts';
export type { LifecycleChange } from './_lifecycle.ts';
export { createS3ClientFromEnv, parseS3Url } from './s3-client.ts';
export type { S3Location } from './s3-client.ts';
