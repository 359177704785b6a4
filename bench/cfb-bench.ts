/**
 * Word, Excel and PowerPoint 97-2003 rebuild time and peak memory, side by side in one run with
 * the floor — a plain read and rewrite of the same compound file by an independent tool (the
 * `cfb` package's `read` then `write`) — and with LibreOffice saving the file again in its own
 * format (what a user would otherwise do), on documents of about 0.1, 1 and 20 MB generated here:
 * - .doc: text exported by LibreOffice with a VBA project added, and the 1 MB one with a 19 MB
 *   `Data` stream, as picture-heavy documents carry;
 * - .xls: sheets of numbers, text and formulas written record by record, with a VBA project;
 * - .ppt: a deck LibreOffice exported from a generated .pptx, and that deck given PNG pictures
 *   (noise, which compresses least) in its picture store and `Pictures` stream in code.
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
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { writeResultsFile } from './results-file.ts';

import CFB from 'cfb';
import sharp from 'sharp';

import { disarm } from '@disarm/core';
import {
  buildExcelWorkbook,
  buildOfficeDocument,
  buildWordBinary,
  formulaCell,
  FTAB,
  insertRecord,
  labelCell,
  numberCell,
  pngBlip,
  PPT_RECORD,
  ptg,
  readPowerPoint,
  writePowerPoint,
} from '@disarm/fixtures';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT_DIR = join(BENCH_DIR, '.out', 'cfb-bench');
const RESULTS = join(BENCH_DIR, 'RESULTS-cfb.md');
/** Everything from this line on in RESULTS-cfb.md is kept across runs. */
const CALLS = 5;
const TIMEOUT_MS = 600_000;
const DATA_BYTES = 19 * 1024 * 1024;
/** Columns of a generated sheet's row: a number, a label and a SUM formula, repeated. */
const XLS_ROW_TRIPLETS = 4;
/** [MS-XLS] BIFF8 rows per sheet. */
const XLS_MAX_ROWS = 65_536;
/** Side of a generated PNG picture: 300 × 300 RGB noise is about 270 KB. */
const PICTURE_SIDE_PX = 300;

/** The extensions benched, each a family of generated documents. */
type Extension = 'doc' | 'xls' | 'ppt';

/** Child mode: `--one ours|floor FILE` prints the best in-process call in milliseconds. */
async function one(mode: string, path: string): Promise<void> {
  const bytes = readFileSync(path);
  let best = Number.POSITIVE_INFINITY;
  for (let call = 0; call < CALLS; call += 1) {
    const started = performance.now();
    if (mode === 'ours') {
      // The file's own extension: `path` is `N.doc`, `N.xls` or `N.ppt`.
      const outcome = await disarm({
        bytes,
        fileName: `bench${path.slice(path.lastIndexOf('.'))}`,
      });
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

async function documents(): Promise<[string, Extension, Buffer][]> {
  return [...(await wordDocuments()), ...excelWorkbooks(), ...(await powerPointDecks())];
}

async function wordDocuments(): Promise<[string, Extension, Buffer][]> {
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
    ['doc text 600 ¶ + VBA', 'doc', small],
    ['doc text 6k ¶ + VBA', 'doc', medium],
    ['doc text 6k ¶ + VBA + 19 MB Data', 'doc', Buffer.from(large)],
  ];
}

/** A workbook of `rows` rows of {@link XLS_ROW_TRIPLETS} (number, label, SUM) cells per sheet. */
function workbook(rows: number): Buffer {
  const sheets = [];
  for (let first = 0; first < rows; first += XLS_MAX_ROWS) {
    const records: Buffer[] = [];
    for (let row = 0; row < Math.min(XLS_MAX_ROWS, rows - first); row += 1) {
      for (let triplet = 0; triplet < XLS_ROW_TRIPLETS; triplet += 1) {
        const column = triplet * 3;
        records.push(
          numberCell(row, column, row * 7 + triplet),
          labelCell(row, column + 1, `Item ${row}`),
          formulaCell(
            row,
            column + 2,
            Buffer.concat([ptg.ref(row, column), ptg.int(2), ptg.funcVar(2, FTAB.SUM)]),
            row * 7 + triplet + 2,
          ),
        );
      }
    }
    sheets.push({ name: `Sheet${sheets.length + 1}`, records });
  }
  return buildExcelWorkbook({ sheets, vba: 'Sub Auto_Open()\r\nEnd Sub' });
}

function excelWorkbooks(): [string, Extension, Buffer][] {
  return [
    ['xls 300 rows × 12 cells + VBA', 'xls', workbook(300)],
    ['xls 3k rows × 12 cells + VBA', 'xls', workbook(3_000)],
    ['xls 62k rows × 12 cells + VBA', 'xls', workbook(62_000)],
  ];
}

/** A PNG of RGB noise from a fixed seed, so every run benches the same bytes. */
function noisePng(seed: number): Promise<Buffer> {
  const pixels = Buffer.alloc(PICTURE_SIDE_PX * PICTURE_SIDE_PX * 3);
  let state = seed;
  for (let at = 0; at < pixels.length; at += 1) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    pixels[at] = state >>> 24;
  }
  const raw = { width: PICTURE_SIDE_PX, height: PICTURE_SIDE_PX, channels: 3 } as const;
  return sharp(pixels, { raw }).png().toBuffer();
}

/**
 * `pictures` PNG pictures added in code to a deck LibreOffice exported: each in the `Pictures`
 * stream and named by an entry of the picture store ([MS-ODRAW] OfficeArtFBSE), which is what
 * the rebuild reads and re-encodes, shown on a slide or not.
 */
async function withPictures(exported: Buffer, pictures: number): Promise<Buffer> {
  const model = readPowerPoint(exported);
  let doc = model.objects.get(model.docPersistIdRef);
  if (doc === undefined) throw new Error('the exported deck has no document');
  const store = [PPT_RECORD.drawingGroup, PPT_RECORD.officeArtDgg, PPT_RECORD.officeArtBStore];
  const blips: Buffer[] = [];
  let offset = 0;
  for (let index = 0; index < pictures; index += 1) {
    const { blip, entry } = pngBlip(await noisePng(index + 1), offset);
    doc = insertRecord(doc, store, entry);
    blips.push(blip);
    offset += blip.length;
  }
  model.objects.set(model.docPersistIdRef, doc);
  return writePowerPoint(model, { pictures: Buffer.concat(blips) });
}

/**
 * A deck of 20 text slides as LibreOffice exports it to .ppt from a generated .pptx, its
 * `\x05SummaryInformation` emptied of the thumbnail LibreOffice writes into it (0.59 MB, whatever
 * the deck), so the small deck is small; then that deck with 3 and with 72 pictures.
 */
async function powerPointDecks(): Promise<[string, Extension, Buffer][]> {
  const folder = join(OUT_DIR, 'ppt-source');
  mkdirSync(folder, { recursive: true });
  const texts = Array.from({ length: 20 }, (_, i) => `Slide ${i + 1} of the quarterly review`);
  writeFileSync(join(folder, 'deck.pptx'), await buildOfficeDocument('pptx', { texts }));
  const converted = spawnSync(
    'soffice',
    [
      `-env:UserInstallation=file://${join(OUT_DIR, 'profile')}`,
      '--headless',
      '--convert-to',
      'ppt',
      '--outdir',
      folder,
      join(folder, 'deck.pptx'),
    ],
    { timeout: TIMEOUT_MS },
  );
  if (converted.status !== 0) throw new Error('LibreOffice did not export the deck');
  const container = CFB.read(readFileSync(join(folder, 'deck.ppt')), { type: 'buffer' });
  // Emptied, not deleted: the `cfb` package's cfb_del leaves a directory our reader refuses.
  const summary = CFB.find(container, '\u0005SummaryInformation');
  if (summary !== null) {
    summary.content = Buffer.alloc(0);
    summary.size = 0;
  }
  const written: unknown = CFB.write(container, { type: 'buffer' });
  if (!(written instanceof Uint8Array)) throw new Error('cfb.write returned no bytes');
  const exported = Buffer.from(written);
  return [
    ['ppt 20 text slides', 'ppt', exported],
    ['ppt 20 text slides + 3 PNG in the store', 'ppt', await withPictures(exported, 3)],
    ['ppt 20 text slides + 72 PNG in the store', 'ppt', await withPictures(exported, 72)],
  ];
}

async function main(): Promise<void> {
  rmSync(OUT_DIR, { recursive: true, force: true });
  mkdirSync(OUT_DIR, { recursive: true });
  const self = fileURLToPath(import.meta.url);
  const node = [process.execPath, '--import', 'tsx', '--conditions=@disarm/source', self, '--one'];
  const rows: string[] = [];
  for (const [name, extension, bytes] of await documents()) {
    const path = join(OUT_DIR, `${rows.length}.${extension}`);
    writeFileSync(path, bytes);
    const [command = '', ...args] = node;
    const ours = timed(command, [...args, 'ours', path]);
    const floor = timed(command, [...args, 'floor', path]);
    const libreOffice = timed('soffice', [
      `-env:UserInstallation=file://${join(OUT_DIR, 'profile')}`,
      '--headless',
      '--convert-to',
      extension,
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
  const written = [
    '# Word, Excel and PowerPoint 97-2003 results',
    '',
    `Generated by \`npm run bench:cfb\` on ${new Date().toISOString()} (Node ${process.version}, 2 shared cores). Each tool runs as its own process under GNU time (wall / peak RSS). "call" is the best of ${CALLS} calls inside that process, without Node's start-up: \`disarm()\` for ours (detection, rebuild, verify), \`CFB.read\` then \`CFB.write\` for the floor. LibreOffice converts the file to its own format again (.doc, .xls, .ppt), headless, with a fresh profile.`,
    '',
    '| document | MB | ours (wall / RSS) | ours call | floor: cfb read + write (wall / RSS) | floor call | LibreOffice re-save (wall / RSS) | ours call / floor call | ours wall / floor wall | LibreOffice / ours wall | LibreOffice / ours call |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  await writeResultsFile(RESULTS, written);
}

const oneAt = process.argv.indexOf('--one');
if (oneAt >= 0) await one(process.argv[oneAt + 1] ?? '', process.argv[oneAt + 2] ?? '');
else await main();
