import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { createLinkSigner, cryptoRandom, newId, retryBackoffMs } from '@disarm/protocol';
import type {
  BlobStore,
  DocumentEvents,
  DocumentRecord,
  Lane,
  Organisation,
  StateStore,
} from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';
import sharp from 'sharp';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';

import {
  createDispatcher,
  createDocumentEvents,
  createLocalBlobStore,
  createManualClock,
  createWorkerPool,
  MAX_ATTEMPTS,
} from '../src/index.ts';
import type { Dispatcher, LocalBlobStore, ManualClock, WorkerPool } from '../src/index.ts';
import { EICAR, pngWithMetadata, tempDir } from './_fixtures.ts';

const MISBEHAVING_WORKER = new URL('./fixtures/misbehaving-worker.ts', import.meta.url);
const WAIT_MS = 30_000;

let pool: WorkerPool;
let png: Buffer;

beforeAll(async () => {
  // The misbehaving worker runs the real engine for ordinary names, and crashes on `exit*`.
  pool = createWorkerPool({ size: 2, workerModule: MISBEHAVING_WORKER, workerOutput: 'ignore' });
  png = await pngWithMetadata();
});

afterAll(async () => {
  await pool.close({ force: true });
});

interface Stack {
  readonly store: StateStore;
  readonly blobs: LocalBlobStore;
  readonly events: DocumentEvents;
  readonly clock: ManualClock;
  readonly dir: string;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function createStack(): Promise<Stack> {
  const dir = await tempDir();
  const store = createSqliteStore({ path: join(dir, 'state.sqlite') });
  cleanups.push(() => store.close());
  const signer = createLinkSigner(new Uint8Array(32).fill(1), 'http://localhost:8081');
  return {
    store,
    blobs: createLocalBlobStore({ directory: join(dir, 'blobs'), signer }),
    events: createDocumentEvents(),
    clock: createManualClock(new Date('2030-03-01T10:00:00Z')),
    dir,
  };
}

function start(
  stack: Stack,
  overrides: Partial<Parameters<typeof createDispatcher>[0]> = {},
): Dispatcher {
  const dispatcher = createDispatcher({
    store: stack.store,
    blobs: stack.blobs,
    events: stack.events,
    pool,
    clock: stack.clock,
    workDirectory: join(stack.dir, 'work'),
    pollIntervalMs: 200,
    ...overrides,
  });
  cleanups.push(() => dispatcher.stop({ timeoutMs: 5_000 }));
  return dispatcher;
}

async function organisation(
  stack: Stack,
  input: Partial<Parameters<StateStore['createOrganisation']>[0]> = {},
): Promise<Organisation> {
  return stack.store.createOrganisation(
    { id: newId('org', cryptoRandom), name: 'Test', plan: 'starter', ...input },
    stack.clock.now(),
  );
}

/** Accepts a document (as the API would) with its bytes in the intake; not yet announced. */
async function accept(
  stack: Stack,
  organisationId: string,
  fileName: string,
  bytes: Uint8Array | string,
  lane: Lane = 'multipart',
): Promise<DocumentRecord> {
  const id = newId('doc', cryptoRandom);
  const intakeKey = `intake/${id}`;
  const { sizeBytes } = await stack.blobs.put(intakeKey, new Response(toBody(bytes)).body!, {
    maxBytes: 10_000_000,
  });
  const result = await stack.store.acceptDocument(
    {
      id,
      organisationId,
      lane,
      fileName,
      sizeBytes,
      intakeKey,
      deleteAfterDownload: false,
      statusStyle202: false,
    },
    stack.clock.now(),
  );
  if (result.kind !== 'accepted') throw new Error(`not accepted: ${result.kind}`);
  return result.document;
}

/** Announces `document` and resolves with it once it is finished. */
async function processed(stack: Stack, document: DocumentRecord): Promise<DocumentRecord> {
  const finished = stack.events.waitForFinish(document.id, AbortSignal.timeout(WAIT_MS));
  stack.events.queued(document.id);
  await finished;
  const after = await stack.store.getDocument(document.organisationId, document.id);
  if (!after) throw new Error('document vanished');
  return after;
}

describe('createDispatcher()', () => {
  it('completes a queued PNG: cleaned file stored, intake deleted, waiters woken', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    const dispatcher = start(stack);
    await dispatcher.start();
    const document = await accept(stack, org.id, 'photo.png', png);

    const done = await processed(stack, document);
    expect(done).toMatchObject({
      status: 'completed',
      intakeKey: null,
      reason: null,
      attempts: 1,
      output: {
        blobKey: `output/${document.id}`,
        fileName: 'photo.png',
        format: 'png',
        mediaType: 'image/png',
        converted: false,
        findings: [{ kind: 'image-metadata', count: 1 }],
      },
    });
    const stored = await readFile(stack.blobs.pathOf(`output/${document.id}`));
    expect(done.output?.sizeBytes).toBe(stored.length);
    expect((await sharp(stored).metadata()).exif).toBeUndefined();
    expect(await stack.blobs.stat(`intake/${document.id}`)).toBeUndefined();
    expect(dispatcher.running()).toBe(0);
  });

  it('rejects an EICAR file with the threat names, billed', async () => {
    const stack = await createStack();
    const org = await organisation(stack, { plan: 'payg', creditBalancePence: 100 });
    await start(stack).start();
    const done = await processed(stack, await accept(stack, org.id, 'invoice.pdf', EICAR));
    expect(done).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
      output: null,
      intakeKey: null,
    });
    expect((await stack.store.getOrganisation(org.id, stack.clock.now()))?.creditBalancePence).toBe(
      90,
    );
  });

  it('fails a document whose worker crashes, refunds it, and keeps serving', async () => {
    const stack = await createStack();
    const org = await organisation(stack, { plan: 'payg', creditBalancePence: 100 });
    await start(stack).start();
    const crashing = await accept(stack, org.id, 'exit-now.png', png);
    expect((await stack.store.getOrganisation(org.id, stack.clock.now()))?.creditBalancePence).toBe(
      90,
    );

    const failed = await processed(stack, crashing);
    expect(failed).toMatchObject({
      status: 'failed',
      reason: 'internal_error',
      reasonDetail: expect.stringMatching(
        /^The service failed while processing this file;/,
      ) as unknown,
      chargedPence: 0,
      intakeKey: null,
    });
    expect((await stack.store.getOrganisation(org.id, stack.clock.now()))?.creditBalancePence).toBe(
      100,
    );

    const next = await processed(stack, await accept(stack, org.id, 'photo.png', png));
    expect(next.status).toBe('completed');
  });

  it("applies the organisation's policy and the lane's ceiling", async () => {
    const stack = await createStack();
    const strict = await organisation(stack, { policy: { 'image-metadata': 'reject' } });
    const small = await organisation(stack, { terms: { maxUploadSizeBytes: 64 } });
    await start(stack).start();
    expect(await processed(stack, await accept(stack, strict.id, 'photo.png', png))).toMatchObject({
      status: 'rejected',
      reason: 'policy_violation',
    });
    // Multipart lane: the 100 MB ceiling. Reference lane: the organisation's upload ceiling.
    expect((await processed(stack, await accept(stack, small.id, 'a.png', png))).status).toBe(
      'completed',
    );
    const byReference = await acceptByReference(stack, small.id, 'b.png', png);
    expect(await processed(stack, byReference)).toMatchObject({
      status: 'rejected',
      reason: 'file_too_large',
    });
  });

  it('fails a document whose intake bytes are missing, and carries on', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    await start(stack).start();
    const missing = await accept(stack, org.id, 'photo.png', png);
    await stack.blobs.delete(`intake/${missing.id}`);
    expect(await processed(stack, missing)).toMatchObject({
      status: 'failed',
      reason: 'internal_error',
    });
    expect((await processed(stack, await accept(stack, org.id, 'photo.png', png))).status).toBe(
      'completed',
    );
  });

  it('fails a document when the store errors mid-way, without dying', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    let broken = true;
    const flaky: StateStore = Object.create(stack.store, {
      getOrganisation: {
        value: (id: string, at: Date) =>
          broken
            ? Promise.reject(new Error('database is locked'))
            : stack.store.getOrganisation(id, at),
      },
    }) as StateStore;
    await start({ ...stack, store: flaky }, { store: flaky }).start();
    expect(await processed(stack, await accept(stack, org.id, 'photo.png', png))).toMatchObject({
      status: 'failed',
      reason: 'internal_error',
    });
    broken = false;
    expect((await processed(stack, await accept(stack, org.id, 'photo.png', png))).status).toBe(
      'completed',
    );
  });

  it('downloads the intake first from a blob store without local paths', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    const local = stack.blobs;
    const remoteBlobs: BlobStore = {
      put: (key, body, options) => local.put(key, body, options),
      get: (key) => local.get(key),
      stat: (key) => local.stat(key),
      delete: (key) => local.delete(key),
      list: (prefix, options) => local.list(prefix, options),
      signedDownloadUrl: (key, options) => local.signedDownloadUrl(key, options),
      signedUploadUrl: (key, options) => local.signedUploadUrl(key, options),
    };
    await start(stack, { blobs: remoteBlobs }).start();
    const done = await processed(stack, await accept(stack, org.id, 'photo.png', png));
    expect(done.status).toBe('completed');
    expect(await stack.blobs.stat(`output/${done.id}`)).toEqual({
      sizeBytes: done.output?.sizeBytes,
    });
  });

  it('picks up documents queued before it started, without an event', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    const early = await accept(stack, org.id, 'photo.png', png);
    const finished = stack.events.waitForFinish(early.id, AbortSignal.timeout(WAIT_MS));
    await start(stack).start();
    await finished;
    expect((await stack.store.getDocument(org.id, early.id))?.status).toBe('completed');
  });

  it('recovers lapsed leases at start, and fails a document out of attempts', async () => {
    const stack = await createStack();
    const org = await organisation(stack, { plan: 'payg', creditBalancePence: 100 });
    // Another process leased both and died: one on its last attempt, one on its first.
    const exhausted = await accept(stack, org.id, 'other.png', png);
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
      expect((await stack.store.leaseDocument('proc_dead', stack.clock.now(), 1_000))?.id).toBe(
        exhausted.id,
      );
      stack.clock.advance(1_000);
      if (attempt < MAX_ATTEMPTS) {
        await stack.store.recoverLapsedLeases(stack.clock.now(), 99);
        stack.clock.advance(retryBackoffMs(attempt));
      }
    }
    const requeued = await accept(stack, org.id, 'photo.png', png);
    expect((await stack.store.leaseDocument('proc_dead', stack.clock.now(), 1_000))?.id).toBe(
      requeued.id,
    );
    stack.clock.advance(1_000);
    const states = await Promise.all(
      [requeued, exhausted].map((doc) => stack.store.getDocument(org.id, doc.id)),
    );
    expect(states.map((doc) => doc?.status)).toEqual(['processing', 'processing']);

    const finished = stack.events.waitForFinish(requeued.id, AbortSignal.timeout(WAIT_MS));
    await start(stack).start();
    // Requeued at start, the document waits out its back-off before a slot's poll takes it.
    expect((await stack.store.getDocument(org.id, requeued.id))?.status).toBe('pending');
    stack.clock.advance(retryBackoffMs(1));
    await finished;
    expect((await stack.store.getDocument(org.id, requeued.id))?.status).toBe('completed');
    expect(await stack.store.getDocument(org.id, exhausted.id)).toMatchObject({
      status: 'failed',
      reason: 'internal_error',
      chargedPence: 0,
    });
  });

  it('stops: waits for running work, then abandons it to be requeued', async () => {
    const stack = await createStack();
    const org = await organisation(stack);
    const dispatcher = start(stack);
    await dispatcher.start();
    // `slow*` runs until its job is aborted.
    const slow = await accept(stack, org.id, 'slow.png', png);
    stack.events.queued(slow.id);
    while (dispatcher.running() === 0) await new Promise((resolve) => setTimeout(resolve, 20));

    await dispatcher.stop({ timeoutMs: 200 });
    expect(dispatcher.running()).toBe(0);
    expect((await stack.store.getDocument(org.id, slow.id))?.status).toBe('processing');
    // The lease was released: the next start's recovery requeues it at once, intake intact.
    await stack.store.recoverLapsedLeases(stack.clock.now(), MAX_ATTEMPTS);
    expect((await stack.store.getDocument(org.id, slow.id))?.status).toBe('pending');
    expect(await stack.blobs.stat(`intake/${slow.id}`)).toBeDefined();
    await expect(dispatcher.start()).rejects.toThrow(/already/);
  });

  it('rejects bad options as TypeErrors', async () => {
    const stack = await createStack();
    expect(() => start(stack, { concurrency: 0 })).toThrow(TypeError);
    expect(() => start(stack, { leaseMs: -5 })).toThrow(TypeError);
  });
});

/** Accepts `bytes` through the upload lane, its recorded size small enough to be accepted. */
async function acceptByReference(
  stack: Stack,
  organisationId: string,
  fileName: string,
  bytes: Uint8Array,
): Promise<DocumentRecord> {
  const now = stack.clock.now();
  const uploadId = newId('upl', cryptoRandom);
  const blobKey = `uploads/${organisationId}/${uploadId}`;
  await stack.blobs.put(blobKey, new Response(toBody(bytes)).body!, { maxBytes: 10_000_000 });
  await stack.store.createUpload({
    id: uploadId,
    organisationId,
    fileName,
    blobKey,
    createdAt: now,
    putExpiresAt: new Date(now.getTime() + 3_600_000),
    expiresAt: new Date(now.getTime() + 86_400_000),
    maxSizeBytes: 64,
    uploadedAt: null,
    sizeBytes: null,
    submittedAt: null,
    documentId: null,
  });
  // Recorded as fitting the ceiling: the engine must still hold the real bytes to it.
  await stack.store.markUploaded(uploadId, 10, now);
  const result = await stack.store.acceptDocument(
    {
      id: newId('doc', cryptoRandom),
      organisationId,
      lane: 'reference',
      fileName,
      sizeBytes: 10,
      intakeKey: blobKey,
      deleteAfterDownload: false,
      statusStyle202: false,
      uploadId,
    },
    now,
  );
  if (result.kind !== 'accepted') throw new Error(`not accepted: ${result.kind}`);
  return result.document;
}

/** Bytes or text as a `Response` body (DOM typings want an ArrayBuffer-backed view). */
function toBody(bytes: Uint8Array | string): BodyInit {
  return typeof bytes === 'string' ? bytes : new Uint8Array(bytes);
}
