import { connect } from 'node:net';
import type { Socket } from 'node:net';

import { DisarmError } from '../errors.ts';
import type { ScanContext, Scanner } from './scanner.ts';

/** clamd's TCP port when `TCPSocket` is set without a number (clamd.conf(5)). */
export const DEFAULT_CLAMD_PORT = 3310;
/** How long connecting to clamd may take before the scan fails. */
export const DEFAULT_CLAMD_CONNECT_TIMEOUT_MS = 5_000;
/**
 * How long clamd may stay silent: while it takes the streamed bytes, and from the end of the
 * stream to its answer (clamd's own `ReadTimeout` default is 120 s; a 100 MB file scans in seconds).
 */
export const DEFAULT_CLAMD_READ_TIMEOUT_MS = 60_000;
/** Connections one scanner holds open at once; further scans wait their turn. */
export const DEFAULT_CLAMD_MAX_CONNECTIONS = 4;

/** Bytes sent per `INSTREAM` chunk. */
const CHUNK_BYTES = 64 * 1024;
/** Longest answer read from clamd; a real one is a line (a long signature name at most). */
const MAX_REPLY_BYTES = 64 * 1024;
/** Length prefix of an `INSTREAM` chunk: 4 bytes, network byte order (clamd(8) "INSTREAM"). */
const CHUNK_PREFIX_BYTES = 4;
/** Most signature names taken from one answer (`AllMatchScans` lists every match). */
const MAX_THREAT_NAMES = 100;

/** Options of {@link createClamdScanner}: where clamd listens, and how far to trust it. */
export interface ClamdScannerOptions {
  /** clamd's Unix socket (`LocalSocket` in clamd.conf). Give this or {@link host}. */
  readonly socket?: string;
  /** clamd's TCP address (`TCPAddr`); give this or {@link socket}. */
  readonly host?: string;
  /** clamd's TCP port (`TCPSocket`). @default {@link DEFAULT_CLAMD_PORT} */
  readonly port?: number;
  /** @default {@link DEFAULT_CLAMD_CONNECT_TIMEOUT_MS} */
  readonly connectTimeoutMs?: number;
  /** Longest silence of clamd while streaming and before its answer. @default {@link DEFAULT_CLAMD_READ_TIMEOUT_MS} */
  readonly readTimeoutMs?: number;
  /** Connections open at once; more scans queue. @default {@link DEFAULT_CLAMD_MAX_CONNECTIONS} */
  readonly maxConnections?: number;
  /**
   * clamd's `StreamMaxLength`, when known: bytes larger than this are not sent, since clamd
   * would stop reading them. Unknown, every file is sent and clamd's refusal (`INSTREAM size
   * limit exceeded`) tells. Either way such a file cannot be scanned: it fails like an
   * unreachable clamd (or, with {@link failOpen}, goes on unscanned). Keep clamd's limit at least
   * the engine's `maxBytes`, so that every accepted file can be scanned.
   * @default unknown
   */
  readonly streamMaxLengthBytes?: number;
  /**
   * What happens when clamd cannot give an answer (unreachable, timed out, an error reply, bytes
   * over its size limit). `false`: the scan throws a {@link DisarmError} `ERR_INTERNAL`, so the
   * file fails as a service fault and is never passed. `true`: the file goes on as if clean,
   * and {@link onSkipped} is told.
   *
   * **Security:** fail-open lets a file through unscanned whenever clamd is down, which an
   * attacker may be able to cause (flooding it with large files). Use it only where availability
   * matters more than the antivirus verdict.
   * @default false
   */
  readonly failOpen?: boolean;
  /**
   * Told about every file that went on unscanned because of {@link failOpen}.
   * @default a process warning (`process.emitWarning`, code `DISARM_CLAMD_SKIPPED`), which Node
   *   prints on stderr
   */
  readonly onSkipped?: (error: DisarmError, context: ScanContext) => void;
}

/** A {@link Scanner} backed by ClamAV's clamd, with its readiness probes. */
export interface ClamdScanner extends Scanner {
  /** `clamav` */
  readonly name: 'clamav';
  /**
   * Asks clamd `PING`; resolves once it answers `PONG`. Readiness checks use it.
   * @throws {DisarmError} `ERR_INTERNAL` when clamd does not answer in time (whatever `failOpen`).
   */
  ping(): Promise<void>;
  /**
   * clamd's `VERSION` answer, e.g. `ClamAV 1.4.6/27472/Thu Nov 26 09:21:00 2026`.
   * @throws {DisarmError} `ERR_INTERNAL` when clamd does not answer in time.
   */
  version(): Promise<string>;
}

interface Settings {
  readonly address: { readonly path: string } | { readonly host: string; readonly port: number };
  readonly connectTimeoutMs: number;
  readonly readTimeoutMs: number;
  readonly streamMaxLengthBytes: number | undefined;
  readonly failOpen: boolean;
  readonly onSkipped: (error: DisarmError, context: ScanContext) => void;
}

/**
 * A scanner that streams each file to ClamAV's clamd (`zINSTREAM`, clamd(8)) over its Unix
 * socket or TCP, and returns the signature names clamd reports (`stream: <name> FOUND`). Put it
 * in `options.scanners` beside the built-in scanner.
 *
 * Fails closed: when clamd cannot answer, the scan throws and the file fails (`failed` /
 * `internal_error` in the service) instead of passing unscanned, unless {@link
 * ClamdScannerOptions.failOpen} says otherwise.
 *
 * @example
 * ```ts
 * import { builtinScanner, createClamdScanner, disarm } from '@disarm/core';
 *
 * const clamd = createClamdScanner({ socket: '/run/clamav/clamd.ctl' });
 * await clamd.ping();
 * const outcome = await disarm(
 *   { path: 'upload.docx', fileName: 'upload.docx' },
 *   { scanners: [builtinScanner, clamd] },
 * );
 * ```
 * @throws {TypeError} for invalid options (neither or both of `socket` and `host`, a bad number).
 */
export function createClamdScanner(options: ClamdScannerOptions): ClamdScanner {
  const settings = toSettings(options);
  const slots = new ConnectionSlots(
    positiveInteger('maxConnections', options.maxConnections, DEFAULT_CLAMD_MAX_CONNECTIONS),
  );
  /** Streams `size` bytes of `content` to clamd; the names it reports. */
  async function scanStream(
    size: number,
    content: AsyncIterable<Uint8Array>,
    context: ScanContext,
  ): Promise<readonly string[]> {
    try {
      if (settings.streamMaxLengthBytes !== undefined && size > settings.streamMaxLengthBytes) {
        throw unavailable(
          `the file is ${size} bytes, over clamd's stream limit of ${settings.streamMaxLengthBytes} bytes (StreamMaxLength)`,
        );
      }
      const reply = await slots.run(context.signal, () =>
        exchange(settings, streamCommand(content), context.signal),
      );
      return parseScanReply(reply);
    } catch (error) {
      const fault = toFault(error);
      if (!settings.failOpen || context.signal.aborted) throw fault;
      settings.onSkipped(fault, context);
      return [];
    }
  }
  return {
    name: 'clamav',
    scan(bytes, context) {
      return scanStream(bytes.length, singleChunk(bytes), context);
    },
    // A file on disk is streamed to clamd as it is read, never held whole.
    scanFile(file, context) {
      return scanStream(file.size, file.chunks(), context);
    },
    async ping() {
      const reply = await exchangeOrFault(settings, [command('PING')]);
      if (reply !== 'PONG') throw unavailable(`clamd answered PING with "${truncate(reply)}"`);
    },
    async version() {
      const reply = await exchangeOrFault(settings, [command('VERSION')]);
      if (!reply.startsWith('ClamAV ')) {
        throw unavailable(`clamd answered VERSION with "${truncate(reply)}"`);
      }
      return reply;
    },
  };
}

function toSettings(options: ClamdScannerOptions): Settings {
  const value: unknown = options;
  if (typeof value !== 'object' || value === null) {
    throw new TypeError('clamd options must be an object');
  }
  const { socket, host } = options;
  if ((socket === undefined) === (host === undefined)) {
    throw new TypeError('clamd: give exactly one of socket (a Unix socket path) or host');
  }
  if (socket !== undefined && (typeof socket !== 'string' || socket === '')) {
    throw new TypeError('clamd: socket must be a non-empty path');
  }
  if (host !== undefined && (typeof host !== 'string' || host === '')) {
    throw new TypeError('clamd: host must be a non-empty host name or address');
  }
  if (socket !== undefined && options.port !== undefined) {
    throw new TypeError('clamd: port goes with host, not with socket');
  }
  const port = positiveInteger('port', options.port, DEFAULT_CLAMD_PORT);
  if (port > 65_535) throw new TypeError(`clamd: port must be at most 65535, got ${port}`);
  if (options.failOpen !== undefined && typeof options.failOpen !== 'boolean') {
    throw new TypeError('clamd: failOpen must be a boolean');
  }
  if (options.onSkipped !== undefined && typeof options.onSkipped !== 'function') {
    throw new TypeError('clamd: onSkipped must be a function');
  }
  return {
    address: socket !== undefined ? { path: socket } : { host: host ?? '', port },
    connectTimeoutMs: positiveInteger(
      'connectTimeoutMs',
      options.connectTimeoutMs,
      DEFAULT_CLAMD_CONNECT_TIMEOUT_MS,
    ),
    readTimeoutMs: positiveInteger(
      'readTimeoutMs',
      options.readTimeoutMs,
      DEFAULT_CLAMD_READ_TIMEOUT_MS,
    ),
    streamMaxLengthBytes:
      options.streamMaxLengthBytes === undefined
        ? undefined
        : positiveInteger('streamMaxLengthBytes', options.streamMaxLengthBytes, 0),
    failOpen: options.failOpen ?? false,
    onSkipped: options.onSkipped ?? warnSkipped,
  };
}

function positiveInteger(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`clamd: ${name} must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function warnSkipped(error: DisarmError, context: ScanContext): void {
  process.emitWarning(
    // The name is the submitter's: quoted as JSON, a line break in it cannot forge a log line.
    `${JSON.stringify(context.fileName)} was not scanned by clamd and goes on (fail-open): ${error.message}`,
    { code: 'DISARM_CLAMD_SKIPPED' },
  );
}

/** A clamd command in its null-terminated form (`z` prefix, clamd(8)). */
function command(name: string): Uint8Array {
  return new TextEncoder().encode(`z${name}\0`);
}

/** `zINSTREAM`, the content as length-prefixed chunks, and the zero-length chunk that ends them. */
async function* streamCommand(
  content: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array, void, undefined> {
  yield command('INSTREAM');
  for await (const piece of content) {
    for (let offset = 0; offset < piece.length; offset += CHUNK_BYTES) {
      const chunk = piece.subarray(offset, offset + CHUNK_BYTES);
      yield lengthPrefix(chunk.length);
      yield chunk;
    }
  }
  yield lengthPrefix(0);
}

// An async generator, to match a file's chunks; it never waits.
// eslint-disable-next-line @typescript-eslint/require-await
async function* singleChunk(bytes: Uint8Array): AsyncGenerator<Uint8Array, void, undefined> {
  yield bytes;
}

function lengthPrefix(length: number): Uint8Array {
  const prefix = new Uint8Array(CHUNK_PREFIX_BYTES);
  new DataView(prefix.buffer).setUint32(0, length, false);
  return prefix;
}

/**
 * The signature names of a `zINSTREAM` answer: `stream: OK`, or one `stream: <name> FOUND` per
 * match (several with `AllMatchScans`), each ended by a NUL. Anything else (`... ERROR`, such as
 * `INSTREAM size limit exceeded. ERROR`) is no answer about the file.
 */
function parseScanReply(reply: string): string[] {
  const names = new Set<string>();
  for (const line of reply.split('\0')) {
    const text = line.trim();
    if (text === '') continue;
    if (text === 'stream: OK') continue;
    const found = /^stream: (.+) FOUND$/.exec(text);
    if (!found?.[1]) {
      if (/size limit exceeded/i.test(text)) {
        throw unavailable("the file is over clamd's stream limit (StreamMaxLength)");
      }
      throw unavailable(`clamd answered "${truncate(text)}"`);
    }
    // ExtendedDetectionInfo appends "(<md5>:<size>)" to the name.
    names.add(found[1].replace(/\([0-9a-f]{32}:\d+\)$/, ''));
    if (names.size >= MAX_THREAT_NAMES) break;
  }
  if (names.size === 0 && !reply.includes('stream: OK')) throw unavailable('clamd gave no answer');
  return [...names];
}

async function exchangeOrFault(
  settings: Settings,
  request: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
): Promise<string> {
  try {
    return (await exchange(settings, request, undefined)).replace(/\0+$/, '');
  } catch (error) {
    throw toFault(error);
  }
}

/**
 * Sends `request` on a new connection and resolves with everything clamd answers until it closes
 * the connection (the `z` commands are one request, one answer, then close; clamd(8)).
 */
function exchange(
  settings: Settings,
  request: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal | undefined,
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let connected = false;
    let sent = false;
    let settled = false;
    const socket: Socket = connect(settings.address);
    const finish = (error: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(connectTimer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onAbort = (): void => {
      finish(new Error('the scan was abandoned'));
    };
    const connectTimer = setTimeout(() => {
      finish(unavailable(`could not connect to clamd within ${settings.connectTimeoutMs} ms`));
    }, settings.connectTimeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted === true) onAbort();

    socket.on('data', (data: Buffer) => {
      received += data.length;
      if (received > MAX_REPLY_BYTES) {
        finish(unavailable(`clamd answered more than ${MAX_REPLY_BYTES} bytes`));
        return;
      }
      chunks.push(data);
    });
    // clamd answers, then closes: the answer is complete at the end of the stream. When it stops
    // reading early (its stream limit), writes fail after its answer arrived; the answer wins.
    socket.on('end', () => {
      finish(undefined);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (received > 0) {
        finish(undefined);
        return;
      }
      const code = error.code ?? 'unknown error';
      let reason = `could not connect to clamd (${code})`;
      if (connected) {
        reason = sent
          ? `the connection to clamd failed (${code})`
          : `clamd stopped taking the file (${code}), as it does past its StreamMaxLength`;
      }
      // The code is in the message; the error itself would repeat it wherever a fault's detail
      // adds its cause's code.
      finish(unavailable(reason));
    });
    socket.setTimeout(settings.readTimeoutMs, () => {
      finish(unavailable(`clamd did not answer within ${settings.readTimeoutMs} ms`));
    });
    socket.on('connect', () => {
      connected = true;
      clearTimeout(connectTimer);
      void writeAll(socket, request, () => received > 0).then((done) => {
        // A failed write is reported by the 'error' or 'end' event that follows it.
        sent = done;
      });
    });
  });
}

/**
 * Writes the chunks one after another, each once the previous one was handed to the system, and
 * stops as soon as clamd has answered: past its `StreamMaxLength` it answers and stops reading,
 * and a write after that would fail and lose the answer.
 * @returns whether every chunk was written.
 */
async function writeAll(
  socket: Socket,
  request: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  answered: () => boolean,
): Promise<boolean> {
  for await (const chunk of request) {
    if (socket.destroyed || answered()) return false;
    const written = await new Promise<boolean>((resolve) => {
      socket.write(chunk, (error) => {
        resolve(error == null);
      });
    });
    if (!written) return false;
  }
  return true;
}

/** Fails a file as a service fault: the antivirus could not give an answer. */
function unavailable(reason: string): DisarmError {
  return new DisarmError(
    'ERR_INTERNAL',
    `the antivirus scanner could not scan the file: ${reason}`,
  );
}

function toFault(error: unknown): DisarmError {
  return error instanceof DisarmError
    ? error
    : unavailable(error instanceof Error ? error.message : String(error));
}

function truncate(text: string): string {
  const printable = text.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 80 ? `${printable.slice(0, 80)}…` : printable;
}

/** At most `size` connections open at once; waiters are served in order. */
class ConnectionSlots {
  readonly #size: number;
  #open = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#size = size;
  }

  async run<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    if (signal.aborted) throw new Error('the scan was abandoned');
    if (this.#open >= this.#size) {
      await new Promise<void>((resolve, reject) => {
        const grant = (): void => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = (): void => {
          const index = this.#waiting.indexOf(grant);
          if (index >= 0) this.#waiting.splice(index, 1);
          reject(new Error('the scan was abandoned'));
        };
        signal.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(grant);
      });
    } else {
      this.#open += 1;
    }
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#open -= 1;
    }
  }
}
