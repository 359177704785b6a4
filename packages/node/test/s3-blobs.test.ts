/**
 * `disarm serve --blobs s3://…` against an S3-compatible server on loopback: staged uploads PUT
 * straight to the bucket through presigned links, downloads redirected to presigned links, every
 * blob gone from the bucket after retention.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { createS3ClientFromEnv } from '@disarm/s3';
import { buildImage } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startS3rver } from '../../s3/test/_servers.ts';
import type { TestS3Server } from '../../s3/test/_servers.ts';
import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

const PREFIX = 'e2e';
const DAY_MS = 24 * 60 * 60 * 1000;

let bucket: TestS3Server;
let client: S3Client;
let server: TestServer;
let key: string;

beforeAll(async () => {
  bucket = await startS3rver();
  const env = {
    AWS_ENDPOINT_URL_S3: bucket.endpoint,
    AWS_ACCESS_KEY_ID: bucket.accessKeyId,
    AWS_SECRET_ACCESS_KEY: bucket.secretAccessKey,
  };
  client = createS3ClientFromEnv(env);
  server = await startTestServer({ args: [`--blobs=s3://${bucket.bucket}/${PREFIX}`], env });
  ({ apiKey: key } = await server.createOrganisation('payg', { creditPence: 1000 }));
});

afterAll(async () => {
  await server.stop();
  client.destroy();
  await bucket.close();
});

/** Every object under the deployment's prefix. */
async function objects(): Promise<string[]> {
  const page = await client.send(
    new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}/` }),
  );
  return (page.Contents ?? []).map((object) => object.Key!.slice(PREFIX.length + 1)).sort();
}

async function terminal(id: string): Promise<Record<string, unknown>> {
  for (let attempt = 0; attempt < 600; attempt += 1) {
    const envelope = (await (
      await fetch(`${server.apiUrl}/v1/documents/${id}`, { headers: { 'X-Api-Key': key } })
    ).json()) as Record<string, unknown>;
    if (envelope.status !== 'pending' && envelope.status !== 'processing') return envelope;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`document ${id} never finished`);
}

describe('disarm serve --blobs s3://', () => {
  it('takes a staged upload PUT straight to the bucket, cleans it and serves it by presigned link', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const created = await fetch(`${server.apiUrl}/v1/uploads`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName: 'scan ü.png' }),
    });
    expect(created.status).toBe(201);
    const upload = (await created.json()) as {
      uploadId: string;
      uploadUrl: string;
      method: string;
      requiredHeaders: Record<string, string>;
    };
    expect(
      upload.uploadUrl.startsWith(`${bucket.endpoint}/${bucket.bucket}/${PREFIX}/uploads/`),
    ).toBe(true);
    expect(upload.requiredHeaders).toEqual({
      'Content-Type': 'application/octet-stream',
      'If-None-Match': '*',
    });

    const early = await fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ uploadId: upload.uploadId }),
    });
    expect(early.status).toBe(400);
    await early.body?.cancel();

    const put = await fetch(upload.uploadUrl, {
      method: upload.method,
      headers: upload.requiredHeaders,
      body: png,
    });
    expect(put.status).toBe(200);

    const submitted = await fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ uploadId: upload.uploadId }),
    });
    expect(submitted.status).toBe(202);
    const { id } = (await submitted.json()) as { id: string };
    const envelope = await terminal(id);
    expect(envelope).toMatchObject({ status: 'completed', outcome: 'cleaned' });
    expect(String(envelope.downloadUrl).startsWith(`${bucket.endpoint}/${bucket.bucket}/`)).toBe(
      true,
    );

    const redirect = await fetch(`${server.apiUrl}/v1/documents/${id}/download`, {
      headers: { 'X-Api-Key': key },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const file = await fetch(redirect.headers.get('Location')!);
    expect(file.status).toBe(200);
    expect(file.headers.get('Content-Type')).toBe('image/png');
    expect(file.headers.get('Content-Disposition')).toBe(
      `attachment; filename="scan _.png"; filename*=UTF-8''scan%20%C3%BC.png`,
    );
    const cleaned = new Uint8Array(await file.arrayBuffer());
    expect([...cleaned.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    // Processing deleted the uploaded bytes; only the cleaned file remains.
    expect(await objects()).toEqual([`output/${id}`]);
  });

  it('refuses an upload over the plan ceiling at submission, measured on the stored object', async () => {
    const { apiKey: small } = await server.createOrganisation('payg', {
      creditPence: 1000,
      maxUploadBytes: 100,
      name: 'small uploads',
    });
    const created = await fetch(`${server.apiUrl}/v1/uploads`, {
      method: 'POST',
      headers: { 'X-Api-Key': small, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName: 'big.png' }),
    });
    const upload = (await created.json()) as {
      uploadId: string;
      uploadUrl: string;
      requiredHeaders: Record<string, string>;
      maxSizeBytes: number;
    };
    expect(upload.maxSizeBytes).toBe(100);
    const put = await fetch(upload.uploadUrl, {
      method: 'PUT',
      headers: upload.requiredHeaders,
      body: new Uint8Array(await buildImage('png', { width: 64, height: 64 })),
    });
    expect(put.status).toBe(200);
    const submitted = await fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': small, 'Content-Type': 'application/json' },
      body: JSON.stringify({ uploadId: upload.uploadId }),
    });
    expect(submitted.status).toBe(413);
    expect(await submitted.json()).toMatchObject({
      code: 'FileTooLargeForPlan',
      maxSizeBytes: 100,
    });
  });

  it('cleans a sync submission, and leaves nothing in the bucket after retention', async () => {
    const response = await fetch(`${server.apiUrl}/v1/documents?wait=true&filename=photo.png`, {
      method: 'POST',
      headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
      body: new Uint8Array(await buildImage('png')),
    });
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as { id: string; downloadUrl: string };
    expect((await fetch(envelope.downloadUrl)).status).toBe(200);
    expect(await objects()).toContain(`output/${envelope.id}`);

    await server.advanceClock(2 * DAY_MS);
    expect(await objects()).toEqual([]);
  });

  it('logs that the bucket refused the lifecycle rule and carries on', () => {
    // s3rver implements no lifecycle configuration: the sweeper alone removes blobs there.
    expect(server.logs()).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'the bucket lifecycle rule could not be applied; only the retention sweeper removes blobs',
        bucket: bucket.bucket,
        prefix: `${PREFIX}/`,
      }),
    );
  });
});
