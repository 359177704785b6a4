/**
 * `npm run corpus`: runs a real-world corpus (a folder with `manifest.tsv` and the files it
 * names) through the engine on the worker pool, as the service would, checks every cleaned copy
 * with an independent reader, and compares each outcome with the manifest's expectation.
 *
 * @example
 * ```sh
 * npm run corpus                                   # ../shared/corpus, or $DISARM_CORPUS
 * npm run corpus -- /path/to/corpus --formats zip,gz,png
 * npm run corpus -- --json > corpus.jsonl          # one JSON object per file; summary on stderr
 * ```
 *
 * Exits 0 when nothing hostile came back and every copy opens, 1 when a file that had to be
 * refused was cleaned (`unsafe`) or a copy does not open (`broken`) — with `--strict`, also on any
 * other difference — and 2 on bad arguments or an unreadable corpus.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { createWorkerPool } from '@disarm/node';
import type { JobResult } from '@disarm/node';

import { judge, labelOf, VERDICTS } from './judge.ts';
import type { Verdict } from './judge.ts';
import { ManifestError, readManifest } from './manifest.ts';
import { OFFICE_FORMATS, verifyOffice } from './office.ts';
import type { ManifestRow } from './manifest.ts';
import { findLeaks, verifyOutput } from './verify.ts';
import type { Verification } from './verify.ts';

const REPO_DIR = resolve(import.meta.dirname, '..', '..');
const DEFAULT_CORPUS = resolve(REPO_DIR, '..', 'shared', 'corpus');

const USAGE = `usage: npm run corpus -- [DIR] [--formats pdf,zip,…] [--category hostile,…] [--json]
                            [--strict] [--workers N] [--keep DIR]

Runs every file of DIR/manifest.tsv (default: $DISARM_CORPUS, else ../shared/corpus) through the
engine on the worker pool, opens each cleaned copy with an independent reader (vips, ImageMagick
identify, unzip -t, qpdf --check; Office and ODT copies: clamscan --alert-macros with active-content
signatures, then LibreOffice converts input and copy and their text must agree), and compares the
outcome with the manifest.

Verdicts: match; unsafe (cleaned, but the manifest expects a refusal for a threat, policy,
password or size, or clamscan finds active content in the copy); broken (cleaned, but the
reader cannot open the copy); unbuilt (the format's rebuilder is not in this engine version yet;
the file failed closed); differs (anything else, also an Office copy whose text is not the
input's because visible active content was removed).

Options:
  --formats LIST   only rows of these formats (the manifest's format column)
  --category LIST  only rows of these categories (active, hostile, malformed, benign)
  --json           one JSON object per file on stdout; the summary goes to stderr
  --strict         exit 1 on any difference, not only on unsafe or broken
  --workers N      worker processes (default: the available CPUs)
  --keep DIR       keep the cleaned copies under DIR/<row number>/ (default: a temporary folder,
                   removed at the end)
  -h, --help       show this help

Exit status: 0 nothing unsafe or broken; 1 unsafe or broken (with --strict: any difference);
2 bad arguments or an unreadable corpus.`;

interface Options {
  readonly dir: string;
  readonly formats: ReadonlySet<string> | undefined;
  readonly categories: ReadonlySet<string> | undefined;
  readonly json: boolean;
  readonly strict: boolean;
  readonly workers: number;
  readonly keep: string | undefined;
}

interface FileReport {
  readonly row: ManifestRow;
  readonly result: JobResult;
  readonly verification: Verification | undefined;
  readonly verdict: Verdict;
  readonly ms: number;
}

class UsageError extends Error {}

function parseOptions(argv: readonly string[]): Options | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      formats: { type: 'string' },
      category: { type: 'string' },
      json: { type: 'boolean', default: false },
      strict: { type: 'boolean', default: false },
      workers: { type: 'string' },
      keep: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  if (positionals.length > 1) throw new UsageError('give at most one corpus folder');
  const list = (value: string | undefined): ReadonlySet<string> | undefined =>
    value === undefined
      ? undefined
      : new Set(value.split(',').map((item) => item.trim().toLowerCase()));
  const workers = values.workers === undefined ? availableParallelism() : Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    throw new UsageError('--workers takes a whole number from 1 to 64');
  }
  return {
    dir: resolve(positionals[0] ?? process.env.DISARM_CORPUS ?? DEFAULT_CORPUS),
    formats: list(values.formats),
    categories: list(values.category),
    json: values.json,
    strict: values.strict,
    workers,
    keep: values.keep === undefined ? undefined : resolve(values.keep),
  };
}

async function main(argv: readonly string[]): Promise<number> {
  let options: Options | 'help';
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`corpus: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let rows: ManifestRow[];
  try {
    rows = (await readManifest(options.dir)).filter(
      (row) =>
        (options.formats?.has(row.format) ?? true) &&
        (options.categories?.has(row.category) ?? true),
    );
    const missing = await firstMissing(options.dir, rows);
    if (missing !== undefined) throw new ManifestError(`${missing} is listed but not there`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`corpus: cannot read the corpus at ${options.dir}: ${message}\n`);
    return 2;
  }

  const outRoot = options.keep ?? (await mkdtemp(join(tmpdir(), 'disarm-corpus-')));
  const pool = createWorkerPool({ size: options.workers, workerOutput: 'ignore' });
  const started = performance.now();
  let reports: FileReport[];
  try {
    reports = await Promise.all(
      rows.map(async (row, index) => {
        const report = await runOne(pool, options.dir, outRoot, row, index);
        if (options.json) process.stdout.write(`${JSON.stringify(toJson(report))}\n`);
        return report;
      }),
    );
  } finally {
    await pool.close();
    if (options.keep === undefined) await rm(outRoot, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const summary = renderSummary(options.dir, reports, seconds);
  (options.json ? process.stderr : process.stdout).write(summary);
  const failing = reports.filter(
    (report) =>
      report.verdict === 'unsafe' ||
      report.verdict === 'broken' ||
      (options.strict && report.verdict === 'differs'),
  );
  return failing.length === 0 ? 0 : 1;
}

async function firstMissing(
  dir: string,
  rows: readonly ManifestRow[],
): Promise<string | undefined> {
  for (const row of rows) {
    const found = await stat(join(dir, row.file)).catch(() => undefined);
    if (!found?.isFile()) return row.file;
  }
  return undefined;
}

async function runOne(
  pool: ReturnType<typeof createWorkerPool>,
  dir: string,
  outRoot: string,
  row: ManifestRow,
  index: number,
): Promise<FileReport> {
  const stem = basename(row.file, extname(row.file)) || 'file';
  const started = performance.now();
  const result = await pool.run({
    inputPath: join(dir, row.file),
    fileName: `${stem}.${row.format}`,
    outputDir: join(outRoot, String(index + 1)),
  });
  const ms = Math.round(performance.now() - started);
  let verification: Verification | undefined;
  if (result.status === 'cleaned') {
    const opened = OFFICE_FORMATS.has(result.format)
      ? await verifyOffice(result.outputPath, join(dir, row.file), result.format)
      : await verifyOutput(result.outputPath, result.format);
    const leaks = await findLeaks(join(dir, row.file), result.outputPath, result.format);
    verification = leaks.length > 0 ? { ...opened, leaks } : opened;
  }
  return { row, result, verification, verdict: judge(row, result, verification), ms };
}

function toJson(report: FileReport): Record<string, unknown> {
  const { row, result, verification } = report;
  return {
    file: row.file,
    format: row.format,
    category: row.category,
    expected: row.expected,
    got: labelOf(result),
    verdict: report.verdict,
    ...(result.status === 'cleaned'
      ? {
          outputFormat: result.format,
          modifications: result.modifications,
          findings: result.findings,
        }
      : { detail: result.detail }),
    ...(result.status === 'rejected' && result.threatNames
      ? { threatNames: result.threatNames }
      : {}),
    ...(verification
      ? {
          reader: verification.reader,
          opens: verification.ok ?? null,
          ...(verification.detail ? { readerDetail: verification.detail } : {}),
          ...(verification.leaks ? { leaks: verification.leaks } : {}),
          ...(verification.activeContent ? { activeContent: verification.activeContent } : {}),
        }
      : {}),
    ms: report.ms,
  };
}

function renderSummary(dir: string, reports: readonly FileReport[], seconds: number): string {
  const lines: string[] = [`corpus ${dir}: ${reports.length} files in ${seconds.toFixed(1)} s`, ''];
  const formats = [...new Set(reports.map((report) => report.row.format))].sort();
  const header = ['format', 'files', ...VERDICTS];
  const table = formats.map((format) => {
    const mine = reports.filter((report) => report.row.format === format);
    return [
      format,
      String(mine.length),
      ...VERDICTS.map((verdict) => String(count(mine, verdict))),
    ];
  });
  table.push([
    'all',
    String(reports.length),
    ...VERDICTS.map((verdict) => String(count(reports, verdict))),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...table.map((row) => (row[column] ?? '').length)),
  );
  const render = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ');
  lines.push(render(header), ...table.map(render), '');

  const checked = reports.filter((report) => report.verification !== undefined);
  const opened = checked.filter((report) => report.verification?.ok === true).length;
  const unread = checked.filter((report) => report.verification?.ok === undefined).length;
  lines.push(
    `cleaned copies opened by an independent reader: ${opened} of ${checked.length}` +
      (unread > 0 ? ` (${unread} had no reader here)` : ''),
    '',
  );

  const notable = reports.filter(
    (report) => report.verdict !== 'match' && report.verdict !== 'unbuilt',
  );
  if (notable.length > 0) {
    lines.push('Differences:');
    for (const report of notable) {
      const { row, result } = report;
      const why =
        result.status === 'cleaned'
          ? report.verification?.leaks
            ? `leaks: ${report.verification.leaks.join(', ')}`
            : report.verification?.activeContent
              ? `active content left: ${report.verification.activeContent.join(', ')}`
              : report.verification?.ok === false || report.verification?.textDiffers === true
                ? `${report.verification.reader}: ${report.verification.detail ?? ''}`
                : `findings ${JSON.stringify(result.findings)}`
          : result.detail;
      lines.push(
        `  ${report.verdict.padEnd(7)} ${row.format.padEnd(5)} expected ${row.expected}, got ${labelOf(result)}: ${row.file}`,
        `          ${truncate(why, 200)}`,
      );
      if (row.notes !== '') lines.push(`          manifest note: ${truncate(row.notes, 200)}`);
    }
    lines.push('');
  }
  return `${lines.join('\n')}\n`;
}

function count(reports: readonly FileReport[], verdict: Verdict): number {
  return reports.filter((report) => report.verdict === verdict).length;
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

process.exitCode = await main(process.argv.slice(2));
