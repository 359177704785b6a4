/**
 * Conversions to PDF per second and latency (p50, p99), side by side in one run: ours — the
 * engine's sanitiser, one warm renderer and the PDF rebuild, documents one after another — and
 * the cold path a Gotenberg-style converter pays, the program started anew per file on the raw
 * file (`chromium --headless --print-to-pdf`). Documents are generated here as real writers make
 * them: an HTML report with headings, paragraphs and a table, a long HTML page, an SVG chart.
 *
 * The format table ({@link FORMATS}) is the one place a row is added: its document builder, the
 * renderer that draws it warm, and the cold command line.
 *
 * @example
 * ```sh
 * npm run bench:render                # writes bench/RESULTS-render.md
 * npm run bench:render -- --quick     # fewer documents per row
 * ```
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { createChromiumRenderer } from '@disarm/chromium';
import { disarm } from '@disarm/core';
import type { Renderer } from '@disarm/core';
import { seededRandom } from '@disarm/fixtures';

import { writeResultsFile } from './results-file.ts';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT_DIR = join(BENCH_DIR, '.out', 'render-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-render.md');
const CHROMIUM = '/usr/bin/chromium';
const QUICK = process.argv.includes('--quick');
/** Documents converted per row: warm, and cold (a cold start costs about a second each). */
const WARM_RUNS = QUICK ? 10 : 40;
const COLD_RUNS = QUICK ? 3 : 10;
const COLD_TIMEOUT_MS = 120_000;

/** One row of the bench: a document, who draws it warm, and the cold command per file. */
interface RenderFormat {
  readonly name: string;
  /** The extension the document is submitted under. */
  readonly extension: string;
  readonly build: () => Buffer;
  /** The warm renderer, started once for every row that names the same one. */
  readonly renderer: 'chromium';
  /** The cold conversion of `input` into `output`: a program and its arguments. */
  readonly cold: (input: string, output: string) => readonly [string, ...string[]];
}

const chromiumPrint = (input: string, output: string): readonly [string, ...string[]] => [
  CHROMIUM,
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-pdf-header-footer',
  `--print-to-pdf=${output}`,
  `file://${input}`,
];

function words(count: number, seed: number): string {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => Math.floor(random() * 1e9).toString(36)).join(' ');
}

/** An HTML report: a style sheet, headings, paragraphs and a table of `rows` rows. */
function htmlReport(paragraphs: number, rows: number, seed: number): Buffer {
  const body: string[] = ['<h1>Quarterly report</h1>'];
  for (let index = 0; index < paragraphs; index += 1) {
    if (index % 8 === 0) body.push(`<h2>Section ${index / 8 + 1}</h2>`);
    body.push(
      `<p>${words(60, seed + index)} <a href="https://example.com/${index}">source</a></p>`,
    );
  }
  const cells = Array.from(
    { length: rows },
    (_, row) =>
      `<tr><td>${row + 1}</td><td>${words(3, seed + row)}</td><td>${(row * 37) % 1000}</td></tr>`,
  );
  body.push(
    `<table><thead><tr><th>#</th><th>item</th><th>value</th></tr></thead><tbody>${cells.join('')}</tbody></table>`,
  );
  return Buffer.from(
    `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Report</title><style>body{font:11pt/1.4 sans-serif;margin:0}h1{color:#036}table{border-collapse:collapse;width:100%}td,th{border:1px solid #999;padding:2px 6px}</style></head><body>${body.join('\n')}</body></html>\n`,
  );
}

/** An SVG bar chart of `bars` bars with labels, as charting tools write one. */
function svgChart(bars: number, seed: number): Buffer {
  const random = seededRandom(seed);
  const width = 20 * bars + 80;
  const shapes = Array.from({ length: bars }, (_, index) => {
    const height = Math.round(random() * 300);
    return `<rect x="${60 + index * 20}" y="${350 - height}" width="14" height="${height}" fill="#2a6"/><text x="${60 + index * 20}" y="370" font-size="9">${index}</text>`;
  });
  return Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="400" viewBox="0 0 ${width} 400"><title>Sales</title><path d="M50 350 H${width - 10} M50 350 V20" stroke="#000"/>${shapes.join('')}</svg>\n`,
  );
}

/** Every row of the bench, in order. */
const FORMATS: readonly RenderFormat[] = [
  {
    name: 'html report, 2 pages',
    extension: 'html',
    build: () => htmlReport(12, 20, 1),
    renderer: 'chromium',
    cold: chromiumPrint,
  },
  {
    name: 'html page, 25 pages',
    extension: 'html',
    build: () => htmlReport(160, 300, 2),
    renderer: 'chromium',
    cold: chromiumPrint,
  },
  {
    name: 'svg chart, 200 bars',
    extension: 'svg',
    build: () => svgChart(200, 3),
    renderer: 'chromium',
    cold: chromiumPrint,
  },
];

/** Linux's `USER_HZ`: the unit of the times in `/proc/<pid>/stat` (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU seconds spent so far by this process and every live process under it, with the children
 * each has reaped (proc(5): utime, stime, cutime, cstime). The browser's renderer processes come
 * and go; their time stays in the zygote or browser process that reaped them. On a shared
 * machine this is what a document costs, whatever else runs: per CPU second is per core.
 */
function treeCpuSeconds(): number {
  const stats = new Map<number, { parent: number; ticks: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // The fields after the command name, which may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    stats.set(Number(entry), { parent: Number(fields[1]), ticks });
  }
  let ticks = 0;
  for (const [pid, stat] of stats) {
    for (let at: number | undefined = pid; at !== undefined && at > 1; at = stats.get(at)?.parent) {
      if (at === process.pid) {
        ticks += stat.ticks;
        break;
      }
    }
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

interface Timing {
  readonly perSecond: number;
  /** Documents per CPU second of every process involved. */
  readonly perCpuSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

function summarise(latenciesMs: readonly number[], cpuSeconds: number): Timing {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const total = sorted.reduce((sum, value) => sum + value, 0);
  return {
    perSecond: (1000 * sorted.length) / total,
    perCpuSecond: sorted.length / cpuSeconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
  };
}

async function warm(format: RenderFormat, bytes: Buffer, renderer: Renderer): Promise<Timing> {
  const fileName = `bench.${format.extension}`;
  // The first conversion starts the browser: not part of the row.
  await disarm({ bytes, fileName }, { renderers: [renderer] });
  const latencies: number[] = [];
  const cpuBefore = treeCpuSeconds();
  for (let run = 0; run < WARM_RUNS; run += 1) {
    const started = performance.now();
    const outcome = await disarm({ bytes, fileName }, { renderers: [renderer] });
    latencies.push(performance.now() - started);
    if (outcome.status !== 'cleaned') throw new Error(`${format.name}: ${outcome.detail}`);
  }
  return summarise(latencies, treeCpuSeconds() - cpuBefore);
}

function cold(format: RenderFormat, input: string): Timing {
  const latencies: number[] = [];
  const cpuBefore = treeCpuSeconds();
  for (let run = 0; run < COLD_RUNS; run += 1) {
    const output = join(OUT_DIR, `cold-${run}.pdf`);
    const [program, ...args] = format.cold(input, output);
    const started = performance.now();
    const result = spawnSync(program, args, { stdio: 'ignore', timeout: COLD_TIMEOUT_MS });
    latencies.push(performance.now() - started);
    if (result.status !== 0)
      throw new Error(`${format.name}: ${program} exited ${String(result.status)}`);
  }
  return summarise(latencies, treeCpuSeconds() - cpuBefore);
}

const f = (value: number, digits = 0): string => value.toFixed(digits);

async function main(): Promise<void> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const renderers = { chromium: createChromiumRenderer({ executablePath: CHROMIUM }) };
  const version = (await renderers.chromium.status()).version ?? 'unknown';
  const loadBefore = loadavg()[0] ?? Number.NaN;
  const rows: string[] = [];
  try {
    for (const format of FORMATS) {
      const bytes = format.build();
      const input = join(
        OUT_DIR,
        `${format.name.replace(/[^a-z0-9]+/gi, '-')}.${format.extension}`,
      );
      writeFileSync(input, bytes);
      const ours = await warm(format, bytes, renderers[format.renderer]);
      const theirs = cold(format, input);
      rows.push(
        `| ${format.name} | ${f(bytes.length / 1024)} | ${f(ours.perCpuSecond, 2)} | ${f(ours.perSecond, 2)} | ${f(ours.p50Ms)} | ${f(ours.p99Ms)} | ${f(theirs.perCpuSecond, 2)} | ${f(theirs.perSecond, 2)} | ${f(theirs.p50Ms)} | ${f(theirs.p99Ms)} | ${f(ours.perCpuSecond / theirs.perCpuSecond, 1)}× |`,
      );
      process.stdout.write(`${rows.at(-1) ?? ''}\n`);
    }
  } finally {
    await renderers.chromium.close();
  }
  const load = `load average (1 min) ${f(loadBefore, 1)} at the start, ${f(loadavg()[0] ?? Number.NaN, 1)} at the end`;
  const table = [
    '| document | KB | warm docs per CPU s | warm docs/s | warm p50 ms | warm p99 ms | cold docs per CPU s | cold docs/s | cold p50 ms | cold p99 ms | warm / cold per CPU s |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  const written = `# Rendering to PDF: warm renderer against a cold start per file\n\nGenerated by \`npm run bench:render${QUICK ? ' -- --quick' : ''}\` on ${new Date().toISOString()} (Node ${process.version}, Chromium ${version}, 2 shared cores, ${load}). "Warm" is \`disarm()\` with one \`@disarm/chromium\` renderer kept across documents, ${WARM_RUNS} documents one after another per row, each sanitised, rendered in a fresh browser context and rebuilt as a PDF; "cold" is \`chromium --headless --print-to-pdf\` started anew for each of ${COLD_RUNS} documents on the raw file, as a converter without a warm browser does. Docs/s is documents over the summed latency, one at a time (wall time, so it falls with the machine's load); docs per CPU s is documents over the CPU seconds of every process involved (this one, the browser and its renderer processes, or each cold Chromium), which is the throughput of one core whatever else runs.\n\n${table}`;
  await writeResultsFile(RESULTS, written);
}

await main();
