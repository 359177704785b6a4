/**
 * The README's commands work as written: every shell block marked `<!-- readme-test: name -->`
 * runs, in bash with `set -euo pipefail`, against a real `disarm serve` in a temporary folder,
 * so an example cannot drift from the CLI and the API. `npx disarm` is the workspace's command
 * (run from source here); the launcher npm links is tested on its own below.
 */
import { spawn } from 'node:child_process';
import { chmod, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from './_fixtures.ts';
import { CLI_PATH, startTestServer, TSX_LOADER } from './_server.ts';
import type { CliRun, TestServer } from './_server.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LAUNCHER = fileURLToPath(new URL('../bin/disarm.mjs', import.meta.url));
/** The marked blocks, in the order a reader runs them (later ones use earlier variables). */
const BLOCK_ORDER = ['admin-cli', 'admin-http', 'oauth-clients'];

function markedBlocks(readme: string): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const match of readme.matchAll(
    /<!-- readme-test: ([a-z-]+)[^>]*-->\s*\n```sh\n([\s\S]*?)```/g,
  )) {
    blocks.set(match[1] ?? '', match[2] ?? '');
  }
  return blocks;
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

describe('the README', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ args: ['--no-processing'] });
  }, 90_000);
  afterAll(async () => {
    await server.stop();
  });

  it('marks the blocks this test runs', async () => {
    const blocks = markedBlocks(await readFile(join(ROOT, 'README.md'), 'utf8'));
    expect([...blocks.keys()].sort()).toEqual([...BLOCK_ORDER].sort());
    for (const [name, block] of blocks) {
      // A placeholder cannot run: examples use variables a previous line sets.
      expect(block, name).not.toContain('…');
    }
  });

  it('runs its administration and OAuth examples as written', async () => {
    const blocks = markedBlocks(await readFile(join(ROOT, 'README.md'), 'utf8'));
    const cwd = await tempDir();
    const bin = join(cwd, 'bin');
    await mkdir(bin);
    // `npx disarm` as npm resolves it in the checkout: the workspace's command, from source.
    await writeFile(
      join(bin, 'npx'),
      `#!/bin/sh\nif [ "$1" = disarm ]; then shift; exec "${process.execPath}" --import ${TSX_LOADER} --conditions=@disarm/source "${CLI_PATH}" "$@"; fi\necho "npx $* is not a README command" >&2; exit 127\n`,
    );
    await chmod(join(bin, 'npx'), 0o755);
    const script = [
      'set -euo pipefail',
      // Fail on HTTP errors too, as a reader would notice them.
      'curl() { command curl --fail-with-body -sS "$@"; }',
      ...BLOCK_ORDER.map((name) => `echo "### ${name}"\n${blocks.get(name) ?? 'false'}`),
      'echo "### done"',
    ].join('\n');
    const inherited = { ...process.env };
    delete inherited.DISARM_ADMIN_TOKEN;
    const result = await run('bash', ['-c', script], {
      cwd,
      env: {
        ...inherited,
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        API: server.apiUrl,
        DISARM_ADMIN_TOKEN: server.adminToken,
        DISARM_DATA_DIR: server.dataDir,
      },
    });
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    expect(result.stdout).toContain('### done');
    // The account snapshot the OAuth client's token read.
    expect(result.stdout).toMatch(/"organisationName":"Acme"/);
    expect(result.stdout).toMatch(/"key":"dsm_live_[0-9A-Za-z]{43}"/);
  }, 180_000);
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
