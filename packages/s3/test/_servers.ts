import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

import S3rver from 's3rver';

/** An S3-compatible server on loopback, with one empty bucket. */
export interface TestS3Server {
  readonly endpoint: string;
  readonly bucket: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  close(): Promise<void>;
}

/** How long moto's server may take to answer its first request. */
const MOTO_START_MS = 20_000;

/**
 * s3rver in this process, on a free loopback port, storing in a temporary folder. It checks
 * presigned links' expiry and refuses a link sent with an Authorization header, but verifies no
 * SigV4 signature and no Content-MD5: the tests check those themselves.
 */
export async function startS3rver(): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'disarm-s3rver-'));
  const bucket = 'disarm-test';
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }],
  });
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    bucket,
    // s3rver's one built-in account.
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    async close() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Whether moto's S3 server (`moto_server`, Python) is on the PATH, as this machine image has it. */
export function hasMoto(): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((folder) => {
    try {
      accessSync(join(folder, 'moto_server'), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * moto's S3 server on a free loopback port (see {@link hasMoto}). Unlike s3rver it implements
 * bucket lifecycle configuration, multipart upload listing and conditional writes; it checks no
 * signatures.
 */
export async function startMoto(): Promise<Omit<TestS3Server, 'bucket'>> {
  const port = await freePort();
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], {
    stdio: 'ignore',
  });
  await Promise.race([
    once(child, 'spawn'),
    once(child, 'error').then(([error]: unknown[]) => {
      throw error;
    }),
  ]);
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + MOTO_START_MS;
  for (;;) {
    const up = await fetch(`${endpoint}/moto-api/`).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('moto_server did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    endpoint,
    accessKeyId: 'testing',
    secretAccessKey: 'testing',
    async close() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
