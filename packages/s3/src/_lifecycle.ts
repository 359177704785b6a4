import {
  GetBucketLifecycleConfigurationCommand,
  PutBucketLifecycleConfigurationCommand,
} from '@aws-sdk/client-s3';
import type { LifecycleRule, S3Client } from '@aws-sdk/client-s3';

/** What {@link applyLifecycleRule} did. */
export type LifecycleChange = 'created' | 'updated' | 'unchanged';

/** Most days a retention rule may keep blobs (one year): a larger value is a units mistake. */
const MAX_EXPIRE_DAYS = 365;

/** Rule id: one per prefix, so deployments sharing a bucket keep their own rule. */
export function lifecycleRuleId(prefix: string): string {
  return `disarm-retention${prefix === '' ? '' : `:${prefix}`}`;
}

/**
 * Puts our expiration rule into the bucket's lifecycle configuration, keeping every other rule.
 * Written only when missing or different: concurrent starts write the same configuration.
 */
export async function applyLifecycleRule(
  client: S3Client,
  options: { readonly bucket: string; readonly prefix: string; readonly expireAfterDays: number },
): Promise<LifecycleChange> {
  const { bucket, prefix, expireAfterDays } = options;
  if (
    !Number.isSafeInteger(expireAfterDays) ||
    expireAfterDays < 1 ||
    expireAfterDays > MAX_EXPIRE_DAYS
  ) {
    throw new TypeError(
      `expireAfterDays must be an integer from 1 to ${MAX_EXPIRE_DAYS}, got ${expireAfterDays}`,
    );
  }
  const id = lifecycleRuleId(prefix);
  const rules = await currentRules(client, bucket);
  const ours: LifecycleRule = {
    ID: id,
    Status: 'Enabled',
    Filter: { Prefix: prefix },
    Expiration: { Days: expireAfterDays },
    // Multipart uploads of a process that died mid-write hold billed parts until aborted.
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
  };
  const existing = rules.find((rule) => rule.ID === id);
  if (existing && sameRule(existing, ours)) return 'unchanged';
  await client.send(
    new PutBucketLifecycleConfigurationCommand({
      Bucket: bucket,
      LifecycleConfiguration: { Rules: [...rules.filter((rule) => rule.ID !== id), ours] },
    }),
  );
  return existing ? 'updated' : 'created';
}

async function currentRules(client: S3Client, bucket: string): Promise<LifecycleRule[]> {
  try {
    const answer = await client.send(
      new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }),
    );
    return answer.Rules ?? [];
  } catch (error) {
    if ((error as { name?: unknown }).name === 'NoSuchLifecycleConfiguration') return [];
    throw error;
  }
}

function sameRule(a: LifecycleRule, b: LifecycleRule): boolean {
  return (
    a.Status === b.Status &&
    (a.Filter?.Prefix ?? '') === (b.Filter?.Prefix ?? '') &&
    a.Filter?.And === undefined &&
    a.Filter?.Tag === undefined &&
    a.Expiration?.Days === b.Expiration?.Days &&
    a.AbortIncompleteMultipartUpload?.DaysAfterInitiation ===
      b.AbortIncompleteMultipartUpload?.DaysAfterInitiation
  );
}
