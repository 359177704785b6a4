/**
 * The README runs as written. Every `sh` and `ts` block runs, in the order of the document, the
 * way a reader of the quick start runs them: one bash shell (`set -euo pipefail`, an HTTP error
 * fails `curl`), in a folder holding the sample files the README names, against a real
 * `disarm serve`. A `ts` block is a module: type-checked under the repository's compiler
 * options, then run from the sources at its place in that order.
 *
 * A block that cannot run here is marked right above its fence, with the reason:
 *
 *     <!-- readme-test: skip (why it cannot run here) -->
 *
 * An unmarked block runs, so a new one fails this test until it runs or is marked. What the
 * skipped quick start sets up is given to the shell instead: the server (started here on free
 * ports, with processing and the demo organisation), `DISARM_ADMIN_TOKEN`, and the data folder
 * (`DISARM_DATA_DIR`, `./.data` for the reader). What a reader copies from the server is filled
 * in: the demo key for `dsm_live_…`, the server's addresses for `http://localhost:8080` and
 * `:8081`. `npx disarm` is the workspace's command, run from source; the launcher npm links is
 * tested on its own below.
 */
import { spawn } from 'node:child_process';
import { chmod, copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { buildImage, buildWordDocument } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { jpegWithMetadata, pngWithMetadata, tempDir, writeTree } from './_fixtures.ts';
import { CLI_PATH, startTestServer, TSX_LOADER } from './_server.ts';
import type { CliRun, TestServer } from './_server.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(300_000) });

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LAUNCHER = fileURLToPath(new URL('../bin/disarm.mjs', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
/** Languages of the blocks that run unless marked. */
const RUNNABLE_LANGUAGES: ReadonlySet<string> = new Set(['sh', 'ts']);
/** Languages of blocks that show data or output (`''`: a plain fence) and never run. */
const SHOWN_LANGUAGES: ReadonlySet<string> = new Set(['json', '']);
const MARKER = /^<!-- readme-test: (.*) -->$/;
/** Said with every failure, for whoever adds a block. */
const HOW_TO_MARK =
  'A block that cannot run here gets `<!-- readme-test: skip (the reason) -->` right above its fence.';
const DEMO_KEY = /dsm_live_[0-9A-Za-z]{43}/;
/** A skip marker's words: a reason of a few words at least. */
const SKIP = /^skip \((.{10,})\)$/;

/** One fenced block of the README. */
interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly language: string;
  readonly code: string;
  /** The heading the block sits under. */
  readonly section: string;
  /** The marker right above the fence, without `<!-- readme-test: ` and ` -->`. */
  readonly marker: string | undefined;
}

function readmeBlocks(readme: string): ReadmeBlock[] {
  const lines = readme.split('\n');
  const blocks: ReadmeBlock[] = [];
  let section = '';
  let previous = '';
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    // A fence may be indented under a list item; its block then is too.
    const fence = /^ *```(\S*)\s*$/.exec(line);
    if (fence) {
      const start = index;
      index += 1;
      while (index < lines.length && !/^ *```\s*$/.test(lines[index] ?? '')) index += 1;
      blocks.push({
        line: start + 1,
        language: fence[1] ?? '',
        code: lines.slice(start + 1, index).join('\n'),
        section,
        marker: MARKER.exec(previous)?.[1],
      });
      previous = '';
      continue;
    }
    if (line.startsWith('#')) section = line;
    if (line.trim() !== '') previous = line.trim();
  }
  return blocks;
}

function readReadme(): Promise<string> {
  return readFile(join(ROOT, 'README.md'), 'utf8');
}

function where(block: ReadmeBlock): string {
  return `README.md line ${block.line} (${block.section})`;
}

/** `text` as one single-quoted shell word. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<CliRun> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/** The files and folders the README's examples name, made as their writers make them. */
async function writeSampleFiles(cwd: string): Promise<void> {
  const photo = await pngWithMetadata();
  await writeTree(cwd, {
    'photo.png': photo,
    'upload.png': photo,
    'report.png': await buildImage('png'),
    'report.docx': await buildWordDocument('docx', { texts: ['Quarterly report'] }),
    'scan.tiff': await buildImage('tiff'),
    'inbox/invoice.png': photo,
    'inbox/letters/reply.docx': await buildWordDocument('docx', { texts: ['Dear reader'] }),
    'photos/holiday.jpg': await jpegWithMetadata(),
  });
}

describe('the README', () => {
  let server: TestServer;
  let demoKey: string;
  beforeAll(async () => {
    server = await startTestServer({ demo: true });
    // Printed on stderr just after the listening line on stdout, through another pipe.
    demoKey = await vi.waitFor(
      () => {
        const key = DEMO_KEY.exec(server.stderr())?.[0];
        if (key === undefined) throw new Error(`no demo key printed yet:\n${server.stderr()}`);
        return key;
      },
      { timeout: scaledMs(30_000) },
    );
  });
  afterAll(async () => {
    await server.stop();
  });

  it('marks each block that does not run, with the reason', async () => {
    const readme = await readReadme();
    for (const block of readmeBlocks(readme)) {
      const known = RUNNABLE_LANGUAGES.has(block.language) || SHOWN_LANGUAGES.has(block.language);
      expect(known, `${where(block)}: fence shell as \`\`\`sh, TypeScript as \`\`\`ts`).toBe(true);
      if (block.marker === undefined) continue;
      expect(block.marker, `${where(block)}: ${HOW_TO_MARK}`).toMatch(SKIP);
      expect(RUNNABLE_LANGUAGES.has(block.language), `${where(block)}: only sh and ts run`).toBe(
        true,
      );
    }
    // A marker that is not right above a fence marks nothing.
    const markers = readme.split('\n').filter((line) => MARKER.test(line.trim()));
    const placed = readmeBlocks(readme).filter((block) => block.marker !== undefined);
    expect(placed).toHaveLength(markers.length);
  });

  it('keeps the Office speed figures in the bench results it links', async () => {
    const readme = await readReadme();
    const start = readme.indexOf('Speed and memory: `npm run bench:office`');
    expect(start).toBeGreaterThan(0);
    const paragraph = readme.slice(start, readme.indexOf('\n\n', start));
    expect(paragraph).toContain('[bench/RESULTS-office.md](bench/RESULTS-office.md)');
    // Measured figures are ranges and durations (`1.4–1.8×`, `0.64 s`); targets are not.
    expect(paragraph).not.toMatch(/\d[–-]\d|\d s\b/);
  });

  it('runs every other block as written, in order', async () => {
    const blocks = readmeBlocks(await readReadme()).filter(
      (block) => RUNNABLE_LANGUAGES.has(block.language) && block.marker === undefined,
    );
    const cwd = await tempDir();
    await writeSampleFiles(cwd);
    // A `ts` block imports the workspace's packages, as in the repository folder.
    await symlink(join(ROOT, 'node_modules'), join(cwd, 'node_modules'));
    const bin = join(cwd, '.bin');
    await mkdir(bin);
    // `npx disarm` as npm resolves it in the checkout: the workspace's command, from source.
    await writeFile(
      join(bin, 'npx'),
      `#!/bin/sh\nif [ "$1" = disarm ]; then shift; exec "${process.execPath}" --import ${TSX_LOADER} --conditions=@disarm/source "${CLI_PATH}" "$@"; fi\necho "npx $* is not a README command" >&2; exit 127\n`,
    );
    await chmod(join(bin, 'npx'), 0o755);

    const fillIn = (code: string): string =>
      code
        .replaceAll('dsm_live_…', demoKey)
        .replaceAll('http://localhost:8080', server.apiUrl)
        .replaceAll('http://localhost:8081', server.storageUrl);
    const steps: string[] = [];
    const modules: string[] = [];
    for (const block of blocks) {
      const code = fillIn(block.code);
      const placeholder = code
        .split('\n')
        .find((line) => line.replace(/(^|\s)#.*$/, '').includes('…'));
      expect(
        placeholder,
        `${where(block)} runs, a placeholder cannot. ${HOW_TO_MARK}`,
      ).toBeUndefined();
      steps.push(`printf '\\n### %s\\n' ${shellQuote(where(block))}`);
      if (block.language === 'ts') {
        const file = `readme-line-${block.line}.mts`;
        await writeFile(join(cwd, file), code);
        modules.push(file);
        steps.push(
          `"${process.execPath}" --import ${TSX_LOADER} --conditions=@disarm/source ${file}`,
        );
      } else {
        steps.push(code);
      }
    }
    // Type-checked first, under the repository's compiler options, as a reader's editor would.
    expect(modules.length, 'the library example runs').toBeGreaterThan(0);
    await writeFile(
      join(cwd, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.base.json'),
        compilerOptions: { noEmit: true },
        files: modules,
      }),
    );
    const compiled = await run(process.execPath, [TSC, '-p', 'tsconfig.json'], {
      cwd,
      env: process.env,
    });
    expect(compiled.code, `${compiled.stdout}${compiled.stderr}`).toBe(0);

    const script = [
      'set -euo pipefail',
      'curl() { command curl --fail-with-body -sS "$@"; }',
      ...steps,
      'echo "### done"',
    ].join('\n');
    const inherited = { ...process.env };
    delete inherited.DISARM_ADMIN_TOKEN;
    const result = await run('bash', ['-c', script], {
      cwd,
      env: {
        ...inherited,
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        DISARM_ADMIN_TOKEN: server.adminToken,
        DISARM_DATA_DIR: server.dataDir,
      },
    });
    // The last "### README.md line …" printed names the block that failed.
    expect(result.code, `${result.stdout}\n${result.stderr}\n${HOW_TO_MARK}`).toBe(0);
    expect(result.stdout).toContain('### done');
    // What the examples are for, not only that they exit 0.
    expect(result.stdout).toMatch(/"status":"completed"/);
    expect(result.stdout).toMatch(/"organisationName":"Acme"/);
    expect(result.stdout).toMatch(/"key":"dsm_live_[0-9A-Za-z]{43}"/);
    expect(result.stdout).toContain("png [ 'rebuilt' ]");
    expect(result.stdout).toContain('cleaned  photos/holiday.jpg -> strict/holiday.jpg');
    const lines = (await readFile(join(cwd, 'results.jsonl'), 'utf8')).trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { output: string }).output).sort()).toEqual([
      'clean/invoice.png',
      'clean/letters/reply.docx',
    ]);
  });
});

describe('the disarm launcher (package.json bin)', () => {
  it('is the committed bin/disarm.mjs, so npm links it before anything is built', async () => {
    const manifest = JSON.parse(
      await readFile(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8'),
    ) as { bin: Record<string, string>; files: string[] };
    expect(manifest.bin).toEqual({ disarm: './bin/disarm.mjs' });
    expect(manifest.files).toContain('bin');
    const tracked = await run(
      'git',
      ['ls-files', '--error-unmatch', 'packages/node/bin/disarm.mjs'],
      {
        cwd: ROOT,
        env: process.env,
      },
    );
    expect(tracked.code, tracked.stderr).toBe(0);
    // `npm ci` links bins as the lockfile records them, not as package.json says: a stale entry
    // (the built dist/cli.mjs, absent at install) left `npx disarm` unlinked in a fresh clone.
    const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { bin?: Record<string, string> }>;
    };
    expect(lock.packages['packages/node']?.bin).toEqual({ disarm: 'bin/disarm.mjs' });
  });

  it('loads the build, or says how to build it', async () => {
    const packageDir = await tempDir();
    await mkdir(join(packageDir, 'bin'));
    await copyFile(LAUNCHER, join(packageDir, 'bin', 'disarm.mjs'));
    const launch = (): Promise<CliRun> =>
      run(process.execPath, [join(packageDir, 'bin', 'disarm.mjs'), '--version'], {
        cwd: packageDir,
        env: process.env,
      });
    const unbuilt = await launch();
    expect(unbuilt.code).toBe(2);
    expect(unbuilt.stderr).toBe(
      'disarm: the CLI is not built yet. Run `npm run build` at the repository root (or `npm run serve`, which builds first), then try again.\n',
    );
    await mkdir(join(packageDir, 'dist'));
    await writeFile(
      join(packageDir, 'dist', 'cli.mjs'),
      'process.stdout.write(`built cli ${process.argv.slice(2).join(" ")}\\n`);\n',
    );
    expect(await launch()).toMatchObject({ code: 0, stdout: 'built cli --version\n' });
  });
});
