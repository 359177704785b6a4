import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { startTemporaryCluster } from '@disarm/postgres/testing';
import type { TemporaryCluster } from '@disarm/postgres/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { CLI_PATH, runDisarm, startTestServer, TSX_LOADER } from './_server.ts';
import type { TestServer } from './_server.ts';

/** How long a worker node may take to start (tsx compiles the sources on first start). */
const START_TIMEOUT_MS = 60_000;

let cluster: TemporaryCluster | undefined;
let databases = 0;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  cluster = await startTemporaryCluster();
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await cluster?.stop();
});

async function newDatabase(): Promise<string> {
  if (cluster === undefined) throw new Error('no cluster');
  databases += 1;
  return cluster.createDatabase(`scale_out_${databases}`);
}

/** Environment of the child processes: no database URL but the one each test passes. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DISARM_DATABASE_URL;
  delete env.DISARM_ROLE;
  return env;
}

/** A running `disarm serve --role worker`. */
interface WorkerNode {
  readonly pid: number;
  stderr(): string;
  /** SIGTERM and the exit code. */
  stop(): Promise<number | null>;
}

async function startWorkerNode(args: readonly string[]): Promise<WorkerNode> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      TSX_LOADER,
      '--conditions=@disarm/source',
      CLI_PATH,
      'serve',
      '--role=worker',
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.resume();
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the worker did not start:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stderr.on('data', () => {
      if (stderr.includes('disarm: worker processing documents')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited with ${String(code)}:\n${stderr}`));
    });
  });
  try {
    await started;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  let stopping: Promise<number | null> | undefined;
  const node: WorkerNode = {
    pid: child.pid ?? 0,
    stderr: () => stderr,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        return exited;
      })();
      return stopping;
    },
  };
  cleanups.push(() => node.stop());
  return node;
}

async function startApiNode(database: string, dataDir: string): Promise<TestServer> {
  const server = await startTestServer({
    dataDir,
    args: ['--role=api', `--database=${database}`],
  });
  cleanups.push(() => server.stop());
  return server;
}

/** `disarm admin …` against `database`; the parsed JSON it printed. */
async function admin(database: string, ...args: string[]): Promise<Record<string, unknown>> {
  const run = await runDisarm(['admin', ...args, `--database=${database}`, '--json'], childEnv());
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

describe('disarm migrate', () => {
  it('brings a PostgreSQL schema up to date once, then finds nothing to do', async () => {
    const database = await newDatabase();
    const first = await runDisarm(['migrate', `--database=${database}`, '--json'], childEnv());
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout) as { database: string; applied: number[] };
    expect(report.database).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/scale_out_\d+$/);
    expect(report.applied).toEqual([1, 2, 3, 4]);
    const again = await runDisarm(['migrate', `--database=${database}`], childEnv());
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/: the schema is up to date\n$/);
  });

  it('migrates the data folder’s SQLite file by default, and refuses a database it cannot read', async () => {
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const run = await runDisarm(['migrate', `--data-dir=${dataDir}`, '--json'], childEnv());
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { database: string }).database).toMatch(/disarm\.sqlite$/);

    const usage = await runDisarm(['migrate', '--database=mysql://db/disarm'], childEnv());
    expect(usage.code).toBe(64);
    expect(usage.stderr).toContain('sqlite:<path> or postgres://');
  });
});

describe('disarm admin --database', () => {
  it('manages organisations in PostgreSQL', async () => {
    const database = await newDatabase();
    const created = await admin(database, 'org', 'create', '--name=Acme', '--plan=starter');
    const listed = await runDisarm(['admin', 'org', 'list', `--database=${database}`], childEnv());
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(String(created.id));
  });
});

describe('disarm serve --role api and --role worker on one PostgreSQL', () => {
  it('cleans a document submitted to the API node on the worker node, answering the sync wait', async () => {
    const database = await newDatabase();
    // The API and the worker share the local blob folder: one machine, two roles.
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const api = await startApiNode(database, dataDir);
    const worker = await startWorkerNode([
      `--database=${database}`,
      `--data-dir=${dataDir}`,
      '--workers=1',
    ]);
    const organisation = await admin(database, 'org', 'create', '--name=Acme', '--plan=starter');
    const key = await admin(
      database,
      'key',
      'create',
      `--org=${String(organisation.id)}`,
      '--name=t',
    );

    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await pngWithMetadata())]), 'photo.png');
    const response = await fetch(`${api.apiUrl}/v1/documents?wait=true`, {
      method: 'POST',
      headers: { 'X-Api-Key': String(key.key) },
      body: form,
    });
    const envelope = (await response.json()) as { status: string; id: string };
    expect(response.status, JSON.stringify(envelope)).toBe(200);
    expect(envelope.status).toBe('completed');

    // SIGTERM drains the worker: it exits cleanly, and the API keeps answering.
    expect(await worker.stop()).toBe(0);
    const status = await fetch(`${api.apiUrl}/v1/documents/${envelope.id}`, {
      headers: { 'X-Api-Key': String(key.key) },
    });
    expect(((await status.json()) as { status: string }).status).toBe('completed');
  });

  it('keeps a document pending on an API node alone: only a worker processes', async () => {
    const database = await newDatabase();
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const api = await startApiNode(database, dataDir);
    const organisation = await admin(database, 'org', 'create', '--name=Acme', '--plan=starter');
    const key = await admin(
      database,
      'key',
      'create',
      `--org=${String(organisation.id)}`,
      '--name=t',
    );
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await pngWithMetadata())]), 'photo.png');
    const response = await fetch(`${api.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': String(key.key) },
      body: form,
    });
    const envelope = (await response.json()) as { status: string };
    expect(response.status).toBe(202);
    expect(envelope.status).toBe('pending');
  });
});

describe('two API nodes and two worker nodes on one PostgreSQL', () => {
  it('spreads submissions over both APIs, answers every sync wait, bills each document once', async () => {
    const database = await newDatabase();
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    // The API nodes first (each migrates; the second finds the schema current), then workers.
    const apis = [await startApiNode(database, dataDir), await startApiNode(database, dataDir)];
    const workers = await Promise.all([
      startWorkerNode([`--database=${database}`, `--data-dir=${dataDir}`, '--workers=1']),
      startWorkerNode([`--database=${database}`, `--data-dir=${dataDir}`, '--workers=1']),
    ]);
    const organisation = await admin(
      database,
      'org',
      'create',
      '--name=Acme',
      '--plan=starter',
      '--allowance=6',
    );
    const key = await admin(
      database,
      'key',
      'create',
      `--org=${String(organisation.id)}`,
      '--name=t',
    );
    const headers = { 'X-Api-Key': String(key.key) };
    const png = new Uint8Array(await pngWithMetadata());

    const submit = async (apiUrl: string, name: string): Promise<Response> => {
      const form = new FormData();
      form.append('file', new Blob([png]), name);
      return fetch(`${apiUrl}/v1/documents?wait=true`, { method: 'POST', headers, body: form });
    };
    // Six at once, alternating API nodes: every sync wait is answered by whichever worker took
    // the document, through the database's notifications (or the waiters' polling).
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        submit(apis[index % 2]?.apiUrl ?? '', `photo-${index}.png`),
      ),
    );
    const envelopes = await Promise.all(
      responses.map(async (response) => ({
        status: response.status,
        body: (await response.json()) as { id: string; status: string },
      })),
    );
    expect(envelopes.map((envelope) => envelope.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(envelopes.map((envelope) => envelope.body.status)).toEqual(
      Array.from({ length: 6 }, () => 'completed'),
    );
    expect(new Set(envelopes.map((envelope) => envelope.body.id)).size).toBe(6);

    // One set of books across nodes: exactly six units used, and the seventh is refused on
    // either API node.
    for (const api of apis) {
      const account = await fetch(`${api.apiUrl}/v1/account`, { headers });
      expect(
        ((await account.json()) as { periodUsedSubmissions: number }).periodUsedSubmissions,
      ).toBe(6);
    }
    const refused = await submit(apis[1]?.apiUrl ?? '', 'one-too-many.png');
    await refused.body?.cancel();
    expect(refused.status).toBe(429);

    // A worker killed outright leaves the other serving the queue.
    for (const worker of workers.slice(0, 1)) process.kill(worker.pid, 'SIGKILL');
    await admin(database, 'org', 'update', `--org=${String(organisation.id)}`, '--allowance=7');
    const after = await submit(apis[0]?.apiUrl ?? '', 'after-kill.png');
    expect(after.status).toBe(200);
    expect(((await after.json()) as { status: string }).status).toBe('completed');
  });
});

describe('a worker killed with SIGKILL', () => {
  /**
   * A worker process that leases the next document for `leaseMs` and then hangs, as a worker
   * host does when it dies mid-document; resolves the id it holds.
   */
  async function startDoomedWorker(
    database: string,
    leaseMs: number,
  ): Promise<{ id: string; kill(): Promise<void> }> {
    const script = `
      import { createPostgresStore } from '@disarm/postgres';
      const store = await createPostgresStore({ connectionString: process.argv[1] });
      const leased = await store.leaseDocument('worker-on-a-dying-host', new Date(), ${leaseMs});
      process.stdout.write((leased?.id ?? 'none') + '\\n');
      setInterval(() => undefined, 60_000);
    `;
    const child = spawn(
      process.execPath,
      [
        '--import',
        TSX_LOADER,
        '--conditions=@disarm/source',
        '--input-type=module',
        '-e',
        script,
        database,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: childEnv(),
        cwd: fileURLToPath(new URL('.', import.meta.url)),
      },
    );
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(child, 'exit');
    const id = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.endsWith('\n')) resolve(stdout.trim());
      });
      void exited.then(() => {
        reject(new Error(`the doomed worker exited early:\n${stderr}`));
      });
    });
    return {
      id,
      async kill() {
        child.kill('SIGKILL');
        await exited;
      },
    };
  }

  it('loses its lease, and another worker finishes the document, billed once', async () => {
    const database = await newDatabase();
    const dataDir = await tempDir();
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const api = await startApiNode(database, dataDir);
    const organisation = await admin(
      database,
      'org',
      'create',
      '--name=Acme',
      '--plan=payg',
      '--credit-pence=100',
      '--price-pence=10',
    );
    const key = await admin(
      database,
      'key',
      'create',
      `--org=${String(organisation.id)}`,
      '--name=t',
    );
    const headers = { 'X-Api-Key': String(key.key) };
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(await pngWithMetadata())]), 'photo.png');
    const submitted = await fetch(`${api.apiUrl}/v1/documents`, {
      method: 'POST',
      headers,
      body: form,
    });
    expect(submitted.status).toBe(202);
    const { id } = (await submitted.json()) as { id: string };

    const doomed = await startDoomedWorker(database, 1_000);
    expect(doomed.id).toBe(id);
    await doomed.kill();
    expect(
      (
        (await (await fetch(`${api.apiUrl}/v1/documents/${id}`, { headers })).json()) as {
          status: string;
        }
      ).status,
    ).toBe('processing');

    // The next worker's recovery finds the lapsed lease and processes the document again.
    await startWorkerNode([`--database=${database}`, `--data-dir=${dataDir}`, '--workers=1']);
    let status = 'processing';
    const deadline = Date.now() + START_TIMEOUT_MS;
    while ((status === 'processing' || status === 'pending') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const response = await fetch(`${api.apiUrl}/v1/documents/${id}`, { headers });
      status = ((await response.json()) as { status: string }).status;
    }
    expect(status).toBe('completed');
    const account = await fetch(`${api.apiUrl}/v1/account`, { headers });
    expect(((await account.json()) as { creditBalancePence: number }).creditBalancePence).toBe(90);
  });
});
