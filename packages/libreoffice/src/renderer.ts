import { execFile, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';

import { DisarmError } from '@disarm/core';
import type { RenderInput, RenderOptions, Renderer, RendererStatus } from '@disarm/core';

import { OfficeInstance } from './_instance.ts';
import type { DocumentKind, InstanceOptions } from './_instance.ts';

/** How the LibreOffice pool is set up. */
export interface LibreOfficeRendererOptions {
  /**
   * Long-lived soffice processes kept warm; each converts one document at a time and takes about
   * 90 MB of memory once started, 180 MB after drawing a spreadsheet and a presentation.
   * @default 1
   */
  readonly poolSize?: number;
  /** The soffice executable (Debian's `libreoffice-calc-nogui` and `-impress-nogui`). @default 'soffice' */
  readonly executable?: string;
  /** A Python 3 that can `import uno` (Debian's `python3-uno`). @default '/usr/bin/python3' */
  readonly python?: string;
  /**
   * Longest a document may take to convert, whatever is left of the engine's time budget; past
   * it the instance is killed and replaced and the render fails with `ERR_TIMEOUT`.
   * @default 60_000
   */
  readonly renderTimeoutMs?: number;
  /** Longest an instance may take to start. @default 60_000 */
  readonly startTimeoutMs?: number;
  /**
   * `auto`: soffice runs in a network namespace of its own (`unshare --net`) where the platform
   * allows it (root, or unprivileged user namespaces), and with only its settings forbidding
   * link updates and external images where it does not; `status()` says which. `required`:
   * without a namespace, the renderer is not ready and refuses to render.
   * @default 'auto'
   */
  readonly networkIsolation?: 'auto' | 'required';
  /** Folder for the profiles and the documents in conversion. @default os.tmpdir() */
  readonly tempDir?: string;
}

/** One place of the pool: the instance in it, started or starting, or why it failed to. */
interface Slot {
  instance: Promise<OfficeInstance> | undefined;
  busy: boolean;
}

const DEFAULT_RENDER_TIMEOUT_MS = 60_000;
const DEFAULT_START_TIMEOUT_MS = 60_000;
/** Longest `soffice --version` or the uno import may take when the status is asked. */
const PROBE_TIMEOUT_MS = 30_000;

/**
 * A warm pool of headless LibreOffice processes that draws disarmed spreadsheets and
 * presentations as PDF. Each process has its own profile (macros disabled at the highest
 * security level, links never updated, external images blocked, formulas not recalculated on
 * load) and, where the platform allows it, its own network namespace, so it can reach nothing
 * even if a link survived. Documents are opened hidden and read-only with macro execution off and
 * no link update, and exported with every sheet's whole used area (print ranges cleared) or
 * every slide. A process that crashes, or that is killed because a document ran past its time,
 * is replaced by a fresh one.
 *
 * @example
 * ```ts
 * import { disarm } from '@disarm/core';
 * import { createLibreOfficeRenderer } from '@disarm/libreoffice';
 *
 * const libreoffice = createLibreOfficeRenderer({ poolSize: 2 });
 * const outcome = await disarm({ bytes, fileName: 'budget.ods' }, { renderers: [libreoffice] });
 * await libreoffice.close();
 * ```
 * @throws {TypeError} for a pool size below 1 or a timeout that is not positive.
 */
export function createLibreOfficeRenderer(options: LibreOfficeRendererOptions = {}): Renderer {
  const poolSize = options.poolSize ?? 1;
  if (!Number.isInteger(poolSize) || poolSize < 1) {
    throw new TypeError(`poolSize must be a positive integer, got ${poolSize}`);
  }
  const renderTimeoutMs = options.renderTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS;
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  if (!(renderTimeoutMs > 0) || !(startTimeoutMs > 0)) {
    throw new TypeError('renderTimeoutMs and startTimeoutMs must be positive');
  }
  return new LibreOfficePool(
    poolSize,
    renderTimeoutMs,
    {
      executable: options.executable ?? 'soffice',
      python: options.python ?? '/usr/bin/python3',
      tempDir: options.tempDir ?? tmpdir(),
      startTimeoutMs,
      isolateNetwork: false,
    },
    options.networkIsolation ?? 'auto',
  );
}

class LibreOfficePool implements Renderer {
  readonly name = 'libreoffice';
  readonly kinds = ['spreadsheet', 'presentation'] as const;
  readonly #slots: Slot[];
  readonly #renderTimeoutMs: number;
  readonly #instanceOptions: InstanceOptions;
  /** Why the pool cannot render at all, when it cannot. */
  readonly #unusable: string | undefined;
  readonly #waiters: (() => void)[] = [];
  #closed = false;
  /** Instances replaced after they died or ran over their time. */
  #replacements = 0;
  /** The version probe, asked once (see `#probe`). */
  #probed: Promise<string | undefined> | undefined;

  constructor(
    poolSize: number,
    renderTimeoutMs: number,
    instanceOptions: InstanceOptions,
    networkIsolation: 'auto' | 'required',
  ) {
    this.#renderTimeoutMs = renderTimeoutMs;
    const isolateNetwork = canIsolateNetwork();
    this.#instanceOptions = { ...instanceOptions, isolateNetwork };
    this.#unusable =
      networkIsolation === 'required' && !isolateNetwork
        ? 'a network namespace was required but unshare --net is not permitted here'
        : undefined;
    this.#slots = Array.from({ length: poolSize }, () => ({ instance: undefined, busy: false }));
    // soffice starts with the first document, then stays warm: a worker that never sees a
    // spreadsheet or a presentation never pays for one (about 90 MB and 2 s of CPU each).
  }

  async render(input: RenderInput, options: RenderOptions): Promise<Uint8Array> {
    if (input.kind !== 'spreadsheet' && input.kind !== 'presentation') {
      throw new TypeError(`the LibreOffice renderer does not draw ${input.kind}`);
    }
    if (this.#closed) throw new DisarmError('ERR_INTERNAL', 'the LibreOffice renderer is closed');
    if (this.#unusable !== undefined) throw new DisarmError('ERR_INTERNAL', this.#unusable);
    const limitMs = Math.min(options.timeoutMs, this.#renderTimeoutMs);
    // The caller's signal or the time limit, whichever comes first, stops this render.
    const controller = new AbortController();
    const abort = (): void => {
      controller.abort();
    };
    const timer = setTimeout(abort, limitMs);
    options.signal.addEventListener('abort', abort, { once: true });
    if (options.signal.aborted) abort();
    const timeout = controller.signal;
    const timedOut = (): DisarmError =>
      new DisarmError(
        'ERR_TIMEOUT',
        `LibreOffice did not draw the ${input.kind} within ${limitMs} ms`,
      );
    try {
      return await this.#renderIn(input, timeout, timedOut);
    } finally {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', abort);
    }
  }

  async #renderIn(
    input: RenderInput & { kind: DocumentKind },
    timeout: AbortSignal,
    timedOut: () => DisarmError,
  ): Promise<Uint8Array> {
    const slot = await this.#acquire(timeout).catch(() => {
      throw timedOut();
    });
    try {
      let instance: OfficeInstance;
      try {
        instance = await this.#instanceIn(slot, timeout);
      } catch (error) {
        if (timeout.aborted) throw timedOut();
        throw new DisarmError('ERR_INTERNAL', 'LibreOffice could not be started', { cause: error });
      }
      const stop = (): void => {
        void instance.kill();
      };
      timeout.addEventListener('abort', stop, { once: true });
      if (timeout.aborted) stop();
      try {
        return await instance.convert(input.kind, input.bytes);
      } catch (error) {
        if (timeout.aborted) throw timedOut();
        throw new DisarmError('ERR_INTERNAL', 'LibreOffice failed to draw the document', {
          cause: error,
        });
      } finally {
        timeout.removeEventListener('abort', stop);
        // A killed or crashed instance is replaced at once, warm for the next document.
        if (!instance.alive) {
          this.#replacements += 1;
          void instance.kill();
          void this.#startIn(slot);
        }
      }
    } finally {
      this.#release(slot);
    }
  }

  async status(): Promise<RendererStatus> {
    const network = this.#instanceOptions.isolateNetwork
      ? 'network: own namespace (unshare --net)'
      : 'network: not isolated (unshare --net is not permitted here); link updates and external images disabled in the profile';
    const base = { name: this.name, kinds: [...this.kinds] };
    if (this.#unusable !== undefined) {
      return { ...base, ready: false, detail: `${this.#unusable}; ${network}` };
    }
    const running = await Promise.all(
      this.#slots.map(async (slot) => slot.instance?.catch(() => undefined)),
    );
    const live = running.find((instance) => instance?.alive === true);
    const version = live?.version ?? (await this.#probe());
    if (version === undefined) {
      return {
        ...base,
        ready: false,
        detail: `${this.#instanceOptions.executable} or ${this.#instanceOptions.python} with uno not found; ${network}`,
      };
    }
    return {
      ...base,
      ready: !this.#closed,
      version,
      detail: `${this.#instanceOptions.executable}, pool of ${this.#slots.length} (${live === undefined ? 'started on the first document' : 'warm'}); ${network}; ${this.#replacements} replaced`,
    };
  }

  /**
   * The version soffice reports and whether the bridge's Python imports uno, asked once without
   * starting an office process; `undefined` when either is missing.
   */
  #probe(): Promise<string | undefined> {
    this.#probed ??= (async () => {
      const [office, python] = await Promise.all([
        run(this.#instanceOptions.executable, ['--version']),
        run(this.#instanceOptions.python, ['-c', 'import uno']),
      ]);
      if (office === undefined || python === undefined) return undefined;
      // "LibreOffice 7.4.7.2 40(Build:2)": the version is the second word.
      return /^\S+\s+(\S+)/.exec(office.trim())?.[1] ?? office.trim();
    })();
    return this.#probed;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const instances = this.#slots.map((slot) => slot.instance);
    for (const slot of this.#slots) slot.instance = undefined;
    await Promise.all(
      instances.map(async (starting) => {
        const instance = await starting?.catch(() => undefined);
        await instance?.kill();
      }),
    );
  }

  /** Starts an instance in `slot`, unless the pool is closed. */
  #startIn(slot: Slot): Promise<OfficeInstance> {
    const starting = this.#closed
      ? Promise.reject(new Error('the LibreOffice renderer is closed'))
      : OfficeInstance.start(this.#instanceOptions);
    // A failed start is reported by the render or status that awaits it.
    starting.catch(() => undefined);
    slot.instance = starting;
    return starting;
  }

  /** The slot's instance, started anew when it died or failed to start. */
  async #instanceIn(slot: Slot, signal?: AbortSignal): Promise<OfficeInstance> {
    // An instance still starting is waited for no longer than the render may take.
    const starting = (async (): Promise<OfficeInstance> => {
      const current = await slot.instance?.catch(() => undefined);
      return current?.alive === true ? current : this.#startIn(slot);
    })();
    if (signal === undefined) return starting;
    return Promise.race([
      starting,
      new Promise<never>((_, reject) => {
        const abort = (): void => {
          reject(new Error('aborted'));
        };
        if (signal.aborted) abort();
        signal.addEventListener('abort', abort, { once: true });
      }),
    ]);
  }

  /** A free slot, waiting in order for one; rejects when `signal` aborts first. */
  async #acquire(signal: AbortSignal): Promise<Slot> {
    for (;;) {
      const free = this.#slots.find((slot) => !slot.busy);
      if (free) {
        free.busy = true;
        return free;
      }
      if (signal.aborted) throw new Error('aborted');
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          signal.removeEventListener('abort', abort);
          resolve();
        };
        const abort = (): void => {
          this.#waiters.splice(this.#waiters.indexOf(wake), 1);
          reject(new Error('aborted'));
        };
        this.#waiters.push(wake);
        signal.addEventListener('abort', abort, { once: true });
      });
    }
  }

  #release(slot: Slot): void {
    slot.busy = false;
    this.#waiters.shift()?.();
  }
}

/**
 * Whether soffice can be started in a network namespace of its own: `unshare --net` needs root or
 * unprivileged user namespaces, which containers often forbid.
 */
/** `command`'s standard output, or `undefined` when it cannot run or fails. */
function run(command: string, args: readonly string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: PROBE_TIMEOUT_MS }, (error, stdout) => {
      resolve(error === null ? stdout : undefined);
    });
  });
}

function canIsolateNetwork(): boolean {
  const probe = spawnSync('unshare', ['--net', '--', 'true'], { stdio: 'ignore', timeout: 5_000 });
  return probe.status === 0;
}
