/**
 * Adversarial archives: how long the engine takes and how much memory one process peaks at for
 * each hostile archive, and for the legitimate work the budgets must still let through. Every case
 * runs in a fresh process (`node --import tsx --conditions=@disarm/source`), so its peak RSS is
 * that case's alone.
 *
 * @example
 * ```sh
 * npm run bench:archives                    # writes bench/ARCHIVES.md
 * npm run bench:archives -- --out /tmp/archives.md
 * ```
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { disarm, isDisarmError } from '@disarm/core';
import {
  buildGzip,
  buildImage,
  buildPlainPdf,
  buildRawZip,
  deflateBomb,
  EICAR_TEST_FILE,
  gzipBomb,
  nestedZips,
} from '@disarm/fixtures';

const BENCH_DIR = import.meta.dirname;
const MiB = 1024 * 1024;

interface Case {
  readonly name: string;
  readonly fileName: string;
  readonly expected: string;
  build(): Promise<Uint8Array> | Uint8Array;
}

interface CaseReport {
  readonly outcome: string;
  readonly elapsedMs: number;
  readonly peakMib: number;
  readonly startMib: number;
}

async function tinyPng(): Promise<Buffer> {
  return buildImage('png', { width: 1, height: 1 });
}

const CASES: readonly Case[] = [
  {
    name: 'five nested zips of 9,999 tiny PNGs (50,000 entries)',
    fileName: 'nested.zip',
    expected: 'policy_violation',
    build: async () => nestedZips(5, 9_999, await tinyPng()),
  },
  {
    name: 'one zip of 9,999 tiny PNGs (legitimate, within budget)',
    fileName: 'many.zip',
    expected: 'cleaned',
    build: async () => nestedZips(1, 9_999, await tinyPng()),
  },
  {
    name: 'zip of 10,001 entries',
    fileName: 'wide.zip',
    expected: 'policy_violation',
    build: async () => nestedZips(1, 10_001, await tinyPng()),
  },
  {
    name: '1 GiB zip bomb, sizes declared',
    fileName: 'bomb.zip',
    expected: 'file_too_large',
    build: () =>
      buildRawZip([
        {
          name: 'zeros.png',
          method: 8,
          rawCompressed: deflateBomb(1024 * MiB),
          declaredUncompressedSize: 1024 * MiB,
        },
      ]),
  },
  {
    name: '1 GiB gzip bomb',
    fileName: 'bomb.gz',
    expected: 'file_too_large',
    build: () => gzipBomb(1024 * MiB),
  },
  {
    name: '10,000 entries sharing one PNG (overlapping entries)',
    fileName: 'overlap.zip',
    expected: 'invalid_file',
    build: async () => {
      const png = await tinyPng();
      return buildRawZip([
        { name: 'p0.png', data: png },
        ...Array.from({ length: 9_999 }, (_, i) => ({ name: `p${i + 1}.png`, shareDataWith: 0 })),
      ]);
    },
  },
  {
    name: 'a.pdf (not yet rebuilt) + EICAR, 9,999 PNGs between',
    fileName: 'mixed.zip',
    expected: 'threat_detected',
    build: async () => {
      const png = await tinyPng();
      return buildRawZip([
        { name: 'a.pdf', data: buildPlainPdf() },
        ...Array.from({ length: 9_997 }, (_, i) => ({ name: `p${i}.png`, data: png })),
        { name: 'eicar.png', data: EICAR_TEST_FILE },
      ]);
    },
  },
  {
    name: 'gzip of five nested zips of 9,999 tiny PNGs',
    fileName: 'nested.zip.gz',
    expected: 'policy_violation',
    build: async () => buildGzip(nestedZips(5, 9_999, await tinyPng()), { fileName: 'n.zip' }),
  },
];

const { values } = parseArgs({
  options: { out: { type: 'string' }, case: { type: 'string' } },
});

if (values.case !== undefined) {
  process.stdout.write(`${JSON.stringify(await runCase(values.case))}\n`);
} else {
  await main(resolve(values.out ?? join(BENCH_DIR, 'ARCHIVES.md')));
}

/** Child side: disarm one prepared file and report. */
async function runCase(path: string): Promise<CaseReport> {
  const bytes = readFileSync(path);
  const startMib = process.memoryUsage.rss() / MiB;
  const started = performance.now();
  let outcome: string;
  try {
    const result = await disarm({ bytes, fileName: basename(path).replace(/^\d+-/, '') });
    outcome = result.status === 'cleaned' ? 'cleaned' : result.reason;
  } catch (error) {
    outcome = isDisarmError(error) ? `failed (${error.code})` : 'crashed';
  }
  const elapsedMs = performance.now() - started;
  return { outcome, elapsedMs, peakMib: process.resourceUsage().maxRSS / 1024, startMib };
}

async function main(out: string): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'disarm-archives-'));
  const rows: string[] = [];
  let failures = 0;
  try {
    for (const [index, item] of CASES.entries()) {
      const input = join(directory, `${index}-${item.fileName}`);
      const bytes = await item.build();
      writeFileSync(input, bytes);
      const child = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--conditions=@disarm/source',
          join(BENCH_DIR, 'archives.ts'),
          '--case',
          input,
        ],
        { encoding: 'utf8', maxBuffer: 16 * MiB },
      );
      const line = child.stdout.trim().split('\n').at(-1) ?? '';
      const report = line.startsWith('{') ? (JSON.parse(line) as CaseReport) : undefined;
      const outcome = report?.outcome ?? `crashed (exit ${String(child.status)})`;
      if (outcome !== item.expected) failures += 1;
      rows.push(
        `| ${item.name} | ${(bytes.length / MiB).toFixed(1)} | ${item.expected} | ${outcome} | ${report ? (report.elapsedMs / 1000).toFixed(2) : '-'} | ${report ? report.startMib.toFixed(0) : '-'} | ${report ? report.peakMib.toFixed(0) : '-'} |`,
      );
      process.stderr.write(`${rows.at(-1) ?? ''}\n`);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const [load] = loadavg();
  writeFileSync(
    out,
    `# Adversarial archives

Generated by \`npm run bench:archives\` on ${new Date().toISOString()}, default limits
(100 MiB content, 10,000 entries across all levels, depth 5, 120 s). Do not edit by hand: run it
again. Load average (1 min) at the end: ${(load ?? 0).toFixed(2)} on this shared machine, so
times are upper bounds.

Each case runs in a fresh Node process; **seconds** is the \`disarm()\` call alone (the input is
built beforehand), **RSS at start** is the process before the call (Node, tsx, the engine and
sharp loaded, the input read), **peak RSS** the process's maximum.

| case | MiB in | expected | outcome | seconds | RSS at start MiB | peak RSS MiB |
| ---- | -----: | -------- | ------- | ------: | ---------------: | -----------: |
${rows.join('\n')}
`,
  );
  process.exitCode = failures > 0 ? 1 : 0;
}
