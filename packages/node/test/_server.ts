/**
 * Test harness: the REAL `disarm serve` process, from source, for HTTP tests over loopback.
 *
 * ```ts
 * const server = await startTestServer();
 * const { apiKey } = await server.createOrganisation('payg', { creditPence: 100 });
 * const response = await fetch(`${server.apiUrl}/v1/account`, { headers: { 'X-Api-Key': apiKey } });
 * await server.advanceClock(24 * 60 * 60 * 1000);
 * await server.stop();
 * ```
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import type { PlanName } from '@disarm/protocol';

import type { FailpointStep } from '../src/index.ts';

/** Entry of the `disarm` command, run from source. */
export const CLI_PATH = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
/** The tsx loader, as a URL for `node --import`. */
export const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** How long the server may take to listen (tsx compiles the sources on first start). */
const START_TIMEOUT_MS = 60_000;
/** How long `stop()` waits for a graceful exit before killing the process. */
const STOP_TIMEOUT_MS = 30_000;

/** Options of {@link startTestServer}. */
export interface TestServerOptions {
  /** Worker processes. @default 1 */
  readonly workers?: number;
  /** `--sync-wait-seconds`. @default the server's (45) */
  readonly syncWaitSeconds?: number;
  /** `--grace-seconds`. @default the server's (300) */
  readonly graceSeconds?: number;
  /** Create the demo organisation on the empty store. @default false */
  readonly demo?: boolean;
  /** More `disarm serve` arguments. */
  readonly args?: readonly string[];
  /** Data folder to use (kept after `stop()`). @default a fresh temporary folder, removed by `stop()` */
  readonly dataDir?: string;
  /** More environment variables for the server (e.g. `AWS_*` for `--blobs s3://…`). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Terms for {@link TestServer.createOrganisation}, as `disarm admin org create` takes them. */
export interface TestOrganisationOptions {
  readonly name?: string;
  readonly creditPence?: number;
  readonly pricePence?: number;
  readonly allowance?: number;
  readonly rateLimit?: number;
  readonly maxUploadBytes?: number;
  /** Finding kind -> action, e.g. `{ 'vba-macro': 'reject' }`. */
  readonly policy?: Readonly<Record<string, 'strip' | 'reject'>>;
  /** Name of the API key. @default 'test' */
  readonly keyName?: string;
}

/** How a server or worker process ended. */
export interface ProcessEnd {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** What one CLI run printed and how it ended. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running `disarm serve --test-mode`. */
export interface TestServer {
  /** Public base URL of the API, e.g. `http://localhost:41234`. */
  readonly apiUrl: string;
  /** Public base URL of the storage origin. */
  readonly storageUrl: string;
  /** Bootstrap admin bearer token (scope `cdr.admin` on `/v1/admin/*`). */
  readonly adminToken: string;
  /** The server's data folder. */
  readonly dataDir: string;
  /** The server's process id. */
  readonly pid: number;
  /** Moves the server's manual clock forward; resolves after a retention sweep at the new time. */
  advanceClock(milliseconds: number): Promise<Date>;
  /** Arms a failpoint: the server kills itself the next time a document passes `step`. */
  armFailpoint(step: FailpointStep): Promise<void>;
  /** Resolves when the process has exited, with how (a failpoint ends it with `SIGKILL`). */
  exited(): Promise<ProcessEnd>;
  /** SIGKILL, as a host dying; keeps the data folder. */
  kill(): Promise<void>;
  /** Creates an organisation on `plan` and one API key for it (through `disarm admin`). */
  createOrganisation(
    plan: PlanName,
    options?: TestOrganisationOptions,
  ): Promise<{ organisationId: string; apiKey: string }>;
  /** Runs `disarm admin <args> --data-dir <dataDir>`. */
  admin(...args: string[]): Promise<CliRun>;
  /** The JSON log lines the server wrote so far. */
  logs(): Record<string, unknown>[];
  /** What the server wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM, wait for exit (SIGKILL after 30 s); removes the data folder it made. Resolves the exit code. */
  stop(): Promise<number | null>;
}

/** Runs the `disarm` CLI from source with `args`. */
export function runDisarm(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cwd?: string,
): Promise<CliRun> {
  const child = spawn(
    process.execPath,
    ['--import', TSX_LOADER, '--conditions=@disarm/source', CLI_PATH, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
      ...(cwd === undefined ? {} : { cwd }),
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Spawns `disarm serve` from source (tsx) on free ports, a temporary data folder, `--test-mode`
 * (manual clock) and a random admin token, and resolves once it listens. The server stops by
 * itself if the test process dies (it watches its IPC channel).
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const ownDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'disarm-serve-test-')));
  const adminToken = randomBytes(32).toString('hex');
  const args = [
    'serve',
    '--port=0',
    '--storage-port=0',
    `--data-dir=${dataDir}`,
    '--test-mode',
    `--workers=${options.workers ?? 1}`,
    ...(options.syncWaitSeconds === undefined
      ? []
      : [`--sync-wait-seconds=${options.syncWaitSeconds}`]),
    ...(options.graceSeconds === undefined ? [] : [`--grace-seconds=${options.graceSeconds}`]),
    ...(options.demo === true ? [] : ['--no-demo']),
    ...(options.args ?? []),
  ];
  const inherited = { ...process.env };
  delete inherited.DISARM_ADMIN_TOKEN;
  const child = spawn(
    process.execPath,
    ['--import', TSX_LOADER, '--conditions=@disarm/source', CLI_PATH, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...inherited, ...options.env, DISARM_ADMIN_TOKEN: adminToken },
    },
  );
  const logLines: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`disarm serve did not start within ${START_TIMEOUT_MS} ms:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        const record = JSON.parse(line) as Record<string, unknown>;
        logLines.push(record);
        if (record.msg === 'disarm serve listening') {
          clearTimeout(timer);
          resolve(record);
        }
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`disarm serve exited with ${code} before listening:\n${stderr}`));
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ended = endOf(child);

  let ready: Record<string, unknown>;
  try {
    ready = await listening;
  } catch (error) {
    child.kill('SIGKILL');
    if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
    throw error;
  }

  const admin = (...adminArgs: string[]): Promise<CliRun> =>
    runDisarm(['admin', ...adminArgs, `--data-dir=${dataDir}`], inherited);
  const clock = clockChannel(child);
  let stopped: Promise<number | null> | undefined;

  return {
    apiUrl: String(ready.apiUrl),
    storageUrl: String(ready.storageUrl),
    adminToken,
    dataDir,
    pid: child.pid ?? 0,
    advanceClock: clock,
    armFailpoint: failpointChannel(child),
    exited: () => ended,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await ended;
    },
    async createOrganisation(plan, organisation = {}) {
      const created = await admin(
        'org',
        'create',
        `--name=${organisation.name ?? `Test ${plan}`}`,
        `--plan=${plan}`,
        ...optional('--credit-pence', organisation.creditPence),
        ...optional('--price-pence', organisation.pricePence),
        ...optional('--allowance', organisation.allowance),
        ...optional('--rate-limit', organisation.rateLimit),
        ...optional('--max-upload-bytes', organisation.maxUploadBytes),
        ...Object.entries(organisation.policy ?? {}).map(
          ([kind, action]) => `--policy=${kind}=${action}`,
        ),
        '--json',
      );
      if (created.code !== 0) throw new Error(`admin org create failed: ${created.stderr}`);
      const organisationId = String((JSON.parse(created.stdout) as { id: unknown }).id);
      const key = await admin(
        'key',
        'create',
        `--org=${organisationId}`,
        `--name=${organisation.keyName ?? 'test'}`,
        '--json',
      );
      if (key.code !== 0) throw new Error(`admin key create failed: ${key.stderr}`);
      return { organisationId, apiKey: String((JSON.parse(key.stdout) as { key: unknown }).key) };
    },
    admin,
    logs: () => [...logLines],
    stderr: () => stderr,
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timer);
        }
        if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
        return exited;
      })();
      return stopped;
    },
  };
}

/** Options of {@link startTestWorker}. */
export interface TestWorkerOptions {
  /** The data folder (the key-encryption key of the API nodes lives there). */
  readonly dataDir: string;
  /** More `disarm serve --role=worker` arguments (`--database`, `--blobs`, …). */
  readonly args?: readonly string[];
  /** More environment variables (e.g. `AWS_*` for `--blobs s3://…`). */
  readonly env?: Readonly<Record<string, string>>;
}

/** A running `disarm serve --role=worker --test-mode`. */
export interface TestWorker {
  /** The worker's process id. */
  readonly pid: number;
  /** Moves the worker's manual clock forward; resolves after its lease recovery and sweep. */
  advanceClock(milliseconds: number): Promise<Date>;
  /** Arms a failpoint: the worker kills itself the next time a document passes `step`. */
  armFailpoint(step: FailpointStep): Promise<void>;
  /** Resolves when the process has exited, with how (a failpoint ends it with `SIGKILL`). */
  exited(): Promise<ProcessEnd>;
  /** What the worker wrote to stderr so far. */
  stderr(): string;
  /** The JSON log lines the worker wrote so far. */
  logs(): Record<string, unknown>[];
  /** SIGKILL, as a host dying: no drain, no lease released. */
  kill(): Promise<void>;
  /** SIGTERM (drains), wait for exit. Resolves the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Spawns `disarm serve --role=worker --test-mode --workers=1` from source and resolves once it
 * processes documents. Like {@link startTestServer} it stops by itself if the test process dies.
 */
export async function startTestWorker(options: TestWorkerOptions): Promise<TestWorker> {
  const args = [
    'serve',
    '--role=worker',
    `--data-dir=${options.dataDir}`,
    '--test-mode',
    '--workers=1',
    ...(options.args ?? []),
  ];
  const child = spawn(
    process.execPath,
    ['--import', TSX_LOADER, '--conditions=@disarm/source', CLI_PATH, ...args],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], env: { ...process.env, ...options.env } },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const logLines = collectLogLines(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const ended = endOf(child);
  const started = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the worker did not start within ${START_TIMEOUT_MS} ms:\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stderr?.on('data', () => {
      if (stderr.includes('disarm: worker processing documents')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited with ${String(code)} before processing:\n${stderr}`));
    });
  });
  try {
    await started;
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  let stopped: Promise<number | null> | undefined;
  return {
    pid: child.pid ?? 0,
    advanceClock: clockChannel(child),
    armFailpoint: failpointChannel(child),
    exited: () => ended,
    stderr: () => stderr,
    logs: () => [...logLines],
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
          await exited;
          clearTimeout(timer);
        }
        return exited;
      })();
      return stopped;
    },
  };
}

/** The JSON log lines `child` writes to stdout, as they arrive. */
function collectLogLines(child: ChildProcess): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const complete = partial.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) {
      if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  return lines;
}

function optional(flag: string, value: number | undefined): string[] {
  return value === undefined ? [] : [`${flag}=${value}`];
}

/** How `child` ends. */
function endOf(child: ChildProcess): Promise<ProcessEnd> {
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
}

/** An answer of the server on its IPC channel. */
interface IpcReply {
  readonly type?: string;
  readonly id?: number;
  readonly now?: string;
  readonly error?: string;
}

/**
 * Requests over the server's IPC channel (test mode only): each message gets an `id`, and the
 * promise settles with the server's message of type `replyType` bearing it, or rejects when the
 * server exits first.
 */
function ipcChannel(
  child: ChildProcess,
  replyType: string,
): (message: Readonly<Record<string, unknown>>) => Promise<IpcReply> {
  let nextId = 1;
  const waiting = new Map<
    number,
    { resolve: (reply: IpcReply) => void; reject: (error: Error) => void }
  >();
  child.on('message', (message: IpcReply) => {
    if (message.type !== replyType || message.id === undefined) return;
    const waiter = waiting.get(message.id);
    waiting.delete(message.id);
    waiter?.resolve(message);
  });
  child.once('exit', () => {
    for (const waiter of waiting.values()) waiter.reject(new Error('disarm serve exited'));
    waiting.clear();
  });
  return (message) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      child.send({ ...message, id }, (error) => {
        if (error) {
          waiting.delete(id);
          reject(error);
        }
      });
    });
}

/** `armFailpoint()` over the server's IPC channel (test mode only). */
function failpointChannel(child: ChildProcess): (step: FailpointStep) => Promise<void> {
  const call = ipcChannel(child, 'disarm:failpoint-armed');
  return async (step) => {
    const reply = await call({ type: 'disarm:arm-failpoint', step });
    if (reply.error !== undefined) throw new Error(reply.error);
  };
}

/** `advanceClock()` over the server's IPC channel (test mode only). */
function clockChannel(child: ChildProcess): (milliseconds: number) => Promise<Date> {
  const call = ipcChannel(child, 'disarm:clock');
  return async (milliseconds) => {
    const reply = await call({ type: 'disarm:advance-clock', milliseconds });
    if (reply.now === undefined) throw new Error(reply.error ?? 'the clock did not move');
    return new Date(reply.now);
  };
}
