/**
 * The scaled-out deployment as `docker-compose.yml` runs it: the commands of its API and worker
 * services, the AWS environment every disarm service gets, and a data folder per node that
 * shares only `secrets/` (one volume in the compose file).
 */
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';

import { expect } from 'vitest';

import type { TestS3Server } from '../../s3/test/_servers.ts';
import { runDisarm } from './_server.ts';

/** `disarm serve` of an API node, as the `api` service of `docker-compose.yml` runs it. */
export function apiCommand(database: string, blobs: string): string[] {
  return ['serve', '--role=api', `--database=${database}`, `--blobs=${blobs}`, '--no-demo'];
}

/** `disarm serve` of a worker node, as the `worker` service of `docker-compose.yml` runs it. */
export function workerCommand(database: string, blobs: string): string[] {
  return ['serve', '--role=worker', `--database=${database}`, `--blobs=${blobs}`];
}

/** The SDK's standard environment for `bucket`, as `docker-compose.yml` gives every disarm service. */
export function s3EnvOf(bucket: TestS3Server): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_S3: bucket.endpoint,
    AWS_ACCESS_KEY_ID: bucket.accessKeyId,
    AWS_SECRET_ACCESS_KEY: bucket.secretAccessKey,
    AWS_REGION: 'us-east-1',
  };
}

/**
 * Makes node data folders under `root` that share `root/secrets` (the key sealing the OAuth
 * signing keys): each call of the returned function makes the next one.
 */
export async function nodeDataDirs(root: string): Promise<() => Promise<string>> {
  await mkdir(join(root, 'secrets'), { mode: 0o700 });
  let count = 0;
  return async () => {
    count += 1;
    const folder = join(root, `node-${count}`);
    await mkdir(folder);
    await symlink(join(root, 'secrets'), join(folder, 'secrets'));
    return folder;
  };
}

/** Runs `disarm admin <args> --database=<database> --json`, failing the test unless it succeeds. */
export async function adminOn(
  database: string,
  ...args: string[]
): Promise<Record<string, unknown>> {
  const run = await runDisarm(['admin', ...args, `--database=${database}`, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}
