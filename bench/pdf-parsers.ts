/**
 * Parser choice for the PDF rebuild: loads and rewrites every pdf/fdf row of
 * the shared corpus and a set of damaged fixtures with each candidate library, one child process
 * per library (so peak RSS is the library's own), and judges each output with `qpdf --check`.
 *
 * npx tsx bench/pdf-parsers.ts            # prints the table and writes bench/RESULTS-pdf.md
 * npx tsx bench/pdf-parsers.ts --child <parser> <list-file>   (internal)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildTextPdf } from '@disarm/fixtures';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const OUT_DIR = join(BENCH_DIR, '.out', 'pdf-parsers');
const CORPUS_DIR = join(BENCH_DIR, '..', '..', 'shared', 'corpus');
const PARSERS = ['pdf-lib', '@cantoo/pdf-lib', '@libpdf/core', '@hyzyla/pdfium'] as const;
type Parser = (typeof PARSERS)[number];
const CHILD_TIMEOUT_MS = 300_000;

interface FileResult {
  readonly file: string;
  readonly loaded: boolean;
  readonly written: boolean;
  readonly ms: number;
  readonly error?: string;
}

async function rewrite(parser: Parser, bytes: Uint8Array): Promise<Uint8Array | undefined> {
  switch (parser) {
    case 'pdf-lib': {
      const { PDFDocument } = await import('pdf-lib');
      const document = await PDFDocument.load(bytes, { updateMetadata: false });
      return document.save({ useObjectStreams: false });
    }
    case '@cantoo/pdf-lib': {
      const { PDFDocument } = await import('@cantoo/pdf-lib');
      const document = await PDFDocument.load(bytes, { updateMetadata: false, password: '' });
      return document.save({ useObjectStreams: false });
    }
    case '@libpdf/core': {
      const { PDF } = await import('@libpdf/core');
      const document = await PDF.load(bytes, { credentials: '' });
      return document.save();
    }
    case '@hyzyla/pdfium': {
      // The wrapper exposes no writer: only loading (and counting pages) can be measured.
      const { PDFiumLibrary } = await import('@hyzyla/pdfium');
      const library = await PDFiumLibrary.init();
      const document = await library.loadDocument(bytes, '');
      document.getPageCount();
      document.destroy();
      library.destroy();
      return undefined;
    }
  }
}

async function child(parser: Parser, listFile: string): Promise<void> {
  const files = JSON.parse(readFileSync(listFile, 'utf8')) as string[];
  const results: FileResult[] = [];
  for (const [index, file] of files.entries()) {
    const bytes = readFileSync(file);
    const started = performance.now();
    try {
      const output = await rewrite(parser, bytes);
      let written = false;
      if (output) {
        const outFile = join(OUT_DIR, `${parser.replace(/\W/g, '_')}-${index}.pdf`);
        writeFileSync(outFile, output);
        const check = spawnSync('qpdf', ['--check', outFile], { timeout: 60_000 });
        written = check.status === 0 || check.status === 3;
      }
      results.push({ file, loaded: true, written, ms: performance.now() - started });
    } catch (error) {
      results.push({
        file,
        loaded: false,
        written: false,
        ms: performance.now() - started,
        error: String(error).slice(0, 120),
      });
    }
  }
  const maxRssMiB = process.resourceUsage().maxRSS / 1024;
  process.stdout.write(JSON.stringify({ results, maxRssMiB }));
}

/** Damaged and encrypted fixtures of our own, written to OUT_DIR. */
function damagedFixtures(): string[] {
  const base = buildTextPdf({ pages: ['One', 'Two', 'Three'] });
  const fixtures: Record<string, Uint8Array> = {
    'truncated-half.pdf': base.subarray(0, Math.floor(base.length / 2)),
    'truncated-no-trailer.pdf': base.subarray(0, base.lastIndexOf('xref')),
    'broken-xref.pdf': buildTextPdf({ layout: { xref: 'broken' } }),
    'no-xref.pdf': buildTextPdf({ layout: { xref: 'none' } }),
    'garbage-prefix.pdf': buildTextPdf({ layout: { prefix: 'MZ'.padEnd(600, '\0') } }),
    'object-streams.pdf': buildTextPdf({ layout: { compressed: [1, 2, 3] } }),
    'incremental.pdf': buildTextPdf({
      layout: {
        updates: [
          { objects: [{ num: 3, body: '<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>' }] },
        ],
      },
    }),
  };
  const written = Object.entries(fixtures).map(([name, bytes]) => {
    const file = join(OUT_DIR, `fixture-${name}`);
    writeFileSync(file, bytes);
    return file;
  });
  const plain = join(OUT_DIR, 'fixture-plain.pdf');
  writeFileSync(plain, base);
  for (const [name, bits, extra] of [
    ['rc4-40', '40', []],
    ['rc4-128', '128', ['--use-aes=n']],
    ['aes-128', '128', ['--use-aes=y']],
    ['aes-256', '256', []],
  ] as const) {
    const file = join(OUT_DIR, `fixture-encrypted-${name}.pdf`);
    execFileSync('qpdf', [
      ...(name.startsWith('rc4') ? ['--allow-weak-crypto'] : []),
      '--encrypt',
      '',
      'owner',
      bits,
      ...extra,
      '--',
      plain,
      file,
    ]);
    written.push(file);
  }
  return written;
}

function corpusFiles(): string[] {
  const manifest = readFileSync(join(CORPUS_DIR, 'manifest.tsv'), 'utf8').split('\n').slice(1);
  return manifest
    .map((line) => line.split('\t'))
    .filter((columns) => columns[1] === 'pdf' || columns[1] === 'fdf')
    .map((columns) => join(CORPUS_DIR, columns[0] ?? ''))
    .filter((file) => existsSync(file));
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    await child(process.argv[3] as Parser, process.argv[4] ?? '');
    return;
  }
  mkdirSync(OUT_DIR, { recursive: true });
  const files = [...corpusFiles(), ...damagedFixtures()];
  const listFile = join(OUT_DIR, 'files.json');
  writeFileSync(listFile, JSON.stringify(files));
  const rows: string[] = [];
  for (const parser of PARSERS) {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', parser, listFile],
      { timeout: CHILD_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
    );
    if (run.status !== 0) {
      rows.push(`| ${parser} | crashed or timed out (${run.signal ?? run.status}) | | | | |`);
      continue;
    }
    const { results, maxRssMiB } = JSON.parse(run.stdout) as {
      results: FileResult[];
      maxRssMiB: number;
    };
    const fixtures = results.filter((result) => result.file.includes('/fixture-'));
    const corpus = results.filter((result) => !result.file.includes('/fixture-'));
    const count = (list: FileResult[], key: 'loaded' | 'written'): string =>
      `${list.filter((result) => result[key]).length}/${list.length}`;
    const totalMs = results.reduce((sum, result) => sum + result.ms, 0);
    rows.push(
      `| ${parser} | ${count(corpus, 'loaded')} | ${count(corpus, 'written')} | ${count(fixtures, 'loaded')} | ${count(fixtures, 'written')} | ${totalMs.toFixed(0)} | ${maxRssMiB.toFixed(0)} |`,
    );
    const failed = results
      .filter((result) => !result.written)
      .map((result) => result.file.split('/').pop());
    console.error(`${parser} not rebuilt: ${failed.join(', ')}`);
  }
  const table = [
    '| parser | corpus loaded | corpus rewritten (qpdf --check ok) | fixtures loaded | fixtures rewritten | total ms | peak RSS MiB |',
    '| ------ | ------------: | ---------------------------------: | --------------: | -----------------: | -------: | -----------: |',
    ...rows,
  ].join('\n');
  console.log(table);
  writeFileSync(
    join(OUT_DIR, 'table.md'),
    `Generated by \`npx tsx bench/pdf-parsers.ts\` on ${new Date().toISOString()} (${files.length} files).\n\n${table}\n`,
  );
}

await main();
