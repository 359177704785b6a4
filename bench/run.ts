/**
 * The bench: generates its corpus, runs our engine and a peer tool over the same files in the same
 * run, checks the outputs against each other, and reports files/s, MB/s and peak memory per
 * format.
 *
 * @example
 * ```sh
 * npx tsx bench/run.ts                      # full corpus, writes bench/RESULTS.md
 * npx tsx bench/run.ts --quick              # smoke run (< 60 s), writes bench/.out/RESULTS.quick.md
 * npx tsx bench/run.ts --formats jpg,zip --out /tmp/results.md
 * ```
 *
 * Exits 1 when a file does not come back `cleaned`, a peer fails, or the two outputs of a file
 * differ in dimensions; 2 on bad arguments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { findApiSection, withApiSection } from './api-section.ts';
import { ensureCorpus } from './corpus.ts';
import { describeOutput } from './fidelity.ts';
import { findPeerTools, peerPlanFor, peerVersions, runPeer } from './peer.ts';
import type { PeerRun, PeerTools } from './peer.ts';
import { collectMachineFacts, renderReport } from './report.ts';
import { BENCH_FORMATS, isBenchFormat } from './types.ts';
import type {
  BenchFormat,
  CorpusProfile,
  FormatCorpus,
  FormatResult,
  WorkerJob,
  WorkerReport,
} from './types.ts';

const BENCH_DIR = import.meta.dirname;
const REPO_DIR = resolve(BENCH_DIR, '..');
const CORPUS_DIR = join(BENCH_DIR, '.corpus');
const OUT_DIR = join(BENCH_DIR, '.out');
const WORKER = join(BENCH_DIR, 'worker.ts');
const ENSURE_TOOLS = join(REPO_DIR, 'scripts', 'ensure-bench-tools.sh');
const DEFAULT_OUT = {
  full: join(BENCH_DIR, 'RESULTS.md'),
  quick: join(OUT_DIR, 'RESULTS.quick.md'),
};

/** Rounds per format: the full bench takes the best of three, the smoke run one. */
const DEFAULT_ROUNDS = { full: 3, quick: 1 };
const MAX_ROUNDS = 20;

interface BenchOptions {
  readonly profile: CorpusProfile;
  /** Times each side runs over the files; the fastest run counts. */
  readonly rounds: number;
  readonly formats: readonly BenchFormat[];
  readonly out: string;
}

const USAGE = `usage: npx tsx bench/run.ts [--quick] [--formats ${BENCH_FORMATS.join(',')}] [--out FILE] [--rounds N]

  --quick     small corpus for a smoke run; writes ${relative(REPO_DIR, DEFAULT_OUT.quick)} unless --out
  --formats   comma-separated subset of the formats (default: all)
  --out       where to write the Markdown report (default: ${relative(REPO_DIR, DEFAULT_OUT.full)})
  --rounds    runs of each side per format, the fastest counts (default: ${DEFAULT_ROUNDS.full}, --quick ${DEFAULT_ROUNDS.quick})`;

const options = parseOptions(process.argv.slice(2));
ensureTools();
const tools = findPeerTools();
const loadAtStart = loadavg()[0] ?? 0;
const results: FormatResult[] = [];
for (const format of options.formats) {
  results.push(await benchFormat(format, options, tools));
}
const report = renderReport({
  profile: options.profile,
  command: ['npx tsx bench/run.ts', ...process.argv.slice(2)].join(' '),
  rounds: options.rounds,
  facts: collectMachineFacts({ peers: peerVersions(tools), loadAtStart }),
  results,
});
process.stdout.write(report);
await mkdir(dirname(options.out), { recursive: true });
// The HTTP API section is bench/api.ts's: kept as it is.
const previous = await readFile(options.out, 'utf8').catch(() => '');
const apiSection = findApiSection(previous);
await writeFile(
  options.out,
  apiSection === undefined ? report : withApiSection(report, apiSection),
);
log(`report written to ${relative(process.cwd(), options.out) || options.out}`);
const failed = results.some(
  (result) =>
    result.cleaned < result.files ||
    result.peerFailures.length > 0 ||
    result.dimsMismatches.length > 0,
);
if (failed) {
  log('FAILED: see "Problems" in the report');
  process.exitCode = 1;
}

async function benchFormat(
  format: BenchFormat,
  benchOptions: BenchOptions,
  peerTools: PeerTools,
): Promise<FormatResult> {
  const { profile, rounds } = benchOptions;
  const corpusStarted = performance.now();
  const corpus = await ensureCorpus(join(CORPUS_DIR, profile), profile, format);
  const inputDir = join(CORPUS_DIR, profile, format);
  const inputs = corpus.files.map((file) => join(inputDir, file.name));
  const inputBytes = corpus.files.reduce((sum, file) => sum + file.bytes, 0);
  log(
    `${format}: corpus of ${inputs.length} files, ${(inputBytes / 1e6).toFixed(1)} MB ready in ${secondsSince(corpusStarted)}`,
  );

  const plan = peerPlanFor(format, peerTools);
  if (plan.missing !== null) log(`${format}: peer n/a (${plan.missing})`);
  const oursRuns: OursRun[] = [];
  const peerRuns: PeerRun[] = [];
  const measurePeer = async (): Promise<void> => {
    if (plan.missing !== null) return;
    const outDir = join(OUT_DIR, 'peer', format);
    peerRuns.push(await runPeer({ plan, inputDir, files: corpus.files, outDir }));
  };
  for (let round = 0; round < rounds; round += 1) {
    // Sides take turns going first, so neither always meets the warmer cache or the quieter
    // machine.
    if (round % 2 === 1) await measurePeer();
    oursRuns.push(await runOurs({ files: inputs, outDir: join(OUT_DIR, 'ours', format) }));
    if (round % 2 === 0) await measurePeer();
    const peerMs = peerRuns.at(-1)?.elapsedMs;
    log(
      `${format}: round ${round + 1}/${rounds}: ours ${seconds(oursRuns.at(-1)?.report.elapsedMs)}, peer ${seconds(peerMs)}`,
    );
  }
  // Best of the rounds: the least disturbed run is the closest to the code's own cost.
  const ours = fastest(oursRuns, (run) => run.report.elapsedMs);
  const peer = peerRuns.length > 0 ? fastest(peerRuns, (run) => run.elapsedMs) : null;
  const lastOurs = oursRuns.at(-1) ?? ours;
  const lastPeer = peerRuns.at(-1) ?? null;

  const checks = await compareOutputs(format, corpus, lastOurs.report, lastPeer);
  return {
    format,
    description: corpus.description,
    files: inputs.length,
    inputBytes,
    ours: {
      elapsedMs: ours.report.elapsedMs,
      peakKib: Math.max(...oursRuns.map((run) => run.report.peakKib)),
    },
    oursProcessMs: ours.processMs,
    oursStartupPeakKib: ours.report.startupPeakKib,
    oursOutputBytes: await totalBytes(lastOurs.report.files.map((file) => file.output)),
    cleaned: lastOurs.report.files.filter((file) => file.status === 'cleaned').length,
    notCleaned: lastOurs.report.files
      .filter((file) => file.status !== 'cleaned')
      .map((file) => `${relative(REPO_DIR, file.file)}: ${file.status}, ${file.detail ?? ''}`),
    peer:
      peer === null
        ? null
        : { elapsedMs: peer.elapsedMs, peakKib: Math.max(...peerRuns.map((run) => run.peakKib)) },
    peerOutputBytes:
      lastPeer === null ? null : await totalBytes(lastPeer.files.map((file) => file.output)),
    peerName: plan.name,
    peerMissing: plan.missing,
    peerFailures: (lastPeer?.files ?? [])
      .filter((file) => file.error !== null)
      .map((file) => `${relative(REPO_DIR, file.file)}: ${file.error ?? ''}`),
    ...checks,
  };
}

function fastest<T>(runs: readonly T[], elapsedMs: (run: T) => number): T {
  const [first, ...rest] = runs;
  if (first === undefined) throw new RangeError('no runs to choose from');
  return rest.reduce((best, run) => (elapsedMs(run) < elapsedMs(best) ? run : best), first);
}

async function totalBytes(paths: readonly (string | null)[]): Promise<number> {
  let total = 0;
  for (const path of paths) if (path !== null) total += (await stat(path)).size;
  return total;
}

interface OursRun {
  readonly report: WorkerReport;
  /** Spawn to exit of the worker. */
  readonly processMs: number;
}

/** Runs the worker over `job` in a process of its own and returns its report. */
async function runOurs(job: WorkerJob): Promise<OursRun> {
  await rm(job.outDir, { recursive: true, force: true });
  // The engine's source, not a build: the worker loads TypeScript through tsx and resolves
  // @disarm/core by its source export condition.
  const args = [
    `--import=${import.meta.resolve('tsx')}`,
    '--conditions=@disarm/source',
    WORKER,
    JSON.stringify(job),
  ];
  const started = performance.now();
  const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>(
    (resolveRun, rejectRun) => {
      const child = spawn(process.execPath, args, {
        cwd: REPO_DIR,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let text = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        text += chunk;
      });
      child.once('error', rejectRun);
      child.once('close', (exitCode) => {
        resolveRun({ code: exitCode, stdout: text });
      });
    },
  );
  const processMs = performance.now() - started;
  const last = stdout.trimEnd().split('\n').pop() ?? '';
  if (code !== 0 || !last.startsWith('{')) {
    throw new Error(`the bench worker exited with ${String(code)}: ${stdout.slice(-500)}`);
  }
  return { report: JSON.parse(last) as WorkerReport, processMs };
}

async function compareOutputs(
  format: BenchFormat,
  corpus: FormatCorpus,
  ours: WorkerReport,
  peer: PeerRun | null,
): Promise<Pick<FormatResult, 'dimsMatched' | 'dimsMismatches'>> {
  if (peer === null) return { dimsMatched: 0, dimsMismatches: [] };
  let dimsMatched = 0;
  const dimsMismatches: string[] = [];
  for (const [index, file] of corpus.files.entries()) {
    const oursOutput = ours.files[index]?.output ?? null;
    const peerOutput = peer.files[index]?.output ?? null;
    // A missing output is already reported as not cleaned or as a peer failure.
    if (oursOutput === null || peerOutput === null) continue;
    const [oursDims, peerDims] = await Promise.all([
      describeOutput(oursOutput, format).catch((error: unknown) => `unreadable (${String(error)})`),
      describeOutput(peerOutput, format).catch((error: unknown) => `unreadable (${String(error)})`),
    ]);
    if (oursDims === peerDims) dimsMatched += 1;
    else dimsMismatches.push(`${file.name}: ours ${oursDims}, peer ${peerDims}`);
  }
  return { dimsMatched, dimsMismatches };
}

function parseOptions(argv: readonly string[]): BenchOptions {
  let values: {
    quick?: boolean;
    formats?: string;
    out?: string;
    rounds?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        quick: { type: 'boolean' },
        formats: { type: 'string' },
        out: { type: 'string' },
        rounds: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    usageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const requested = (values.formats ?? BENCH_FORMATS.join(','))
    .split(',')
    .map((format) => format.trim().toLowerCase())
    .filter((format) => format !== '');
  const unknown = requested.filter((format) => !isBenchFormat(format));
  if (unknown.length > 0 || requested.length === 0) {
    usageError(`unknown format(s) "${unknown.join(',')}"; choose from ${BENCH_FORMATS.join(',')}`);
  }
  const profile: CorpusProfile = values.quick === true ? 'quick' : 'full';
  const rounds = Number(values.rounds ?? DEFAULT_ROUNDS[profile]);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > MAX_ROUNDS) {
    usageError(`--rounds must be a whole number from 1 to ${MAX_ROUNDS}`);
  }
  // Relative to where the command was typed, also under `npm run -w` (which moves the cwd).
  const base = process.env.INIT_CWD ?? process.cwd();
  return {
    profile,
    rounds,
    formats: BENCH_FORMATS.filter((format) => requested.includes(format)),
    out: values.out === undefined ? DEFAULT_OUT[profile] : resolve(base, values.out),
  };
}

function usageError(message: string): never {
  process.stderr.write(`bench: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/** Installs missing peer tools where it can; the peers still missing are reported as n/a. */
function ensureTools(): void {
  const run = spawnSync('bash', [ENSURE_TOOLS], { stdio: 'inherit' });
  if (run.status !== 0) log('some peer tools are missing; their formats show the peer as n/a');
}

function secondsSince(started: number): string {
  return seconds(performance.now() - started);
}

function seconds(ms: number | undefined): string {
  return ms === undefined ? 'n/a' : `${(ms / 1000).toFixed(2)} s`;
}

function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}
