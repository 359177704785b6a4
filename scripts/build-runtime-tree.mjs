#!/usr/bin/env node
// Builds the tree the Docker image runs: the service's packages, built, with only the npm
// packages they need. The Dockerfile's build stage runs this script, and so can anyone without
// Docker, so the two cannot drift:
//
//   node scripts/build-runtime-tree.mjs <dest>                  # from a fresh copy of this checkout
//   node scripts/build-runtime-tree.mjs <dest> --work <folder>  # builds in <folder> (the image)
//
// Steps: `npm ci` and `npm run build` in the work folder; into <dest> the root package.json, the
// lockfile, every workspace's package.json and the built files of the service's workspaces;
// `npm ci --omit=dev` for those workspaces only; then every installed package the service cannot
// reach is removed. npm keeps some: a root devDependency that is also an optional peer of a
// runtime package (vitest, for `@disarm/protocol/testing`) is flagged "devOptional" in the
// lockfile, and `--omit=dev` keeps those.
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The workspaces `disarm serve` runs from; their workspace dependencies come along. */
export const RUNTIME_ROOTS = ['packages/node', 'packages/s3'];

/** The repository this script belongs to. */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The lockfile paths (`packages/node`, `node_modules/pg`, `node_modules/a/node_modules/b`) of
 * every package reachable from `roots` through `dependencies`, `optionalDependencies` that are
 * installed and peers that are not optional, found the way Node resolves them: in the
 * `node_modules` of the package, then of each folder above it. Links (workspaces) count as their
 * target. Throws when a required dependency is nowhere to be found.
 * @param {{ packages: Record<string, LockEntry> }} lock a package-lock.json (version 3)
 * @param {readonly string[]} roots lockfile paths of the packages to start from
 * @returns {Set<string>}
 */
export function reachablePackages(lock, roots) {
  const entries = lock.packages;
  /** @param {string} path */
  const target = (path) => {
    const entry = entries[path];
    return entry?.link === true && typeof entry.resolved === 'string' ? entry.resolved : path;
  };
  /** @param {string} from @param {string} name */
  const find = (from, name) => {
    for (let folder = from; ; folder = posix.dirname(folder)) {
      const base = folder === '.' ? '' : `${folder}/`;
      const candidate = `${base}node_modules/${name}`;
      if (entries[candidate] !== undefined) return candidate;
      if (folder === '.' || folder === '') return undefined;
    }
  };
  const reached = new Set();
  const explored = new Set();
  const queue = roots.map(target);
  while (queue.length > 0) {
    const path = queue.pop();
    if (path === undefined || explored.has(path)) continue;
    explored.add(path);
    const entry = entries[path];
    if (entry === undefined) throw new Error(`${path} is not in the lockfile`);
    reached.add(path);
    const optionalPeers = entry.peerDependenciesMeta ?? {};
    const wanted = [
      ...Object.keys(entry.dependencies ?? {}).map((name) => ({ name, required: true })),
      ...Object.keys(entry.optionalDependencies ?? {}).map((name) => ({ name, required: false })),
      ...Object.keys(entry.peerDependencies ?? {})
        .filter((name) => optionalPeers[name]?.optional !== true)
        .map((name) => ({ name, required: true })),
    ];
    for (const { name, required } of wanted) {
      const found = find(path, name);
      if (found === undefined) {
        if (required) throw new Error(`${path} needs ${name}, which is not in the lockfile`);
        continue;
      }
      // An optional dependency of another platform is in the lockfile, never installed.
      if (!required && !fitsThisPlatform(entries[found])) continue;
      reached.add(found);
      queue.push(target(found));
    }
  }
  // The links to what is kept (a root such as @disarm/s3 is loaded by name, through its link).
  for (const [path, entry] of Object.entries(entries)) {
    if (entry.link === true && typeof entry.resolved === 'string' && reached.has(entry.resolved)) {
      reached.add(path);
    }
  }
  return reached;
}

/** @typedef {{ link?: boolean, resolved?: string, os?: string[], cpu?: string[], libc?: string[], dependencies?: Record<string, string>, optionalDependencies?: Record<string, string>, peerDependencies?: Record<string, string>, peerDependenciesMeta?: Record<string, { optional?: boolean }> }} LockEntry */

/** @param {LockEntry | undefined} entry */
function fitsThisPlatform(entry) {
  const fits = (/** @type {string[] | undefined} */ list, /** @type {string} */ value) =>
    list === undefined ||
    (list.includes(value) && !list.includes(`!${value}`)) ||
    (list.every((item) => item.startsWith('!')) && !list.includes(`!${value}`));
  return fits(entry?.os, process.platform) && fits(entry?.cpu, process.arch);
}

/** Runs a command in `cwd`, its output on this process's. */
function run(command, args, cwd) {
  console.log(`$ ${[command, ...args].join(' ')}   (in ${cwd})`);
  execFileSync(command, args, { cwd, stdio: 'inherit' });
}

/** The files of the checkout a Docker build would see: tracked and untracked, ignored ones not. */
function copyCheckout(work) {
  const listed = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    },
  );
  for (const file of listed.split('\0')) {
    if (file === '' || !existsSync(join(REPO_ROOT, file))) continue;
    mkdirSync(dirname(join(work, file)), { recursive: true });
    cpSync(join(REPO_ROOT, file), join(work, file));
  }
}

/** The workspace folders of the root package.json (`packages/*` expanded). */
function workspaceFolders(root) {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return manifest.workspaces.flatMap((pattern) =>
    pattern.endsWith('/*')
      ? readdirSync(join(root, pattern.slice(0, -2)), { withFileTypes: true })
          .filter(
            (entry) =>
              entry.isDirectory() &&
              existsSync(join(root, pattern.slice(0, -2), entry.name, 'package.json')),
          )
          .map((entry) => `${pattern.slice(0, -2)}/${entry.name}`)
      : [pattern],
  );
}

/**
 * Removes every installed package not in `keep` (lockfile paths): in the root's `node_modules`,
 * in each kept workspace's, and nested in kept packages. A link (a workspace) is kept or removed
 * as a whole; what it points to is visited as its own folder.
 */
function removeUnreachable(dest, keep, workspaces) {
  const removed = [];
  const visit = (folder) => {
    const modules = join(dest, folder, 'node_modules');
    if (!existsSync(modules)) return;
    for (const entry of readdirSync(modules, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const packages = entry.name.startsWith('@')
        ? readdirSync(join(modules, entry.name), { withFileTypes: true }).map((inner) => ({
            name: `${entry.name}/${inner.name}`,
            link: inner.isSymbolicLink(),
          }))
        : [{ name: entry.name, link: entry.isSymbolicLink() }];
      for (const { name, link } of packages) {
        const path = folder === '.' ? `node_modules/${name}` : `${folder}/node_modules/${name}`;
        if (!keep.has(path)) {
          rmSync(join(dest, path), { recursive: true, force: true });
          removed.push(path);
        } else if (!link) {
          visit(path);
        }
      }
      if (entry.name.startsWith('@') && readdirSync(join(modules, entry.name)).length === 0) {
        rmSync(join(modules, entry.name), { recursive: true });
      }
    }
  };
  visit('.');
  for (const folder of workspaces) if (keep.has(folder)) visit(folder);
  // npm's record of the tree as installed, and links to programs of removed packages.
  rmSync(join(dest, 'node_modules', '.package-lock.json'), { force: true });
  const bin = join(dest, 'node_modules', '.bin');
  if (existsSync(bin)) {
    for (const link of readdirSync(bin)) {
      if (!existsSync(join(bin, link))) rmSync(join(bin, link), { force: true });
    }
  }
  return removed;
}

/**
 * Removes from the installed packages what nothing loads at run time: source maps, type
 * declarations, and what compiling better-sqlite3 leaves beside its addon (object files, the
 * SQLite sources it was compiled from). Returns the bytes removed.
 */
export function trimRuntimeTree(dest) {
  let bytes = 0;
  const remove = (path) => {
    bytes += sizeOf(path);
    rmSync(path, { recursive: true, force: true });
  };
  const sqlite = join(dest, 'node_modules', 'better-sqlite3');
  if (existsSync(join(sqlite, 'build', 'Release', 'better_sqlite3.node'))) {
    for (const entry of readdirSync(join(sqlite, 'build', 'Release'))) {
      if (entry !== 'better_sqlite3.node') remove(join(sqlite, 'build', 'Release', entry));
    }
    for (const entry of readdirSync(join(sqlite, 'build'))) {
      if (entry !== 'Release') remove(join(sqlite, 'build', entry));
    }
    for (const folder of ['deps', 'src']) remove(join(sqlite, folder));
  }
  const visit = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) visit(path);
      else if (/\.(?:js|mjs|cjs|css)\.map$|\.d\.(?:ts|mts|cts)$/.test(entry.name)) remove(path);
    }
  };
  visit(join(dest, 'node_modules'));
  return bytes;
}

/** Bytes of a file, or of everything under a folder. */
function sizeOf(path) {
  if (!existsSync(path)) return 0;
  const stats = lstatSync(path);
  if (!stats.isDirectory()) return stats.size;
  return readdirSync(path).reduce((total, entry) => total + sizeOf(join(path, entry)), 0);
}

/** Builds the runtime tree into `dest`; `work` is the folder to build in (a copy when omitted). */
export function buildRuntimeTree(dest, work) {
  const buildFolder = work ?? mkdtempSync(join(tmpdir(), 'disarm-build-'));
  if (work === undefined) copyCheckout(buildFolder);
  run('npm', ['ci', '--no-audit', '--no-fund'], buildFolder);
  run('npm', ['run', 'build'], buildFolder);

  mkdirSync(dest, { recursive: true });
  if (readdirSync(dest).length > 0) throw new Error(`${dest} is not empty`);
  for (const file of ['package.json', 'package-lock.json', 'LICENSE']) {
    cpSync(join(buildFolder, file), join(dest, file));
  }
  const lock = JSON.parse(readFileSync(join(buildFolder, 'package-lock.json'), 'utf8'));
  const keep = reachablePackages(lock, RUNTIME_ROOTS);
  const workspaces = workspaceFolders(buildFolder);
  for (const folder of workspaces) {
    // Every workspace's manifest, for `npm ci` to match the lockfile; files only of the service's.
    const manifest = JSON.parse(readFileSync(join(buildFolder, folder, 'package.json'), 'utf8'));
    mkdirSync(join(dest, folder), { recursive: true });
    cpSync(join(buildFolder, folder, 'package.json'), join(dest, folder, 'package.json'));
    if (!keep.has(folder)) continue;
    for (const file of manifest.files ?? []) {
      cpSync(join(buildFolder, folder, file), join(dest, folder, file), { recursive: true });
    }
  }
  run(
    'npm',
    [
      'ci',
      '--omit=dev',
      '--no-audit',
      '--no-fund',
      ...RUNTIME_ROOTS.map((root) => `--workspace=${root}`),
    ],
    dest,
  );
  const removed = removeUnreachable(dest, keep, workspaces);
  const trimmed = trimRuntimeTree(dest);
  // The other workspaces were there for `npm ci` only.
  for (const folder of workspaces) {
    if (!keep.has(folder)) rmSync(join(dest, folder), { recursive: true, force: true });
  }
  for (const folder of ['bench', 'examples'])
    rmSync(join(dest, folder), { recursive: true, force: true });
  if (work === undefined) rmSync(buildFolder, { recursive: true, force: true });
  console.log(
    `runtime tree in ${dest}: ${keep.size} packages kept, ${removed.length} removed by reach, ` +
      `${(trimmed / 1024 / 1024).toFixed(1)} MiB of maps, declarations and build leftovers trimmed`,
  );
}

if (
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(resolve(process.argv[1])).href
) {
  const args = process.argv.slice(2);
  const workIndex = args.indexOf('--work');
  const work = workIndex === -1 ? undefined : args.splice(workIndex, 2)[1];
  const [dest] = args;
  if (dest === undefined || args.length !== 1) {
    console.error('usage: node scripts/build-runtime-tree.mjs <dest> [--work <folder>]');
    process.exit(2);
  }
  buildRuntimeTree(resolve(dest), work === undefined ? undefined : resolve(work));
}
