import { lstat, rm, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';

import { DEFAULT_LIMITS, FINDING_KINDS } from '@disarm/core';
import type { Limits, Policy } from '@disarm/core';
import type { Command } from 'commander';

import { createWorkerPool, DEFAULT_MEMORY_LIMIT_BYTES } from '../pool/create-worker-pool.ts';
import type { JobResult } from '../pool/types.ts';
import { EXIT_CODES, UsageError } from './_exit-codes.ts';
import type { ExitCode } from './_exit-codes.ts';
import { collectInputs } from './_inputs.ts';
import type { InputFile } from './_inputs.ts';
import { planOutputs } from './_outputs.ts';
import type { PlannedFile } from './_outputs.ts';
import { createProgress } from './_progress.ts';
import { parsePolicy, parsePositiveInteger } from './_parse.ts';
import { toCleanRecord, toHumanLine } from './_report.ts';
import type { CliContext } from './context.ts';
import { addClamdOptions, clamdConfigOf } from './_clamd.ts';
import type { ClamdFlags } from './_clamd.ts';
import { addRendererOption, assertRenderersReady } from './_renderers.ts';
import type { RendererFlags } from './_renderers.ts';

/** Flags of `disarm clean`, as commander parses them. */
interface CleanFlags extends ClamdFlags, RendererFlags {
  readonly out: string;
  readonly json?: true;
  readonly concurrency?: number;
  readonly policy?: Policy;
  readonly maxBytes?: number;
  readonly timeoutMs?: number;
  readonly maxDepth?: number;
  readonly progress: boolean;
  readonly overwrite?: true;
}

/** Most already-present outputs named in the refusal; the rest are counted. */
const MAX_LISTED_CONFLICTS = 5;

/**
 * Adds `disarm clean <paths...> --out DIR` to `program`: cleans files and folders in parallel on a
 * pool of worker processes and reports one line per file. Its exit status is stored in
 * `context.exitCode`.
 */
export function registerCleanCommand(program: Command, context: CliContext): void {
  const command = program
    .command('clean')
    .summary('rebuild files into safe copies')
    .description(
      'Rebuild every file under the given paths into a safe copy under --out, in parallel ' +
        'worker processes. Prints one line per file on stdout: cleaned, rejected (the file ' +
        'itself is the problem) or failed (the service could not process it).',
    )
    .argument('<paths...>', 'files and folders to clean (folders are walked recursively)')
    .requiredOption('-o, --out <dir>', 'folder for the cleaned copies (created when missing)')
    .option(
      '--overwrite',
      'replace copies already in --out (without it, an existing copy stops the run before any file is processed)',
    )
    .option('--json', 'print one JSON object per input file per line instead of text')
    .option(
      '-c, --concurrency <n>',
      `worker processes to run at once (default: ${availableParallelism()}, the available CPUs)`,
      parsePositiveInteger,
    )
    .option(
      '--policy <kind=action>',
      'what to do with a finding kind: strip (default) or reject; repeatable, or comma-separated',
      parsePolicy,
    )
    .option(
      '--max-bytes <n>',
      `content ceiling in bytes, expanded archive content included (default: ${DEFAULT_LIMITS.maxBytes})`,
      parsePositiveInteger,
    )
    .option(
      '--timeout-ms <n>',
      `time budget per file in milliseconds (default: ${DEFAULT_LIMITS.timeoutMs})`,
      parsePositiveInteger,
    )
    .option(
      '--max-depth <n>',
      `how deep archives may nest (default: ${DEFAULT_LIMITS.maxDepth})`,
      parsePositiveInteger,
    )
    .option('--no-progress', 'no progress bar (it is only ever drawn on a terminal stderr)')
    .addHelpText('after', cleanHelpText())
    .action(async (paths: string[]) => {
      try {
        context.exitCode = await clean(paths, command.opts<CleanFlags>(), context);
      } catch (error) {
        if (error instanceof UsageError) {
          command.error(`error: ${error.message}`, { exitCode: EXIT_CODES.usage });
        }
        throw error;
      }
    });
  addClamdOptions(command);
  addRendererOption(command);
}

async function clean(paths: string[], flags: CleanFlags, context: CliContext): Promise<ExitCode> {
  const outDir = resolve(flags.out);
  const outInfo = await stat(outDir).catch(() => undefined);
  if (outInfo && !outInfo.isDirectory()) throw new UsageError(`--out ${flags.out} is not a folder`);
  const clamd = clamdConfigOf(flags);
  await assertRenderersReady(flags);
  const out = { path: outDir, display: flags.out };
  const files = planOutputs(await collectInputs(paths, out), out);
  if (files.length === 0) throw new UsageError('no files to clean under the given paths');
  await clearOutputs(files, flags, outDir);

  const limits = toLimits(flags);
  const pool = createWorkerPool({
    size: Math.min(flags.concurrency ?? availableParallelism(), files.length),
    ...(clamd === undefined ? {} : { clamd }),
    renderers: flags.renderers,
  });
  const progress = createProgress(
    context.stderr,
    files.length,
    flags.progress && flags.json !== true && context.stderr.isTTY === true,
  );
  const counts = { cleaned: 0, rejected: 0, failed: 0 };
  const interrupt = new AbortController();
  const onInterrupt = (): void => {
    interrupt.abort();
    progress.finish();
    void pool.close({ force: true });
  };
  process.once('SIGINT', onInterrupt);
  try {
    await Promise.all(
      files.map(async (file) => {
        const result = await pool.run({
          inputPath: file.path,
          fileName: file.fileName,
          outputDir: file.outputDir,
          options: flags.policy ? { limits, policy: flags.policy } : { limits },
        });
        if (interrupt.signal.aborted) return;
        counts[result.status] += 1;
        progress.advance(context.stdout, `${formatResult(file, result, flags, outDir)}\n`);
      }),
    );
  } finally {
    process.off('SIGINT', onInterrupt);
    progress.finish();
    await pool.close();
  }
  if (interrupt.signal.aborted) return EXIT_CODES.interrupted;
  if (flags.json !== true) {
    context.stderr.write(
      `${counts.cleaned} cleaned, ${counts.rejected} rejected, ${counts.failed} failed\n`,
    );
  }
  if (counts.failed > 0) return EXIT_CODES.failed;
  return counts.rejected > 0 ? EXIT_CODES.rejected : EXIT_CODES.cleaned;
}

/**
 * Checks every copy's place before any file is processed: an existing file there, or a file where
 * a copy needs a folder (an earlier run's `x.zip`, this run's `x.zip/a.png`), stops the run
 * (usage error), or with `--overwrite` is removed so the copy can take its place. A folder where a
 * copy goes stops the run either way: `--overwrite` replaces copies, never folders.
 */
async function clearOutputs(
  files: readonly PlannedFile[],
  flags: CleanFlags,
  outDir: string,
): Promise<void> {
  const taken = new Set<string>();
  const checked = new Set<string>();
  for (const { outputPath, display } of files) {
    if (outputPath === undefined) continue;
    const info = await lstat(outputPath).catch(() => undefined);
    if (info?.isDirectory() === true) {
      throw new UsageError(
        `${shownOutput(outputPath, flags, outDir)} is a folder, where the copy of ${display} goes; nothing was processed. Move it away, or use another --out`,
      );
    }
    if (info) taken.add(outputPath);
    // The folders the copy goes into, up to --out; a link to a folder is one.
    for (
      let folder = dirname(outputPath);
      folder !== outDir && !checked.has(folder);
      folder = dirname(folder)
    ) {
      checked.add(folder);
      const folderInfo = await stat(folder).catch(() => undefined);
      if (folderInfo?.isDirectory() === true) break;
      if (folderInfo) taken.add(folder);
    }
  }
  if (taken.size === 0) return;
  if (flags.overwrite === true) {
    await Promise.all([...taken].map((target) => rm(target, { force: true })));
    return;
  }
  const shown = [...taken]
    .slice(0, MAX_LISTED_CONFLICTS)
    .map((target) => shownOutput(target, flags, outDir));
  const more = taken.size - shown.length;
  throw new UsageError(
    `${taken.size === 1 ? 'a cleaned copy already exists' : `${taken.size} cleaned copies already exist`} in --out ${flags.out} (${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}); nothing was processed. Use --overwrite to replace them, or another --out`,
  );
}

/** A path under --out, shown under the --out spelling the user typed, like the inputs. */
function shownOutput(path: string, flags: CleanFlags, outDir: string): string {
  return join(flags.out, relative(outDir, path));
}

function formatResult(
  file: InputFile,
  result: JobResult,
  flags: CleanFlags,
  outDir: string,
): string {
  const output = result.status === 'cleaned' ? shownOutput(result.outputPath, flags, outDir) : '';
  const record = toCleanRecord(file.display, result, output);
  return flags.json === true ? JSON.stringify(record) : toHumanLine(record);
}

function toLimits(flags: CleanFlags): Partial<Limits> {
  return {
    ...(flags.maxBytes === undefined ? {} : { maxBytes: flags.maxBytes }),
    ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
    ...(flags.maxDepth === undefined ? {} : { maxDepth: flags.maxDepth }),
  };
}

function cleanHelpText(): string {
  const kinds = Object.entries(FINDING_KINDS).map(
    ([kind, description]) => `  ${kind.padEnd(22)} ${description}`,
  );
  return `
Output:
  A file argument is written to DIR/<name>; the files of a folder argument keep their
  path relative to that folder. The name changes with the format (x.gz -> x.zip).
  Every copy's path is planned before any file is processed: a copy already in DIR
  stops the run (exit 64) unless --overwrite is given; two inputs whose copies would
  take one path (a/x.png and b/x.png named as files; x.gz beside x.zip) stop it always.
  Folders are walked recursively, hidden files included; symbolic links inside them
  are not followed. --out may lie inside an input folder (it is skipped) but must not
  contain an input.

Exit status:
  0   every file was cleaned
  1   at least one file was rejected, none failed
  2   at least one file failed (timeout, crash, write error), or disarm itself failed
  64  usage error: bad or missing option, no input, unreadable input path, a copy
      already in DIR (without --overwrite), two inputs with one copy path
  130 interrupted (Ctrl-C)

JSON lines (--json), one per input file, absent fields omitted:
  {"input","status":"cleaned"|"rejected"|"failed","reason","threatNames","output",
   "outputFormat","modifications","findings":[{"kind","count","locations"}],"detail"}
  A finding's locations (omitted when none is known) say where it was found:
  {"member":[archive member path, outermost first],"part","sheet","page","count"}

Policy kinds (--policy KIND=reject refuses a file carrying KIND; the default strips it):
${kinds.join('\n')}

Limits (defaults):
  --max-bytes   ${DEFAULT_LIMITS.maxBytes} (${DEFAULT_LIMITS.maxBytes / 1024 / 1024} MiB)
  --timeout-ms  ${DEFAULT_LIMITS.timeoutMs} (${DEFAULT_LIMITS.timeoutMs / 1000} s)
  --max-depth   ${DEFAULT_LIMITS.maxDepth}
  Memory        ${DEFAULT_MEMORY_LIMIT_BYTES / 1024 / 1024} MiB per worker process

Antivirus (--clamd):
  Every file, archive member, office package part and PDF attachment is also streamed to
  clamd (DISARM_CLAMD in the environment works too). A file clamd cannot scan (down, timed
  out, over its StreamMaxLength) fails, unless --clamd-fail-open lets it through unscanned.

Renderers (--renderers):
  svg, html, htm, ods and odp are returned as PDF, drawn by the installed renderers (auto)
  or the ones named, each worker keeping its own warm; the built-in renderer draws what
  none of them does, with less fidelity. disarm doctor shows which draws each format.

Examples:
  $ disarm clean inbox --out clean
  $ disarm clean report.docx photos --out strict --policy vba-macro=reject
  $ disarm clean inbox --out clean --overwrite --json > results.jsonl
  $ jq -r 'select(.status != "cleaned") | .input' results.jsonl
  $ disarm clean inbox --out clean --overwrite --clamd /run/clamav/clamd.ctl
`;
}
