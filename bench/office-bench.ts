/**
 * Office rebuild throughput and peak memory, side by side in one run with the
 * floor — a plain unzip + zip of the same members (Info-ZIP `unzip -q` then `zip -q -r -X`,
 * deflate level 6) — and mat2 (`mat2 --inplace`), on documents generated here: Word text from
 * 10 KB up (`--large` adds ~100 MB), Excel sheets of many cells (one also with as many
 * formulas, as real workbooks hold), an OpenDocument text, and Word and PowerPoint documents
 * with photos (the images are re-encoded by the image handler, so those rows are reported apart
 * from the floor target).
 *
 * Ours runs the BUILT engine (`npm run build` first) as its own process under GNU time, like the
 * peers: wall seconds and peak RSS of the whole process, plus the `disarm()` call alone.
 *
 * @example
 * ```sh
 * npm run bench:office               # writes bench/RESULTS-office.md
 * npm run bench:office -- --large    # also the ~100 MB document
 * ```
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { writeResultsFile } from './results-file.ts';

import {
  buildImage,
  buildOdt,
  buildPresentation,
  buildWordDocument,
  buildWorkbook,
  seededRandom,
} from '@disarm/fixtures';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
// The peers (qpdf, Ghostscript, mat2, GNU time, zip) are Debian packages this script installs.
const ensured = spawnSync('bash', [join(BENCH_DIR, '..', 'scripts', 'ensure-bench-tools.sh')], {
  stdio: 'inherit',
});
if (ensured.status !== 0) {
  console.error('some peers are missing (see above); their columns will say so');
}
const REPO_DIR = resolve(BENCH_DIR, '..');
const OUT_DIR = join(BENCH_DIR, '.out', 'office-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-office.md');
/** Everything from this line on in RESULTS-office.md is kept across runs. */
const TIMEOUT_MS = 900_000;
/** mat2 is skipped above this size: it only runs into the timeout there. */
const MAX_MAT2_BYTES = 20 * 1024 * 1024;

interface Case {
  readonly name: string;
  readonly extension: string;
  /** True when the document has an image the image handler re-encodes. */
  readonly images: boolean;
  readonly build: () => Promise<Buffer>;
}

function words(count: number, seed: number): string[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () =>
    Array.from({ length: 12 }, () => Math.floor(random() * 1e9).toString(36)).join(' '),
  );
}

function cases(large: boolean): Case[] {
  const photo = async (): Promise<Uint8Array> =>
    new Uint8Array(await buildImage('png', { width: 1600, height: 1200 }));
  return [
    {
      name: 'docx text 100 ¶',
      extension: 'docx',
      images: false,
      build: () => buildWordDocument('docx', { texts: words(100, 1) }),
    },
    {
      name: 'docx text 10k ¶',
      extension: 'docx',
      images: false,
      build: () => buildWordDocument('docx', { texts: words(10_000, 2) }),
    },
    {
      name: 'docx text 100k ¶',
      extension: 'docx',
      images: false,
      build: () => buildWordDocument('docx', { texts: words(100_000, 3) }),
    },
    {
      name: 'docx table of contents, 20k entries (40k fields)',
      extension: 'docx',
      images: false,
      build: () => buildWordDocument('docx', { texts: words(20_000, 12), tableOfContents: true }),
    },
    ...(large
      ? [
          {
            // ~95 MB: one Word part this size would pass the 64 MiB ceiling of a single XML part.
            name: 'xlsx 1.6M cells in 64 sheets',
            extension: 'xlsx',
            images: false,
            build: () => buildWorkbook('xlsx', { texts: words(1_600_000, 4), sheets: 64 }),
          },
        ]
      : []),
    {
      name: 'xlsx 100k cells in 50 sheets',
      extension: 'xlsx',
      images: false,
      build: () => buildWorkbook('xlsx', { texts: words(100_000, 9), sheets: 50 }),
    },
    {
      name: 'xlsx 100k cells',
      extension: 'xlsx',
      images: false,
      build: () => buildWorkbook('xlsx', { texts: words(100_000, 5) }),
    },
    {
      name: 'xlsx 100k cells + 100k formulas',
      extension: 'xlsx',
      images: false,
      build: () => buildWorkbook('xlsx', { texts: words(100_000, 11), formulas: true }),
    },
    {
      name: 'odt text 10k ¶',
      extension: 'odt',
      images: false,
      build: () => buildOdt({ texts: words(10_000, 6) }),
    },
    {
      name: 'docx + photo',
      extension: 'docx',
      images: true,
      build: async () => buildWordDocument('docx', { texts: words(100, 7), image: await photo() }),
    },
    {
      name: 'docx + 40 photos',
      extension: 'docx',
      images: true,
      build: async () => {
        const image = await photo();
        return buildWordDocument('docx', {
          texts: words(100, 10),
          images: Array.from({ length: 40 }, () => image),
        });
      },
    },
    {
      name: 'pptx + photo',
      extension: 'pptx',
      images: true,
      build: async () => buildPresentation('pptx', { texts: words(5, 8), image: await photo() }),
    },
  ];
}

interface Measure {
  readonly seconds: number | undefined;
  /** User and system CPU seconds of the process and all its threads. */
  readonly cpuSeconds: number | undefined;
  readonly rssMiB: number | undefined;
  readonly stdout: string;
  readonly note?: string;
}

function timed(command: string, args: readonly string[], cwd = REPO_DIR): Measure {
  const run = spawnSync('/usr/bin/time', ['-f', '__TIME__ %e %M %U %S', command, ...args], {
    cwd,
    timeout: TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
    encoding: 'utf8',
  });
  const match = /__TIME__ ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(run.stderr);
  if (run.status !== 0 || !match) {
    return {
      seconds: undefined,
      cpuSeconds: undefined,
      rssMiB: undefined,
      stdout: '',
      note: run.signal ? 'timeout' : `exit ${String(run.status)}: ${run.stderr.slice(0, 200)}`,
    };
  }
  return {
    seconds: Number(match[1]),
    cpuSeconds: Number(match[3]) + Number(match[4]),
    rssMiB: Number(match[2]) / 1024,
    stdout: run.stdout,
  };
}

/**
 * Ours: the built engine in a process of its own, calling `disarm()` `runs` times; prints the
 * best call's seconds and the CPU seconds that call took on all the process's threads (the main
 * thread, check workers, and the thread pool that inflates and deflates).
 */
const OURS = `
import { readFileSync, writeFileSync } from 'node:fs';
import { disarm } from '@disarm/core';
const [input, output, fileName, warmUp, runs] = process.argv.slice(1);
// A service or a batch run is warm: the engine's code is compiled by a first small document.
await disarm({ bytes: readFileSync(warmUp), fileName: 'warm-up.docx' });
const bytes = readFileSync(input);
let best = Infinity;
let cpuOfBest = 0;
for (let run = 0; run < Number(runs); run += 1) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const outcome = await disarm({ bytes, fileName }, { limits: { timeoutMs: ${TIMEOUT_MS}, maxBytes: 512 * 1024 * 1024 } });
  if (outcome.status !== 'cleaned') { process.stderr.write(outcome.status + ': ' + outcome.detail + '\\n'); process.exit(1); }
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  if (wall < best) { best = wall; cpuOfBest = (used.user + used.system) / 1000; }
  if (run === 0) writeFileSync(output, outcome.bytes);
}
process.stdout.write((best / 1000).toFixed(3) + ' ' + (cpuOfBest / 1000).toFixed(3) + '\\n');
`;

function largestMemberMiB(path: string): number {
  const listing = spawnSync('unzip', ['-Zl', path], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  let largest = 0;
  for (const line of listing.stdout.split('\n')) {
    // Member lines only (`-rw-r--r--  2.0 unx  SIZE ...`), not the `Zip file size:` summary.
    const size = Number(/^[-dl][-rwxsStT]{9}\s+\S+\s+\S+\s+(\d+)\s/.exec(line)?.[1] ?? 0);
    if (size > largest) largest = size;
  }
  return largest / 1024 / 1024;
}

const f = (value: number | undefined, digits = 2): string =>
  value === undefined ? '-' : value.toFixed(digits);
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || b === 0 ? '-' : `${(a / b).toFixed(2)}×`;

async function main(): Promise<void> {
  const large = process.argv.includes('--large');
  const built = spawnSync('npm', ['run', 'build'], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (built.status !== 0) throw new Error('npm run build failed');
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const warmUp = join(OUT_DIR, 'warm-up.docx');
  writeFileSync(warmUp, await buildWordDocument('docx', { texts: words(50, 99) }));
  const rows: string[] = [];
  for (const item of cases(large)) {
    const slug = item.name.replace(/[^a-z0-9]+/gi, '-');
    const input = join(OUT_DIR, `${slug}.${item.extension}`);
    writeFileSync(input, await item.build());
    const bytes = statSync(input).size;
    const largest = largestMemberMiB(input);

    const oursArgs = (runs: number): string[] => [
      '--input-type=module',
      '-e',
      OURS,
      input,
      join(OUT_DIR, `${slug}.ours.${item.extension}`),
      `bench.${item.extension}`,
      warmUp,
      String(runs),
    ];
    // The whole process, one call (as the peers run); then the best of three calls in another
    // process, since one call on this shared machine varies by about 10 %.
    const ours = timed(process.execPath, oursArgs(1));
    const calls = spawnSync(process.execPath, oursArgs(3), {
      cwd: REPO_DIR,
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    });
    const [best, cpuOfBest] = (calls.status === 0 ? calls.stdout.trim() : '')
      .split(' ')
      .map(Number);
    const inProcess = best !== undefined && Number.isFinite(best) ? best : undefined;
    const inProcessCpu =
      cpuOfBest !== undefined && Number.isFinite(cpuOfBest) ? cpuOfBest : undefined;

    const unpacked = join(OUT_DIR, `${slug}.unzipped`);
    const floorOut = join(OUT_DIR, `${slug}.floor.${item.extension}`);
    const floor = timed('sh', [
      '-c',
      'unzip -q -o "$1" -d "$2" && cd "$2" && zip -q -r -X "$3" .',
      'floor',
      input,
      unpacked,
      floorOut,
    ]);

    let mat2: Measure | undefined;
    if (bytes <= MAX_MAT2_BYTES) {
      const copy = join(OUT_DIR, `${slug}.mat2.${item.extension}`);
      copyFileSync(input, copy);
      mat2 = timed('mat2', ['--inplace', copy]);
    }
    const mb = bytes / 1024 / 1024;
    rows.push(
      `| ${item.name}${item.images ? ' (image re-encoded)' : ''} | ${f(mb)} | ${f(largest)} | ${f(ours.seconds)} s / ${f(ours.rssMiB, 0)} MiB${ours.note ? ` (${ours.note})` : ''} | ${f(inProcess)} s / ${f(inProcessCpu)} s | ${f(floor.seconds)} s / ${f(floor.cpuSeconds)} s / ${f(floor.rssMiB, 0)} MiB | ${mat2 === undefined ? 'skipped (> 20 MB)' : `${f(mat2.seconds)} s / ${f(mat2.rssMiB, 0)} MiB${mat2.note ? ` (${mat2.note})` : ''}`} | ${ratio(inProcess, floor.seconds)} | ${ratio(inProcessCpu, floor.cpuSeconds)} | ${ratio(ours.seconds, floor.seconds)} | ${ratio(mat2?.seconds, ours.seconds)} | ${ratio(mat2?.seconds, inProcess)} |`,
    );
    process.stdout.write(`${rows.at(-1) ?? ''}\n`);
  }
  const table = [
    '| document | MB | largest member MB | ours (wall / peak RSS) | ours disarm() (wall / CPU) | floor: unzip + zip (wall / CPU / RSS) | mat2 --inplace | ours disarm() / floor | CPU: ours disarm() / floor | ours wall / floor | mat2 / ours wall | mat2 / ours disarm() |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  const written = `# Office results\n\nGenerated by \`npm run bench:office${large ? ' -- --large' : ''}\` on ${new Date().toISOString()} (Node ${process.version}, 2 shared cores). Every tool runs as its own process under GNU time; "ours (wall / peak RSS)" is that whole process (a warm-up on a small document, then one call); "ours disarm()" is the best of three engine calls alone in another such process, without Node's start-up and module loading (about 0.1 s and 65 MiB; the image codec and the PDF library load only when a file needs them), with the CPU time that call took on all the process's threads (main thread, check worker, zlib's thread pool) beside its wall time; the floor's CPU time is unzip's and zip's user and system time.\n\n${table}`;
  await writeResultsFile(RESULTS, written);
}

await main();
