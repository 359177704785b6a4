/**
 * The peer side of the bench: the command-line tools a team would otherwise script, run one
 * process per file (that is how they are used), each under GNU time for its peak RSS. Encoder
 * settings follow what our rebuild does to the same file, so both sides do the same work.
 */
import { accessSync, closeSync, constants, existsSync, openSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { spawn, spawnSync } from 'node:child_process';
import { basename, delimiter, join } from 'node:path';

import type { BenchFormat, CorpusFile, PeerFileResult, SideResult } from './types.ts';

/** Re-encode quality our engine uses for lossy images (`LOSSY_QUALITY` in the image handler). */
const LOSSY_QUALITY = 92;
/** Suffixes `zip -n` stores without deflating, as our rebuild stores already-compressed members. */
const STORED_SUFFIXES = '.jpg:.jpeg:.png:.gif:.webp';
const GNU_TIME = '/usr/bin/time';
/** Marks GNU time's line in a peer's stderr. */
const PEAK_MARK = 'BENCH_PEAK_KIB=';
const GNU_TIME_STATUS = /^Command (?:exited with non-zero status|terminated by signal) /;

/** Absolute paths of the peer programs, `null` when missing. */
export interface PeerTools {
  readonly vips: string | null;
  readonly imagemagick: string | null;
  readonly zip: string | null;
  readonly unzip: string | null;
  readonly gunzip: string | null;
  readonly time: string | null;
}

/** One process of a peer run. */
interface PeerStep {
  readonly argv: readonly [string, ...string[]];
  readonly cwd?: string;
  /** Where the process's stdout goes (`gunzip -c`). */
  readonly stdoutFile?: string;
}

/** The peer of one format: its name in the report, and the processes it runs per file. */
export interface PeerPlan {
  readonly name: string;
  /** Why the peer cannot run here, or `null`. */
  readonly missing: string | null;
  /** The processes for one file; `scratch` is an empty folder of its own. */
  steps(input: string, file: CorpusFile, output: string, scratch: string): PeerStep[];
  /** Output file name for an input name. */
  outputName(name: string): string;
}

/** A peer's measurement of one format. */
export interface PeerRun extends SideResult {
  readonly files: readonly PeerFileResult[];
}

/** Finds the peer programs on this machine. */
export function findPeerTools(): PeerTools {
  return {
    vips: onPath('vips'),
    imagemagick: findImageMagick(),
    zip: onPath('zip'),
    unzip: onPath('unzip'),
    gunzip: onPath('gunzip'),
    time: isExecutable(GNU_TIME) ? GNU_TIME : null,
  };
}

/** Versions of the peer programs, for the report. */
export function peerVersions(tools: PeerTools): Record<string, string> {
  const versions: Record<string, string> = {};
  if (tools.vips) versions['vips CLI'] = firstLine(tools.vips, ['--version']);
  if (tools.imagemagick) {
    versions.ImageMagick = firstLine(
      tools.imagemagick,
      ['-version'],
      /^Version: ImageMagick (\S+ \S+)/,
    );
  }
  if (tools.zip) versions.zip = firstLine(tools.zip, ['-v'], /^This is (Zip [^ ]+)/);
  if (tools.unzip) versions.unzip = firstLine(tools.unzip, ['-v'], /^(UnZip [^ ]+)/);
  return versions;
}

/** The peer of `format`, with the tools it needs checked. */
export function peerPlanFor(format: BenchFormat, tools: PeerTools): PeerPlan {
  const vips = tools.vips ?? 'vips';
  // `describe` names the save options in the report; `save` picks them for one file.
  const vipsPlan = (describe: string, save: (file: CorpusFile) => string, load = ''): PeerPlan => ({
    name: `vips copy in${load} out${describe}`,
    missing: requireTools(tools, ['vips', 'time']),
    steps: (input, file, output) => [
      { argv: [vips, 'copy', `${input}${load}`, `${output}${save(file)}`] },
    ],
    outputName: (name) => name,
  });
  switch (format) {
    case 'jpg': {
      // libvips turns chroma subsampling off from Q 90 up, and leaves Huffman tables unoptimised;
      // our rebuild (sharp's defaults) keeps 4:2:0 and optimises them.
      const save = `Q=${LOSSY_QUALITY},subsample-mode=on,optimize-coding,strip`;
      return vipsPlan(
        `[${save}], +interlace for progressive input`,
        (file) => `[${save}${file.hints.progressive === true ? ',interlace' : ''}]`,
      );
    }
    case 'png': {
      const save = '[compression=6,filter=all,strip]';
      return vipsPlan(save, () => save);
    }
    case 'gif': {
      const save = '[dither=0,effort=7,reuse,strip]';
      return vipsPlan(save, () => save, '[n=-1]');
    }
    case 'tif': {
      const save = '[compression=lzw,predictor=horizontal,strip]';
      return vipsPlan(save, () => save);
    }
    case 'webp': {
      const lossy = `[Q=${LOSSY_QUALITY},alpha-q=100,effort=4,strip]`;
      const lossless = '[lossless,effort=4,strip]';
      return vipsPlan(`${lossy}, ${lossless} for lossless input`, (file) =>
        file.hints.lossless === true ? lossless : lossy,
      );
    }
    case 'bmp': {
      // libvips has no BMP saver; ImageMagick's BMP3 is the same 24-bit BITMAPINFOHEADER layout
      // our encoder writes for RGB.
      const magick = tools.imagemagick ?? 'convert';
      return {
        name: `ImageMagick ${basename(magick)} -strip BMP3:`,
        missing: requireTools(tools, ['imagemagick', 'time']),
        steps: (input, _file, output) => [{ argv: [magick, input, '-strip', `BMP3:${output}`] }],
        outputName: (name) => name,
      };
    }
    case 'zip': {
      const unzip = tools.unzip ?? 'unzip';
      const zip = tools.zip ?? 'zip';
      return {
        name: `unzip -q, then zip -q -r -X -n ${STORED_SUFFIXES}`,
        missing: requireTools(tools, ['unzip', 'zip', 'time']),
        steps: (input, _file, output, scratch) => [
          { argv: [unzip, '-q', '-o', input, '-d', scratch] },
          { argv: [zip, '-q', '-r', '-X', '-n', STORED_SUFFIXES, output, '.'], cwd: scratch },
        ],
        outputName: (name) => name,
      };
    }
    case 'gz': {
      const gunzip = tools.gunzip ?? 'gunzip';
      const zip = tools.zip ?? 'zip';
      return {
        name: `gunzip -c, then zip -q -X -n ${STORED_SUFFIXES}`,
        missing: requireTools(tools, ['gunzip', 'zip', 'time']),
        steps: (input, _file, output, scratch) => {
          const inner = basename(input).replace(/\.gz$/i, '');
          return [
            { argv: [gunzip, '-c', input], stdoutFile: join(scratch, inner) },
            { argv: [zip, '-q', '-X', '-n', STORED_SUFFIXES, output, inner], cwd: scratch },
          ];
        },
        // Our engine converts gz to zip (README "What it handles").
        outputName: (name) => name.replace(/\.gz$/i, '.zip'),
      };
    }
  }
}

/**
 * Runs `plan` over `files` one at a time. Wall time covers each file's processes from spawn to
 * exit; making and removing the scratch folders is not timed. Peak RSS is the largest any one
 * process reached.
 */
export async function runPeer(options: {
  readonly plan: PeerPlan;
  readonly inputDir: string;
  readonly files: readonly CorpusFile[];
  readonly outDir: string;
}): Promise<PeerRun> {
  const { plan, inputDir, files, outDir } = options;
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  const results: PeerFileResult[] = [];
  let elapsedMs = 0;
  let peakKib = 0;
  for (const [index, file] of files.entries()) {
    const input = join(inputDir, file.name);
    const output = join(outDir, `${String(index).padStart(3, '0')}-${plan.outputName(file.name)}`);
    const scratch = join(outDir, `scratch-${String(index).padStart(3, '0')}`);
    await mkdir(scratch, { recursive: true });
    let error: string | null = null;
    const started = performance.now();
    for (const step of plan.steps(input, file, output, scratch)) {
      const run = await runTimed(step);
      peakKib = Math.max(peakKib, run.peakKib);
      if (run.error !== null) {
        error = run.error;
        break;
      }
    }
    elapsedMs += performance.now() - started;
    await rm(scratch, { recursive: true, force: true });
    results.push({ file: input, output: error === null ? output : null, error });
  }
  return { elapsedMs, peakKib, files: results };
}

interface TimedRun {
  readonly peakKib: number;
  readonly error: string | null;
}

function runTimed(step: PeerStep): Promise<TimedRun> {
  const stdout = step.stdoutFile === undefined ? 'ignore' : openSync(step.stdoutFile, 'w');
  return new Promise<TimedRun>((resolve) => {
    const child = spawn(GNU_TIME, ['-f', `${PEAK_MARK}%M`, ...step.argv], {
      cwd: step.cwd,
      stdio: ['ignore', stdout, 'pipe'],
    });
    let stderr = '';
    // Piped above; typed nullable because stdout's mode is chosen at run time.
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      stderr += chunk;
    });
    const finish = (error: string | null): void => {
      if (typeof stdout === 'number') closeSync(stdout);
      const lines = stderr.trimEnd().split('\n');
      const mark = lines.findLast((line) => line.startsWith(PEAK_MARK));
      const peakKib = mark === undefined ? 0 : Number(mark.slice(PEAK_MARK.length));
      // GNU time's own status line says only what the exit code says already.
      const output = lines
        .filter((line) => !line.startsWith(PEAK_MARK) && !GNU_TIME_STATUS.test(line))
        .join(' ')
        .trim();
      resolve({ peakKib, error: error === null ? null : `${error}${output ? `: ${output}` : ''}` });
    };
    child.once('error', (error) => {
      finish(`${step.argv[0]} could not start (${error.message})`);
    });
    child.once('close', (code) => {
      finish(code === 0 ? null : `${basename(step.argv[0])} exited with ${String(code)}`);
    });
  });
}

function requireTools(tools: PeerTools, names: readonly (keyof PeerTools)[]): string | null {
  const absent = names.filter((name) => tools[name] === null);
  if (absent.length === 0) return null;
  const packages: Record<keyof PeerTools, string> = {
    vips: 'libvips-tools',
    imagemagick: 'imagemagick',
    zip: 'zip',
    unzip: 'unzip',
    gunzip: 'gzip',
    time: 'time',
  };
  return `not installed: ${absent.map((name) => `${name} (Debian ${packages[name]})`).join(', ')}`;
}

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return null;
}

/**
 * ImageMagick's own binaries only: the first `convert` on PATH may be another program of that
 * name (Windows has one; wrappers exist), so it is taken from the distribution's path, and only if
 * it says it is ImageMagick.
 */
function findImageMagick(): string | null {
  const candidates = [onPath('magick'), '/usr/bin/convert'];
  for (const candidate of candidates) {
    if (candidate === null || !existsSync(candidate)) continue;
    if (firstLine(candidate, ['-version']).includes('ImageMagick')) return candidate;
  }
  return null;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function firstLine(command: string, args: readonly string[], pick?: RegExp): string {
  const run = spawnSync(command, args, { encoding: 'utf8' });
  const text = `${run.stdout}${run.stderr}`;
  const line = text.split('\n').find((candidate) => candidate.trim() !== '') ?? '';
  if (pick === undefined) return line.trim();
  for (const candidate of text.split('\n')) {
    const match = pick.exec(candidate.trim());
    if (match?.[1] !== undefined) return match[1];
  }
  return line.trim();
}
