import { createHash, randomUUID } from 'node:crypto';

import {
  CreateBucketCommand,
  GetBucketLifecycleConfigurationCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutBucketLifecycleConfigurationCommand,
} from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { describeBlobStoreContract } from '@disarm/protocol/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { createS3BlobStore, createS3ClientFromEnv, parseS3Url } from '../src/index.ts';
import type { S3BlobStore } from '../src/index.ts';
import { hasMoto, startMoto, startS3rver } from './_servers.ts';
import type { TestS3Server } from './_servers.ts';
import { verifyPresignedUrl } from './_sigv4.ts';

/** The smallest part S3 accepts, so that the contract's large blobs take several parts. */
const PART_BYTES = 5 * 1024 * 1024;
const HOUR_MS = 60 * 60 * 1000;

let server: TestS3Server;
let client: S3Client;

beforeAll(async () => {
  server = await startS3rver();
  client = clientFor(server);
});

afterAll(async () => {
  client.destroy();
  await server.close();
});

function clientFor(target: Omit<TestS3Server, 'bucket'>): S3Client {
  return createS3ClientFromEnv({
    AWS_ENDPOINT_URL_S3: target.endpoint,
    AWS_ACCESS_KEY_ID: target.accessKeyId,
    AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
  });
}

/** Every key under `prefix`, without it. */
async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: server.bucket,
        Prefix: prefix,
        ...(token === undefined ? {} : { ContinuationToken: token }),
      }),
    );
    for (const object of page.Contents ?? []) keys.push(object.Key!.slice(prefix.length));
    token = page.NextContinuationToken;
  } while (token !== undefined);
  return keys.sort();
}

/** A store under a fresh prefix, so each test sees an empty store. */
function freshStore(): S3BlobStore {
  return createS3BlobStore({
    client,
    bucket: server.bucket,
    prefix: `t-${randomUUID()}`,
    partSizeBytes: PART_BYTES,
  });
}

describeBlobStoreContract('s3 (s3rver)', () => {
  const blobs = freshStore();
  return Promise.resolve({
    blobs,
    keys: () => keysUnder(blobs.prefix),
    fetchLink: (url, init) => fetch(url, init),
    // Every test has its own prefix; the bucket goes with the server.
    close: () => Promise.resolve(),
  });
});

describe('createS3BlobStore() links', () => {
  it('signs an upload link a client can PUT to, with Content-Type and create-only signed', async () => {
    const blobs = freshStore();
    const upload = await blobs.signedUploadUrl('uploads/upl_1', {
      expiresAt: new Date(Date.now() + HOUR_MS),
      maxBytes: 1000,
    });
    expect(upload.requiredHeaders).toEqual({
      'Content-Type': 'application/octet-stream',
      'If-None-Match': '*',
    });
    const url = new URL(upload.url);
    expect(url.pathname).toBe(`/${server.bucket}/${blobs.prefix}uploads/upl_1`);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-type;host;if-none-match');
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeGreaterThan(HOUR_MS / 1000 - 5);
    // Up to a second over: the signing time is rounded down and the expiry up (never early).
    expect(Number(url.searchParams.get('X-Amz-Expires'))).toBeLessThanOrEqual(HOUR_MS / 1000 + 1);
    // The SDK's default checksums would pin a CRC of an empty body into the link.
    expect([...url.searchParams.keys()].filter((name) => /checksum/i.test(name))).toEqual([]);

    const response = await fetch(upload.url, {
      method: upload.method,
      headers: upload.requiredHeaders,
      body: 'the uploaded bytes',
    });
    expect(response.status).toBe(200);
    expect(await blobs.stat('uploads/upl_1')).toEqual({ sizeBytes: 18 });
  });

  it('makes upload links whose signature holds only with the required headers and in time', async () => {
    const blobs = freshStore();
    const upload = await blobs.signedUploadUrl('uploads/upl_1', {
      expiresAt: new Date(Date.now() + HOUR_MS),
      maxBytes: 1000,
    });
    const verdict = (headers: Record<string, string>, now = new Date(), method = 'PUT') =>
      verifyPresignedUrl({
        url: upload.url,
        method,
        headers,
        secretAccessKey: server.secretAccessKey,
        now,
      });
    expect(verdict(upload.requiredHeaders)).toBe('valid');
    // An optional Content-MD5 is not signed: S3 verifies it against the bytes instead.
    expect(verdict({ ...upload.requiredHeaders, 'Content-MD5': 'AAAAAAAAAAAAAAAAAAAAAA==' })).toBe(
      'valid',
    );
    expect(verdict({ ...upload.requiredHeaders, 'Content-Type': 'text/html' })).toBe(
      'bad_signature',
    );
    expect(verdict({ 'Content-Type': 'application/octet-stream' })).toBe('bad_signature');
    expect(verdict(upload.requiredHeaders, new Date(), 'GET')).toBe('bad_signature');
    expect(verdict(upload.requiredHeaders, new Date(Date.now() + HOUR_MS + 60_000))).toBe(
      'expired',
    );
    expect(
      verifyPresignedUrl({
        url: upload.url,
        method: 'PUT',
        headers: upload.requiredHeaders,
        secretAccessKey: 'another secret',
        now: new Date(),
      }),
    ).toBe('bad_signature');
  });

  it('signs the download file name and type into the link: changing them breaks it', async () => {
    const blobs = freshStore();
    const expiresAt = new Date(Date.now() + 24 * HOUR_MS);
    const url = await blobs.signedDownloadUrl('output/doc_1', {
      expiresAt,
      fileName: 'report.pdf',
      contentType: 'application/pdf',
    });
    const check = (link: string, now = new Date()) =>
      verifyPresignedUrl({
        url: link,
        method: 'GET',
        headers: {},
        secretAccessKey: server.secretAccessKey,
        now,
      });
    expect(check(url)).toBe('valid');
    const renamed = new URL(url);
    renamed.searchParams.set('response-content-disposition', 'attachment; filename="report.html"');
    expect(check(renamed.href)).toBe('bad_signature');
    const retyped = new URL(url);
    retyped.searchParams.set('response-content-type', 'text/html');
    expect(check(retyped.href)).toBe('bad_signature');
    expect(check(url, new Date(expiresAt.getTime() + 60_000))).toBe('expired');
  });

  it('never lets a link stop working before the instant asked for: SigV4 whole seconds round up', async () => {
    // X-Amz-Date states the signing time in whole seconds (rounded down) and X-Amz-Expires the
    // lifetime in whole seconds: both roundings must fall on the later side of `expiresAt`.
    const signedAt = new Date('2026-03-01T10:00:00.700Z');
    const expiresAt = new Date('2026-03-01T11:00:00.300Z');
    vi.useFakeTimers({ toFake: ['Date'], now: signedAt });
    let download: string;
    let upload: string;
    try {
      const blobs = freshStore();
      download = await blobs.signedDownloadUrl('output/doc_1', {
        expiresAt,
        fileName: 'a.pdf',
        contentType: 'application/pdf',
      });
      upload = (await blobs.signedUploadUrl('uploads/upl_1', { expiresAt, maxBytes: 10 })).url;
    } finally {
      vi.useRealTimers();
    }
    for (const [url, method, headers] of [
      [download, 'GET', {}],
      [upload, 'PUT', { 'Content-Type': 'application/octet-stream', 'If-None-Match': '*' }],
    ] as const) {
      const check = (now: Date) =>
        verifyPresignedUrl({
          url,
          method,
          headers,
          secretAccessKey: server.secretAccessKey,
          now,
        });
      expect(check(new Date(expiresAt.getTime() - 1))).toBe('valid');
      expect(check(expiresAt)).toBe('valid');
      expect(check(new Date(expiresAt.getTime() + 1000))).toBe('expired');
    }
  });

  it('keeps a link alive at most the seven days SigV4 allows, and at least a second', async () => {
    const blobs = freshStore();
    const far = await blobs.signedDownloadUrl('output/doc_1', {
      expiresAt: new Date(Date.now() + 30 * 24 * HOUR_MS),
      fileName: 'a.pdf',
      contentType: 'application/pdf',
    });
    expect(new URL(far).searchParams.get('X-Amz-Expires')).toBe(String(7 * 24 * 3600));
    const past = await blobs.signedDownloadUrl('output/doc_1', {
      expiresAt: new Date(Date.now() - 60_000),
      fileName: 'a.pdf',
      contentType: 'application/pdf',
    });
    expect(new URL(past).searchParams.get('X-Amz-Expires')).toBe('1');
  });

  it('checks Content-MD5 of a write itself, whatever the server verifies', async () => {
    const blobs = freshStore();
    const body = 'bytes as sent';
    const good = createHash('md5').update(body).digest('base64');
    const stream = () => new Response(body).body!;
    expect(await blobs.put('k', stream(), { maxBytes: 100, contentMd5: good })).toEqual({
      sizeBytes: body.length,
    });
    await expect(
      blobs.put('other', stream(), { maxBytes: 100, contentMd5: good.replace(/^./, 'A') }),
    ).rejects.toThrow('Content-MD5');
    expect(await keysUnder(blobs.prefix)).toEqual(['k']);
  });
});

describe('createS3BlobStore() with a link client', () => {
  it('signs links for the address clients use, and reads and writes through its own', async () => {
    // The same server under another name: clients reach it as localhost, this process by IP.
    const port = new URL(server.endpoint).port;
    const linkClient = createS3ClientFromEnv({
      AWS_ENDPOINT_URL_S3: `http://localhost:${port}`,
      AWS_ACCESS_KEY_ID: server.accessKeyId,
      AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    });
    const blobs = createS3BlobStore({
      client,
      linkClient,
      bucket: server.bucket,
      prefix: `t-${randomUUID()}`,
    });
    await blobs.put('output/doc_1', new Response('cleaned').body!, { maxBytes: 100 });
    const download = await blobs.signedDownloadUrl('output/doc_1', {
      expiresAt: new Date(Date.now() + HOUR_MS),
      fileName: 'a.pdf',
      contentType: 'application/pdf',
    });
    const upload = await blobs.signedUploadUrl('uploads/upl_1', {
      expiresAt: new Date(Date.now() + HOUR_MS),
      maxBytes: 10,
    });
    expect(new URL(download).host).toBe(`localhost:${port}`);
    expect(new URL(upload.url).host).toBe(`localhost:${port}`);
    expect(await (await fetch(download)).text()).toBe('cleaned');
    linkClient.destroy();
  });
});

describe('createS3BlobStore() options', () => {
  it('refuses a bad bucket, prefix or part setting at construction', () => {
    expect(() => createS3BlobStore({ client, bucket: '' })).toThrow(TypeError);
    expect(() => createS3BlobStore({ client, bucket: 'b', prefix: '../up' })).toThrow(TypeError);
    expect(() => createS3BlobStore({ client, bucket: 'b', partSizeBytes: 1024 })).toThrow(
      TypeError,
    );
    expect(() => createS3BlobStore({ client, bucket: 'b', partConcurrency: 0 })).toThrow(TypeError);
    expect(createS3BlobStore({ client, bucket: 'b', prefix: 'prod/cdr/' }).prefix).toBe(
      'prod/cdr/',
    );
    expect(createS3BlobStore({ client, bucket: 'b', prefix: 'prod' }).prefix).toBe('prod/');
  });
});

describe('parseS3Url()', () => {
  it.each([
    ['s3://cdr-blobs', { bucket: 'cdr-blobs', prefix: '' }],
    ['s3://cdr-blobs/', { bucket: 'cdr-blobs', prefix: '' }],
    ['s3://cdr-blobs/prod', { bucket: 'cdr-blobs', prefix: 'prod/' }],
    ['s3://cdr.blobs/prod/eu/', { bucket: 'cdr.blobs', prefix: 'prod/eu/' }],
  ])('reads %s', (value, expected) => {
    expect(parseS3Url(value)).toEqual(expected);
  });

  it.each([
    'cdr-blobs',
    'https://cdr-blobs/prod',
    's3://',
    's3://Upper',
    's3://ab',
    's3://key:secret@cdr-blobs/prod',
    's3://cdr-blobs:9000/prod',
    's3://cdr-blobs/prod?x=1',
  ])('refuses %s', (value) => {
    expect(() => parseS3Url(value)).toThrow(TypeError);
  });
});

describe('createS3ClientFromEnv()', () => {
  it('addresses an S3-compatible endpoint path-style, defaulting the region', async () => {
    const configured = createS3ClientFromEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9000' });
    expect(configured.config.forcePathStyle).toBe(true);
    expect(await configured.config.region()).toBe('us-east-1');
    const endpoint = await configured.config.endpoint?.();
    expect(endpoint?.hostname).toBe('127.0.0.1');
    expect(endpoint?.port).toBe(9000);
    configured.destroy();

    const specific = createS3ClientFromEnv({
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9000',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:9100',
      AWS_REGION: 'eu-west-2',
    });
    expect((await specific.config.endpoint?.())?.port).toBe(9100);
    expect(await specific.config.region()).toBe('eu-west-2');
    specific.destroy();
  });

  it('leaves AWS itself to virtual-hosted addressing', async () => {
    const aws = createS3ClientFromEnv({ AWS_REGION: 'eu-west-2' });
    expect(aws.config.forcePathStyle).toBe(false);
    expect(await aws.config.region()).toBe('eu-west-2');
    aws.destroy();
  });
});

// s3rver answers NotImplemented to lifecycle configuration; moto implements it. Started in the
// block's own hooks, so a run that filters these tests out starts no server.
describe.skipIf(!hasMoto())('against moto', () => {
  let moto: Omit<TestS3Server, 'bucket'>;
  let motoClient: S3Client;
  const bucket = 'disarm-lifecycle';

  beforeAll(async () => {
    moto = await startMoto();
    motoClient = clientFor(moto);
    await motoClient.send(new CreateBucketCommand({ Bucket: bucket }));
  });

  afterAll(async () => {
    motoClient.destroy();
    await moto.close();
  });

  const rules = async () =>
    (await motoClient.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }))).Rules;

  it('adds its rule beside the bucket’s others, once, and rewrites it only when it changes', async () => {
    await motoClient.send(
      new PutBucketLifecycleConfigurationCommand({
        Bucket: bucket,
        LifecycleConfiguration: {
          Rules: [
            {
              ID: 'logs',
              Status: 'Enabled',
              Filter: { Prefix: 'logs/' },
              Expiration: { Days: 90 },
            },
          ],
        },
      }),
    );
    const blobs = createS3BlobStore({ client: motoClient, bucket, prefix: 'cdr' });
    expect(await blobs.applyLifecycleRule(2)).toBe('created');
    expect(await blobs.applyLifecycleRule(2)).toBe('unchanged');
    const after = await rules();
    expect(after?.map((rule) => rule.ID).sort()).toEqual(['disarm-retention:cdr/', 'logs']);
    expect(after?.find((rule) => rule.ID === 'disarm-retention:cdr/')).toMatchObject({
      Status: 'Enabled',
      Filter: { Prefix: 'cdr/' },
      Expiration: { Days: 2 },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
    });

    expect(await blobs.applyLifecycleRule(3)).toBe('updated');
    expect((await rules())?.find((rule) => rule.ID === 'disarm-retention:cdr/')).toMatchObject({
      Expiration: { Days: 3 },
    });
    expect(await rules()).toHaveLength(2);
  });

  it('aborts the multipart upload of a refused write: no parts are left to bill', async () => {
    // s3rver cannot list multipart uploads; moto can.
    const blobs = createS3BlobStore({
      client: motoClient,
      bucket,
      prefix: 'aborts',
      partSizeBytes: PART_BYTES,
    });
    const big = new Uint8Array(3 * PART_BYTES);
    const attempts = [
      blobs.put('too-big', new Response(big).body!, { maxBytes: 2 * PART_BYTES + 1 }),
      blobs.put('bad-md5', new Response(big).body!, {
        maxBytes: big.length,
        contentMd5: createHash('md5').update('other bytes').digest('base64'),
      }),
    ];
    for (const attempt of attempts) await expect(attempt).rejects.toThrow();
    const listed = await motoClient.send(
      new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: 'aborts/' }),
    );
    expect(listed.Uploads ?? []).toEqual([]);
    const objects = await motoClient.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: 'aborts/' }),
    );
    expect(objects.Contents ?? []).toEqual([]);
  });

  it('starts a configuration on a bucket that has none, and refuses nonsense', async () => {
    const fresh = 'disarm-lifecycle-empty';
    await motoClient.send(new CreateBucketCommand({ Bucket: fresh }));
    const blobs = createS3BlobStore({ client: motoClient, bucket: fresh });
    expect(await blobs.applyLifecycleRule(2)).toBe('created');
    await expect(blobs.applyLifecycleRule(0)).rejects.toThrow(TypeError);
    await expect(blobs.applyLifecycleRule(1.5)).rejects.toThrow(TypeError);
  });
});
