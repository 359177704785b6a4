/**
 * docs/ARCHITECTURE.md cannot rot: every repository path it cites in backticks exists (a bare
 * file name either at the root or, for a convention such as `verify.ts`, as some source file's
 * name), every `@disarm/…` specifier is a package, subpath export or condition of this workspace,
 * and every code name occurs as a word in the sources. Moving or renaming something the page
 * describes fails here until the page follows.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DOC = join(ROOT, 'docs', 'ARCHITECTURE.md');
/** Top-level folders a cited path may start with. */
const REPOSITORY_FOLDERS = new Set([
  'packages',
  'bench',
  'fuzz',
  'scripts',
  'examples',
  'docs',
  '.ci',
]);
/** Folders holding the sources whose names the page may cite. */
const SOURCE_FOLDERS = ['packages', 'bench', 'fuzz', 'scripts', 'examples'];
/** A file cited by its bare name (`README.md`, `eslint.config.js`, `handler.ts`). */
const BARE_FILE = /^[\w.-]+\.(?:md|json|js|mjs|ts|sh)$/;
/** A code name: an identifier, optionally dotted (`StateStore.acceptDocument`) or called. */
const CODE_NAME = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?$/;
/** Folders whose files are not sources. */
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', '.out', '.git', '.data']);
/** Largest source file read for names; larger ones are generated data. */
const MAX_SOURCE_BYTES = 2 * 1024 * 1024;
/** The packages the page lists as not yet built. */
const PLANNED_PACKAGES = new Set(['@disarm/s3', '@disarm/azure', '@disarm/client']);

interface PackageJson {
  readonly name: string;
  readonly exports?: Readonly<Record<string, string | Readonly<Record<string, string>>>>;
}

/** The backticked spans of `markdown`'s prose (fenced blocks are diagrams, not citations). */
function citations(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] ?? '');
}

function isRepositoryPath(span: string): boolean {
  if (/\s/.test(span)) return false;
  return REPOSITORY_FOLDERS.has(span.split('/')[0] ?? '') || BARE_FILE.test(span);
}

/** Every `.ts`, `.mjs` and `.sh` file under `folder`, skipping builds and dependencies. */
function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    if (SKIPPED_FOLDERS.has(entry.name)) continue;
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (/\.(?:ts|mjs|sh)$/.test(entry.name) && statSync(path).size <= MAX_SOURCE_BYTES) {
      files.push(path);
    }
  }
  return files;
}

/** Every `@disarm/…` specifier a reader can use: packages, their subpath exports, conditions. */
function workspaceSpecifiers(): Set<string> {
  const folder = join(ROOT, 'packages');
  const specifiers = new Set<string>();
  for (const name of readdirSync(folder)) {
    const path = join(folder, name, 'package.json');
    if (!existsSync(path)) continue;
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as PackageJson;
    specifiers.add(manifest.name);
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      specifiers.add(`${manifest.name}${subpath.slice(1)}`);
      if (typeof target !== 'string') for (const key of Object.keys(target)) specifiers.add(key);
    }
  }
  return specifiers;
}

describe('docs/ARCHITECTURE.md', () => {
  const spans = citations(readFileSync(DOC, 'utf8'));
  const sources = SOURCE_FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder)));

  it('cites repository paths that exist', () => {
    const paths = spans.filter(isRepositoryPath);
    expect(paths.length).toBeGreaterThan(50);
    const fileNames = new Set(sources.map((path) => basename(path)));
    const missing = paths.filter((path) =>
      path.includes('/')
        ? !existsSync(join(ROOT, path))
        : !existsSync(join(ROOT, path)) && !fileNames.has(path),
    );
    expect(missing).toEqual([]);
  });

  it('names only packages, subpath exports and conditions of this workspace', () => {
    const specifiers = workspaceSpecifiers();
    const cited = spans.filter((span) => /^@disarm\/[\w/-]+$/.test(span));
    expect(cited.length).toBeGreaterThan(5);
    expect(cited.filter((name) => !specifiers.has(name) && !PLANNED_PACKAGES.has(name))).toEqual(
      [],
    );
  });

  it('cites code names that occur in the sources', () => {
    const words = new Set(
      sources.flatMap((path) => readFileSync(path, 'utf8').match(/[A-Za-z_$][\w$]*/g) ?? []),
    );
    const names = spans.filter((span) => !isRepositoryPath(span) && CODE_NAME.test(span));
    expect(names.length).toBeGreaterThan(50);
    const missing = names.filter((name) =>
      name
        .replace(/\(\)$/, '')
        .split('.')
        .some((part) => !words.has(part)),
    );
    expect(missing).toEqual([]);
  });

  it('is linked from the README', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme.includes('](docs/ARCHITECTURE.md)'), 'a link to docs/ARCHITECTURE.md').toBe(true);
  });
});
