/**
 * ods and odp returned as PDF: conversions per second and p50/p99 latency of the engine with the
 * warm LibreOffice pool (`disarm()` end to end: ODF rebuild, render, PDF rebuild, verify), side
 * by side in one run with a plain `soffice --headless --convert-to pdf` per file (a cold start
 * per document, as Gotenberg-style converters run it; its profile made before the first row).
 * Inputs of about 1 MB generated here as LibreOffice writes them: a spreadsheet of three sheets of
 * figures, two with a photo, a presentation of twelve slides, five with a photo.
 *
 * @example
 * ```sh
 * npm run bench:render-office        # writes bench/RESULTS-render-office.md
 * ```
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import sharp from 'sharp';

import { disarm } from '@disarm/core';
import type { Renderer } from '@disarm/core';
import { buildOdp, buildOds, seededRandom } from '@disarm/fixtures';
import { createLibreOfficeRenderer } from '@disarm/libreoffice';

import { writeResultsFile } from './results-file.ts';

const run = promisify(execFile);
const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT_DIR = join(BENCH_DIR, '.out', 'render-office-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-render-office.md');
const MIB = 1024 * 1024;
/** Documents per warm series; cold conversions cost seconds each, so fewer of them. */
const WARM_DOCUMENTS = 24;
const COLD_DOCUMENTS = 6;
/** One soffice per core, as `disarm serve` runs one worker (and so one pool) per core. */
const POOL_SIZE = Math.max(1, Math.min(2, cpus().length));

/** A photo-like JPEG (noise over a gradient), which does not compress away. */
async function photo(seed: number, width: number, height: number): Promise<Buffer> {
  const random = seededRandom(seed);
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i += 1) {
    pixels[i] = Math.floor(((i / 3) % width) / 4 + random() * 160);
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 88 })
    .toBuffer();
}

async function inputs(): Promise<{ name: string; fileName: string; bytes: Buffer }[]> {
  const random = seededRandom(7);
  const figure = (): string => (random() * 100_000).toFixed(2);
  const sheet = (name: string, rows: number): { name: string; rows: string[][] } => ({
    name,
    rows: [
      ['Region', 'Product', 'Q1', 'Q2', 'Q3', 'Q4', 'Total', 'Note'],
      ...Array.from({ length: rows }, (_, row) => [
        `Region ${row % 12}`,
        `Product ${Math.floor(random() * 1000)}`,
        figure(),
        figure(),
        figure(),
        figure(),
        figure(),
        `checked by ${Math.floor(random() * 1e9).toString(36)}`,
      ]),
    ],
  });
  const ods = await buildOds({
    sheets: [
      { ...sheet('Sales', 400), picture: await photo(1, 1000, 750) },
      { ...sheet('Costs', 400), picture: await photo(2, 700, 520) },
      sheet('Forecast', 400),
    ],
  });
  const slides = await Promise.all(
    Array.from({ length: 12 }, async (_, index) => ({
      title: `Quarterly review, part ${index + 1}`,
      texts: [`Revenue grew in region ${index}`, 'Costs held flat', 'Next: hiring plan'],
      ...((index % 3 === 0 || index === 1) && { picture: await photo(10 + index, 640, 480) }),
    })),
  );
  const odp = await buildOdp({ slides });
  return [
    { name: 'ods', fileName: 'figures.ods', bytes: ods },
    { name: 'odp', fileName: 'review.odp', bytes: odp },
  ];
}

/** The value at quantile `q` of `values` (nearest rank). */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}

interface Series {
  readonly latenciesS: number[];
  readonly wallS: number;
  readonly documents: number;
}

/** `documents` conversions, `concurrency` at a time; latency of each and wall time of all. */
async function series(
  documents: number,
  concurrency: number,
  convert: (lane: number) => Promise<void>,
): Promise<Series> {
  const latenciesS: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      while (next < documents) {
        next += 1;
        const begun = performance.now();
        await convert(lane);
        latenciesS.push((performance.now() - begun) / 1000);
      }
    }),
  );
  return { latenciesS, wallS: (performance.now() - started) / 1000, documents };
}

const row = (label: string, s: Series, cores: number): string =>
  `| ${label} | ${s.documents} | ${(s.documents / s.wallS).toFixed(2)} | ${(s.documents / s.wallS / cores).toFixed(2)} | ${quantile(s.latenciesS, 0.5).toFixed(2)} | ${quantile(s.latenciesS, 0.99).toFixed(2)} |`;

async function main(): Promise<void> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(join(OUT_DIR, 'cold'), { recursive: true });
  const documents = await inputs();
  // A profile per lane: two soffice processes on one profile would hand their work to one.
  const cold = async (path: string, lane: number): Promise<void> => {
    await run('soffice', [
      `-env:UserInstallation=file://${join(OUT_DIR, `profile-${lane}`)}`,
      '--headless',
      '--convert-to',
      'pdf',
      '--outdir',
      join(OUT_DIR, 'cold', String(lane)),
      path,
    ]);
  };
  const renderer: Renderer = createLibreOfficeRenderer({ poolSize: POOL_SIZE, tempDir: OUT_DIR });
  const rows: string[] = [];
  const sizes: string[] = [];
  try {
    for (const document of documents) {
      const path = join(OUT_DIR, document.fileName);
      writeFileSync(path, document.bytes);
      sizes.push(`${document.fileName} ${(document.bytes.length / MIB).toFixed(2)} MiB`);
      const warm = async (): Promise<void> => {
        const outcome = await disarm(
          { bytes: document.bytes, fileName: document.fileName },
          { renderers: [renderer] },
        );
        if (outcome.status !== 'cleaned') throw new Error(`${outcome.reason}: ${outcome.detail}`);
      };
      // The first conversion of each kind loads Calc or Impress into the warm processes.
      await series(POOL_SIZE, POOL_SIZE, warm);
      await Promise.all(Array.from({ length: POOL_SIZE }, (_, lane) => cold(path, lane)));
      const one = await series(WARM_DOCUMENTS, 1, warm);
      const pool = await series(WARM_DOCUMENTS, POOL_SIZE, warm);
      const plain = await series(COLD_DOCUMENTS, 1, (lane) => cold(path, lane));
      const plainPool = await series(COLD_DOCUMENTS, POOL_SIZE, (lane) => cold(path, lane));
      rows.push(
        row(`${document.name}: ours, warm pool of ${POOL_SIZE}, one at a time`, one, 1),
        row(
          `${document.name}: ours, warm pool of ${POOL_SIZE}, ${POOL_SIZE} at a time`,
          pool,
          POOL_SIZE,
        ),
        row(`${document.name}: plain soffice --convert-to pdf per file, one at a time`, plain, 1),
        row(
          `${document.name}: plain soffice --convert-to pdf per file, ${POOL_SIZE} at a time`,
          plainPool,
          POOL_SIZE,
        ),
      );
      process.stdout.write(`${rows.slice(-4).join('\n')}\n`);
    }
  } finally {
    await renderer.close();
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0] ?? '?';
  const table = [
    '| series | documents | documents/s | documents/s per core | p50 s | p99 s |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  await writeResultsFile(
    RESULTS,
    `# ods and odp returned as PDF\n\nGenerated by \`npm run bench:render-office\` on ${new Date().toISOString()} (Node ${process.version}, ${cpus().length} shared cores, load average ${load} at the end). Inputs: ${sizes.join(', ')}. "ours" is \`disarm()\` end to end (ODF rebuild, the warm LibreOffice pool drawing the PDF, PDF rebuild, verify) in this process; "plain soffice" starts \`soffice --headless --convert-to pdf\` per file (no disarm), a profile of its own per lane, made before the first row. "per core" divides by the documents converted at once. Latency is per document, from the call to its end.\n\n${table}`,
  );
}

await main();
