import { S3Client } from '@aws-sdk/client-s3';

/** Region used with a custom endpoint when none is configured (MinIO and most others ignore it). */
const DEFAULT_ENDPOINT_REGION = 'us-east-1';

/** Where an `s3://` blob store lives; see {@link parseS3Url}. */
export interface S3Location {
  readonly bucket: string;
  /** Key prefix, `''` or ending in `/`. */
  readonly prefix: string;
}

/**
 * Parses `s3://bucket` or `s3://bucket/prefix` (the `--blobs` and `DISARM_BLOBS` setting).
 * @throws {TypeError} for another scheme, a missing bucket, or a query or fragment.
 */
export function parseS3Url(value: string): S3Location {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 's3:') throw new TypeError(`expected an s3:// URL, got ${url.protocol}//`);
  // A bucket name is 3-63 lowercase letters, digits, dots and hyphens (S3 bucket naming rules).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(url.hostname)) {
    throw new TypeError(`not a valid bucket name: ${JSON.stringify(url.hostname)}`);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.port !== '') {
    throw new TypeError(
      'an s3:// URL names a bucket and a prefix only (no credentials, port or query)',
    );
  }
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+/, '').replace(/\/+$/, '');
  return { bucket: url.hostname, prefix: prefix === '' ? '' : `${prefix}/` };
}

/**
 * An S3 client configured the way the AWS CLI and SDKs are: credentials from
 * `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`; or a profile, SSO, an instance role …), region from
 * `AWS_REGION`, endpoint from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`. With an endpoint (an
 * S3-compatible service) it uses path-style addressing, which they all support, and the region
 * defaults to `us-east-1`.
 *
 * Checksums are only sent where S3 requires them: the SDK's default CRC32 trailers are not
 * understood by every S3-compatible service and would be baked into presigned links.
 */
export function createS3ClientFromEnv(env: NodeJS.ProcessEnv = process.env): S3Client {
  const endpoint = setting(env.AWS_ENDPOINT_URL_S3, env.AWS_ENDPOINT_URL);
  const region = setting(env.AWS_REGION, env.AWS_DEFAULT_REGION);
  const accessKeyId = setting(env.AWS_ACCESS_KEY_ID);
  const secretAccessKey = setting(env.AWS_SECRET_ACCESS_KEY);
  const sessionToken = setting(env.AWS_SESSION_TOKEN);
  return new S3Client({
    // Static keys when given; otherwise the SDK's chain (profile, SSO, container or instance role).
    ...(accessKeyId !== undefined && secretAccessKey !== undefined
      ? {
          credentials: {
            accessKeyId,
            secretAccessKey,
            ...(sessionToken === undefined ? {} : { sessionToken }),
          },
        }
      : {}),
    ...(endpoint === undefined
      ? region === undefined
        ? {}
        : { region }
      : { endpoint, forcePathStyle: true, region: region ?? DEFAULT_ENDPOINT_REGION }),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** The first variable that is set and not empty (an empty one counts as unset, as in the AWS CLI). */
function setting(...values: (string | undefined)[]): string | undefined {
  return values.find((value) => value !== undefined && value !== '');
}
