import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { BRIDGE_SOURCE } from './_bridge.ts';
import { writeProfile } from './_profile.ts';

/** How one instance is started. */
export interface InstanceOptions {
  readonly executable: string;
  readonly python: string;
  readonly tempDir: string;
  /** Runs soffice under `unshare --net`, in a network namespace of its own (only loopback, down). */
  readonly isolateNetwork: boolean;
  readonly startTimeoutMs: number;
}

/** What a conversion is asked to draw. */
export type DocumentKind = 'spreadsheet' | 'presentation';

/** Lines of output kept from soffice and the bridge, for the fault's message. */
const MAX_LOG_LINES = 20;

/** Instances alive in this process, killed with it (soffice runs in a process group of its own). */
const LIVE = new Set<OfficeInstance>();
/** Instance folders not removed yet: whatever is left of them goes when this process exits. */
const FOLDERS = new Set<string>();
let killOnExit = false;

/**
 * One long-lived soffice process with its own profile and working folder, driven by one Python
 * UNO bridge (see `_bridge.ts`). It converts one document at a time. Once it dies, or is killed
 * because a conversion ran over, it stays dead: the pool starts another.
 */
export class OfficeInstance {
  readonly #options: InstanceOptions;
  #dir = '';
  /** soffice's pipe sockets, which a killed soffice leaves behind. */
  #sockets: readonly string[] = [];
  #office: ChildProcess | undefined;
  #bridge: ChildProcess | undefined;
  #version = '';
  #dead = false;
  #nextId = 1;
  #pending: { id: number; settle: (error: Error | undefined) => void } | undefined;
  #ready: ((error: Error | undefined) => void) | undefined;
  readonly #log: string[] = [];

  private constructor(options: InstanceOptions) {
    this.#options = options;
  }

  /**
   * Starts soffice and its bridge and resolves once the bridge is connected.
   * @throws when either does not start within `startTimeoutMs`.
   */
  static async start(options: InstanceOptions): Promise<OfficeInstance> {
    const instance = new OfficeInstance(options);
    if (!killOnExit) {
      killOnExit = true;
      // A process that exits (a worker let go by its pool) takes its soffice processes and
      // their folders along; `exit` allows no waiting, so the folders go synchronously.
      process.on('exit', () => {
        for (const live of LIVE) live.#die(new Error('the process exited'));
        for (const folder of FOLDERS) rmSync(folder, { recursive: true, force: true });
      });
    }
    LIVE.add(instance);
    try {
      await instance.#start();
    } catch (error) {
      await instance.kill();
      throw error;
    }
    return instance;
  }

  /** The LibreOffice version the bridge read from soffice's configuration. */
  get version(): string {
    return this.#version;
  }

  /** False once soffice or the bridge has exited or was killed. */
  get alive(): boolean {
    return !this.#dead;
  }

  /**
   * Draws `bytes` (a disarmed package) as a PDF.
   * @throws when soffice fails on the document or dies; the caller kills on timeout.
   */
  async convert(kind: DocumentKind, bytes: Uint8Array): Promise<Uint8Array> {
    if (this.#dead || this.#pending !== undefined) throw new Error('the instance is not free');
    const id = this.#nextId++;
    const input = join(this.#dir, `${id}.${kind === 'spreadsheet' ? 'ods' : 'odp'}`);
    const output = join(this.#dir, `${id}.pdf`);
    await writeFile(input, bytes);
    try {
      await new Promise<void>((resolve, reject) => {
        // Killed while the document was written: no answer will come.
        if (this.#dead) {
          reject(new Error('LibreOffice was stopped'));
          return;
        }
        this.#pending = {
          id,
          settle: (error) => {
            if (error) reject(error);
            else resolve();
          },
        };
        this.#bridge?.stdin?.write(`${JSON.stringify({ id, input, output, kind })}\n`);
      });
      return await readFile(output);
    } finally {
      this.#pending = undefined;
      await rm(input, { force: true });
      await rm(output, { force: true });
    }
  }

  /** Kills soffice (its whole process group) and the bridge and removes the profile. */
  async kill(): Promise<void> {
    this.#die(new Error('LibreOffice was stopped'));
    if (this.#dir !== '') {
      await rm(this.#dir, { recursive: true, force: true });
      FOLDERS.delete(this.#dir);
    }
  }

  async #start(): Promise<void> {
    const { executable, python, tempDir, isolateNetwork, startTimeoutMs } = this.#options;
    this.#dir = await mkdtemp(join(tempDir, 'disarm-libreoffice-'));
    FOLDERS.add(this.#dir);
    const profile = await writeProfile(join(this.#dir, 'profile'));
    // soffice's own temporary files go inside the instance folder, removed with it.
    const officeTemp = join(this.#dir, 'tmp');
    await mkdir(officeTemp);
    const pipe = `disarm-${randomUUID()}`;
    this.#sockets = pipeSockets(pipe, profile);
    const args = [
      `-env:UserInstallation=${profile}`,
      '--headless',
      '--invisible',
      '--norestore',
      '--nologo',
      '--nodefault',
      '--nolockcheck',
      `--accept=pipe,name=${pipe};urp;`,
    ];
    // soffice restarts itself once on a fresh profile: its own process group lets a kill reach
    // every process it started. UNO's pipe is a socket file in /tmp, which a network namespace
    // leaves reachable.
    this.#office = spawn(
      isolateNetwork ? 'unshare' : executable,
      isolateNetwork ? ['--net', '--', executable, ...args] : args,
      {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, TMPDIR: officeTemp },
      },
    );
    this.#watch(this.#office, 'soffice');
    // The bridge guards soffice: it kills it and removes the folder once this process is gone
    // (see `_bridge.ts`). In a session of its own, so a signal to this process's group (Ctrl-C
    // in a terminal, a service manager stopping the group) does not end it before it can.
    this.#bridge = spawn(
      python,
      [
        '-c',
        BRIDGE_SOURCE,
        pipe,
        String(startTimeoutMs / 1000),
        String(this.#office.pid ?? 0),
        this.#dir,
        ...this.#sockets,
      ],
      { detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.#watch(this.#bridge, 'bridge');
    // Writing to a bridge that just died fails the stream, not the process.
    this.#bridge.stdin?.on('error', (error) => {
      this.#die(new Error(`the bridge stopped reading: ${error.message}`));
    });
    const bridge = this.#bridge;
    if (bridge.stdout) {
      createInterface({ input: bridge.stdout }).on('line', (line) => {
        this.#answer(line);
      });
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#die(
          new Error(`LibreOffice did not start within ${startTimeoutMs} ms${this.#tail()}`),
        );
      }, startTimeoutMs);
      this.#ready = (error) => {
        clearTimeout(timer);
        this.#ready = undefined;
        if (error) reject(error);
        else resolve();
      };
    });
  }

  #answer(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.#remember(`bridge: ${line}`);
      return;
    }
    if (typeof message !== 'object' || message === null) return;
    const answer = message as {
      ready?: boolean;
      version?: string;
      id?: number;
      ok?: boolean;
      error?: string;
    };
    if (answer.ready === true) {
      this.#version = typeof answer.version === 'string' ? answer.version : '';
      this.#ready?.(undefined);
      return;
    }
    const pending = this.#pending;
    if (pending === undefined || answer.id !== pending.id) return;
    pending.settle(
      answer.ok === true ? undefined : new Error(`LibreOffice: ${answer.error ?? 'failed'}`),
    );
  }

  #watch(child: ChildProcess, name: string): void {
    const keep = (chunk: Buffer): void => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() !== '') this.#remember(`${name}: ${line}`);
      }
    };
    child.stderr?.on('data', keep);
    if (name === 'soffice') child.stdout?.on('data', keep);
    child.on('error', (error) => {
      this.#die(new Error(`${name} could not be started: ${error.message}`));
    });
    child.on('exit', (code, signal) => {
      this.#die(new Error(`${name} exited (${signal ?? `code ${code}`})${this.#tail()}`));
    });
  }

  #remember(line: string): void {
    this.#log.push(line);
    if (this.#log.length > MAX_LOG_LINES) this.#log.shift();
  }

  #tail(): string {
    return this.#log.length === 0 ? '' : `: ${this.#log.slice(-3).join(' | ')}`;
  }

  /** Marks the instance dead, kills what is left of it and fails what waits on it. */
  #die(error: Error): void {
    if (!this.#dead) {
      this.#dead = true;
      LIVE.delete(this);
      const office = this.#office;
      // soffice.bin may outlive the oosplash process that started it.
      if (office?.pid !== undefined) {
        try {
          process.kill(-office.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      this.#bridge?.kill('SIGKILL');
      for (const socket of this.#sockets) rmSync(socket, { force: true });
    }
    this.#ready?.(error);
    this.#pending?.settle(error);
  }
}

/**
 * Where soffice puts its pipe sockets: its UNO pipe (`--accept=pipe,name=…`) and its
 * single-instance pipe, named after the MD5 of the profile URL in UTF-16, each byte in hex without
 * leading zeros (LibreOffice `desktop/source/app/officeipcthread.cxx`). osl names both
 * `OSL_PIPE_<uid>_<name>` in `/tmp`, whatever `TMPDIR` says (`sal/osl/unx/pipe.cxx`), and only a
 * soffice that exits normally removes them.
 */
function pipeSockets(pipe: string, profileUrl: string): string[] {
  const uid = process.getuid?.() ?? 0;
  const digest = createHash('md5').update(Buffer.from(profileUrl, 'utf16le')).digest();
  const hash = [...digest].map((byte) => byte.toString(16)).join('');
  return [pipe, `SingleOfficeIPC_${hash}`].map((name) =>
    join(OSL_PIPE_DIR, `OSL_PIPE_${uid}_${name}`),
  );
}

/** The folder osl keeps pipe sockets in. */
const OSL_PIPE_DIR = '/tmp';
