/**
 * PDF rebuild throughput and peak memory, side by side with qpdf
 * (`--recompress-flate`), Ghostscript `pdfwrite` and mat2, on PDFs generated here: text-heavy
 * (1 to 1,000 pages) and image-heavy (JPEG pages, up to ~50 MB; `--large` adds ~200 MB).
 * Every tool runs as its own process under GNU time (wall seconds, peak RSS); ours also reports
 * the in-process rebuild time, without Node's start-up, after a warm-up on a 3-page file.
 *
 * npm run bench:pdf [-- --large] [-- --only <case>]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

import { disarm } from '@disarm/core';
import { buildRawPdf, seededRandom } from '@disarm/fixtures';
import type { RawPdfObject } from '@disarm/fixtures';
import sharp from 'sharp';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
// The peers (qpdf, Ghostscript, mat2, GNU time, zip) are Debian packages this script installs.
const ensured = spawnSync('bash', [join(BENCH_DIR, '..', 'scripts', 'ensure-bench-tools.sh')], {
  stdio: 'inherit',
});
if (ensured.status !== 0) {
  console.error('some peers are missing (see above); their columns will say so');
}
const OUT_DIR = join(BENCH_DIR, '.out', 'pdf-bench');
const TIMEOUT_MS = 600_000;
const LINES_PER_PAGE = 50;
const MAX_MAT2_PAGES = 100;

/** A PDF of `pages` pages: text lines, or one full-page JPEG each. */
async function generate(kind: 'text' | 'image', pages: number, imageSide = 1200): Promise<Buffer> {
  const random = seededRandom(pages);
  const objects: RawPdfObject[] = [
    { num: 1, body: '<< /Type /Catalog /Pages 2 0 R >>' },
    { num: 3, body: '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>' },
  ];
  const kids: string[] = [];
  let jpeg: Buffer | undefined;
  if (kind === 'image') {
    const pixels = Buffer.alloc(imageSide * imageSide * 3);
    for (let i = 0; i < pixels.length; i += 1) pixels[i] = (i % 251) ^ Math.floor(random() * 64);
    jpeg = await sharp(pixels, { raw: { width: imageSide, height: imageSide, channels: 3 } })
      .jpeg({ quality: 90 })
      .toBuffer();
  }
  for (let page = 0; page < pages; page += 1) {
    const base = 10 + page * 3;
    kids.push(`${base} 0 R`);
    let content: string;
    if (kind === 'text') {
      const lines = Array.from({ length: LINES_PER_PAGE }, (_, line) => {
        const words = Array.from({ length: 12 }, () => Math.floor(random() * 1e6).toString(36));
        return `BT /F1 10 Tf 40 ${760 - line * 14} Td (${words.join(' ')}) Tj ET`;
      });
      content = lines.join('\n');
    } else {
      content = 'q 540 0 0 540 36 126 cm /Im Do Q';
      objects.push({
        num: base + 2,
        body: `<< /Type /XObject /Subtype /Image /Width ${imageSide} /Height ${imageSide} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode >>`,
        stream: jpeg ?? Buffer.alloc(0),
      });
    }
    objects.push(
      {
        num: base,
        body: `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> ${kind === 'image' ? `/XObject << /Im ${base + 2} 0 R >>` : ''} >> /Contents ${base + 1} 0 R >>`,
      },
      { num: base + 1, body: '<< /Filter /FlateDecode >>', stream: deflateSync(content) },
    );
  }
  objects.push({ num: 2, body: `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${pages} >>` });
  return buildRawPdf({ objects, trailer: '/Root 1 0 R' });
}

interface Measure {
  readonly seconds: number | undefined;
  readonly rssMiB: number | undefined;
  readonly note?: string;
}

function timed(command: string, args: string[]): Measure & { stdout: string } {
  const run = spawnSync('/usr/bin/time', ['-f', '__TIME__ %e %M', command, ...args], {
    timeout: TIMEOUT_MS,
    maxBuffer: 64 * 1024 * 1024,
    encoding: 'utf8',
  });
  const match = /__TIME__ ([\d.]+) (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !match) {
    return {
      seconds: undefined,
      rssMiB: undefined,
      note: run.signal ? 'timeout' : `exit ${String(run.status)}`,
      stdout: '',
    };
  }
  return { seconds: Number(match[1]), rssMiB: Number(match[2]) / 1024, stdout: run.stdout };
}

async function child(input: string, output: string): Promise<void> {
  // A service or a batch run is warm: the engine's code is compiled by the first small file.
  // The warm-up is a 3-page document, so it adds nothing to the peak memory measured.
  const warmUp = await disarm({ bytes: await generate('text', 3), fileName: 'warm-up.pdf' });
  if (warmUp.status !== 'cleaned') throw new Error('the warm-up PDF did not clean');
  const started = performance.now();
  const outcome = await disarm(
    { bytes: readFileSync(input), fileName: 'bench.pdf' },
    { limits: { maxBytes: 400 * 1024 * 1024, timeoutMs: TIMEOUT_MS } },
  );
  if (outcome.status !== 'cleaned') throw new Error(`${outcome.status}: ${outcome.detail}`);
  writeFileSync(output, outcome.bytes);
  process.stdout.write(`${((performance.now() - started) / 1000).toFixed(3)}\n`);
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    await child(process.argv[3] ?? '', process.argv[4] ?? '');
    return;
  }
  mkdirSync(OUT_DIR, { recursive: true });
  const cases: [string, 'text' | 'image', number, number?][] = [
    ['text-1p', 'text', 1],
    ['text-10p', 'text', 10],
    ['text-100p', 'text', 100],
    ['text-1000p', 'text', 1000],
    ['image-1p', 'image', 1, 400],
    ['image-10p', 'image', 10, 1200],
    ['image-60p', 'image', 60, 1200],
  ];
  if (process.argv.includes('--large')) cases.push(['image-240p', 'image', 240, 1200]);
  // `--only <name>`: one case (e.g. `--large --only image-240p`).
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt === -1 ? undefined : process.argv[onlyAt + 1];
  const rows: string[] = [];
  for (const [name, kind, pages, side] of cases) {
    if (only !== undefined && name !== only) continue;
    const input = join(OUT_DIR, `${name}.pdf`);
    writeFileSync(input, await generate(kind, pages, side));
    const sizeMB = statSync(input).size / 1e6;
    const ours = timed(process.execPath, [
      '--import',
      'tsx',
      '--conditions=@disarm/source',
      fileURLToPath(import.meta.url),
      '--child',
      input,
      join(OUT_DIR, `${name}.ours.pdf`),
    ]);
    const inProcess = Number(ours.stdout.trim()) || undefined;
    const qpdf = timed('qpdf', ['--recompress-flate', input, join(OUT_DIR, `${name}.qpdf.pdf`)]);
    const gs = timed('gs', [
      '-q',
      '-dNOPAUSE',
      '-dBATCH',
      '-dSAFER',
      '-sDEVICE=pdfwrite',
      `-sOutputFile=${join(OUT_DIR, `${name}.gs.pdf`)}`,
      input,
    ]);
    const mat2Copy = join(OUT_DIR, `${name}.mat2.pdf`);
    copyFileSync(input, mat2Copy);
    // mat2 renders every page to a bitmap (~0.9 s a page here): past MAX_MAT2_PAGES it would
    // only run into the timeout.
    const mat2: Measure =
      pages > MAX_MAT2_PAGES
        ? { seconds: undefined, rssMiB: undefined, note: `skipped (> ${MAX_MAT2_PAGES} pages)` }
        : timed('mat2', ['--inplace', mat2Copy]);
    const cell = (measure: Measure): string =>
      measure.seconds === undefined
        ? (measure.note ?? 'failed')
        : `${measure.seconds.toFixed(2)} s / ${measure.rssMiB?.toFixed(0) ?? '?'} MiB`;
    // Ours is compared in-process: its wall time is dominated by tsx compiling the engine.
    const ratio = (ourSeconds: number | undefined, peer: Measure): string =>
      ourSeconds === undefined || peer.seconds === undefined
        ? '-'
        : `${(ourSeconds / Math.max(peer.seconds, 0.01)).toFixed(2)}×`;
    rows.push(
      `| ${name} | ${sizeMB.toFixed(2)} | ${cell(ours)} | ${inProcess?.toFixed(2) ?? '-'} s | ${ours.rssMiB === undefined ? '-' : (ours.rssMiB / Math.max(sizeMB / 1.048576, 1)).toFixed(1)} | ${cell(qpdf)} | ${cell(gs)} | ${cell(mat2)} | ${ratio(inProcess, qpdf)} | ${ratio(inProcess, gs)} | ${ratio(inProcess, mat2)} |`,
    );
    console.error(rows.at(-1));
  }
  const table = [
    '| file | MB | ours (wall / peak RSS) | ours in-process | ours RSS / file size | qpdf --recompress-flate | gs pdfwrite | mat2 | ours/qpdf time | ours/gs time | ours/mat2 time |',
    '| ---- | -: | ---------------------: | --------------: | -------------------: | ----------------------: | ----------: | ---: | --------------------------: | -----------: | -------------: |',
    ...rows,
  ].join('\n');
  console.log(table);
}

await main();
