/**
 * RTF rebuild throughput and peak memory, side by side in one run with headless LibreOffice
 * re-saving the same document as RTF (what a user would otherwise do to strip it), on documents
 * generated here as Word writes them: formatted paragraphs, tables and hyperlink fields of 0.1,
 * 1 and 20 MB, and 1 MB holding PNG pictures (rebuilt by the image handler, reported apart).
 *
 * Ours runs the BUILT engine (`npm run build` first) as its own process under GNU time, like
 * LibreOffice: wall seconds and peak RSS of the whole process, plus the `disarm()` call alone.
 *
 * @example
 * ```sh
 * npm run bench:rtf                  # writes bench/RESULTS-rtf.md
 * ```
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { writeResultsFile } from './results-file.ts';

import { buildImage, buildRtf, rtfField, rtfPicture, seededRandom } from '@disarm/fixtures';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = resolve(BENCH_DIR, '..');
const OUT_DIR = join(BENCH_DIR, '.out', 'rtf-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-rtf.md');
/** Everything from this line on in RESULTS-rtf.md is kept across runs. */
const TIMEOUT_MS = 900_000;
const MIB = 1024 * 1024;

interface Case {
  readonly name: string;
  readonly images: boolean;
  readonly build: () => Promise<Buffer>;
}

/** Paragraphs, a table and a hyperlink field in turn, as Word writes them, up to `bytes`. */
function body(bytes: number, seed: number, picture?: string): string {
  const random = seededRandom(seed);
  const word = (): string => Math.floor(random() * 1e9).toString(36);
  const parts: string[] = [];
  let size = 0;
  for (let block = 0; size < bytes; block += 1) {
    const words = Array.from({ length: 14 }, word);
    let part =
      `\\pard\\plain \\ql\\widctlpar\\f0\\fs24 ${words.slice(0, 5).join(' ')} {\\b ${words[5] ?? ''}}` +
      ` {\\i\\cf2 ${words.slice(6, 10).join(' ')}} \\'e9t\\'e9 \\u8217\\'92 ${words.slice(10).join(' ')}\\par\r\n`;
    if (block % 10 === 0) {
      part +=
        '\\trowd\\trgaph108\\trleft-108\\cellx3000\\cellx6000\\pard\\plain\\intbl ' +
        `${word()}\\cell ${word()}\\cell\\row\\pard\r\n`;
    }
    if (block % 25 === 0) {
      part += `${rtfField('HYPERLINK "https://example.com/"', word())}\\par\r\n`;
    }
    if (picture !== undefined && block % 250 === 0) part += `${picture}\\par\r\n`;
    parts.push(part);
    size += part.length;
  }
  return parts.join('');
}

function cases(): Case[] {
  return [
    { name: 'rtf text 0.1 MB', images: false, build: () => rtf(0.1 * MIB, 1) },
    { name: 'rtf text 1 MB', images: false, build: () => rtf(MIB, 2) },
    { name: 'rtf text 20 MB', images: false, build: () => rtf(20 * MIB, 3) },
    {
      name: 'rtf 1 MB + pictures',
      images: true,
      build: async () =>
        rtf(MIB, 4, rtfPicture('pngblip', await buildImage('png', { width: 320, height: 240 }))),
    },
  ];
}

function rtf(bytes: number, seed: number, picture?: string): Promise<Buffer> {
  return Promise.resolve(buildRtf({ body: body(bytes, seed, picture) }));
}

interface Measure {
  readonly seconds: number | undefined;
  readonly rssMiB: number | undefined;
  readonly note?: string;
}

function timed(command: string, args: readonly string[]): Measure {
  const run = spawnSync('/usr/bin/time', ['-f', '__TIME__ %e %M', command, ...args], {
    cwd: REPO_DIR,
    timeout: TIMEOUT_MS,
    maxBuffer: 64 * MIB,
    encoding: 'utf8',
  });
  const match = /__TIME__ ([\d.]+) (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !match) {
    return {
      seconds: undefined,
      rssMiB: undefined,
      note: run.signal ? 'timeout' : `exit ${String(run.status)}: ${run.stderr.slice(0, 200)}`,
    };
  }
  return { seconds: Number(match[1]), rssMiB: Number(match[2]) / 1024 };
}

/** Ours: the built engine in a process of its own; prints the best of `runs` calls' seconds. */
const OURS = `
import { readFileSync, writeFileSync } from 'node:fs';
import { disarm } from '@disarm/core';
const [input, output, warmUp, runs] = process.argv.slice(1);
await disarm({ bytes: readFileSync(warmUp), fileName: 'warm-up.rtf' });
const bytes = readFileSync(input);
let best = Infinity;
for (let run = 0; run < Number(runs); run += 1) {
  const started = performance.now();
  const outcome = await disarm({ bytes, fileName: 'bench.rtf' }, { limits: { timeoutMs: ${TIMEOUT_MS} } });
  if (outcome.status !== 'cleaned') { process.stderr.write(outcome.status + ': ' + outcome.detail + '\\n'); process.exit(1); }
  best = Math.min(best, performance.now() - started);
  if (run === 0) writeFileSync(output, outcome.bytes);
}
process.stdout.write((best / 1000).toFixed(3) + '\\n');
`;

const f = (value: number | undefined, digits = 2): string =>
  value === undefined ? '-' : value.toFixed(digits);
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || b === 0 ? '-' : `${(a / b).toFixed(1)}×`;

async function main(): Promise<void> {
  const built = spawnSync('npm', ['run', 'build'], {
    cwd: REPO_DIR,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (built.status !== 0) throw new Error('npm run build failed');
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(join(OUT_DIR, 'libreoffice'), { recursive: true });
  const warmUp = join(OUT_DIR, 'warm-up.rtf');
  writeFileSync(warmUp, await rtf(0.01 * MIB, 99));
  const profile = `-env:UserInstallation=file://${join(OUT_DIR, 'profile')}`;
  const libreOffice = (input: string): Measure =>
    timed('soffice', [
      profile,
      '--headless',
      '--convert-to',
      'rtf',
      '--outdir',
      join(OUT_DIR, 'libreoffice'),
      input,
    ]);
  // LibreOffice's first start creates its profile: not part of any row.
  libreOffice(warmUp);
  const rows: string[] = [];
  for (const item of cases()) {
    const slug = item.name.replace(/[^a-z0-9]+/gi, '-');
    const input = join(OUT_DIR, `${slug}.rtf`);
    writeFileSync(input, await item.build());
    const mb = statSync(input).size / MIB;
    const oursArgs = (runs: number): string[] => [
      '--input-type=module',
      '-e',
      OURS,
      input,
      join(OUT_DIR, `${slug}.ours.rtf`),
      warmUp,
      String(runs),
    ];
    const ours = timed(process.execPath, oursArgs(1));
    const calls = spawnSync(process.execPath, oursArgs(3), {
      cwd: REPO_DIR,
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    });
    const best = Number(calls.status === 0 ? calls.stdout.trim() : Number.NaN);
    const inProcess = Number.isFinite(best) ? best : undefined;
    const resaved = libreOffice(input);
    rows.push(
      `| ${item.name}${item.images ? ' (images re-encoded)' : ''} | ${f(mb)} | ${f(ours.seconds)} s / ${f(ours.rssMiB, 0)} MiB${ours.note ? ` (${ours.note})` : ''} | ${f(inProcess)} s | ${f(resaved.seconds)} s / ${f(resaved.rssMiB, 0)} MiB${resaved.note ? ` (${resaved.note})` : ''} | ${ratio(resaved.seconds, ours.seconds)} | ${ratio(resaved.seconds, inProcess)} |`,
    );
    process.stdout.write(`${rows.at(-1) ?? ''}\n`);
  }
  const table = [
    '| document | MB | ours (wall / peak RSS) | ours disarm() | LibreOffice re-save (wall / peak RSS) | LibreOffice / ours wall | LibreOffice / ours disarm() |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  const written = `# RTF results\n\nGenerated by \`npm run bench:rtf\` on ${new Date().toISOString()} (Node ${process.version}, 2 shared cores). Every tool runs as its own process under GNU time; "ours (wall / peak RSS)" is that whole process (a warm-up on a small document, then one call); "ours disarm()" is the best of three engine calls alone in another such process; LibreOffice runs \`soffice --headless --convert-to rtf\` with a profile made before the first row.\n\n${table}`;
  await writeResultsFile(RESULTS, written);
}

await main();
