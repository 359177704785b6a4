/**
 * The state-store bench: status reads (`GET /v1/documents/{id}`) per second and their latency on
 * PostgreSQL against SQLite on the same machine — through a real API node (`disarm serve --role
 * api`, from source) over loopback, and straight against each store's `getDocument` — so the
 * price of leaving one box is a number.
 *
 * PostgreSQL is the Debian `postgresql` 15 server in a temporary cluster on loopback (the one the
 * tests start); SQLite is the embedded default file.
 *
 * @example
 * ```sh
 * npm run bench:stores            # 8 s per scenario and store; writes bench/RESULTS-stores.md
 * npm run bench:stores -- --quick # 2 s; prints only
 * ```
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { createPostgresStore } from '@disarm/postgres';
import { startTemporaryCluster } from '@disarm/postgres/testing';
import type { StateStore } from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';

import { renderTable } from './report.ts';
import { writeResultsFile } from './results-file.ts';
import { postAdmin, startServeNode } from './serve-node.ts';

const BENCH_DIR = import.meta.dirname;
const RESULTS = join(BENCH_DIR, 'RESULTS-stores.md');

/** Requests in flight at once, as `bench:api` measures (16 connections). */
const CONCURRENCY = 16;
const SECONDS = { full: 8, quick: 2 };
/** Documents the reads pick from. */
const DOCUMENTS = 200;
/** Rate limit of the bench organisation: counted on every request, never reached. */
const BENCH_RATE_LIMIT_PER_MINUTE = 100_000_000;

interface Measured {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly count: number;
}

function fail(message: string, code = 1): never {
  process.stderr.write(`bench/stores: ${message}\n`);
  process.exit(code);
}

/** Runs `operation` from {@link CONCURRENCY} loops for `seconds`; throughput and latency. */
async function measure(
  seconds: number,
  operation: (index: number) => Promise<void>,
): Promise<Measured> {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let next = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const started = performance.now();
      await operation(next++);
      latencies.push(performance.now() - started);
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  const elapsedS = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (share: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * share))] ?? 0;
  return {
    perSecond: latencies.length / elapsedS,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    count: latencies.length,
  };
}

/** Status reads through an API node on `database`. */
async function httpReads(database: string, work: string, seconds: number): Promise<Measured> {
  const adminToken = `bench-${crypto.randomUUID()}-${crypto.randomUUID()}`;
  const node = await startServeNode(
    [
      '--role=api',
      `--database=${database}`,
      `--data-dir=${join(work, `data-${crypto.randomUUID()}`)}`,
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
    const ids: string[] = [];
    for (let index = 0; index < DOCUMENTS / 10; index += 1) {
      const response = await fetch(`${node.apiUrl}/v1/documents?filename=note.pdf`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/octet-stream' },
        body: 'bench',
      });
      const text = await response.text();
      if (response.status !== 202) fail(`a submission answered ${response.status}: ${text}`);
      ids.push((JSON.parse(text) as { id: string }).id);
    }
    // Warm the key cache and the connections before measuring.
    await measure(1, async (index) => {
      await (
        await fetch(`${node.apiUrl}/v1/documents/${ids[index % ids.length] ?? ''}`, { headers })
      ).arrayBuffer();
    });
    return await measure(seconds, async (index) => {
      const response = await fetch(`${node.apiUrl}/v1/documents/${ids[index % ids.length] ?? ''}`, {
        headers,
      });
      await response.arrayBuffer();
      if (response.status !== 200) fail(`a status read answered ${response.status}`);
    });
  } finally {
    node.child.kill('SIGTERM');
    await once(node.child, 'exit');
  }
}

/** `getDocument` straight on `store`. */
async function storeReads(store: StateStore, seconds: number): Promise<Measured> {
  const at = new Date();
  await store.createOrganisation({ id: 'org_bench', name: 'Bench', plan: 'internal' }, at);
  const ids = Array.from({ length: DOCUMENTS }, (_, index) => `doc_bench_${index}`);
  for (const id of ids) {
    await store.acceptDocument(
      {
        id,
        organisationId: 'org_bench',
        lane: 'raw',
        fileName: 'note.pdf',
        sizeBytes: 5,
        intakeKey: `intake/${id}`,
        deleteAfterDownload: false,
        statusStyle202: false,
      },
      at,
    );
  }
  await measure(1, async (index) => {
    await store.getDocument('org_bench', ids[index % ids.length] ?? '');
  });
  return measure(seconds, async (index) => {
    const record = await store.getDocument('org_bench', ids[index % ids.length] ?? '');
    if (record === undefined) fail('a document was not found');
  });
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
  } catch (error) {
    fail(`${(error as Error).message}\nusage: npm run bench:stores -- [--quick]`, 2);
  }
  const quick = parsed.values.quick;
  const seconds = quick ? SECONDS.quick : SECONDS.full;
  const work = await mkdtemp(join(tmpdir(), 'disarm-store-bench-'));
  const cluster = await startTemporaryCluster();
  const loadStart = loadavg()[0] ?? 0;
  const rows: { name: string; sqlite: Measured; postgres: Measured }[] = [];
  try {
    const sqliteStore = createSqliteStore({ path: join(work, 'direct.sqlite') });
    const postgresUrl = await cluster.createDatabase('bench_direct');
    const postgresStore = await createPostgresStore({ connectionString: postgresUrl });
    try {
      rows.push({
        name: '`getDocument` on the store',
        sqlite: await storeReads(sqliteStore, seconds),
        postgres: await storeReads(postgresStore, seconds),
      });
    } finally {
      await sqliteStore.close();
      await postgresStore.close();
    }
    rows.push({
      name: '`GET /v1/documents/{id}` on an API node',
      sqlite: await httpReads(`sqlite:${join(work, 'api.sqlite')}`, work, seconds),
      postgres: await httpReads(await cluster.createDatabase('bench_api'), work, seconds),
    });
  } finally {
    await cluster.stop();
    await rm(work, { recursive: true, force: true });
  }
  const loadEnd = loadavg()[0] ?? 0;

  const number = (value: number, digits = 0): string =>
    value.toLocaleString('en-GB', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const table = renderTable(
    [
      'status read',
      'SQLite /s',
      'SQLite p50 ms',
      'SQLite p99 ms',
      'PostgreSQL /s',
      'PostgreSQL p50 ms',
      'PostgreSQL p99 ms',
      'p50 added ms',
    ],
    rows.map(({ name, sqlite, postgres }) => [
      name,
      number(sqlite.perSecond),
      number(sqlite.p50Ms, 2),
      number(sqlite.p99Ms, 2),
      number(postgres.perSecond),
      number(postgres.p50Ms, 2),
      number(postgres.p99Ms, 2),
      number(postgres.p50Ms - sqlite.p50Ms, 2),
    ]),
    1,
  );
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  const generated = `# State stores: PostgreSQL against SQLite

Generated by \`npm run bench:stores\` on ${new Date().toISOString()}: ${seconds} s per row and
store, ${CONCURRENCY} reads in flight, ${DOCUMENTS} documents, on ${cpu} (${cpus().length} cores,
shared with the client and the database server). Load average (1 min): ${number(loadStart, 2)} at the
start, ${number(loadEnd, 2)} at the end.

${table}
`;
  process.stdout.write(`${generated}\n`);
  if (!quick) await writeResultsFile(RESULTS, generated);
}

await main();
