/**
 * The API bench: starts `disarm serve` (the embedded default: SQLite, local blobs, worker pool,
 * request log) and a bare `node:http` server that answers every request with the same JSON, side
 * by side in one run, drives both with `wrk` over loopback, and reports requests/s, p50/p99
 * latency and the ratio ours/bare for status reads, account reads and small sync submissions.
 *
 * @example
 * ```sh
 * npm run bench:api                   # 10 s per scenario and side, best of 2; updates bench/RESULTS.md
 * npm run bench:api -- --quick        # 3 s, one round; prints only
 * ```
 *
 * Exits 1 when a response is not the expected status or the tools are missing; 2 on bad arguments.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { buildImage } from '@disarm/fixtures';

import { API_SECTION_END, API_SECTION_START, withApiSection } from './api-section.ts';
import { renderTable } from './report.ts';

const BENCH_DIR = import.meta.dirname;
const REPO_DIR = resolve(BENCH_DIR, '..');
/** The committed launcher of the built CLI: what `npx disarm` runs. */
const CLI = join(REPO_DIR, 'packages', 'node', 'bin', 'disarm.mjs');
const ENSURE_TOOLS = join(REPO_DIR, 'scripts', 'ensure-bench-tools.sh');
const RESULTS = join(BENCH_DIR, 'RESULTS.md');

/** wrk: 16 connections on 2 threads, the load every published API figure was measured with. */
const CONNECTIONS = 16;
const THREADS = 2;
const SECONDS = { full: 10, quick: 3 };
const ROUNDS = { full: 2, quick: 1 };
/** Rate limit of the bench organisation: counted on every request, never reached. */
const BENCH_RATE_LIMIT_PER_MINUTE = 100_000_000;
const STARTUP_TIMEOUT_MS = 60_000;
const BOUNDARY = 'disarmbenchboundary';

interface Scenario {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Uint8Array<ArrayBuffer>;
  /** The status every response must have. */
  readonly status: number;
}

interface WrkResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly unexpected: number;
}

interface ScenarioResult {
  readonly scenario: Scenario;
  readonly ours: WrkResult;
  readonly bare: WrkResult;
}

function fail(message: string, code = 1): never {
  process.stderr.write(`bench/api: ${message}\n`);
  process.exit(code);
}

/** Builds the packages, so the run measures what `npx disarm serve` runs. */
function build(): void {
  const built = spawnSync('npm', ['run', 'build'], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (built.status !== 0) fail('npm run build failed');
}

function ensureWrk(): void {
  const ensured = spawnSync('bash', [ENSURE_TOOLS], { stdio: 'inherit' });
  if (ensured.status !== 0 || spawnSync('wrk', ['--version']).error !== undefined) {
    fail('wrk is missing (scripts/ensure-bench-tools.sh installs it as root)');
  }
}

/** Starts `disarm serve` on free ports with a bootstrap admin token; resolves its API URL. */
async function startDisarm(
  dataDir: string,
  adminToken: string,
): Promise<{
  child: ChildProcess;
  apiUrl: string;
}> {
  // Logs (one JSON line per request at the default level) go to a file, as a service's would,
  // so reading them costs the bench nothing.
  const log = await open(join(dataDir, '..', 'serve.log'), 'w');
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--port',
      '0',
      '--storage-port',
      '0',
      '--host',
      '127.0.0.1',
      '--data-dir',
      dataDir,
      '--no-demo',
    ],
    {
      cwd: REPO_DIR,
      env: { ...process.env, DISARM_ADMIN_TOKEN: adminToken },
      stdio: ['ignore', log.fd, log.fd],
    },
  );
  await log.close();
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const text = await readFile(join(dataDir, '..', 'serve.log'), 'utf8');
    const url = /API on (http:\/\/\S+?),/.exec(text)?.[1];
    if (url !== undefined) {
      const apiUrl = url.replace('localhost', '127.0.0.1');
      const ready = await fetch(`${apiUrl}/readyz`).catch(() => undefined);
      if (ready?.status === 200) return { child, apiUrl };
    }
    if (child.exitCode !== null) fail(`disarm serve exited: ${text}`);
    await new Promise((done) => setTimeout(done, 200));
  }
  child.kill('SIGKILL');
  fail('disarm serve did not become ready');
}

async function adminJson(
  apiUrl: string,
  adminToken: string,
  path: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201 && response.status !== 200) {
    fail(`${path} answered ${response.status}: ${await response.text()}`);
  }
  return (await response.json()) as Record<string, unknown>;
}

function multipartBody(fileName: string, bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const joined = Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    ),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ]);
  return new Uint8Array(joined);
}

/** A wrk script that sends `scenario` and counts responses with another status. */
function wrkScript(scenario: Scenario): string {
  // Lua decimal escapes of every byte: safe for any header name, value and body.
  const lua = (text: string): string =>
    `"${[...Buffer.from(text)].map((byte) => `\\${byte}`).join('')}"`;
  const headers = Object.entries(scenario.headers)
    .map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`)
    .join('\n');
  const body =
    scenario.body === undefined
      ? ''
      : `wrk.body = "${[...scenario.body].map((byte) => `\\${byte}`).join('')}"`;
  return `wrk.method = "${scenario.method}"
${headers}
${body}
local unexpected = 0
function response(status, headers, body)
  if status ~= ${scenario.status} then unexpected = unexpected + 1 end
end
function done(summary, latency, requests)
  io.write(string.format("BENCH %d %d %.3f %.3f\\n", summary.requests, unexpected,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
`;
}

/**
 * Runs wrk against `baseUrl`. wrk's `response` callback runs per thread, so the unexpected
 * count is a lower bound; each scenario is also checked once with fetch before it runs.
 */
async function runWrk(
  baseUrl: string,
  scenario: Scenario,
  seconds: number,
  dir: string,
): Promise<WrkResult> {
  const script = join(dir, 'scenario.lua');
  await writeFile(script, wrkScript(scenario));
  const child = spawn(
    'wrk',
    [
      `-t${THREADS}`,
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      `${baseUrl}${scenario.path}`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) fail(`wrk exited with ${String(code)}: ${out}`);
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(out)?.[1];
  const line = /BENCH (\d+) (\d+) ([\d.]+) ([\d.]+)/.exec(out);
  if (rate === undefined || line === null) fail(`cannot read wrk's output: ${out}`);
  return {
    requestsPerSecond: Number(rate),
    requests: Number(line[1]),
    unexpected: Number(line[2]),
    p50Ms: Number(line[3]),
    p99Ms: Number(line[4]),
  };
}

/** The bare server: `node:http` answering every request with `body` as JSON, in its own process. */
async function startBare(bodies: ReadonlyMap<string, Buffer>): Promise<{
  child: ChildProcess;
  url: string;
}> {
  const routes = JSON.stringify(
    Object.fromEntries([...bodies].map(([key, body]) => [key, body.toString('base64')])),
  );
  const source = `
    import { createServer } from 'node:http';
    const routes = new Map(Object.entries(${routes}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
    const server = createServer((req, res) => {
      const key = req.method + ' ' + req.url.split('?')[0];
      const send = () => {
        const body = routes.get(key) ?? routes.get('fallback');
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
        res.end(body);
      };
      // A request body is read (as any server must) before the answer.
      if (req.method === 'POST') { req.resume(); req.on('end', send); } else send();
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  return { child, url: `http://127.0.0.1:${chunk.toString().trim()}` };
}

function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<unknown> {
  if (child.exitCode !== null) return Promise.resolve();
  const closed = once(child, 'close');
  child.kill(signal);
  return closed;
}

function best(results: readonly WrkResult[]): WrkResult {
  return results.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a));
}

function format(value: number, digits: number): string {
  return value.toLocaleString('en-GB', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

function render(
  results: readonly ScenarioResult[],
  facts: { seconds: number; rounds: number; loadStart: number; loadEnd: number },
): string {
  const rows = results.map(({ scenario, ours, bare }) => [
    scenario.name,
    `\`${scenario.method} ${scenario.path.replace(/doc_\w+/, '{id}').replace(/\?.*/, '')}\``,
    format(ours.requestsPerSecond, 0),
    format(ours.p50Ms, 2),
    format(ours.p99Ms, 2),
    format(bare.requestsPerSecond, 0),
    format(bare.p50Ms, 2),
    format(bare.p99Ms, 2),
    `${format((ours.requestsPerSecond / bare.requestsPerSecond) * 100, 1)}%`,
  ]);
  const table = renderTable(
    [
      'scenario',
      'request',
      'ours req/s',
      'ours p50 ms',
      'ours p99 ms',
      'bare req/s',
      'bare p50 ms',
      'bare p99 ms',
      'ours/bare',
    ],
    rows,
    2,
  );
  return `${API_SECTION_START}

## HTTP API: \`disarm serve\` against bare \`node:http\`

Generated by \`npm run bench:api\` on ${new Date().toISOString()}: ${facts.seconds} s per scenario
and side, best of ${facts.rounds} rounds (sides alternating first), \`wrk -t${THREADS} -c${CONNECTIONS}\` over
127.0.0.1, on ${cpus()[0]?.model ?? 'unknown CPU'} (${availableParallelism()} cores, shared with wrk and
both servers). Load average (1 min): ${format(facts.loadStart, 2)} at the start, ${format(facts.loadEnd, 2)} at the end.

${table}

Ours is the embedded default (the built \`disarm serve\`, default flags: info-level request
log to a file, SQLite state, a worker per core): every request is authenticated by API key
(hash, then the state store at most every 30 s per key), counted against the organisation's
per-minute limit (group-committed in the counters file: one commit per event-loop turn), and
answered from the store (the status read reads the document row); a sync submission is also
charged (a \`synchronous = FULL\` commit), its bytes fsynced, and the PNG rebuilt in a worker
before the answer. Bare is \`node:http\` answering every request with the same JSON bytes (and
reading a submission's body first). **ours/bare** is ours' requests/s as a share of bare's;
higher is better. The organisation's rate limit is set far above what the run reaches, so
every answer is a 200.
${API_SECTION_END}
`;
}

/** Puts `section` into RESULTS.md in place of the previous one (or at the end). */
async function writeSection(section: string): Promise<void> {
  const current = await readFile(RESULTS, 'utf8').catch(() => '');
  await writeFile(RESULTS, withApiSection(current, section));
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
  } catch (error) {
    fail(`${(error as Error).message}\nusage: npm run bench:api -- [--quick]`, 2);
  }
  const profile = parsed.values.quick ? 'quick' : 'full';
  const seconds = SECONDS[profile];
  const rounds = ROUNDS[profile];
  ensureWrk();
  build();

  const work = await mkdtemp(join(tmpdir(), 'disarm-api-bench-'));
  const adminToken = `bench-${crypto.randomUUID()}-${crypto.randomUUID()}`;
  const loadStart = loadavg()[0] ?? 0;
  const disarm = await startDisarm(join(work, 'data'), adminToken);
  let bare: { child: ChildProcess; url: string } | undefined;
  try {
    const organisation = await adminJson(disarm.apiUrl, adminToken, '/v1/admin/organisations', {
      name: 'Bench',
      plan: 'internal',
      terms: { rateLimitPerMinute: BENCH_RATE_LIMIT_PER_MINUTE },
    });
    const created = await adminJson(
      disarm.apiUrl,
      adminToken,
      `/v1/admin/organisations/${String(organisation.id)}/keys`,
      { name: 'bench' },
    );
    const key = String(created.key);
    const png = new Uint8Array(await buildImage('png', { width: 16, height: 16 }));
    const submission = multipartBody('tiny.png', png);
    const submitHeaders = {
      'X-Api-Key': key,
      'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`,
    };
    const first = await fetch(`${disarm.apiUrl}/v1/documents?wait=true`, {
      method: 'POST',
      headers: submitHeaders,
      body: submission,
    });
    const firstText = await first.text();
    if (first.status !== 200) fail(`the first sync submission answered ${first.status}`);
    const documentId = (JSON.parse(firstText) as { id: string }).id;

    const scenarios: Scenario[] = [
      {
        name: 'status read',
        method: 'GET',
        path: `/v1/documents/${documentId}`,
        headers: { 'X-Api-Key': key },
        status: 200,
      },
      {
        name: 'account read',
        method: 'GET',
        path: '/v1/account',
        headers: { 'X-Api-Key': key },
        status: 200,
      },
      {
        name: 'sync submission (16×16 PNG)',
        method: 'POST',
        path: '/v1/documents?wait=true',
        headers: submitHeaders,
        body: submission,
        status: 200,
      },
    ];
    // The bare server answers each route with the bytes ours gave for it.
    const bodies = new Map<string, Buffer>();
    for (const scenario of scenarios) {
      const response = await fetch(`${disarm.apiUrl}${scenario.path}`, {
        method: scenario.method,
        headers: scenario.headers,
        ...(scenario.body ? { body: scenario.body } : {}),
      });
      const body = Buffer.from(await response.arrayBuffer());
      if (response.status !== scenario.status) {
        fail(`${scenario.name} answered ${response.status}: ${body.toString()}`);
      }
      bodies.set(`${scenario.method} ${scenario.path.split('?')[0] ?? ''}`, body);
    }
    bodies.set('fallback', Buffer.from(firstText));
    bare = await startBare(bodies);

    const results: ScenarioResult[] = [];
    for (const scenario of scenarios) {
      const ours: WrkResult[] = [];
      const theirs: WrkResult[] = [];
      for (let round = 0; round < rounds; round += 1) {
        const order = round % 2 === 0 ? ['ours', 'bare'] : ['bare', 'ours'];
        for (const side of order) {
          if (side === 'ours') ours.push(await runWrk(disarm.apiUrl, scenario, seconds, work));
          else theirs.push(await runWrk(bare.url, scenario, seconds, work));
        }
      }
      const result = { scenario, ours: best(ours), bare: best(theirs) };
      if (result.ours.unexpected > 0) {
        fail(`${scenario.name}: ${result.ours.unexpected} responses were not ${scenario.status}`);
      }
      process.stdout.write(
        `${scenario.name}: ours ${format(result.ours.requestsPerSecond, 0)}/s p99 ${format(result.ours.p99Ms, 2)} ms; bare ${format(result.bare.requestsPerSecond, 0)}/s p99 ${format(result.bare.p99Ms, 2)} ms\n`,
      );
      results.push(result);
    }
    const section = render(results, { seconds, rounds, loadStart, loadEnd: loadavg()[0] ?? 0 });
    process.stdout.write(`\n${section}`);
    if (profile === 'full') await writeSection(section);
  } finally {
    if (bare) await stop(bare.child);
    await stop(disarm.child);
    await rm(work, { recursive: true, force: true });
  }
}

await main();
