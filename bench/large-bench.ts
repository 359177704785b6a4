/**
 * Large files in bounded memory: time and peak resident set of one worker process, and of the API
 * process, for a zip of camera photos and a PDF of scanned pages of 50, 100, 250 and 450 MB (the
 * Growth plan's upload ceiling is 450 MiB), side by side with the floor of the same work done by
 * the tools themselves: `unzip`, each photo re-encoded by sharp at the engine's settings, `zip`;
 * for the PDF a `qpdf` copy. Then one end-to-end run of the embedded default at the largest size:
 * upload, processing, stored copy.
 *
 * What runs is what an operator runs: the built packages (`npm run build` first, unless
 * `--no-build`), a pool worker as `disarm serve` forks it, `disarm serve --role api`. The inputs
 * are built in code (`@disarm/fixtures`: 12 MP photos with EXIF and a thumbnail, A4 colour scans
 * at 300 dpi) and kept in `bench/.out/large-bench` between runs; never commit them.
 *
 * @example
 * ```sh
 * npm run bench:large                      # writes bench/RESULTS-large.md
 * npm run bench:large -- --sizes 50,100    # some sizes; prints only
 * ```
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

import { buildCameraJpeg, writePhotoArchive, writeScannedPdf } from '@disarm/fixtures';

import { renderTable } from './report.ts';
import { writeResultsFile } from './results-file.ts';
import { postAdmin } from './serve-node.ts';

const BENCH_DIR = import.meta.dirname;
const REPO_DIR = resolve(BENCH_DIR, '..');
const RESULTS = join(BENCH_DIR, 'RESULTS-large.md');
const OUT_DIR = join(BENCH_DIR, '.out', 'large-bench');
const NODE_DIST = join(REPO_DIR, 'packages', 'node', 'dist');
const SIZES_MB = [50, 100, 250, 450] as const;
const MB_BYTES = 1_000_000;
const MIB_BYTES = 1024 * 1024;
/** The Growth plan's upload ceiling, the engine's `maxBytes` for every run. */
const MAX_BYTES = 450 * MIB_BYTES;
/** The multipart lane takes at most this (`MAX_FILE_SIZE_BYTES`). */
const MULTIPART_MAX_BYTES = 100 * MIB_BYTES;
/** A run slower than this is broken, not slow. */
const RUN_TIMEOUT_MS = 1_800_000;
/** How often the resident sets are sampled. */
const SAMPLE_INTERVAL_MS = 20;
/** Bump when the inputs' builders change, so cached inputs are made again. */
const INPUTS_VERSION = 1;
/** What the pool gives its workers (packages/node/src/pool/_spawn.ts), given to the floor too. */
const WORKER_ENV = {
  VIPS_CONCURRENCY: '1',
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: String(MIB_BYTES),
};

type Kind = 'photos' | 'scan';

interface Input {
  readonly kind: Kind;
  readonly targetMb: number;
  readonly path: string;
  readonly fileName: string;
  readonly bytes: number;
  /** Photos or pages. */
  readonly items: number;
}

/** Time and peak resident set of one measured run. */
interface Measure {
  readonly seconds: number;
  readonly peakMiB: number;
  readonly note?: string;
}

function fail(message: string): never {
  process.stderr.write(`bench/large: ${message}\n`);
  process.exit(1);
}

/** `VmRSS` and `VmHWM` of a process, in MiB (proc(5)); undefined once it is gone. */
function memoryOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string): number =>
      Number(new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(status)?.[1] ?? 0) / 1024;
    return { rss: field('VmRSS'), peak: field('VmHWM') };
  } catch {
    return undefined;
  }
}

/** Samples a process's resident set until stopped; the highest seen. */
function sampleRss(pid: () => number | undefined): { stop(): number } {
  let peak = 0;
  const timer = setInterval(() => {
    const id = pid();
    if (id !== undefined) peak = Math.max(peak, memoryOf(id)?.rss ?? 0);
  }, SAMPLE_INTERVAL_MS);
  return {
    stop() {
      clearInterval(timer);
      const id = pid();
      if (id !== undefined) peak = Math.max(peak, memoryOf(id)?.rss ?? 0);
      return peak;
    },
  };
}

/** The inputs at `targetMb`, made once and kept between runs. */
async function inputOf(kind: Kind, targetMb: number): Promise<Input> {
  const fileName = kind === 'photos' ? `photos-${targetMb}.zip` : `scan-${targetMb}.pdf`;
  const path = join(OUT_DIR, fileName);
  const sidecar = `${path}.json`;
  if (existsSync(path) && existsSync(sidecar)) {
    const kept = JSON.parse(readFileSync(sidecar, 'utf8')) as Input & { version: number };
    if (kept.version === INPUTS_VERSION && statSync(path).size === kept.bytes) return kept;
  }
  process.stderr.write(`making ${fileName}…\n`);
  const made =
    kind === 'photos'
      ? await writePhotoArchive(path, { targetBytes: targetMb * MB_BYTES })
      : await writeScannedPdf(path, { targetBytes: targetMb * MB_BYTES });
  const input: Input = {
    kind,
    targetMb,
    path,
    fileName,
    bytes: made.bytes,
    items: 'photos' in made ? made.photos : made.pages,
  };
  writeFileSync(sidecar, JSON.stringify({ ...input, version: INPUTS_VERSION }));
  return input;
}

/** The pool of the built `@disarm/node`, as `disarm serve` runs it. */
interface BuiltPool {
  run(job: Record<string, unknown>): Promise<{ status: string; detail?: string }>;
  stats(): { pids: number[] };
  close(): Promise<void>;
}

/** One worker of a fresh pool, warmed up, runs the file; its time and peak (`VmHWM`). */
async function measureWorker(input: Input): Promise<Measure> {
  const built = (await import(pathToFileURL(join(NODE_DIST, 'index.mjs')).href)) as {
    createWorkerPool: (options: Record<string, unknown>) => BuiltPool;
  };
  const { createWorkerPool } = built;
  const pool = createWorkerPool({ size: 1, renderers: ['builtin'], workerOutput: 'stderr' });
  const work = await mkdtemp(join(OUT_DIR, 'worker-'));
  try {
    // A service is warm: the engine's code is loaded by a first small photo.
    const warm = join(work, 'warm.jpg');
    writeFileSync(warm, await buildCameraJpeg({ width: 640, height: 480 }));
    await pool.run({ inputPath: warm, fileName: 'warm.jpg', outputDir: work, outputName: 'warm' });
    const pid = pool.stats().pids[0];
    const started = performance.now();
    const result = await pool.run({
      inputPath: input.path,
      fileName: input.fileName,
      outputDir: work,
      outputName: 'output',
      options: { limits: { maxBytes: MAX_BYTES, timeoutMs: RUN_TIMEOUT_MS } },
    });
    const seconds = (performance.now() - started) / 1000;
    const peakMiB = pid === undefined ? Number.NaN : (memoryOf(pid)?.peak ?? Number.NaN);
    if (result.status !== 'cleaned') {
      return { seconds, peakMiB, note: `${result.status}: ${result.detail ?? ''}` };
    }
    return { seconds, peakMiB };
  } finally {
    await pool.close();
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs a command under GNU time: its wall seconds and peak resident set. */
function timed(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Measure {
  const run = spawnSync('/usr/bin/time', ['-f', '__TIME__ %e %M', command, ...args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    timeout: RUN_TIMEOUT_MS,
    maxBuffer: 64 * MIB_BYTES,
  });
  const match = /__TIME__ ([\d.]+) (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !match) {
    return {
      seconds: Number.NaN,
      peakMiB: Number.NaN,
      note: `${command} failed: ${run.stderr.slice(-200)}`,
    };
  }
  return { seconds: Number(match[1]), peakMiB: Number(match[2]) / 1024 };
}

/**
 * The engine's re-encoding of a camera JPEG (packages/core/src/handlers/image/rebuild.ts): oriented
 * pixels, quality 92, the input's progressive mode and 4:2:0 chroma, one libvips thread.
 */
const REENCODE = `
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
sharp.cache(false);
const dir = process.argv[1];
for (const name of readdirSync(dir, { recursive: true })) {
  if (!/\\.jpe?g$/i.test(name)) continue;
  const path = join(dir, name);
  const metadata = await sharp(path).metadata();
  await sharp(path, { failOn: 'error', sequentialRead: true })
    .autoOrient()
    .jpeg({ quality: 92, progressive: metadata.isProgressive, chromaSubsampling: metadata.chromaSubsampling === '4:4:4' ? '4:4:4' : '4:2:0', mozjpeg: false })
    .toFile(path + '.new');
}
`;

/** The floor of the same work: unzip, re-encode each photo, zip; or a qpdf copy. */
async function measureFloor(input: Input): Promise<Measure> {
  const work = await mkdtemp(join(OUT_DIR, 'floor-'));
  try {
    if (input.kind === 'scan') return timed('qpdf', [input.path, join(work, 'copy.pdf')]);
    const photos = join(work, 'photos');
    const steps = [
      timed('unzip', ['-q', input.path, '-d', photos]),
      timed(process.execPath, ['--input-type=module', '-e', REENCODE, photos], {
        cwd: REPO_DIR,
        env: { ...process.env, ...WORKER_ENV },
      }),
      // JPEGs stored, as the engine writes them.
      timed('zip', ['-q', '-r', '-n', '.jpg:.JPG', join(work, 'out.zip'), '.'], { cwd: photos }),
    ];
    const failed = steps.find((step) => step.note !== undefined);
    return {
      seconds: steps.reduce((sum, step) => sum + step.seconds, 0),
      peakMiB: Math.max(...steps.map((step) => step.peakMiB)),
      ...(failed?.note === undefined ? {} : { note: failed.note }),
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A built `disarm serve`, its API and storage addresses, and an organisation on the Growth plan. */
interface Service {
  readonly child: ChildProcess;
  readonly apiUrl: string;
  readonly apiKey: string;
  stop(): Promise<void>;
}

async function startService(role: 'api' | 'all'): Promise<Service> {
  const adminToken = 'b'.repeat(64);
  const dataDir = await mkdtemp(join(OUT_DIR, `serve-${role}-`));
  const child = spawn(
    process.execPath,
    [
      join(NODE_DIST, 'cli.mjs'),
      'serve',
      `--role=${role}`,
      `--data-dir=${dataDir}`,
      '--port=0',
      '--storage-port=0',
      '--no-demo',
      '--log-level=warn',
      '--workers=1',
      '--renderers=builtin',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DISARM_ADMIN_TOKEN: adminToken },
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const apiUrl = await new Promise<string>((resolveUrl, reject) => {
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const found = /API on (http:\/\/\S+),/.exec(stderr);
      if (found?.[1] !== undefined) resolveUrl(found[1]);
    });
    child.once('exit', (code) => {
      reject(new Error(`disarm serve exited with ${String(code)}:\n${stderr}`));
    });
  });
  const organisation = await postAdmin(apiUrl, adminToken, '/v1/admin/organisations', {
    name: 'Large files',
    plan: 'growth',
  });
  const key = await postAdmin(
    apiUrl,
    adminToken,
    `/v1/admin/organisations/${String(organisation.id)}/keys`,
    { name: 'bench' },
  );
  return {
    child,
    apiUrl,
    apiKey: String(key.key),
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Sends a file as a request body (with `head` and `tail` around it) as it is read. */
async function sendFile(
  url: string,
  options: {
    readonly method: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly path: string;
    readonly head?: Buffer;
    readonly tail?: Buffer;
  },
): Promise<{ status: number; body: string }> {
  const head = options.head ?? Buffer.alloc(0);
  const tail = options.tail ?? Buffer.alloc(0);
  const outgoing = request(url, {
    method: options.method,
    headers: {
      ...options.headers,
      'Content-Length': head.length + statSync(options.path).size + tail.length,
    },
  });
  const answered = once(outgoing, 'response') as Promise<[IncomingMessage]>;
  outgoing.write(head);
  for await (const chunk of createReadStream(options.path)) {
    if (!outgoing.write(chunk as Buffer)) await once(outgoing, 'drain');
  }
  outgoing.end(tail);
  const [response] = await answered;
  let body = '';
  response.setEncoding('utf8');
  for await (const part of response) body += String(part);
  return { status: response.statusCode ?? 0, body };
}

/** Submits `input` through the multipart lane. */
async function submitMultipart(service: Service, input: Input): Promise<unknown> {
  const boundary = `bench-${Date.now()}`;
  const sent = await sendFile(`${service.apiUrl}/v1/documents`, {
    method: 'POST',
    headers: {
      'X-Api-Key': service.apiKey,
      'Idempotency-Key': `multipart-${input.fileName}-${Date.now()}`,
      'Content-Type': `multipart/form-data; boundary=${boundary}`,
    },
    path: input.path,
    head: Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${input.fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
  });
  if (sent.status !== 202) throw new Error(`multipart answered ${sent.status}: ${sent.body}`);
  return JSON.parse(sent.body);
}

/** Creates an upload, PUTs `input` to the storage origin and submits it; the document. */
async function submitUpload(service: Service, input: Input): Promise<{ id: string }> {
  const headers = { 'X-Api-Key': service.apiKey, 'Content-Type': 'application/json' };
  const created = (await (
    await fetch(`${service.apiUrl}/v1/uploads`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ fileName: input.fileName }),
    })
  ).json()) as { uploadId: string; uploadUrl: string; requiredHeaders: Record<string, string> };
  const put = await sendFile(created.uploadUrl, {
    method: 'PUT',
    headers: created.requiredHeaders,
    path: input.path,
  });
  if (put.status !== 201) throw new Error(`the upload PUT answered ${put.status}: ${put.body}`);
  const submitted = await fetch(`${service.apiUrl}/v1/documents`, {
    method: 'POST',
    headers: { ...headers, 'Idempotency-Key': `upload-${created.uploadId}` },
    body: JSON.stringify({ uploadId: created.uploadId }),
  });
  if (submitted.status !== 202) {
    throw new Error(
      `submitting the upload answered ${submitted.status}: ${await submitted.text()}`,
    );
  }
  return (await submitted.json()) as { id: string };
}

/** The API process's time and peak for a submission through each lane that takes `input`. */
async function measureApi(
  service: Service,
  input: Input,
): Promise<{ multipart?: Measure; upload: Measure }> {
  const pid = service.child.pid;
  const measure = async (send: () => Promise<unknown>): Promise<Measure> => {
    const sampler = sampleRss(() => pid);
    const started = performance.now();
    await send();
    return { seconds: (performance.now() - started) / 1000, peakMiB: sampler.stop() };
  };
  const multipart =
    input.bytes <= MULTIPART_MAX_BYTES
      ? await measure(() => submitMultipart(service, input))
      : undefined;
  const upload = await measure(() => submitUpload(service, input));
  return multipart === undefined ? { upload } : { multipart, upload };
}

/** Child processes of `pid` (its pool's workers), from `/proc/<pid>/task/*\/children`. */
async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => []);
  const children: number[] = [];
  for (const task of tasks) {
    const text = await readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => '');
    children.push(...text.split(/\s+/).filter(Boolean).map(Number));
  }
  return children;
}

/** The embedded default end to end: upload, processing, stored copy; both processes' peaks. */
async function measureEndToEnd(
  input: Input,
): Promise<{ seconds: number; apiMiB: number; workerMiB: number; status: string }> {
  const service = await startService('all');
  try {
    const pid = service.child.pid ?? 0;
    const sampler = sampleRss(() => pid);
    const workerPeaks = new Map<number, number>();
    const watcher = setInterval(() => {
      void childrenOf(pid).then((children) => {
        for (const child of children) {
          workerPeaks.set(child, Math.max(workerPeaks.get(child) ?? 0, memoryOf(child)?.peak ?? 0));
        }
      });
    }, 200);
    const started = performance.now();
    const document = await submitUpload(service, input);
    let status = 'pending';
    while (status === 'pending' || status === 'processing') {
      await new Promise((resolveWait) => setTimeout(resolveWait, 200));
      const answer = (await (
        await fetch(`${service.apiUrl}/v1/documents/${document.id}`, {
          headers: { 'X-Api-Key': service.apiKey },
        })
      ).json()) as { status: string; reason?: string };
      status = answer.reason === undefined ? answer.status : `${answer.status} (${answer.reason})`;
    }
    const seconds = (performance.now() - started) / 1000;
    clearInterval(watcher);
    for (const child of await childrenOf(pid)) {
      workerPeaks.set(child, Math.max(workerPeaks.get(child) ?? 0, memoryOf(child)?.peak ?? 0));
    }
    return {
      seconds,
      apiMiB: sampler.stop(),
      workerMiB: Math.max(0, ...workerPeaks.values()),
      status,
    };
  } finally {
    await service.stop();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { sizes: { type: 'string' }, 'no-build': { type: 'boolean', default: false } },
  });
  if (process.platform !== 'linux') fail('the bench reads /proc: it runs on Linux');
  const sizes = values.sizes === undefined ? [...SIZES_MB] : values.sizes.split(',').map(Number);
  if (sizes.some((size) => !Number.isSafeInteger(size) || size < 1 || size > 450)) {
    fail('--sizes takes sizes in MB between 1 and 450, e.g. 50,100');
  }
  const full = values.sizes === undefined;
  const ensured = spawnSync('bash', [join(REPO_DIR, 'scripts', 'ensure-bench-tools.sh')], {
    stdio: 'inherit',
  });
  if (ensured.status !== 0) fail('the floor needs unzip, zip, qpdf and GNU time (see above)');
  if (!values['no-build']) {
    const built = spawnSync('npm', ['run', '--silent', 'build'], {
      cwd: REPO_DIR,
      stdio: 'inherit',
    });
    if (built.status !== 0) fail('npm run build failed');
  }
  mkdirSync(OUT_DIR, { recursive: true });
  const loadStart = loadavg()[0] ?? 0;
  const started = new Date();

  const rows: string[][] = [];
  const api = await startService('api');
  const apiRest = memoryOf(api.child.pid ?? 0)?.rss ?? Number.NaN;
  const apiRows: string[][] = [];
  let largest: Partial<Record<Kind, Input>> = {};
  try {
    for (const kind of ['photos', 'scan'] as const) {
      for (const size of sizes) {
        const input = await inputOf(kind, size);
        largest = { ...largest, [kind]: input };
        const ours = await measureWorker(input);
        const floor = await measureFloor(input);
        const received = await measureApi(api, input);
        const row = [
          kind === 'photos'
            ? `zip of ${input.items} photos`
            : `PDF of ${input.items} scanned pages`,
          mb(input.bytes),
          seconds(ours),
          mib(ours.peakMiB),
          seconds(floor),
          mib(floor.peakMiB),
          ratio(ours.seconds, floor.seconds),
          ratio(ours.peakMiB, floor.peakMiB),
          [ours.note, floor.note].filter(Boolean).join('; '),
        ];
        rows.push(row);
        apiRows.push([
          input.fileName,
          mb(input.bytes),
          received.multipart === undefined
            ? 'over the lane'
            : `${seconds(received.multipart)} s / ${mib(received.multipart.peakMiB)}`,
          `${seconds(received.upload)} s / ${mib(received.upload.peakMiB)}`,
        ]);
        process.stderr.write(`${row.join(' | ')}\n${apiRows.at(-1)?.join(' | ') ?? ''}\n`);
      }
    }
  } finally {
    await api.stop();
  }

  const endToEnd: string[][] = [];
  for (const input of [largest.photos, largest.scan]) {
    if (input === undefined) continue;
    const run = await measureEndToEnd(input);
    endToEnd.push([
      input.fileName,
      run.status,
      mb(input.bytes),
      run.seconds.toFixed(1),
      mib(run.apiMiB),
      mib(run.workerMiB),
    ]);
    process.stderr.write(`${endToEnd.at(-1)?.join(' | ') ?? ''}\n`);
  }
  const loadEnd = loadavg()[0] ?? 0;

  const generated = `# Large files in bounded memory

Generated by \`npm run bench:large\` on ${started.toISOString()} with the built packages, on
${cpus()[0]?.model.trim() ?? 'an unknown CPU'} (${availableParallelism()} cores shared with other
work, ${Math.round(totalmem() / 1024 ** 3)} GiB), Node ${process.version}. Load average (1 min):
${loadStart.toFixed(2)} at the start, ${loadEnd.toFixed(2)} at the end. Inputs built in code:
12 MP camera photos (EXIF, a thumbnail, quality 95, deflated in the zip as desktop tools do) and
A4 colour scans at 300 dpi (one JPEG image per page).

## One worker process

A fresh pool of one worker (as \`disarm serve\` forks it), warmed up by a small photo, runs the
file with the Growth plan's 450 MiB \`maxBytes\`; its peak is the process's \`VmHWM\`. The floor
is the same work by the tools themselves, each under GNU time: \`unzip\`, every photo re-encoded
by sharp at the engine's settings (one libvips thread, the worker's allocator settings), \`zip\`
storing the JPEGs (seconds added, peak the largest); for the PDF a \`qpdf\` copy. Ratios are
ours over the floor.

${renderTable(
  [
    'input',
    'MB',
    'ours s',
    'ours peak MiB',
    'floor s',
    'floor peak MiB',
    'time ×',
    'peak ×',
    'note',
  ],
  rows,
  1,
  8,
)}

## The API process

\`disarm serve --role api\` (SQLite, local blobs; ${mib(apiRest)} MiB resident at rest). Each file
is sent by the multipart lane (up to 100 MiB, with an \`Idempotency-Key\`, so the fingerprint
hashes it as it streams) and by the upload lane (\`POST /v1/uploads\`, the PUT to the storage
origin, the submission); seconds and the process's peak resident set during each.

${renderTable(['input', 'MB', 'multipart (s / peak MiB)', 'upload and PUT (s / peak MiB)'], apiRows, 1)}

## End to end, the embedded default

\`disarm serve\` with one worker: the largest file of each kind uploaded, submitted, processed and
its copy stored; seconds from the upload to the end, and the peaks of the process serving the API
(it runs the dispatcher too) and of the worker.

${renderTable(['input', 'status', 'MB', 'seconds', 'API process peak MiB', 'worker peak MiB'], endToEnd, 2)}
`;
  process.stdout.write(`${generated}\n`);
  if (full) await writeResultsFile(RESULTS, generated);
}

function mb(bytes: number): string {
  return (bytes / MB_BYTES).toFixed(0);
}

function mib(value: number): string {
  return Number.isFinite(value) ? value.toFixed(0) : '-';
}

function seconds(measure: Measure): string {
  return Number.isFinite(measure.seconds) ? measure.seconds.toFixed(1) : '-';
}

function ratio(ours: number, floor: number): string {
  return Number.isFinite(ours) && Number.isFinite(floor) && floor > 0
    ? `${(ours / floor).toFixed(2)}×`
    : '-';
}

await main();
