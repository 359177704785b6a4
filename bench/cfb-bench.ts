/**
 * Word 97-2003 rebuild time and peak memory, side by side in one run with the floor — a plain
 * read and rewrite of the same compound file by an independent tool (the `cfb` package's
 * `read` then `write`) — and with LibreOffice saving the file again as .doc (what a user would
 * otherwise do), on documents generated here: text exported by LibreOffice with a VBA project
 * added (0.1 and 1 MB), and the 1 MB one with a 19 MB `Data` stream, as picture-heavy
 * documents carry (20 MB).
 *
 * Each tool runs as its own process under GNU time (wall seconds, peak RSS); ours and the floor
 * also report the best of five calls inside their process, without Node's start-up.
 *
 * @example
 * ```sh
 * npm run bench:cfb               # writes bench/RESULTS-cfb.md
 * ```
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import CFB from 'cfb';
import { format, resolveConfig } from 'prettier';

import { disarm } from '@disarm/core';
import { buildWordBinary } from '@disarm/fixtures';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT_DIR = join(BENCH_DIR, '.out', 'cfb-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-cfb.md');
/** Everything from this line on in RESULTS-cfb.md is kept across runs. */
const ANALYSIS_MARKER = '<!-- analysis: kept across runs of the bench -->';
const CALLS = 5;
const TIMEOUT_MS = 600_000;
const DATA_BYTES = 19 * 1024 * 1024;

/** Child mode: `--one ours|floor FILE` prints the best in-process call in milliseconds. */
async function one(mode: string, path: string): Promise<void> {
  const bytes = readFileSync(path);
  let best = Number.POSITIVE_INFINITY;
  for (let call = 0; call < CALLS; call += 1) {
    const started = performance.now();
    if (mode === 'ours') {
      const outcome = await disarm({ bytes, fileName: 'bench.doc' });
      if (outcome.status !== 'cleaned') throw new Error(`${outcome.reason}: ${outcome.detail}`);
    } else {
      const written: unknown = CFB.write(CFB.read(bytes, { type: 'buffer' }), { type: 'buffer' });
      if (!(written instanceof Uint8Array)) throw new Error('cfb.write returned no bytes');
    }
    best = Math.min(best, performance.now() - started);
  }
  console.log(best.toFixed(2));
}

interface Measured {
  readonly wallS: number;
  readonly rssMiB: number;
  readonly callMs?: number;
}

/** Runs `command` under GNU time: its wall time, peak RSS and (for ours/floor) best call. */
function timed(command: string, args: readonly string[]): Measured {
  const result = spawnSync('/usr/bin/time', ['-f', '%e %M', command, ...args], {
    encoding: 'utf8',
    timeout: TIMEOUT_MS,
  });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
  const [wall, rss] = (result.stderr.trim().split('\n').at(-1) ?? '').split(' ');
  const call = Number(result.stdout.trim().split('\n').at(-1));
  return {
    wallS: Number(wall),
    rssMiB: Number(rss) / 1024,
    ...(Number.isFinite(call) && call > 0 && { callMs: call }),
  };
}

async function documents(): Promise<[string, Buffer][]> {
  const paragraphs = (count: number): string[] =>
    Array.from(
      { length: count },
      (_, i) => `Paragraph ${i} of the quarterly report, with the figure ${i * 7} in it.`,
    );
  const small = await buildWordBinary({ texts: paragraphs(600), vba: true });
  const medium = await buildWordBinary({ texts: paragraphs(6_000), vba: true });
  const container = CFB.read(medium, { type: 'buffer' });
  CFB.utils.cfb_add(container, '/Data', Buffer.alloc(DATA_BYTES, 0x5a));
  const large: unknown = CFB.write(container, { type: 'buffer' });
  if (!(large instanceof Uint8Array)) throw new Error('cfb.write returned no bytes');
  return [
    ['doc text 600 ¶ + VBA', small],
    ['doc text 6k ¶ + VBA', medium],
    ['doc text 6k ¶ + VBA + 19 MB Data', Buffer.from(large)],
  ];
}

async function main(): Promise<void> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const self = fileURLToPath(import.meta.url);
  const node = [process.execPath, '--import', 'tsx', '--conditions=@disarm/source', self, '--one'];
  const rows: string[] = [];
  for (const [name, bytes] of await documents()) {
    const path = join(OUT_DIR, `${rows.length}.doc`);
    writeFileSync(path, bytes);
    const [command = '', ...args] = node;
    const ours = timed(command, [...args, 'ours', path]);
    const floor = timed(command, [...args, 'floor', path]);
    const libreOffice = timed('soffice', [
      `-env:UserInstallation=file://${join(OUT_DIR, 'profile')}`,
      '--headless',
      '--convert-to',
      'doc',
      '--outdir',
      join(OUT_DIR, 'libreoffice'),
      path,
    ]);
    const ratio = (a: number | undefined, b: number | undefined): string =>
      a !== undefined && b !== undefined ? `${(a / b).toFixed(2)}×` : '-';
    rows.push(
      `| ${name} | ${(bytes.length / 1e6).toFixed(2)} | ${ours.wallS.toFixed(2)} s / ${ours.rssMiB.toFixed(0)} MiB | ${(ours.callMs ?? 0).toFixed(1)} ms | ${floor.wallS.toFixed(2)} s / ${floor.rssMiB.toFixed(0)} MiB | ${(floor.callMs ?? 0).toFixed(1)} ms | ${libreOffice.wallS.toFixed(2)} s / ${libreOffice.rssMiB.toFixed(0)} MiB | ${ratio(ours.callMs, floor.callMs)} | ${ratio(ours.wallS, floor.wallS)} | ${ratio(libreOffice.wallS, ours.wallS)} | ${ratio(libreOffice.wallS * 1000, ours.callMs)} |`,
    );
    console.log(rows.at(-1));
  }
  const previous = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '';
  const kept = previous.includes(ANALYSIS_MARKER)
    ? previous.slice(previous.indexOf(ANALYSIS_MARKER))
    : `${ANALYSIS_MARKER}\n`;
  const written = [
    '# Word 97-2003 results',
    '',
    `Generated by \`npm run bench:cfb\` on ${new Date().toISOString()} (Node ${process.version}, 2 shared cores). Each tool runs as its own process under GNU time (wall / peak RSS). "call" is the best of ${CALLS} calls inside that process, without Node's start-up: \`disarm()\` for ours (detection, rebuild, verify), \`CFB.read\` then \`CFB.write\` for the floor. LibreOffice converts the file to .doc again, headless, with a fresh profile.`,
    '',
    '| document | MB | ours (wall / RSS) | ours call | floor: cfb read + write (wall / RSS) | floor call | LibreOffice re-save (wall / RSS) | ours call / floor call | ours wall / floor wall | LibreOffice / ours wall | LibreOffice / ours call |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
    kept,
  ].join('\n');
  writeFileSync(
    RESULTS,
    await format(written, { ...(await resolveConfig(RESULTS)), filepath: RESULTS }),
  );
}

const oneAt = process.argv.indexOf('--one');
if (oneAt >= 0) await one(process.argv[oneAt + 1] ?? '', process.argv[oneAt + 2] ?? '');
else await main();
