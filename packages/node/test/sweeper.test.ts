import { join } from 'node:path';

import { createLinkSigner, cryptoRandom, newId, ORPHAN_BLOB_GRACE_MS } from '@disarm/protocol';
import type { BlobStore, Logger, StateStore, SweepItem, UploadRecord } from '@disarm/protocol';
import { createS3BlobStore, createS3ClientFromEnv } from '@disarm/s3';
import { createSqliteStore } from '@disarm/sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { startS3rver } from '../../s3/test/_servers.ts';
import type { TestS3Server } from '../../s3/test/_servers.ts';
import {
  createLocalBlobStore,
  createManualClock,
  createSweeper,
  SWEEP_BATCH_SIZE,
} from '../src/index.ts';
import type { LocalBlobStore, ManualClock } from '../src/index.ts';
import { tempDir } from './_fixtures.ts';

const HOUR_MS = 60 * 60 * 1000;
const GRACE_MS = 300_000;

const stores: StateStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

interface Stack {
  readonly store: StateStore;
  readonly blobs: LocalBlobStore;
  readonly clock: ManualClock;
}

async function createStack(): Promise<Stack> {
  const dir = await tempDir();
  const store = createSqliteStore({ path: join(dir, 'state.sqlite') });
  stores.push(store);
  return {
    store,
    blobs: createLocalBlobStore({
      directory: join(dir, 'blobs'),
      signer: createLinkSigner(new Uint8Array(32), 'http://localhost:8081'),
    }),
    clock: createManualClock(new Date('2030-05-01T12:00:00Z')),
  };
}

function bytes(text: string): ReadableStream<Uint8Array> {
  return new Response(text).body!;
}

/** A document processed to `completed` with its output stored (the intake left in place). */
async function completedDocument(
  { store, blobs, clock }: Stack,
  organisationId: string,
  deleteAfterDownload = false,
): Promise<string> {
  const id = newId('doc', cryptoRandom);
  await blobs.put(`intake/${id}`, bytes('submitted'), { maxBytes: 100 });
  const accepted = await store.acceptDocument(
    {
      id,
      organisationId,
      lane: 'multipart',
      fileName: 'a.png',
      sizeBytes: 9,
      intakeKey: `intake/${id}`,
      deleteAfterDownload,
      statusStyle202: false,
    },
    clock.now(),
  );
  expect(accepted.kind).toBe('accepted');
  expect((await store.leaseDocument('proc_test', clock.now(), 60_000))?.id).toBe(id);
  await blobs.put(`output/${id}`, bytes('cleaned'), { maxBytes: 100 });
  await store.finishDocument(
    id,
    'proc_test',
    {
      status: 'completed',
      blobKey: `output/${id}`,
      fileName: 'a.png',
      format: 'png',
      mediaType: 'image/png',
      converted: false,
      sizeBytes: 7,
      findings: [],
    },
    clock.now(),
  );
  return id;
}

/** An upload created at `now`, nothing PUT yet (link 1 hour, window 24 hours). */
function uploadRecord(
  organisationId: string,
  id: string,
  blobKey: string,
  now: Date,
): UploadRecord {
  return {
    id,
    organisationId,
    fileName: 'big.pdf',
    blobKey,
    createdAt: now,
    putExpiresAt: new Date(now.getTime() + HOUR_MS),
    expiresAt: new Date(now.getTime() + 24 * HOUR_MS),
    maxSizeBytes: 1000,
    uploadedAt: null,
    sizeBytes: null,
    submittedAt: null,
    documentId: null,
  };
}

function recordingLogger(): Logger & {
  lines: { level: string; object: Record<string, unknown> }[];
} {
  const lines: { level: string; object: Record<string, unknown> }[] = [];
  return {
    lines,
    info: (object) => lines.push({ level: 'info', object }),
    warn: (object) => lines.push({ level: 'warn', object }),
    error: (object) => lines.push({ level: 'error', object }),
  };
}

describe('createSweeper()', () => {
  it('removes intake bytes, expired outputs and downloaded outputs, and records each', async () => {
    const stack = await createStack();
    const { store, blobs, clock } = stack;
    const org = await store.createOrganisation(
      { id: newId('org', cryptoRandom), name: 'Org', plan: 'starter' },
      clock.now(),
    );
    const kept = await completedDocument(stack, org.id);
    const downloaded = await completedDocument(stack, org.id, true);
    const sweeper = createSweeper({ store, blobs, clock, graceMs: GRACE_MS });

    // Processing is over: the intake bytes go at once, the outputs stay.
    expect(await sweeper.sweep()).toEqual({
      swept: 2,
      failed: 0,
      purgedIdempotencyKeys: 0,
      orphans: 0,
    });
    expect(await blobs.stat(`intake/${kept}`)).toBeUndefined();
    expect((await store.getDocument(org.id, kept))?.intakeKey).toBeNull();
    expect(await blobs.stat(`output/${kept}`)).toBeDefined();

    // Delete-after-download: the grace runs from the first download call.
    await store.recordDownload(org.id, downloaded, clock.now());
    clock.advance(GRACE_MS - 1);
    expect((await sweeper.sweep()).swept).toBe(0);
    clock.advance(1);
    expect((await sweeper.sweep()).swept).toBe(1);
    expect(await blobs.stat(`output/${downloaded}`)).toBeUndefined();
    expect((await store.getDocument(org.id, downloaded))?.deletedAt).toEqual(clock.now());

    // Everything else: 24 hours after completion.
    clock.advance(24 * HOUR_MS);
    expect((await sweeper.sweep()).swept).toBe(1);
    expect(await blobs.stat(`output/${kept}`)).toBeUndefined();
    expect(await store.getDocument(org.id, kept)).toMatchObject({
      status: 'completed',
      outputRemovedAt: clock.now(),
    });
    expect((await sweeper.sweep()).swept).toBe(0);
  });

  it('removes uploads never submitted once their window is over', async () => {
    const { store, blobs, clock } = await createStack();
    const org = await store.createOrganisation(
      { id: newId('org', cryptoRandom), name: 'Org', plan: 'starter' },
      clock.now(),
    );
    const id = newId('upl', cryptoRandom);
    const blobKey = `uploads/${org.id}/${id}`;
    const now = clock.now();
    await store.createUpload(uploadRecord(org.id, id, blobKey, now));
    await blobs.put(blobKey, bytes('large file'), { maxBytes: 1000 });
    await store.markUploaded(id, 10, now);
    const sweeper = createSweeper({ store, blobs, clock, graceMs: GRACE_MS });
    expect((await sweeper.sweep()).swept).toBe(0);
    clock.advance(24 * HOUR_MS);
    expect((await sweeper.sweep()).swept).toBe(1);
    expect(await blobs.stat(blobKey)).toBeUndefined();
  });

  it('sweeps at start and on its interval, and stops', async () => {
    const stack = await createStack();
    const org = await stack.store.createOrganisation(
      { id: newId('org', cryptoRandom), name: 'Org', plan: 'starter' },
      stack.clock.now(),
    );
    const id = await completedDocument(stack, org.id);
    const sweeper = createSweeper({ ...stack, graceMs: GRACE_MS, intervalMs: 20 });
    sweeper.start();
    sweeper.start();
    while ((await stack.store.getDocument(org.id, id))?.intakeKey !== null) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await sweeper.stop();
    expect(await stack.blobs.stat(`intake/${id}`)).toBeUndefined();
  });

  it('runs a sweep asked for during another right after it', async () => {
    const { blobs, clock } = await createStack();
    let calls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const store = fakeStore({
      listSweepable: async () => {
        calls += 1;
        if (calls === 1) await gate;
        return [];
      },
    });
    const sweeper = createSweeper({ store, blobs, clock, graceMs: 0 });
    const first = sweeper.sweep();
    const second = sweeper.sweep();
    const third = sweeper.sweep();
    expect(second).toBe(third);
    release();
    await Promise.all([first, second]);
    expect(calls).toBe(2);
  });

  it('works through a backlog in batches, and leaves failing blobs for the next sweep', async () => {
    const { clock } = await createStack();
    const pending: SweepItem[] = Array.from({ length: SWEEP_BATCH_SIZE + 20 }, (_, index) => ({
      kind: 'expired-output',
      id: `doc_${index}`,
      blobKey: `output/doc_${index}`,
    }));
    const marked: string[] = [];
    const store = fakeStore({
      listSweepable: (_at, _grace, limit) =>
        Promise.resolve(pending.filter((item) => !marked.includes(item.id)).slice(0, limit)),
      markSwept: (item) => {
        marked.push(item.id);
        return Promise.resolve();
      },
      purgeIdempotencyKeys: () => Promise.resolve(3),
    });
    const deleted: string[] = [];
    const blobs = fakeBlobs({
      delete: (key) => {
        if (key === 'output/doc_7') return Promise.reject(new Error('EACCES'));
        deleted.push(key);
        return Promise.resolve();
      },
    });
    const logger = recordingLogger();
    const sweeper = createSweeper({ store, blobs, clock, graceMs: 0, logger });
    expect(await sweeper.sweep()).toEqual({
      swept: SWEEP_BATCH_SIZE + 19,
      failed: 2,
      purgedIdempotencyKeys: 3,
      orphans: 0,
    });
    expect(marked).not.toContain('doc_7');
    expect(logger.lines.filter((line) => line.level === 'error')).toHaveLength(2);
  });

  it('never throws: store failures are logged', async () => {
    const { blobs, clock } = await createStack();
    const store = fakeStore({
      listSweepable: () => Promise.reject(new Error('disk I/O error')),
      purgeIdempotencyKeys: () => Promise.reject(new Error('disk I/O error')),
    });
    const logger = recordingLogger();
    const sweeper = createSweeper({ store, blobs, clock, graceMs: 0, logger });
    expect(await sweeper.sweep()).toEqual({
      swept: 0,
      failed: 0,
      purgedIdempotencyKeys: 0,
      orphans: 0,
    });
    expect(logger.lines.map((line) => line.level)).toEqual(['error', 'error']);
    expect(() => createSweeper({ store, blobs, clock, graceMs: -1 })).toThrow(TypeError);
    expect(() => createSweeper({ store, blobs, clock, graceMs: 0, intervalMs: 0 })).toThrow(
      TypeError,
    );
  });
});

describe('createSweeper(): blobs no row owns', () => {
  let s3: TestS3Server;
  beforeAll(async () => {
    s3 = await startS3rver();
  });
  afterAll(async () => {
    await s3.close();
  });

  /** The two blob stores the service runs on: the data folder and an S3 bucket. */
  const blobStores: [string, (dir: string) => BlobStore][] = [
    [
      'the local folder',
      (dir) =>
        createLocalBlobStore({
          directory: join(dir, 'blobs'),
          signer: createLinkSigner(new Uint8Array(32), 'http://localhost:8081'),
        }),
    ],
    [
      'an S3 bucket',
      (dir) =>
        createS3BlobStore({
          client: createS3ClientFromEnv({
            AWS_ENDPOINT_URL_S3: s3.endpoint,
            AWS_ACCESS_KEY_ID: s3.accessKeyId,
            AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
          }),
          bucket: s3.bucket,
          // A prefix per test: every test sees an empty store.
          prefix: dir.split('/').at(-1) ?? 'sweeper',
        }),
    ],
  ];

  it.each(blobStores)(
    'deletes, on %s, what a crash left that no document or upload owns, once older than the grace',
    async (_name, openBlobs) => {
      const dir = await tempDir();
      const store = createSqliteStore({ path: join(dir, 'state.sqlite') });
      stores.push(store);
      const blobs = openBlobs(dir);
      // Close to the real time: the blobs' own times are real.
      const clock = createManualClock(new Date());
      const stack = { store, blobs, clock } as unknown as Stack;
      const org = await store.createOrganisation(
        { id: newId('org', cryptoRandom), name: 'Org', plan: 'starter' },
        clock.now(),
      );
      // Owned: a cleaned file, a document in flight (its intake, and the output its worker
      // writes), a staged upload waiting for its submission.
      const completed = await completedDocument(stack, org.id);
      const running = newId('doc', cryptoRandom);
      await blobs.put(`intake/${running}`, bytes('submitted'), { maxBytes: 100 });
      await store.acceptDocument(
        {
          id: running,
          organisationId: org.id,
          lane: 'raw',
          fileName: 'a.png',
          sizeBytes: 9,
          intakeKey: `intake/${running}`,
          deleteAfterDownload: false,
          statusStyle202: false,
        },
        clock.now(),
      );
      expect((await store.leaseDocument('proc_test', clock.now(), 60_000))?.id).toBe(running);
      await blobs.put(`output/${running}`, bytes('half'), { maxBytes: 100 });
      const waiting = newId('upl', cryptoRandom);
      await store.createUpload(uploadRecord(org.id, waiting, `uploads/${waiting}`, clock.now()));
      await blobs.put(`uploads/${waiting}`, bytes('large'), { maxBytes: 100 });
      // Orphans: an intake whose row never committed (killed in between), an output of an
      // attempt that died before recording it, and bytes of an upload no row knows.
      const orphans = [
        `intake/${newId('doc', cryptoRandom)}`,
        `output/${newId('doc', cryptoRandom)}`,
        `uploads/${newId('upl', cryptoRandom)}`,
      ];
      for (const key of orphans) await blobs.put(key, bytes('left behind'), { maxBytes: 100 });
      const owned = [
        `intake/${running}`,
        `output/${completed}`,
        `output/${running}`,
        `uploads/${waiting}`,
      ].sort();

      const logger = recordingLogger();
      const sweeper = createSweeper({ store, blobs, clock, graceMs: GRACE_MS, logger });
      // Younger than the grace: a live request may still be about to commit its row.
      await sweeper.sweep();
      expect(await keysOf(blobs)).toEqual([...owned, ...orphans].sort());

      clock.advance(ORPHAN_BLOB_GRACE_MS + 1_000);
      const report = await sweeper.sweep();
      expect(await keysOf(blobs)).toEqual(owned);
      expect(report.orphans).toBe(3);
      expect(
        logger.lines
          .filter((line) => line.level === 'warn')
          .map((line) => line.object.key)
          .sort(),
      ).toEqual([...orphans].sort());
      expect((await sweeper.sweep()).orphans).toBe(0);
    },
  );
});

/** Every key under the service's prefixes, sorted. */
async function keysOf(blobs: BlobStore): Promise<string[]> {
  const keys: string[] = [];
  for (const prefix of ['intake/', 'output/', 'uploads/']) {
    const page = await blobs.list(prefix, {
      modifiedBefore: new Date(Date.now() + 365 * 24 * HOUR_MS),
      limit: 1_000,
    });
    keys.push(...page.blobs.map((blob) => blob.key));
  }
  return keys.sort();
}

/** A store answering only the sweeper's calls. */
function fakeStore(methods: Partial<StateStore>): StateStore {
  return {
    listSweepable: () => Promise.resolve([]),
    markSwept: () => Promise.resolve(),
    purgeIdempotencyKeys: () => Promise.resolve(0),
    ownedBlobKeys: (keys) => Promise.resolve([...keys]),
    ...methods,
  } as StateStore;
}

function fakeBlobs(methods: Partial<BlobStore>): BlobStore {
  return {
    delete: () => Promise.resolve(),
    list: () => Promise.resolve({ blobs: [], next: undefined }),
    ...methods,
  } as BlobStore;
}
