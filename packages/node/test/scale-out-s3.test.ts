/**
 * The scaled-out deployment end to end: two `disarm serve --role=api` processes and two
 * `disarm serve --role=worker` processes on loopback, sharing one PostgreSQL database and one
 * S3-compatible bucket, with the commands and environment of `docker-compose.yml`.
 */
import { readFile, rm } from 'node:fs/promises';

import { DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { startTemporaryCluster } from '@disarm/postgres/testing';
import type { TemporaryCluster } from '@disarm/postgres/testing';
import { retryBackoffMs } from '@disarm/protocol';
import { createS3ClientFromEnv } from '@disarm/s3';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startS3rver } from '../../s3/test/_servers.ts';
import type { TestS3Server } from '../../s3/test/_servers.ts';
import { LEASE_MS } from '../src/processing/create-dispatcher.ts';
import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { adminOn, apiCommand, nodeDataDirs, s3EnvOf, workerCommand } from './_scale-out.ts';
import { startTestServer, startTestWorker } from './_server.ts';
import type { TestServer, TestWorker } from './_server.ts';

const PREFIX = 'blobs';
const DAY_MS = 24 * 60 * 60 * 1000;
/** How long a document may take to finish on this small, shared machine. */
const FINISH_TIMEOUT_MS = 120_000;
/** Four processes to start and a dozen documents, one of them waiting for a lapsed lease. */
const TEST_TIMEOUT_MS = 240_000;
/** Side of the slow document: a noise PNG that takes the engine about a second to rebuild. */
const SLOW_IMAGE_SIDE_PX = 2_400;
const CREDIT_PENCE = 1_000;
const PRICE_PENCE = 10;
const RATE_LIMIT_PER_MINUTE = 100_000;
/** Between two status reads while waiting for a document. */
const POLL_INTERVAL_MS = 100;

let cluster: TemporaryCluster;
let bucket: TestS3Server;
let client: S3Client;
let dataDir: string;
const nodes: { stop(): Promise<unknown> }[] = [];

beforeAll(async () => {
  [cluster, bucket, dataDir] = await Promise.all([
    startTemporaryCluster(),
    startS3rver(),
    tempDir(),
  ]);
  client = createS3ClientFromEnv(s3Env());
});

afterAll(async () => {
  for (const node of nodes.splice(0).reverse()) await node.stop();
  client.destroy();
  await Promise.all([cluster.stop(), bucket.close()]);
  await rm(dataDir, { recursive: true, force: true });
});

/** The SDK's standard environment, as `docker-compose.yml` gives every disarm service. */
function s3Env(): Record<string, string> {
  return s3EnvOf(bucket);
}

/** Every object key under the deployment's prefix. */
async function objects(): Promise<string[]> {
  const page = await client.send(
    new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}/` }),
  );
  return (page.Contents ?? []).map((object) => object.Key ?? '').sort();
}

interface Envelope {
  readonly id: string;
  readonly status: string;
  readonly reason?: string;
  readonly downloadUrl?: string;
}

describe('two API nodes and two workers on one PostgreSQL and one S3 bucket', () => {
  it(
    'answers across nodes, survives a worker killed mid-document, bills once and leaves no blob',
    async () => {
      const database = await cluster.createDatabase('scale_out_s3');
      const blobs = `s3://${bucket.bucket}/${PREFIX}`;
      // The commands of docker-compose.yml; the harness adds only loopback ports, --test-mode and
      // one engine process per worker.
      // Each node has its own data folder but for `secrets/`, one volume in the compose file.
      const nodeDataDir = await nodeDataDirs(dataDir);
      const startApi = async (): Promise<TestServer> => {
        const api = await startTestServer({
          dataDir: await nodeDataDir(),
          args: apiCommand(database, blobs).slice(1),
          env: s3Env(),
        });
        nodes.push(api);
        return api;
      };
      const startWorker = async (): Promise<TestWorker> => {
        const worker = await startTestWorker({
          dataDir: await nodeDataDir(),
          args: workerCommand(database, blobs).slice(1),
          env: s3Env(),
        });
        nodes.push(worker);
        return worker;
      };
      const admin = (...args: string[]): Promise<Record<string, unknown>> =>
        adminOn(database, ...args);

      // One after the other: the first migrates, the second finds the schema current.
      const apiA = await startApi();
      const apiB = await startApi();
      const organisation = await admin(
        'org',
        'create',
        '--name=Acme',
        '--plan=payg',
        `--credit-pence=${CREDIT_PENCE}`,
        `--price-pence=${PRICE_PENCE}`,
        // The API nodes' manual clocks stand still, so the polling below shares one rate window.
        `--rate-limit=${RATE_LIMIT_PER_MINUTE}`,
      );
      const key = await admin('key', 'create', `--org=${String(organisation.id)}`, '--name=t');
      const headers = { 'X-Api-Key': String(key.key) };
      const submit = async (
        api: TestServer,
        name: string,
        bytes: Uint8Array<ArrayBuffer>,
        wait: boolean,
      ): Promise<{ status: number; envelope: Envelope }> => {
        const response = await fetch(
          `${api.apiUrl}/v1/documents?filename=${name}${wait ? '&wait=true' : ''}`,
          {
            method: 'POST',
            headers: { ...headers, 'Content-Type': 'application/octet-stream' },
            body: bytes,
          },
        );
        return { status: response.status, envelope: (await response.json()) as Envelope };
      };
      const read = async (api: TestServer, id: string): Promise<Envelope> => {
        const response = await fetch(`${api.apiUrl}/v1/documents/${id}`, { headers });
        expect(response.status).toBe(200);
        return (await response.json()) as Envelope;
      };
      const until = async (
        api: TestServer,
        id: string,
        done: (envelope: Envelope) => boolean,
      ): Promise<Envelope> => {
        const deadline = Date.now() + FINISH_TIMEOUT_MS;
        for (;;) {
          const envelope = await read(api, id);
          if (done(envelope)) return envelope;
          if (Date.now() > deadline) throw new Error(`document ${id} stayed ${envelope.status}`);
          await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        }
      };
      const terminal = (envelope: Envelope): boolean =>
        envelope.status !== 'pending' && envelope.status !== 'processing';
      const png = new Uint8Array(await pngWithMetadata());

      // Queued before any worker runs. One of them loses its intake from the bucket: a service
      // fault the worker must end `failed`, credited.
      const queued = await Promise.all([
        submit(apiA, 'queued-a.png', png, false),
        submit(apiB, 'queued-b.png', png, false),
        submit(apiB, 'lost.png', png, false),
      ]);
      expect(queued.map(({ status, envelope }) => [status, envelope.status])).toEqual(
        Array.from({ length: 3 }, () => [202, 'pending']),
      );
      const [, , { envelope: lostEnvelope }] = queued;
      const lost = lostEnvelope.id;
      const lostIntake = (await objects()).filter((key) => key.includes(lost));
      expect(lostIntake).toHaveLength(1);
      await client.send(new DeleteObjectCommand({ Bucket: bucket.bucket, Key: lostIntake[0] }));

      const workers = await Promise.all([startWorker(), startWorker()]);

      // Sync waits on both API nodes, each answered when a worker process finishes the document.
      const synced = await Promise.all(
        [apiA, apiB, apiA, apiB].map((api, index) => submit(api, `sync-${index}.png`, png, true)),
      );
      expect(synced.map(({ status, envelope }) => [status, envelope.status])).toEqual(
        Array.from({ length: 4 }, () => [200, 'completed']),
      );
      const [queuedA, queuedB, failed] = await Promise.all(
        queued.map(({ envelope }, index) =>
          until(index % 2 === 0 ? apiB : apiA, envelope.id, terminal),
        ),
      );
      expect(queuedA).toMatchObject({ status: 'completed' });
      expect(queuedB).toMatchObject({ status: 'completed' });
      expect(failed).toMatchObject({ status: 'failed', reason: 'internal_error' });

      // Two slow documents, one per worker (each runs one at a time); one worker dies holding its
      // lease, and the survivor's recovery takes the document over once the lease has lapsed.
      const slowPng = new Uint8Array(
        await sharp({
          create: {
            width: SLOW_IMAGE_SIDE_PX,
            height: SLOW_IMAGE_SIDE_PX,
            channels: 3,
            background: '#000',
            noise: { type: 'gaussian', mean: 128, sigma: 40 },
          },
        })
          .png()
          .toBuffer(),
      );
      const slow = await Promise.all([
        submit(apiA, 'slow-a.png', slowPng, false),
        submit(apiB, 'slow-b.png', slowPng, false),
      ]);
      await Promise.all(
        slow.map(({ envelope }) =>
          until(apiA, envelope.id, (read) => read.status === 'processing'),
        ),
      );
      const [doomed, survivor] = workers;
      await doomed.kill();
      // The survivor finishes its own; the dead worker's stays leased to it until the lease lapses.
      const deadline = Date.now() + FINISH_TIMEOUT_MS;
      let stranded: string[];
      do {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        stranded = await Promise.all(
          slow.map(async ({ envelope }) => (await read(apiB, envelope.id)).status),
        );
      } while (!stranded.some((status) => status !== 'processing') && Date.now() < deadline);
      expect(stranded.sort()).toEqual(['completed', 'processing']);
      // Past the lease: the survivor's recovery requeues the document; past its first retry's
      // back-off: the survivor leases it again.
      await survivor.advanceClock(2 * LEASE_MS);
      await survivor.advanceClock(retryBackoffMs(1));
      const recovered = await Promise.all(
        slow.map(({ envelope }) => until(apiB, envelope.id, terminal)),
      );
      expect(recovered.map((envelope) => envelope.status)).toEqual(['completed', 'completed']);

      // One set of books on both nodes: nine submissions charged once each, the failed one
      // credited back, whatever process finished (or first started) each document.
      for (const api of [apiA, apiB]) {
        const account = (await (await fetch(`${api.apiUrl}/v1/account`, { headers })).json()) as {
          creditBalancePence: number;
        };
        expect(account.creditBalancePence).toBe(CREDIT_PENCE - 8 * PRICE_PENCE);
      }

      // Every cleaned file comes straight from the bucket through its presigned link.
      const completed = [
        ...synced.map(({ envelope }) => envelope),
        queuedA!,
        queuedB!,
        ...recovered,
      ];
      for (const envelope of completed) {
        expect(envelope.downloadUrl?.startsWith(`${bucket.endpoint}/${bucket.bucket}/`)).toBe(true);
        const file = await fetch(envelope.downloadUrl ?? '');
        expect(file.status).toBe(200);
        const metadata = await sharp(new Uint8Array(await file.arrayBuffer())).metadata();
        expect(metadata.format).toBe('png');
        expect(metadata.exif).toBeUndefined();
      }
      expect(
        await Promise.all(
          recovered.map(
            async (envelope) => (await sharp(await download(envelope)).metadata()).width,
          ),
        ),
      ).toEqual([SLOW_IMAGE_SIDE_PX, SLOW_IMAGE_SIDE_PX]);
      expect(await objects()).toEqual(
        completed.map((envelope) => `${PREFIX}/output/${envelope.id}`).sort(),
      );

      // Retention, swept by an API node: nothing of any document is left in the bucket.
      await apiB.advanceClock(2 * DAY_MS);
      expect(await objects()).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('docker-compose.yml', () => {
  /** The `command:` list of a service (a block list of plain scalars, as the file writes it). */
  function command(compose: string, service: string): string[] {
    const lines = compose.split('\n');
    const start = lines.indexOf(`  ${service}:`);
    const at = lines.indexOf('    command:', start);
    const items: string[] = [];
    for (const line of lines.slice(at + 1)) {
      const item = /^ {6}- (.+)$/.exec(line);
      if (item === null) break;
      items.push(item[1] ?? '');
    }
    return items;
  }

  it('runs the commands and environment names of the multi-process test', async () => {
    const compose = await readFile(new URL('../../../docker-compose.yml', import.meta.url), 'utf8');
    const database = 'postgres://disarm:disarm@postgres:5432/disarm';
    const blobs = `s3://disarm/${PREFIX}`;
    expect(command(compose, 'api')).toEqual(apiCommand(database, blobs));
    expect(command(compose, 'worker')).toEqual(workerCommand(database, blobs));
    for (const name of [
      'AWS_ENDPOINT_URL_S3',
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_REGION',
    ]) {
      expect(compose).toContain(`\n    ${name}: `);
    }
  });
});

async function download(envelope: Envelope): Promise<Uint8Array> {
  return new Uint8Array(await (await fetch(envelope.downloadUrl ?? '')).arrayBuffer());
}
