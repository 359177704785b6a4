import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { createWorkerPool } from '../src/index.ts';
import type { WorkerPool } from '../src/index.ts';
import {
  EICAR,
  isAlive,
  isRunning,
  jpegWithMetadata,
  pngWithMetadata,
  tempDir,
  writeTree,
  zipOf,
} from './_fixtures.ts';

const MISBEHAVING_WORKER = new URL('./fixtures/misbehaving-worker.ts', import.meta.url);
const MIB_BYTES = 1024 * 1024;

let dir: string;
let png: string;

beforeAll(async () => {
  dir = await tempDir();
  const image = await pngWithMetadata();
  await writeTree(dir, {
    'photo.png': image,
    'photo.jpg': await jpegWithMetadata(),
    'bundle.zip': await zipOf({ 'inner/photo.png': image }),
    'eicar.com': EICAR,
    'notes.txt': 'plain text',
  });
  png = join(dir, 'photo.png');
});

/** Closes the pool after the test and checks that no worker outlives it. */
async function closeAndCheck(pool: WorkerPool, options?: { force?: boolean }): Promise<void> {
  const pids = pool.stats().pids;
  await pool.close(options);
  expect(pool.stats()).toMatchObject({ workers: 0, busy: 0, queued: 0 });
  for (const pid of pids) expect(isAlive(pid), `worker ${pid} is still alive`).toBe(false);
}

describe('createWorkerPool()', () => {
  let pool: WorkerPool;
  beforeAll(() => {
    pool = createWorkerPool({ size: 2, workerOutput: 'ignore' });
  });
  afterAll(async () => {
    await closeAndCheck(pool);
  });

  it('runs jobs in parallel workers and returns cleaned, rejected and failed results', async () => {
    const out = await tempDir();
    const run = (name: string, options = {}): ReturnType<WorkerPool['run']> =>
      pool.run({ inputPath: join(dir, name), fileName: name, outputDir: out, options });
    const [photo, jpeg, bundle, eicar, notes, missing, policed] = await Promise.all([
      run('photo.png'),
      run('photo.jpg'),
      run('bundle.zip'),
      run('eicar.com'),
      run('notes.txt'),
      run('missing.png'),
      pool.run({
        inputPath: png,
        fileName: 'photo.png',
        options: { policy: { 'image-metadata': 'reject' } },
      }),
    ]);
    expect(pool.stats()).toMatchObject({ size: 2, workers: 2, queued: 0 });

    expect(photo).toEqual({
      status: 'cleaned',
      outputPath: join(out, 'photo.png'),
      fileName: 'photo.png',
      format: 'png',
      mediaType: 'image/png',
      modifications: ['rebuilt'],
      findings: [{ kind: 'image-metadata', count: 1 }],
      bytes: expect.any(Number) as number,
    });
    const written = await readFile(join(out, 'photo.png'));
    expect(photo.status === 'cleaned' && photo.bytes).toBe(written.length);
    expect((await sharp(written).metadata()).exif).toBeUndefined();
    expect(jpeg).toMatchObject({ status: 'cleaned', format: 'jpg', mediaType: 'image/jpeg' });
    expect(bundle).toMatchObject({ status: 'cleaned', format: 'zip', fileName: 'bundle.zip' });
    expect(eicar).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: expect.stringContaining('EICAR') as string,
      threatNames: ['EICAR-Test-File'],
    });
    expect(notes).toMatchObject({ status: 'rejected', reason: 'unsupported_file_type' });
    expect(missing).toEqual({
      status: 'failed',
      reason: 'internal_error',
      detail: expect.stringContaining('ENOENT') as string,
    });
    expect(policed).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
  });

  it('writes to a fresh temporary folder by default and never replaces an existing file', async () => {
    const first = await pool.run({ inputPath: png, fileName: 'photo.png' });
    expect(first.status).toBe('cleaned');
    const out = await tempDir();
    await writeFile(join(out, 'photo.png'), 'keep me');
    const second = await pool.run({ inputPath: png, fileName: 'photo.png', outputDir: out });
    expect(second).toEqual({
      status: 'failed',
      reason: 'internal_error',
      detail: 'photo.png already exists in the output folder',
    });
    expect(await readFile(join(out, 'photo.png'), 'utf8')).toBe('keep me');
  });

  it('rejects misuse with a TypeError and never starts the job', async () => {
    const bad = [
      { inputPath: '', fileName: 'a.png' },
      { inputPath: png, fileName: 42 },
      { inputPath: png, fileName: 'a.png', options: { limits: { timeoutMs: -1 } } },
      { inputPath: png, fileName: 'a.png', options: { policy: { 'no-such-kind': 'reject' } } },
      { inputPath: png, fileName: 'a.png', options: { policy: { script: 'allow' } } },
    ];
    for (const job of bad) {
      await expect(pool.run(job as never)).rejects.toBeInstanceOf(TypeError);
    }
    expect(() => createWorkerPool({ size: 0 })).toThrow(TypeError);
    expect(() => createWorkerPool({ memoryLimitBytes: 1024 })).toThrow(TypeError);
  });
});

describe('a worker that misbehaves', () => {
  it('crashes: the job fails, other jobs succeed and the worker is replaced', async () => {
    const pool = createWorkerPool({
      size: 2,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
    });
    const results = await Promise.all([
      pool.run({ inputPath: png, fileName: 'abort.png' }),
      pool.run({ inputPath: png, fileName: 'photo.png' }),
      pool.run({ inputPath: png, fileName: 'exit.png' }),
      pool.run({ inputPath: png, fileName: 'photo.png' }),
    ]);
    expect(results).toEqual([
      {
        status: 'failed',
        reason: 'internal_error',
        detail: 'the worker process crashed (signal SIGABRT)',
      },
      expect.objectContaining({ status: 'cleaned' }),
      {
        status: 'failed',
        reason: 'internal_error',
        detail: 'the worker process crashed (exit code 3)',
      },
      expect.objectContaining({ status: 'cleaned' }),
    ]);
    expect(pool.stats().workers).toBe(2);
    const again = await Promise.all([
      pool.run({ inputPath: png, fileName: 'photo.png' }),
      pool.run({ inputPath: png, fileName: 'photo.png' }),
    ]);
    expect(again.map((result) => result.status)).toEqual(['cleaned', 'cleaned']);
    await closeAndCheck(pool);
  });

  it('hangs: the parent kills it after the time budget and its grace', async () => {
    const pool = createWorkerPool({
      size: 1,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
      timeoutGraceMs: 100,
    });
    const hung = await pool.run({
      inputPath: png,
      fileName: 'hang.png',
      options: { limits: { timeoutMs: 200 } },
    });
    expect(hung).toEqual({
      status: 'failed',
      reason: 'timeout',
      detail: expect.stringContaining('200 ms') as string,
    });
    expect(await pool.run({ inputPath: png, fileName: 'photo.png' })).toMatchObject({
      status: 'cleaned',
    });
    await closeAndCheck(pool);
  });

  it('grows past the memory limit: the watchdog kills it', async () => {
    const pool = createWorkerPool({
      size: 1,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
      memoryLimitBytes: 384 * MIB_BYTES,
    });
    expect(await pool.run({ inputPath: png, fileName: 'balloon.png' })).toEqual({
      status: 'failed',
      reason: 'internal_error',
      detail: 'the worker exceeded its memory limit of 384 MiB and was stopped',
    });
    expect(await pool.run({ inputPath: png, fileName: 'photo.png' })).toMatchObject({
      status: 'cleaned',
    });
    await closeAndCheck(pool);
  });
  it('is killed from outside with SIGKILL (the OOM killer): failed, marked interrupted, and replaced', async () => {
    const pool = createWorkerPool({
      size: 1,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
    });
    const running = pool.run({ inputPath: png, fileName: 'hang.png' });
    await vi.waitFor(
      () => {
        expect(pool.stats().busy).toBe(1);
      },
      { timeout: 60_000, interval: 20 },
    );
    const [pid] = pool.stats().pids;
    process.kill(pid ?? 0, 'SIGKILL');
    // Nothing says the file is at fault: a service may run it again (the dispatcher does).
    expect(await running).toEqual({
      status: 'failed',
      reason: 'internal_error',
      detail: 'the worker process was killed from outside (signal SIGKILL: out of memory?)',
      interrupted: true,
    });
    expect(await pool.run({ inputPath: png, fileName: 'photo.png' })).toMatchObject({
      status: 'cleaned',
    });
    expect(pool.stats().restarts).toBe(1);
    await closeAndCheck(pool);
  });

  it('cannot start: queued jobs fail instead of the pool retrying forever', async () => {
    const pool = createWorkerPool({
      size: 2,
      workerModule: join(dir, 'no-such-worker.mjs'),
      workerOutput: 'ignore',
    });
    const results = await Promise.all([
      pool.run({ inputPath: png, fileName: 'photo.png' }),
      pool.run({ inputPath: png, fileName: 'photo.png' }),
    ]);
    for (const result of results) {
      expect(result).toEqual({
        status: 'failed',
        reason: 'internal_error',
        detail: 'the worker process could not start (exit code 1)',
      });
    }
    await closeAndCheck(pool);
  });
});

/** Workers compile the engine (tsx) and load sharp; on a busy machine that takes seconds. */
const WORKER_START_WAIT = { timeout: 60_000, interval: 20 };

describe('aborting a job', () => {
  it('ends a queued job at once and a running one through the worker or by killing it', async () => {
    const pool = createWorkerPool({
      size: 1,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
      abortGraceMs: 100,
    });
    expect(
      await pool.run({ inputPath: png, fileName: 'photo.png', signal: AbortSignal.abort() }),
    ).toMatchObject({ status: 'failed', reason: 'timeout' });

    // A running job that listens: the worker stops it and stays alive.
    const slow = new AbortController();
    const slowResult = pool.run({ inputPath: png, fileName: 'slow.png', signal: slow.signal });
    const queued = new AbortController();
    const queuedResult = pool.run({ inputPath: png, fileName: 'photo.png', signal: queued.signal });
    await vi.waitFor(() => {
      expect(pool.stats()).toMatchObject({ busy: 1, queued: 1 });
    }, WORKER_START_WAIT);
    const pid = pool.stats().pids[0];
    queued.abort();
    expect(await queuedResult).toEqual({
      status: 'failed',
      reason: 'timeout',
      detail: 'the job was aborted before it started',
    });
    slow.abort();
    expect(await slowResult).toEqual({
      status: 'failed',
      reason: 'timeout',
      detail: 'processing was aborted by the caller',
    });
    expect(pool.stats().pids).toEqual([pid]);

    // A running job stuck where it cannot hear: its worker is killed after the grace.
    const hang = new AbortController();
    const hangResult = pool.run({ inputPath: png, fileName: 'hang.png', signal: hang.signal });
    await vi.waitFor(() => {
      expect(pool.stats().busy).toBe(1);
    }, WORKER_START_WAIT);
    hang.abort();
    expect(await hangResult).toEqual({
      status: 'failed',
      reason: 'timeout',
      detail: 'the job was aborted and its worker did not stop in time, so it was killed',
    });
    expect(await pool.run({ inputPath: png, fileName: 'photo.png' })).toMatchObject({
      status: 'cleaned',
    });
    await closeAndCheck(pool);
  });
});

describe('close()', () => {
  it('drains queued jobs, then refuses new ones', async () => {
    const pool = createWorkerPool({ size: 1, workerOutput: 'ignore' });
    const pending = [1, 2, 3].map(() => pool.run({ inputPath: png, fileName: 'photo.png' }));
    const closed = closeAndCheck(pool);
    expect((await Promise.all(pending)).map((result) => result.status)).toEqual([
      'cleaned',
      'cleaned',
      'cleaned',
    ]);
    await closed;
    await expect(pool.run({ inputPath: png, fileName: 'photo.png' })).rejects.toThrow(/closed/);
  });

  it('with force, kills running workers and fails unfinished jobs', async () => {
    const pool = createWorkerPool({
      size: 1,
      workerModule: MISBEHAVING_WORKER,
      workerOutput: 'ignore',
    });
    const running = pool.run({ inputPath: png, fileName: 'hang.png' });
    const queued = pool.run({ inputPath: png, fileName: 'photo.png' });
    await vi.waitFor(() => {
      expect(pool.stats().busy).toBe(1);
    }, WORKER_START_WAIT);
    await closeAndCheck(pool, { force: true });
    expect(await running).toMatchObject({ status: 'failed', reason: 'internal_error' });
    expect(await queued).toMatchObject({ status: 'failed', reason: 'internal_error' });
  });

  it('is not needed for the process to exit once the pool is idle', async () => {
    const script = join(await tempDir(), 'idle-pool.mts');
    const poolModule = pathToFileURL(fileURLToPath(new URL('../src/index.ts', import.meta.url)));
    await writeFile(
      script,
      `import { createWorkerPool } from ${JSON.stringify(poolModule.href)};
const pool = createWorkerPool({ size: 1, workerOutput: 'ignore' });
const result = await pool.run({ inputPath: ${JSON.stringify(png)}, fileName: 'photo.png' });
console.log(result.status, pool.stats().pids.join(','));
`,
    );
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const child = spawn(
      process.execPath,
      ['--import', tsx, '--conditions=@disarm/source', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(0);
    const [status, pid] = stdout.trim().split(' ');
    expect(status).toBe('cleaned');
    // The worker outlived its parent, so init reaps it, maybe late: a zombie is not running.
    await vi.waitFor(() => {
      expect(isRunning(Number(pid))).toBe(false);
    }, WORKER_START_WAIT);
  });
});
