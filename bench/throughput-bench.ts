/**
 * The worker-throughput bench: documents per second end to end — HTTP submission to `completed`
 * — with 1, 2 and 4 worker processes on one node (`disarm serve --workers N`, from source), the
 * same document mix in every run, so whether throughput grows with workers until the cores run
 * out is a number.
 *
 * The embedded default (SQLite in the data folder) always runs; `--database` adds PostgreSQL (the
 * Debian `postgresql` server in a temporary cluster on loopback, as the tests start it).
 *
 * @example
 * ```sh
 * npm run bench:throughput                   # writes bench/RESULTS-throughput.md
 * npm run bench:throughput -- --database     # also on PostgreSQL
 * npm run bench:throughput -- --quick        # a smaller batch; prints only
 * ```
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { buildImage, buildOoxml, buildPlainPdf } from '@disarm/fixtures';
import { startTemporaryCluster } from '@disarm/postgres/testing';

import { renderTable } from './report.ts';
import { writeResultsFile } from './results-file.ts';
import { postAdmin, startServeNode } from './serve-node.ts';

const BENCH_DIR = import.meta.dirname;
const RESULTS = join(BENCH_DIR, 'RESULTS-throughput.md');

/** Worker processes per run, side by side in one table. */
const WORKER_COUNTS = [1, 2, 4] as const;
/** Runs of each worker count; the best counts. */
const PASSES = 2;
/** Times the document mix is submitted per run. */
const ROUNDS = { full: 24, quick: 4 };
/** Rate limit of the bench organisation: counted on every request, never reached. */
const BENCH_RATE_LIMIT_PER_MINUTE = 100_000_000;
/** A run that has not drained by then is broken, not slow. */
const DRAIN_TIMEOUT_MS = 600_000;
/** Pause between two sweeps of status reads over the documents still in flight. */
const POLL_INTERVAL_MS = 50;

/** One kind of document in the mix. */
interface MixEntry {
  readonly fileName: string;
  readonly bytes: Uint8Array<ArrayBuffer>;
}

interface RunResult {
  readonly documents: number;
  readonly seconds: number;
  readonly perSecond: number;
}

function fail(message: string, code = 1): never {
  process.stderr.write(`bench/throughput: ${message}\n`);
  process.exit(code);
}

/** The mix: photos in two formats, a PDF and a Word document, as a typical upload stream. */
async function documentMix(): Promise<MixEntry[]> {
  const files: [string, Uint8Array][] = [
    ['photo.jpg', await buildImage('jpeg', { width: 1366, height: 768 })],
    ['scan.png', await buildImage('png', { width: 1366, height: 768 })],
    ['thumb.png', await buildImage('png', { width: 320, height: 240 })],
    ['letter.pdf', buildPlainPdf()],
    ['report.docx', await buildOoxml('docx')],
  ];
  return files.map(([fileName, bytes]) => ({ fileName, bytes: new Uint8Array(bytes) }));
}

/** Submits `mix` `rounds` times to `apiUrl`, then reads statuses until every document ended. */
async function submitAndDrain(
  apiUrl: string,
  headers: Record<string, string>,
  mix: readonly MixEntry[],
  rounds: number,
): Promise<RunResult> {
  const began = performance.now();
  const pending = new Set<string>();
  for (let round = 0; round < rounds; round += 1) {
    for (const entry of mix) {
      const response = await fetch(
        `${apiUrl}/v1/documents?filename=${encodeURIComponent(entry.fileName)}`,
        {
          method: 'POST',
          headers: { ...headers, 'Content-Type': 'application/octet-stream' },
          body: entry.bytes,
        },
      );
      const text = await response.text();
      if (response.status !== 202) fail(`a submission answered ${response.status}: ${text}`);
      pending.add((JSON.parse(text) as { id: string }).id);
    }
  }
  const documents = pending.size;
  const deadline = began + DRAIN_TIMEOUT_MS;
  while (pending.size > 0) {
    if (performance.now() > deadline) fail(`${pending.size} documents never ended`);
    for (const id of [...pending]) {
      const response = await fetch(`${apiUrl}/v1/documents/${id}`, { headers });
      const envelope = (await response.json()) as { status: string; reason?: string };
      if (envelope.status === 'pending' || envelope.status === 'processing') continue;
      if (envelope.status !== 'completed') {
        fail(`document ${id} ended ${envelope.status} (${envelope.reason ?? 'no reason'})`);
      }
      pending.delete(id);
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, POLL_INTERVAL_MS));
  }
  const seconds = (performance.now() - began) / 1000;
  return { documents, seconds, perSecond: documents / seconds };
}

/** One node with `workers` worker processes: the mix submitted `rounds` times, until all end. */
async function run(
  workers: number,
  mix: readonly MixEntry[],
  rounds: number,
  work: string,
  database: string | undefined,
): Promise<RunResult> {
  const adminToken = `bench-${crypto.randomUUID()}-${crypto.randomUUID()}`;
  const dataDir = join(work, `data-${crypto.randomUUID()}`);
  const node = await startServeNode(
    [
      `--workers=${workers}`,
      `--data-dir=${dataDir}`,
      ...(database === undefined ? [] : [`--database=${database}`]),
    ],
    adminToken,
  );
  try {
    const organisation = await postAdmin(node.apiUrl, adminToken, '/v1/admin/organisations', {
      name: 'Bench',
      plan: 'internal',
      terms: { rateLimitPerMinute: BENCH_RATE_LIMIT_PER_MINUTE },
    });
    const created = await postAdmin(
      node.apiUrl,
      adminToken,
      `/v1/admin/organisations/${String(organisation.id)}/keys`,
      { name: 'bench' },
    );
    const headers = { 'X-Api-Key': String(created.key) };
    // Every worker process loads the engine and its codecs with its first documents: a warm-up
    // batch, one mix per worker, keeps that start-up out of the measured batch.
    await submitAndDrain(node.apiUrl, headers, mix, workers);
    return await submitAndDrain(node.apiUrl, headers, mix, rounds);
  } finally {
    node.child.kill('SIGTERM');
    await once(node.child, 'exit');
  }
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        database: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    fail(
      `${(error as Error).message}\nusage: npm run bench:throughput -- [--database] [--quick]`,
      2,
    );
  }
  const { quick, database: withPostgres } = parsed.values;
  const rounds = quick ? ROUNDS.quick : ROUNDS.full;
  const mix = await documentMix();
  const work = await mkdtemp(join(tmpdir(), 'disarm-throughput-bench-'));
  const cluster = withPostgres ? await startTemporaryCluster() : undefined;
  const loadStart = loadavg()[0] ?? 0;
  const rows: { store: string; workers: number; result: RunResult }[] = [];
  try {
    const stores: {
      name: string;
      database: (workers: number, pass: number) => Promise<string | undefined>;
    }[] = [{ name: 'SQLite (embedded default)', database: () => Promise.resolve(undefined) }];
    if (cluster !== undefined) {
      stores.push({
        name: 'PostgreSQL',
        database: (workers, pass) => cluster.createDatabase(`bench_throughput_${workers}_${pass}`),
      });
    }
    for (const store of stores) {
      const best = new Map<number, RunResult>();
      // The machine is shared: each worker count runs PASSES times, the order reversed on every
      // pass so a burst of outside load does not always meet the same count; the best counts.
      for (let pass = 0; pass < PASSES; pass += 1) {
        const order = pass % 2 === 0 ? [...WORKER_COUNTS] : [...WORKER_COUNTS].reverse();
        for (const workers of order) {
          const result = await run(workers, mix, rounds, work, await store.database(workers, pass));
          process.stderr.write(
            `${store.name}, ${workers} workers, pass ${pass + 1}: ${result.perSecond.toFixed(2)}/s\n`,
          );
          const previous = best.get(workers);
          if (previous === undefined || result.perSecond > previous.perSecond) {
            best.set(workers, result);
          }
        }
      }
      for (const workers of WORKER_COUNTS) {
        const result = best.get(workers);
        if (result !== undefined) rows.push({ store: store.name, workers, result });
      }
    }
  } finally {
    await cluster?.stop();
    await rm(work, { recursive: true, force: true });
  }
  const loadEnd = loadavg()[0] ?? 0;

  const number = (value: number, digits = 0): string =>
    value.toLocaleString('en-GB', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const table = renderTable(
    ['store', 'workers', 'documents', 'seconds', 'documents/s', 'against 1 worker'],
    rows.map(({ store, workers, result }) => {
      const single = rows.find((row) => row.store === store && row.workers === 1)?.result;
      return [
        store,
        String(workers),
        String(result.documents),
        number(result.seconds, 1),
        number(result.perSecond, 2),
        single === undefined ? '' : `${number(result.perSecond / single.perSecond, 2)}×`,
      ];
    }),
    1,
  );
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const generated = `# Worker throughput

Generated by \`npm run bench:throughput${withPostgres ? ' -- --database' : ''}\` on
${new Date().toISOString()}: per run, one \`disarm serve\` node (API and workers, from source)
with 1, 2 or 4 worker processes, warmed up by one mix per worker first, best of ${PASSES} runs
(the order of the worker counts reversed on each pass); ${rounds} rounds of the same mix of ${mix.length} documents
(${mix.map((entry) => entry.fileName).join(', ')}) submitted async (202), then status reads until
every one is \`completed\`; the time runs from the first submission to the last completion. On
${cpu} (${availableParallelism()} cores, shared with the client, the API and, with
\`--database\`, the database server). Load average (1 min): ${number(loadStart, 2)} at the start,
${number(loadEnd, 2)} at the end.

${table}
`;
  process.stdout.write(`${generated}\n`);
  if (!quick) await writeResultsFile(RESULTS, generated);
}

await main();
