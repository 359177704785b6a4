import type { BlobStore, Logger } from '@disarm/protocol';
import type * as S3 from '@disarm/s3';

/**
 * Days after which the bucket's lifecycle rule expires a blob. Retention keeps nothing longer
 * than 24 hours (cleaned files from completion, uploads from creation); S3 counts lifecycle days
 * from the object's creation and rounds up to the next midnight UTC, so one day could remove an
 * upload's bytes that are still waiting in the queue. Two leave a day's margin.
 */
export const LIFECYCLE_EXPIRE_DAYS = 2;

/**
 * Environment variable naming the endpoint clients reach the bucket at, when it differs from the
 * one this process uses (`AWS_ENDPOINT_URL_S3`): presigned links are signed for it.
 */
export const S3_PUBLIC_ENDPOINT_ENV = 'DISARM_S3_PUBLIC_ENDPOINT_URL';

/**
 * Opens the blob store `location` names (`--blobs`, `DISARM_BLOBS`): `s3://bucket/prefix` is an
 * S3-compatible bucket through `@disarm/s3`, configured from the AWS environment
 * (`AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
 * `AWS_REGION`; links signed for {@link S3_PUBLIC_ENDPOINT_ENV} when set). The AWS SDK is loaded
 * only here, so a local deployment never loads it.
 *
 * The bucket's lifecycle rule ({@link LIFECYCLE_EXPIRE_DAYS}) is applied on the way: a second line
 * of defence behind the retention sweeper. A bucket that refuses it (no permission, a service
 * without lifecycle support) is logged as a warning, not a failure: the sweeper still deletes
 * every blob on time.
 *
 * @throws {TypeError} (rejected) for a location that is not `s3://bucket[/prefix]`.
 * @throws {Error} (rejected) when `@disarm/s3` is not installed.
 */
export async function openBlobStore(location: string, logger: Logger): Promise<BlobStore> {
  if (!location.startsWith('s3://')) {
    throw new TypeError(
      `--blobs must be an s3://bucket/prefix URL (got ${JSON.stringify(location)})`,
    );
  }
  let s3: typeof S3;
  try {
    s3 = await import('@disarm/s3');
  } catch (error) {
    throw new Error('--blobs s3://… needs the @disarm/s3 package: npm install @disarm/s3', {
      cause: error,
    });
  }
  const { bucket, prefix } = s3.parseS3Url(location);
  const publicEndpoint = process.env[S3_PUBLIC_ENDPOINT_ENV];
  const blobs = s3.createS3BlobStore({
    client: s3.createS3ClientFromEnv(),
    ...(publicEndpoint === undefined || publicEndpoint === ''
      ? {}
      : {
          linkClient: s3.createS3ClientFromEnv({
            ...process.env,
            AWS_ENDPOINT_URL_S3: publicEndpoint,
          }),
        }),
    bucket,
    prefix,
  });
  try {
    const change = await blobs.applyLifecycleRule(LIFECYCLE_EXPIRE_DAYS);
    logger.info(
      { bucket, prefix, expireAfterDays: LIFECYCLE_EXPIRE_DAYS, change },
      'bucket lifecycle rule',
    );
  } catch (error) {
    logger.warn(
      { err: error, bucket, prefix },
      'the bucket lifecycle rule could not be applied; only the retention sweeper removes blobs',
    );
  }
  return blobs;
}
