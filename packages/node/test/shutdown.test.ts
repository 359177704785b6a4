/**
 * Nothing outlives `disarm serve`: the real server, its stdout piped into a reader that dies with
 * it (as `npm run serve | tee log` and Ctrl-C), LibreOffice and Chromium warm in its worker.
 * Whatever signal reaches the process group (SIGINT, SIGTERM, SIGHUP), or SIGKILL of the server
 * alone, no process it started (worker, soffice and soffice.bin, the UNO bridge, Chromium and its
 * helpers) and no temporary folder (LibreOffice's profile, Chromium's, work folders) remains, and
 * the shutdown is logged even though stdout has lost its reader.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildOds, buildSvgDrawing } from '@disarm/fixtures';
import { afterEach, describe, expect, it } from 'vitest';

import { CLI_PATH, runDisarm, TSX_LOADER } from './_server.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

/** A process as /proc shows it; `start` (clock ticks after boot) tells a reused pid apart. */
interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly start: string;
  readonly state: string;
  readonly args: readonly string[];
}

function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // proc(5): "pid (comm) state ppid pgrp ... starttime (22nd)"; comm may contain ") ".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((arg) => arg !== '');
    return {
      pid,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      start: fields[19] ?? '',
      state: fields[0] ?? '',
      args,
    };
  } catch {
    return undefined;
  }
}

function allProcesses(): ProcessInfo[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => readProcess(Number(name)) ?? []);
}

/** Every process descended from `root`, or in its process group. */
function familyOf(root: number): ProcessInfo[] {
  const processes = allProcesses();
  const family = new Set<number>([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const info of processes) {
      if (!family.has(info.pid) && (family.has(info.ppid) || info.pgid === root)) {
        family.add(info.pid);
        grew = true;
      }
    }
  }
  return processes.filter((info) => family.has(info.pid));
}

/** Whether the process is still the one seen (same start time) and not a zombie. */
function stillRunning(seen: ProcessInfo): boolean {
  const now = readProcess(seen.pid);
  return now?.start === seen.start && now.state !== 'Z';
}

/** Processes that name `folder` in their command line or environment (TMPDIR, profiles). */
function processesUsing(folder: string): ProcessInfo[] {
  return allProcesses().filter((info) => {
    if (info.state === 'Z') return false;
    if (info.args.some((arg) => arg.includes(folder))) return true;
    try {
      return readFileSync(`/proc/${info.pid}/environ`, 'utf8').includes(folder);
    } catch {
      return false;
    }
  });
}

/**
 * How long what the worker started may take to notice its end and go: Chromium sees its DevTools
 * pipe close, the UNO bridge its stdin. Seconds on a quiet machine; the bound only turns a
 * process that never goes into a failure that names it, rather than a test timeout.
 */
const SETTLE_MS = 30_000;
/**
 * One case starts the server from source, starts LibreOffice and Chromium and stops them all:
 * about 25 s on a quiet machine, several times that on a loaded one.
 */
const CASE_TIMEOUT_MS = scaledMs(240_000);

/** Resolves once `check` holds (looking every 100 ms), or after {@link SETTLE_MS}. */
async function settle(check: () => boolean): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  while (!check() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Service {
  readonly shell: ChildProcess;
  readonly root: string;
  readonly apiUrl: string;
  stderr(): string;
  /** Resolves once every writer of the server's stderr (the server, its workers) is gone. */
  readonly stderrClosed: Promise<void>;
}

const started: Service[] = [];
afterEach(async () => {
  for (const service of started.splice(0)) {
    // Whatever a failed case left running: the family, and orphans that name its folder.
    const left = [...familyOf(service.shell.pid ?? 0), ...processesUsing(service.root)];
    for (const info of left) {
      try {
        process.kill(info.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    await rm(service.root, { recursive: true, force: true });
  }
});

/**
 * `disarm serve | cat > out.log` in a process group of its own, as a terminal runs a pipeline:
 * the shell and the subshell around the server survive the signal (their trap runs `:`) to
 * report the server's exit status on stderr; `cat`, the reader, dies of it.
 */
async function startService(): Promise<Service> {
  const root = await mkdtemp(join(tmpdir(), 'disarm-shutdown-'));
  await mkdir(join(root, 'tmp'));
  const serve = [
    process.execPath,
    '--import',
    TSX_LOADER,
    '--conditions=@disarm/source',
    CLI_PATH,
    'serve',
    '--port=0',
    '--storage-port=0',
    `--data-dir=${join(root, 'data')}`,
    '--workers=1',
    '--no-demo',
  ];
  const script =
    'trap : INT TERM HUP; { trap : INT TERM HUP; "$@"; echo "disarm-exit=$?" >&2; } | cat > "$OUT"';
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: join(root, 'tmp'),
    OUT: join(root, 'out.log'),
  };
  delete environment.DISARM_ADMIN_TOKEN;
  const shell = spawn('sh', ['-c', script, 'sh', ...serve], {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: environment,
  });
  let stderr = '';
  const stderrClosed = new Promise<void>((resolve) => shell.stderr.once('end', resolve));
  const apiUrl = await new Promise<string>((resolve, reject) => {
    shell.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const url = /disarm: API on (\S+),/.exec(stderr)?.[1];
      if (url !== undefined) resolve(url);
    });
    void stderrClosed.then(() => {
      reject(new Error(`disarm serve did not start:\n${stderr}`));
    });
  });
  const service: Service = { shell, root, apiUrl, stderr: () => stderr, stderrClosed };
  started.push(service);
  return service;
}

/** Converts an .ods (LibreOffice) and an .svg (Chromium), so both renderers run warm. */
async function warmUp(service: Service): Promise<void> {
  const dataDir = join(service.root, 'data');
  const organisation = await runDisarm([
    'admin',
    'org',
    'create',
    '--name=Shutdown',
    '--plan=internal',
    `--data-dir=${dataDir}`,
    '--json',
  ]);
  const { id } = JSON.parse(organisation.stdout) as { id: string };
  const key = await runDisarm([
    'admin',
    'key',
    'create',
    `--org=${id}`,
    '--name=shutdown',
    `--data-dir=${dataDir}`,
    '--json',
  ]);
  const apiKey = (JSON.parse(key.stdout) as { key: string }).key;
  const files = [
    { name: 'budget.ods', bytes: new Uint8Array(await buildOds()) },
    { name: 'drawing.svg', bytes: new TextEncoder().encode(buildSvgDrawing('')) },
  ];
  for (const file of files) {
    const response = await fetch(`${service.apiUrl}/v1/documents?wait=true&filename=${file.name}`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/octet-stream' },
      body: file.bytes,
    });
    expect(await response.json()).toMatchObject({ status: 'completed' });
  }
}

/** Whether the family holds a process whose program name ends in `name`. */
function runs(family: readonly ProcessInfo[], name: string): boolean {
  return family.some((info) => (info.args[0] ?? '').endsWith(name));
}

/** soffice's UNO pipe socket, named on its command line (`--accept=pipe,name=…`). */
function unoSockets(family: readonly ProcessInfo[]): string[] {
  const uid = process.getuid?.() ?? 0;
  return family.flatMap((info) => {
    const pipe = /--accept=pipe,name=([^;]+);/.exec(info.args.join(' '))?.[1];
    return pipe === undefined ? [] : [`/tmp/OSL_PIPE_${uid}_${pipe}`];
  });
}

// Linux: the test reads /proc to find every process and what it holds.
describe.skipIf(process.platform !== 'linux')('disarm serve leaves nothing behind', () => {
  const cases = [
    { how: 'SIGINT to the process group (Ctrl-C)', signal: 'SIGINT', group: true },
    { how: 'SIGTERM to the process group', signal: 'SIGTERM', group: true },
    { how: 'SIGHUP to the process group (the terminal closed)', signal: 'SIGHUP', group: true },
    { how: 'SIGKILL of the server alone', signal: 'SIGKILL', group: false },
  ] as const;

  for (const { how, signal, group } of cases) {
    it(`on ${how}`, { timeout: CASE_TIMEOUT_MS }, async () => {
      const service = await startService();
      await warmUp(service);
      const family = familyOf(service.shell.pid ?? 0);
      const server = family.find(
        (info) => info.args[0] === process.execPath && info.args.includes('serve'),
      );
      expect(server).toBeDefined();
      // Warm: the worker runs LibreOffice (soffice.bin) and Chromium.
      expect(runs(family, 'soffice.bin')).toBe(true);
      expect(runs(family, 'chromium')).toBe(true);
      const sockets = unoSockets(family);
      expect(sockets.length).toBeGreaterThan(0);

      if (group) process.kill(-(service.shell.pid ?? 0), signal);
      else process.kill(server?.pid ?? 0, signal);
      await service.stderrClosed;
      await settle(
        () =>
          family.every((info) => !stillRunning(info)) && processesUsing(service.root).length === 0,
      );
      const describe = (info: ProcessInfo): string =>
        `${info.pid} ${info.args.join(' ').slice(0, 120)}`;
      expect(family.filter(stillRunning).map(describe)).toEqual([]);
      expect(processesUsing(service.root).map(describe)).toEqual([]);

      // tsx's compile cache (`tsx-<uid>`) is the test's doing: it runs the server from source.
      const left = (await readdir(join(service.root, 'tmp'))).filter(
        (name) => !/^tsx-\d+$/.test(name),
      );
      expect(left).toEqual([]);
      expect(sockets.filter((socket) => existsSync(socket))).toEqual([]);
      const log = `${await readFile(join(service.root, 'out.log'), 'utf8')}${service.stderr()}`;
      if (group) {
        // The reader died with the signal: what was logged after it went to stderr.
        expect(log).toContain('"msg":"shutting down"');
        expect(log).toContain(`"why":"${signal}"`);
        expect(log).toContain('"msg":"stopped"');
        expect(service.stderr()).toContain('disarm-exit=0');
      } else {
        expect(service.stderr()).toContain('disarm-exit=137');
      }
    });
  }
});
