/**
 * Crash consistency (issue 30, item 5; README "Crash safety"): `disarm serve --test-mode` is made
 * to kill itself with SIGKILL at each step a document passes (the failpoints of
 * `DISARM_FAILPOINT`, armed over the harness's IPC channel), then started again on the same data.
 * Once on the embedded default (one process: SQLite and the data folder), once scaled out (an API
 * node and a worker node as separate `disarm serve --role api|worker` processes on PostgreSQL and
 * an S3 bucket, each killed on its own). After every crash a retry with the same Idempotency-Key
 * is answered at once (never a 409); at the end every acknowledged document is terminal, ended
 * once, billed once (the failed one credited), every key still answers for its document, and once
 * the clock is past retention and the orphan grace no byte is left in the folder or bucket.
 *
 * An API node's clock is moved an hour ahead before it is killed, so the claims it leaves hold
 * leases far past the restarted node's clock: only the check that their process is gone frees
 * them, never a lease that lapsed while the test waited.
 */
import { readdir, rm } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';

import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { startTemporaryCluster } from '@disarm/postgres/testing';
import type { TemporaryCluster } from '@disarm/postgres/testing';
import { retryBackoffMs } from '@disarm/protocol';
import { createS3ClientFromEnv } from '@disarm/s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startS3rver } from '../../s3/test/_servers.ts';
import type { TestS3Server } from '../../s3/test/_servers.ts';
import { DEFAULT_GRACE_SECONDS, LEASE_MS, MAX_ATTEMPTS } from '../src/index.ts';
import type { FailpointStep } from '../src/index.ts';
import {
  multipartBody,
  read,
  creditOf,
  stalledBody,
  submitMultipart,
  submitRaw,
  until,
} from './_crash.ts';
import type { Answer } from './_crash.ts';
import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { adminOn, apiCommand, nodeDataDirs, s3EnvOf, workerCommand } from './_scale-out.ts';
import { runDisarm, startTestServer, startTestWorker } from './_server.ts';
import type { ProcessEnd, TestServer } from './_server.ts';

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;
const GRACE_MS = DEFAULT_GRACE_SECONDS * 1000;
const CREDIT_PENCE = 1_000;
const PRICE_PENCE = 10;
/** The nodes' manual clocks stand still: every request of a test shares one rate window. */
const RATE_LIMIT_PER_MINUTE = 100_000;
/** Key prefix of the scaled-out deployment's bucket. */
const PREFIX = 'crash';
/** A dozen process starts and a dozen documents per deployment, on a small, shared machine. */
const TEST_TIMEOUT_MS = 600_000;
/** Only the built-in renderer: the documents are PNGs, and no browser needs to start. */
const RENDERERS = '--renderers=builtin';

/** What a test does to a node: both the API and the worker role answer it. */
interface Node {
  advanceClock(milliseconds: number): Promise<Date>;
  armFailpoint(step: FailpointStep): Promise<void>;
  exited(): Promise<ProcessEnd>;
  stderr(): string;
  stop(): Promise<number | null>;
}

/** One deployment, its nodes started and restarted on the same data. */
interface Deployment {
  /** The API node; on the embedded default, the one process, which also processes. */
  readonly api: TestServer;
  /** The worker node; on the embedded default, the same process as {@link api}. */
  readonly worker: Node;
  /** Stops the API node if it still runs, and starts it again on the same data. */
  restartApi(): Promise<void>;
  /** The same for the worker node. */
  restartWorker(): Promise<void>;
  /** An organisation on pay-as-you-go and its API key. */
  createOrganisation(): Promise<string>;
  /** Every file or object the blob store holds, temporary files and unfinished writes included. */
  blobs(): Promise<string[]>;
  close(): Promise<void>;
}

/** Every file under `folder`, as `/`-separated paths, sorted. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(folder, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

/** The embedded default: one `disarm serve` (SQLite, the data folder), killed and restarted. */
async function embedded(): Promise<Deployment> {
  const dataDir = await tempDir();
  const start = (): Promise<TestServer> => startTestServer({ dataDir, args: [RENDERERS] });
  let server = await start();
  const restart = async (): Promise<void> => {
    await server.stop();
    server = await start();
  };
  return {
    get api() {
      return server;
    },
    get worker() {
      return server;
    },
    restartApi: restart,
    restartWorker: restart,
    async createOrganisation() {
      const { apiKey } = await server.createOrganisation('payg', {
        creditPence: CREDIT_PENCE,
        pricePence: PRICE_PENCE,
        rateLimit: RATE_LIMIT_PER_MINUTE,
      });
      return apiKey;
    },
    blobs: () => filesUnder(join(dataDir, 'blobs')),
    async close() {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** An API node and a worker node on PostgreSQL and S3, each killed and restarted on its own. */
async function scaledOut(
  cluster: TemporaryCluster,
  bucket: TestS3Server,
  client: S3Client,
): Promise<Deployment> {
  const database = await cluster.createDatabase('crash_consistency');
  const blobsUrl = `s3://${bucket.bucket}/${PREFIX}`;
  const env = s3EnvOf(bucket);
  const root = await tempDir();
  const nodeDataDir = await nodeDataDirs(root);
  const [apiDir, workerDir] = [await nodeDataDir(), await nodeDataDir()];
  const startApi = (): Promise<TestServer> =>
    startTestServer({
      dataDir: apiDir,
      args: [...apiCommand(database, blobsUrl).slice(1), RENDERERS],
      env,
    });
  const startWorker = () =>
    startTestWorker({
      dataDir: workerDir,
      args: [...workerCommand(database, blobsUrl).slice(1), RENDERERS],
      env,
    });
  let api = await startApi();
  let worker = await startWorker();
  return {
    get api() {
      return api;
    },
    get worker() {
      return worker;
    },
    async restartApi() {
      await api.stop();
      api = await startApi();
    },
    async restartWorker() {
      await worker.stop();
      worker = await startWorker();
    },
    async createOrganisation() {
      const organisation = await adminOn(
        database,
        'org',
        'create',
        '--name=Crash',
        '--plan=payg',
        `--credit-pence=${CREDIT_PENCE}`,
        `--price-pence=${PRICE_PENCE}`,
        `--rate-limit=${RATE_LIMIT_PER_MINUTE}`,
      );
      const key = await adminOn(
        database,
        'key',
        'create',
        `--org=${String(organisation.id)}`,
        '--name=t',
      );
      return String(key.key);
    },
    async blobs() {
      // Far fewer objects than a page: no continuation (which s3rver cannot make here).
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket.bucket, Prefix: `${PREFIX}/` }),
      );
      return (page.Contents ?? []).map((object) => (object.Key ?? '').slice(PREFIX.length + 1));
    },
    async close() {
      await Promise.all([api.stop(), worker.stop()]);
      await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * Arms `node` at `step`, starts `act` (whose request dies with the node, so it is not awaited)
 * and resolves once the node has killed itself there.
 */
async function crash(node: Node, step: FailpointStep, act: () => Promise<unknown>): Promise<void> {
  await node.armFailpoint(step);
  const ended = node.exited();
  void act().catch(() => undefined);
  const end = await ended;
  expect(end.signal, node.stderr()).toBe('SIGKILL');
  expect(node.stderr()).toContain(`failpoint ${step} reached`);
}

/** Every step, on `deployment`, and what must hold after each and at the end. */
async function exercise(deployment: Deployment): Promise<void> {
  const apiKey = await deployment.createOrganisation();
  const png = new Uint8Array(await pngWithMetadata());
  const api = (): TestServer => deployment.api;
  /** Each Idempotency-Key used, and the request it names (sent again as a retry). */
  const requests = new Map<string, () => Promise<Answer>>();
  /** The resource each key answered for the first time. */
  const answeredFor = new Map<string, string>();
  /** Every acknowledged document and how it must end. */
  const acknowledged = new Map<string, 'completed' | 'failed'>();
  /** When each document was first seen terminal: an ending happens once. */
  const endedAt = new Map<string, unknown>();

  const send = (key: string): Promise<Answer> => {
    const request = requests.get(key);
    if (request === undefined) throw new Error(`no request under ${key}`);
    return request();
  };
  /** The key's request again: answered at once (never a 409), for the same resource each time. */
  const retry = async (key: string): Promise<Answer> => {
    const answer = await send(key);
    expect([200, 201, 202], `${key}: ${JSON.stringify(answer.body)}`).toContain(answer.status);
    const id = String(answer.body.id ?? answer.body.uploadId);
    const first = answeredFor.get(key);
    if (first === undefined) answeredFor.set(key, id);
    else expect(id, key).toBe(first);
    return answer;
  };
  const submission = (key: string, name: string, query = ''): void => {
    requests.set(key, () =>
      submitRaw(api().apiUrl, apiKey, { fileName: name, file: png, key, query }),
    );
  };
  const acknowledge = async (key: string, end: 'completed' | 'failed'): Promise<string> => {
    const id = String((await retry(key)).body.id);
    acknowledged.set(id, end);
    return id;
  };
  const envelope = async (id: string): Promise<Record<string, unknown>> => {
    const answer = await read(api().apiUrl, apiKey, `/v1/documents/${id}`);
    expect(answer.status).toBe(200);
    return answer.body;
  };
  const terminal = async (id: string): Promise<Record<string, unknown>> => {
    let last: Record<string, unknown> = {};
    await until(`document ${id} is terminal`, async () => {
      last = await envelope(id);
      return last.status !== 'pending' && last.status !== 'processing';
    });
    if (!endedAt.has(id)) endedAt.set(id, last.completedAt);
    return last;
  };
  /**
   * How far each node's clock was moved (a node's manual clock starts at the real time, so a
   * restarted node is behind the clock its dead predecessor had reached).
   */
  const ahead = new Map<Node, number>();
  const advance = async (node: Node, milliseconds: number): Promise<void> => {
    ahead.set(node, (ahead.get(node) ?? 0) + milliseconds);
    await node.advanceClock(milliseconds);
  };
  /** How far the worker killed last had moved its clock: its leases run that much later. */
  let deadWorkerAhead = 0;
  const restartWorker = async (): Promise<void> => {
    deadWorkerAhead = ahead.get(deployment.worker) ?? 0;
    await deployment.restartWorker();
  };
  /** Past the lease of the worker killed last: lease recovery requeues (or dead-letters) its document. */
  const lapseDeadLease = (): Promise<void> =>
    advance(deployment.worker, deadWorkerAhead + LEASE_MS);
  /** Past the dead worker's lease, then past the retry's back-off: the document is leased again. */
  const recoverOnWorker = async (attempts: number): Promise<void> => {
    await lapseDeadLease();
    await advance(deployment.worker, retryBackoffMs(attempts));
  };

  // 1. The API dies with half of a multipart body in the intake.
  await advance(api(), HOUR_MS);
  const multipart = multipartBody('k1.png', png);
  requests.set('k1', () => submitMultipart(api().apiUrl, apiKey, multipart, 'k1'));
  const stalled = stalledBody(multipart.bytes, Math.floor(multipart.bytes.byteLength / 2));
  let cutOff: Promise<unknown> = Promise.resolve();
  await crash(api(), 'intake-partial', () => {
    cutOff = fetch(`${api().apiUrl}/v1/documents`, {
      method: 'POST',
      headers: {
        'X-Api-Key': apiKey,
        'Content-Type': multipart.contentType,
        'Idempotency-Key': 'k1',
      },
      body: stalled.stream,
      duplex: 'half',
    } as RequestInit).catch(() => undefined);
    return Promise.resolve();
  });
  stalled.cut();
  await cutOff;
  await deployment.restartApi();
  await terminal(await acknowledge('k1', 'completed'));

  // 2. The API dies with the intake stored and no document row: the bytes are no one's.
  await advance(api(), HOUR_MS);
  const before = new Set(await deployment.blobs());
  submission('k2', 'k2.png');
  await crash(api(), 'intake-stored', () => send('k2'));
  const orphans = (await deployment.blobs()).filter((key) => !before.has(key));
  expect(orphans).toHaveLength(1);
  expect(orphans[0]).toMatch(/^intake\/doc_/);
  await deployment.restartApi();
  const k2 = await acknowledge('k2', 'completed');
  expect(orphans[0]).not.toContain(k2);
  await terminal(k2);

  // 3. The API dies after the document was accepted and charged, before it answered: the retry
  // answers for that document, and then replays that answer.
  await advance(api(), HOUR_MS);
  submission('k3', 'k3.png');
  await crash(api(), 'document-accepted', () => send('k3'));
  await deployment.restartApi();
  // Another request under the key is refused, and leaves the key to the first request's retry.
  const other = await submitRaw(api().apiUrl, apiKey, {
    fileName: 'other.png',
    file: png,
    key: 'k3',
  });
  expect(other.status).toBe(422);
  expect(other.body.code).toBe('IdempotencyKeyReused');
  const k3 = await acknowledge('k3', 'completed');
  const replayed = await retry('k3');
  expect(replayed.headers.get('Idempotency-Replayed')).toBe('true');
  expect(replayed.body.id).toBe(k3);
  await terminal(k3);

  // 4. The API dies after creating a staged upload, before it answered: the retry answers for
  // that upload, which is then filled and submitted.
  await advance(api(), HOUR_MS);
  requests.set('k4', async () => {
    const response = await fetch(`${api().apiUrl}/v1/uploads`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json', 'Idempotency-Key': 'k4' },
      body: JSON.stringify({ fileName: 'k4.png' }),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Record<string, unknown>,
    };
  });
  await crash(api(), 'upload-created', () => send('k4'));
  await deployment.restartApi();
  const upload = (await retry('k4')).body as {
    uploadId: string;
    uploadUrl: string;
    requiredHeaders: Record<string, string>;
  };
  expect((await retry('k4')).headers.get('Idempotency-Replayed')).toBe('true');
  const put = await fetch(upload.uploadUrl, {
    method: 'PUT',
    headers: upload.requiredHeaders,
    body: png,
  });
  // The storage origin answers 201 Created, S3 200.
  expect([200, 201]).toContain(put.status);
  requests.set('k4-submit', async () => {
    const response = await fetch(`${api().apiUrl}/v1/documents`, {
      method: 'POST',
      headers: {
        'X-Api-Key': apiKey,
        'Content-Type': 'application/json',
        'Idempotency-Key': 'k4-submit',
      },
      body: JSON.stringify({ uploadId: upload.uploadId }),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: (await response.json()) as Record<string, unknown>,
    };
  });
  await terminal(await acknowledge('k4-submit', 'completed'));

  // 5. A document whose worker dies holding its lease, every attempt: the dead-letter end,
  // failed and credited.
  submission('k5', 'k5.png');
  await crash(deployment.worker, 'worker-leased', () => send('k5'));
  let k5 = '';
  for (let attempt = 2; attempt <= MAX_ATTEMPTS; attempt += 1) {
    await restartWorker();
    if (attempt === 2) k5 = await acknowledge('k5', 'failed');
    await crash(deployment.worker, 'worker-leased', () => recoverOnWorker(attempt - 1));
  }
  await restartWorker();
  await lapseDeadLease();
  expect(await terminal(k5)).toMatchObject({ status: 'failed', reason: 'internal_error' });

  // 6. The worker dies with the cleaned file stored and the document not ended.
  submission('k6', 'k6.png');
  await crash(deployment.worker, 'output-stored', () => send('k6'));
  await restartWorker();
  const k6 = await acknowledge('k6', 'completed');
  await recoverOnWorker(1);
  expect(await terminal(k6)).toMatchObject({ status: 'completed' });

  // 7. The worker dies after ending the document, before deleting its intake.
  submission('k7', 'k7.png');
  await crash(deployment.worker, 'document-finished', () => send('k7'));
  await restartWorker();
  const k7 = await acknowledge('k7', 'completed');
  expect(await terminal(k7)).toMatchObject({ status: 'completed' });
  // The intake of an ended document goes with the first sweep of the restarted node.
  await until('the ended document’s intake is deleted', async () =>
    (await deployment.blobs()).every((key) => key !== `intake/${k7}`),
  );

  // 8. The sweeper dies between deleting a delete-after-download file and recording it. The API
  // node starts afresh first: its clock is then the latest, so it alone sweeps the file.
  await deployment.restartApi();
  submission('k8', 'k8.png', '&deleteAfterDownload=true&wait=true');
  const k8 = await acknowledge('k8', 'completed');
  expect(await terminal(k8)).toMatchObject({ status: 'completed' });
  const download = await fetch(`${api().apiUrl}/v1/documents/${k8}/download`, {
    headers: { 'X-Api-Key': apiKey },
    redirect: 'manual',
  });
  expect(download.status).toBe(302);
  await crash(api(), 'sweep-deleted', () => advance(api(), GRACE_MS + 1_000));
  expect(await deployment.blobs()).not.toContain(`output/${k8}`);
  await deployment.restartApi();
  expect((await envelope(k8)).deletedAt).toBeUndefined();
  await advance(api(), GRACE_MS + 1_000);
  expect((await envelope(k8)).deletedAt).toBeDefined();
  expect((await read(api().apiUrl, apiKey, `/v1/documents/${k8}/download`)).body.code).toBe(
    'DocumentDeleted',
  );

  // Every acknowledged document ended once, as it had to; billed once, the failed one credited.
  for (const [id, end] of acknowledged) {
    const ended = await terminal(id);
    expect(ended.status, id).toBe(end);
    expect(ended.completedAt, id).toBe(endedAt.get(id));
  }
  const failed = [...acknowledged.values()].filter((end) => end === 'failed').length;
  expect(await creditOf(api().apiUrl, apiKey)).toBe(
    CREDIT_PENCE - PRICE_PENCE * acknowledged.size + PRICE_PENCE * failed,
  );
  // Every key still answers for what it first answered for.
  for (const key of requests.keys()) await retry(key);

  // Past retention and the orphan grace, nothing of any document is left.
  await advance(api(), 3 * DAY_MS);
  expect(await deployment.blobs()).toEqual([]);
}

let cluster: TemporaryCluster;
let bucket: TestS3Server;
let client: S3Client;

beforeAll(async () => {
  [cluster, bucket] = await Promise.all([startTemporaryCluster(), startS3rver()]);
  client = createS3ClientFromEnv(s3EnvOf(bucket));
});

afterAll(async () => {
  client.destroy();
  await Promise.all([cluster.stop(), bucket.close()]);
});

describe('a crash at every step a document passes', () => {
  it(
    'on the embedded default (SQLite and the data folder)',
    async () => {
      const deployment = await embedded();
      try {
        await exercise(deployment);
      } finally {
        await deployment.close();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'on PostgreSQL and S3, the API node and the worker node killed separately',
    async () => {
      const deployment = await scaledOut(cluster, bucket, client);
      try {
        await exercise(deployment);
      } finally {
        await deployment.close();
      }
    },
    TEST_TIMEOUT_MS,
  );
});

describe('DISARM_FAILPOINT', () => {
  it('is refused outside test mode, and for a step that does not exist', async () => {
    const dataDir = await tempDir();
    try {
      const args = ['serve', '--port=0', '--storage-port=0', `--data-dir=${dataDir}`, '--no-demo'];
      const refused = await runDisarm(args, { ...process.env, DISARM_FAILPOINT: 'intake-stored' });
      expect(refused.code).toBe(64);
      expect(refused.stderr).toContain('DISARM_FAILPOINT is only honoured with --test-mode');
      const unknown = await runDisarm([...args, '--test-mode'], {
        ...process.env,
        DISARM_FAILPOINT: 'somewhere',
      });
      expect(unknown.code).toBe(64);
      expect(unknown.stderr).toContain('DISARM_FAILPOINT must be one of intake-partial,');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('armed from the environment, kills a test-mode server at its step', async () => {
    const server = await startTestServer({
      args: ['--role=api'],
      env: { DISARM_FAILPOINT: 'intake-stored' },
    });
    try {
      const { apiKey } = await server.createOrganisation('payg', { creditPence: CREDIT_PENCE });
      const ended = server.exited();
      const answer = await submitRaw(server.apiUrl, apiKey, {
        fileName: 'a.png',
        file: new Uint8Array(await pngWithMetadata()),
      }).catch((error: unknown) => error);
      expect(answer).toBeInstanceOf(Error);
      expect((await ended).signal).toBe('SIGKILL');
      expect(server.stderr()).toContain('failpoint intake-stored reached');
    } finally {
      await server.stop();
    }
  });
});
