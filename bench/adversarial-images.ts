/**
 * Adversarial image inputs against the decode budget: each case runs in its own process, so the
 * peak RSS it reports (VmHWM) is what that one file cost a worker.
 *
 * @example
 * ```sh
 * nice -n 10 npx tsx bench/adversarial-images.ts          # writes bench/ADVERSARIAL-IMAGES.md
 * ```
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

import { disarm } from '@disarm/core';
import { buildImage, progressiveCmykJpeg, rleBmpBomb } from '@disarm/fixtures';
import sharp from 'sharp';

interface Case {
  readonly name: string;
  readonly fileName: string;
  build(): Promise<Uint8Array>;
}

const CASES: readonly Case[] = [
  {
    name: 'progressive CMYK JPEG declaring 10 000 × 10 000 (100 MP)',
    fileName: 'bomb.jpg',
    build: () => progressiveCmykJpeg(10_000, 10_000),
  },
  {
    name: 'RLE8 BMP, 1 KiB, declaring 9 999 × 9 999',
    fileName: 'bomb.bmp',
    build: () => Promise.resolve(rleBmpBomb(9999, 9999)),
  },
  {
    name: 'real progressive CMYK JPEG 5 000 × 5 000 (25 MP, under the ceiling)',
    fileName: 'big.jpg',
    build: () =>
      sharp(Buffer.alloc(5000 * 5000 * 3, 97), { raw: { width: 5000, height: 5000, channels: 3 } })
        .toColourspace('cmyk')
        .jpeg({ progressive: true, quality: 80 })
        .toBuffer(),
  },
  {
    name: 'PNG 8 000 × 8 000 RGB (64 MP, under the ceiling)',
    fileName: 'big.png',
    build: () => buildImage('png', { width: 8000, height: 8000 }),
  },
];

function peakKib(): number {
  const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match?.[1] ?? process.resourceUsage().maxRSS);
}

/** The child: disarms one prepared file; its peak RSS is the engine's own plus Node's floor. */
async function runCase(path: string, fileName: string): Promise<void> {
  const bytes = readFileSync(path);
  const floor = peakKib();
  const started = performance.now();
  const outcome = await disarm({ bytes, fileName });
  const ms = Math.round(performance.now() - started);
  const result = outcome.status === 'cleaned' ? 'cleaned' : `${outcome.status}: ${outcome.reason}`;
  process.stdout.write(
    JSON.stringify({ bytes: bytes.length, floor, peak: peakKib(), ms, result }) + '\n',
  );
}

async function main(): Promise<void> {
  const [path, fileName] = process.argv.slice(2);
  if (path !== undefined && fileName !== undefined) {
    await runCase(path, fileName);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'disarm-adversarial-'));
  const rows = [
    '| input | size | outcome | ms | RSS floor / peak MiB |',
    '| --- | --- | --- | --- | --- |',
  ];
  try {
    for (const testCase of CASES) {
      const path = join(dir, testCase.fileName);
      writeFileSync(path, await testCase.build());
      const run = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--conditions=@disarm/source',
          import.meta.filename,
          path,
          testCase.fileName,
        ],
        { encoding: 'utf8', maxBuffer: 1024 * 1024 },
      );
      const line = run.stdout.trim().split('\n').pop() ?? '';
      if (run.status !== 0 || line === '') {
        rows.push(`| ${testCase.name} | | crashed (exit ${String(run.status)}) | | |`);
        continue;
      }
      const report = JSON.parse(line) as {
        bytes: number;
        floor: number;
        peak: number;
        ms: number;
        result: string;
      };
      const mib = (kib: number): string => (kib / 1024).toFixed(0);
      rows.push(
        `| ${testCase.name} | ${(report.bytes / 1024).toFixed(1)} KiB | ${report.result} | ${report.ms} | ${mib(report.floor)} / ${mib(report.peak)} |`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const report = [
    '# Adversarial images: decode budget and peak memory',
    '',
    'Written by `bench/adversarial-images.ts`: each file is disarmed in a fresh process with the',
    'default limits (`maxPixels` 100 000 000, `maxDecodeBytes` 1 GiB). **RSS floor** is the',
    "process's peak before the file (Node, tsx, sharp, the engine); **peak** is its peak after.",
    `Run ${new Date().toISOString().slice(0, 10)}, load average ${loadavg()[0]?.toFixed(1) ?? '?'} on a shared machine.`,
    '',
    ...rows,
    '',
  ].join('\n');
  writeFileSync(join(import.meta.dirname, 'ADVERSARIAL-IMAGES.md'), report);
  process.stdout.write(report);
}

await main();
