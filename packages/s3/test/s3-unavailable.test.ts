/**
 * What the S3 blob store throws when the bucket cannot serve: `StorageUnavailableError` (the
 * API's 503; a worker keeps its document) for an endpoint that refuses connections and for one
 * that answers 5xx (`SlowDown`, `InternalError`) after the SDK's own retries — never the SDK's
 * error, which would be a 500. An answer about the request (403 `AccessDenied`) stays what it is.
 *
 * s3rver cannot be made to fail, so the failing bucket is a loopback server answering every
 * request with one S3 error document (the format of the S3 API reference, "Error responses").
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { StorageUnavailableError } from '@disarm/protocol';
import { afterEach, describe, expect, it } from 'vitest';

import { createS3BlobStore, createS3ClientFromEnv } from '../src/index.ts';
import type { S3BlobStore } from '../src/index.ts';

const servers: Server[] = [];
const clients: { destroy(): void }[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  }
});

/** A loopback endpoint answering every request with `status` and the S3 error `code`. */
async function failingEndpoint(status: number, code: string): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(status, { 'Content-Type': 'application/xml' });
    response.end(
      `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message><RequestId>test</RequestId></Error>`,
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A port nothing listens on (one just closed). */
async function closedEndpoint(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return `http://127.0.0.1:${port}`;
}

function storeAt(endpoint: string): S3BlobStore {
  const client = createS3ClientFromEnv({
    AWS_ENDPOINT_URL_S3: endpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test-secret',
  });
  clients.push(client);
  return createS3BlobStore({ client, bucket: 'cdr' });
}

function body(): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('bytes'));
      controller.close();
    },
  });
}

/** Every operation of the port against `blobs`, each expected to reject. */
function everyOperation(blobs: S3BlobStore): (() => Promise<unknown>)[] {
  return [
    () => blobs.put('intake/doc_1', body(), { maxBytes: 100 }),
    () => blobs.get('output/doc_1'),
    () => blobs.stat('output/doc_1'),
    () => blobs.delete('output/doc_1'),
  ];
}

describe('createS3BlobStore() against a bucket that cannot serve', () => {
  it('throws StorageUnavailableError when the endpoint refuses connections', async () => {
    const blobs = storeAt(await closedEndpoint());
    for (const refused of everyOperation(blobs)) {
      await expect(refused).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(refused).rejects.toMatchObject({
        storage: 'blob-store',
        reason: 'ECONNREFUSED',
      });
    }
  });

  it.each([
    [503, 'SlowDown'],
    [500, 'InternalError'],
  ])('throws StorageUnavailableError when the bucket answers %i %s', async (status, code) => {
    const blobs = storeAt(await failingEndpoint(status, code));
    for (const operation of everyOperation(blobs)) {
      await expect(operation()).rejects.toBeInstanceOf(StorageUnavailableError);
    }
    await expect(blobs.put('intake/doc_1', body(), { maxBytes: 100 })).rejects.toMatchObject({
      reason: code,
    });
  });

  it('leaves an answer about the request itself (403 AccessDenied) as the SDK threw it', async () => {
    const blobs = storeAt(await failingEndpoint(403, 'AccessDenied'));
    const denied = blobs.put('intake/doc_1', body(), { maxBytes: 100 });
    await expect(denied).rejects.not.toBeInstanceOf(StorageUnavailableError);
    await expect(denied).rejects.toMatchObject({ name: 'AccessDenied' });
  });
});
