/**
 * `disarm doctor` as a user runs it: the real CLI, the real programs of this machine, each
 * version held against the program's own answer.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';

import { tempDir } from './_fixtures.ts';
import { runDisarm } from './_server.ts';
import type { CliRun } from './_server.ts';

interface Report {
  readonly ok: boolean;
  readonly tools: readonly { name: string; state: string; version?: string; path?: string }[];
  readonly renderers: Record<string, string>;
  readonly problems: readonly string[];
}

let cwd: string;

beforeAll(async () => {
  // Chromium, LibreOffice and python3-uno come from the Debian packages this script installs.
  execFileSync('bash', [join(import.meta.dirname, '../../../scripts/ensure-system-deps.sh')]);
  cwd = await tempDir();
});

function doctor(...args: string[]): Promise<CliRun> {
  const env = { ...process.env };
  delete env.DISARM_RENDERERS;
  delete env.DISARM_CLAMD;
  return runDisarm(['doctor', ...args], env, cwd);
}

function reportOf(run: CliRun): Report {
  return JSON.parse(run.stdout) as Report;
}

describe('disarm doctor', () => {
  it('lists every program the engine uses with its version, and the renderer of each format', async () => {
    const run = await doctor('--json');
    expect(run.code).toBe(0);
    const report = reportOf(run);
    expect(report.ok).toBe(true);
    expect(report.problems).toEqual([]);
    expect(report.tools.map((tool) => [tool.name, tool.state])).toEqual([
      ['chromium', 'found'],
      ['soffice', 'found'],
      ['python3-uno', 'found'],
      ['clamd', 'not configured'],
      ['sharp', 'found'],
    ]);
    const version = (name: string): string | undefined =>
      report.tools.find((tool) => tool.name === name)?.version;
    expect(execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' })).toContain(
      `Chromium ${version('chromium') ?? 'none'}`,
    );
    expect(execFileSync('soffice', ['--version'], { encoding: 'utf8' })).toContain(
      `LibreOffice ${version('soffice') ?? 'none'}`,
    );
    expect(version('python3-uno')).toMatch(/^Python 3\.\d+\.\d+$/);
    expect(version('sharp')).toContain(`libvips ${sharp.versions.vips}`);
    expect(version('sharp')).toContain(`librsvg ${sharp.versions.rsvg ?? 'none'}`);
    expect(Object.keys(report.renderers).sort()).toEqual(['htm', 'html', 'odp', 'ods', 'svg']);
  });

  it('prints the same as text, ending in its verdict', async () => {
    const run = await doctor('--renderers', 'builtin');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ {2}chromium {5}found {2}\d+\.\d+/m);
    expect(run.stdout).toContain('Renderers (--renderers builtin)');
    expect(run.stdout).toMatch(/^ {2}svg {3}builtin$/m);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe(
      'OK: every supported format can be processed.',
    );
  });

  it('fails a configuration whose fail-closed clamd does not answer, and passes it fail-open', async () => {
    const socket = join(cwd, 'no-clamd.sock');
    const closed = await doctor('--json', '--clamd', socket);
    expect(closed.code).toBe(2);
    const report = reportOf(closed);
    expect(report.ok).toBe(false);
    expect(report.tools.find((tool) => tool.name === 'clamd')).toMatchObject({
      state: 'missing',
      path: socket,
    });
    expect(report.problems).toEqual([
      expect.stringContaining(`clamd at ${socket} does not answer`),
    ]);

    const open = await doctor('--json', '--clamd', socket, '--clamd-fail-open');
    expect(open.code).toBe(0);
    expect(reportOf(open).problems).toEqual([]);
  });

  it('refuses a renderer it does not know, from the flag or the environment', async () => {
    const flag = await doctor('--renderers', 'gotenberg');
    expect(flag.code).toBe(64);
    expect(flag.stderr).toContain('unknown renderer "gotenberg"');
    const env = await runDisarm(['doctor'], { ...process.env, DISARM_RENDERERS: 'builtin,x' }, cwd);
    expect(env.code).toBe(64);
    expect(env.stderr).toContain('unknown renderer "x"');
  });
});
