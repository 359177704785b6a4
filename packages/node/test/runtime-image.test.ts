/**
 * The image an operator runs holds what the service runs and nothing else. Without a Docker
 * daemon, these read what the build would use: the Dockerfile, docker-compose.yml, the Debian
 * package lists and the lockfile. (`scripts/build-runtime-tree.mjs` builds the same tree for real;
 * README "Docker and compose" says how to run it.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { DEFAULT_CHROMIUM_PATH } from '@disarm/chromium';
import { describe, expect, it } from 'vitest';

import { reachablePackages, RUNTIME_ROOTS } from '../../../scripts/build-runtime-tree.mjs';
import type { LockEntry } from '../../../scripts/build-runtime-tree.mjs';

const REPO = join(import.meta.dirname, '../../..');
const read = (path: string): string => readFileSync(join(REPO, path), 'utf8');
/** The Dockerfile's instructions, without its comments. */
const dockerfileInstructions = (): string =>
  read('Dockerfile')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n');

/** `package probe` lines of a list in scripts/system-packages/. */
function packageList(name: string): Map<string, string> {
  const entries = read(`scripts/system-packages/${name}.list`)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.split(/\s+/) as [string, string]);
  return new Map(entries);
}

/** Packages only the tests use: never in the image. */
const TEST_ONLY = [
  'postgresql-15',
  'printemf',
  'libwmf-bin',
  'libimage-exiftool-perl',
  'clamav',
  'clamav-daemon',
  'qpdf',
  'poppler-utils',
  'libreoffice-writer-nogui',
  'curl',
];

/** npm packages of the tests, benches, examples and build: never in the image. */
const DEV_ONLY = [
  'vitest',
  'vite',
  'express',
  'fastify',
  'hono',
  '@hono/node-server',
  'tsx',
  'typescript',
  'esbuild',
  'tsdown',
  'eslint',
  'prettier',
  'ajv',
  'cfb',
  's3rver',
  '@disarm/fixtures',
];

describe('the Debian packages of the image', () => {
  const runtime = packageList('runtime');
  const tests = packageList('test');

  it('are the programs the service runs: the renderers’ browser, office and UNO bridge, a font, an init', () => {
    expect([...runtime.keys()].sort()).toEqual(
      [
        'chromium',
        'fonts-dejavu-core',
        'libreoffice-calc-nogui',
        'libreoffice-impress-nogui',
        'python3-uno',
        'tini',
      ].sort(),
    );
    // The paths the renderers start (and `disarm doctor` probes) are what proves them installed.
    expect(runtime.get('chromium')).toBe(DEFAULT_CHROMIUM_PATH);
    expect(runtime.get('python3-uno')).toBe('/usr/lib/python3/dist-packages/uno.py');
  });

  it('leave every test-only tool to the test list, which repeats none of them', () => {
    for (const name of TEST_ONLY) {
      expect(runtime.has(name), name).toBe(false);
      expect(tests.has(name), name).toBe(true);
    }
    expect([...tests.keys()].filter((name) => runtime.has(name))).toEqual([]);
  });

  it('are what the runtime stage installs, from the one list', () => {
    const dockerfile = dockerfileInstructions();
    const runStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runStage).toContain('bash /tmp/deps/ensure-system-deps.sh --runtime');
    expect(runStage).toContain(
      'COPY scripts/system-packages/runtime.list /tmp/deps/system-packages/runtime.list',
    );
    expect(runStage).not.toMatch(/test\.list|apt-get install/);
  });
});

describe('the Dockerfile', () => {
  const dockerfile = dockerfileInstructions();

  it('builds on a Node LTS line the project targets, pinned to a release', () => {
    const image = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1] ?? '';
    expect(image).toMatch(/^node:(22|24)\.\d+\.\d+-bookworm-slim$/);
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
    expect(stages).toEqual(['${NODE_IMAGE}', '${NODE_IMAGE}']);
  });

  it('builds the runtime tree with the script anyone can run without Docker', () => {
    expect(dockerfile).toContain('RUN node scripts/build-runtime-tree.mjs /app --work /src');
    expect(dockerfile).not.toMatch(/npm (ci|prune|install)/);
  });

  it('puts disarm on the PATH, runs it under tini, and checks /readyz without curl', () => {
    expect(dockerfile).toContain('ln -s /app/packages/node/bin/disarm.mjs /usr/local/bin/disarm');
    expect(dockerfile).toContain('ENTRYPOINT ["/usr/bin/tini", "--", "disarm"]');
    const check = /^HEALTHCHECK .*\n\s+CMD (.+)$/m.exec(dockerfile)?.[1] ?? '';
    expect(check).toContain('/readyz');
    expect(check).toMatch(/^\["node", "-e", /);
    expect(dockerfile).not.toContain('curl');
  });
});

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');

  it('pins every image to a release', () => {
    const images = [...compose.matchAll(/^\s+image: (\S+)$/gm)].map((match) => match[1] ?? '');
    expect(images.length).toBeGreaterThanOrEqual(5);
    for (const image of images) expect(image, image).toMatch(/^[\w./-]+:\d+\.\d+(\.\d+)?[\w.-]*$/);
  });

  it('runs clamd as a service of its own with its signature volume, and points disarm at it', () => {
    expect(compose).toMatch(/\n {2}clamd:\n {4}image: clamav\/clamav:/);
    expect(compose).toContain('- clamav-db:/var/lib/clamav');
    // DISARM_CLAMD is --clamd, for the API and every worker (the shared environment).
    expect(compose).toMatch(/&disarm-environment[^]*\n {4}DISARM_CLAMD: clamd:3310\n/);
    expect(compose).toMatch(/depends_on:[^]*\n {4}clamd:\n {6}condition: service_healthy/);
  });

  it('gives `disarm admin` in a container the shared database, and leaves workers unprobed', () => {
    expect(compose).toContain('DISARM_DATABASE_URL: postgres://disarm:disarm@postgres:5432/disarm');
    expect(compose).toMatch(/\n {2}worker:\n[^]*?healthcheck:\n {6}disable: true/);
    expect(compose).not.toContain('curl');
  });
});

describe('the runtime tree', () => {
  const lock = JSON.parse(read('package-lock.json')) as {
    packages: Record<string, LockEntry>;
  };
  const reached = reachablePackages(lock, RUNTIME_ROOTS);

  it('holds none of the tests’, benches’, examples’ or build’s packages', () => {
    for (const name of DEV_ONLY) {
      expect(
        [...reached].filter((path) => path.endsWith(`node_modules/${name}`)),
        name,
      ).toEqual([]);
    }
  });

  it('resolves every package the service’s code imports at run time', () => {
    const workspaces = [...reached].filter(
      (path) => path.startsWith('packages/') && !path.includes('/node_modules/'),
    );
    expect(workspaces.sort()).toEqual([
      'packages/chromium',
      'packages/core',
      'packages/libreoffice',
      'packages/node',
      'packages/postgres',
      'packages/protocol',
      'packages/s3',
      'packages/sqlite',
    ]);
    const unresolved: string[] = [];
    for (const workspace of workspaces) {
      for (const name of runtimeImports(join(REPO, workspace, 'src'))) {
        const visible = [`${workspace}/node_modules/${name}`, `node_modules/${name}`].some((path) =>
          reached.has(path),
        );
        if (!visible) unresolved.push(`${workspace}: ${name}`);
      }
    }
    expect(unresolved).toEqual([]);
  });
});

/**
 * The packages the source under `folder` imports at run time: value imports, re-exports and
 * dynamic imports of bare specifiers, not `import type`, not `node:` built-ins, not tests or the
 * `testing` entry (which needs vitest, a test-only peer).
 */
function runtimeImports(folder: string): Set<string> {
  const names = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'testing') visit(path);
        continue;
      }
      if (!entry.name.endsWith('.ts') || /\.test\.ts$|test-support\.ts$/.test(entry.name)) continue;
      const source = readFileSync(path, 'utf8');
      const specifiers = [
        ...source.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+'([^']+)'/gm),
        ...source.matchAll(/^\s*import\s+'([^']+)'/gm),
        ...source.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
      ].map((match) => match[1] ?? '');
      for (const specifier of specifiers) {
        if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const parts = specifier.split('/');
        names.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? ''));
      }
    }
  };
  visit(folder);
  return names;
}
