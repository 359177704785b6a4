/**
 * The executor process of a fuzz campaign: runs one job at a time (the engine on a file, or
 * requests against the HTTP front), checks the properties, and answers with the verdict and the
 * blocks the job newly covered. Forked by {@link Executor}; a crash or hang here is the parent's
 * finding, with the input it had sent.
 */
import { BlockCoverage } from './coverage.ts';
import type { ChildMessage, Job, RunMessage, Verdict } from './protocol.ts';
import { COVERAGE_SCOPE_ENV, FAILPOINTS_ENV } from './protocol.ts';

const send = process.send?.bind(process);
if (!send) throw new Error('the fuzz executor must be forked by the campaign');

const scope = process.env[COVERAGE_SCOPE_ENV] ?? 'engine';
const coverage = new BlockCoverage((url) =>
  scope === 'http'
    ? /\/packages\/(protocol|sqlite|node)\/src\//.test(url)
    : url.includes('/packages/core/src/'),
);
await coverage.start();
// Loaded once coverage runs, so that its functions are compiled with block counters.
const { runEngineJob } = await import('./engine-job.ts');

type HttpRunner = (job: Extract<Job, { kind: 'http' }>) => Promise<Verdict>;
let http: Promise<HttpRunner> | undefined;

const failpoints = process.env[FAILPOINTS_ENV] === '1';
/** Kept alive so the memory failpoint's pages stay resident until the job answers. */
let ballast: Buffer[] = [];

async function run(job: Job): Promise<Verdict> {
  if (job.kind === 'engine' && failpoints && job.fileName.startsWith('failpoint-')) {
    if (job.fileName === 'failpoint-crash') process.abort();
    if (job.fileName === 'failpoint-hang') for (;;);
    // 8 MiB at a time, touched, so the pages count in the RSS.
    ballast = Array.from({ length: 56 }, () => Buffer.alloc(8 * 1024 * 1024, 1));
    return { ok: true, outcome: `ballast:${ballast.length}` };
  }
  if (job.kind === 'engine') return runEngineJob(job);
  http ??= import('./http-job.ts').then(({ createHttpRunner }) => createHttpRunner());
  return (await http)(job);
}

/** Jobs between forced collections, after which the retained heap is reported. */
const GC_EVERY_JOBS = 250;
const collect = (globalThis as { gc?: () => void }).gc;
let jobs = 0;

let queue = Promise.resolve();
process.on('message', (message: RunMessage) => {
  queue = queue.then(async () => {
    const started = performance.now();
    const verdict = await run(message.job);
    const durationMs = performance.now() - started;
    const newBlocks = await coverage.takeNew();
    const coverageMs = performance.now() - started - durationMs;
    jobs += 1;
    // What stays reachable once a collection ran: the measure of a leak across inputs.
    const collected = collect !== undefined && jobs % GC_EVERY_JOBS === 1;
    if (collected) collect();
    const reply: ChildMessage = {
      type: 'result',
      id: message.id,
      verdict,
      newBlocks,
      durationMs,
      coverageMs,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
      heapUsedBytes: process.memoryUsage().heapUsed,
      collected,
    };
    send(reply);
  });
});
process.on('disconnect', () => process.exit(0));

// Warm up: load the engine (and the HTTP front) before the first timed job.
if (scope === 'http') {
  http = import('./http-job.ts').then(({ createHttpRunner }) => createHttpRunner());
  await http;
}
await coverage.takeNew();
send({ type: 'ready', rssBytes: process.resourceUsage().maxRSS * 1024 } satisfies ChildMessage);
