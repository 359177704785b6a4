import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** The engine's source, whose imports (type-only ones included) these tests hold to its layers. */
const SOURCE_DIR = fileURLToPath(new URL('../src', import.meta.url));

/** Outside `_internal/`, it may import only the closed table of reasons (which imports nothing). */
const INTERNAL_MAY_IMPORT: ReadonlySet<string> = new Set(['reasons.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Source-relative, `/`-separated: `handlers/office/fields.ts`. */
const sourcePath = (path: string): string => relative(SOURCE_DIR, path).split(sep).join('/');

function importGraph(): ReadonlyMap<string, readonly string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SOURCE_DIR)) {
    // preProcessFile lists every import and re-export, `import type` included: a type-only cycle
    // still ties the two modules' designs together.
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(
      sourcePath(file),
      importedFiles
        .map((imported) => imported.fileName)
        .filter((name) => name.startsWith('.'))
        .map((name) => sourcePath(resolve(dirname(file), name))),
    );
  }
  return graph;
}

/** Strongly connected components of more than one node, or a node importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, ReadonlySet<string> | readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) ?? 0);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || [...(graph.get(node) ?? [])].includes(node)) {
      found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/**
 * The folder a file belongs to for layering: `_internal`, `detect`, `scan`, `verify`, or a
 * `handlers/` folder; `undefined` for the engine's top-level files and `handlers/*.ts` (the
 * contract and registry every folder builds on or is assembled by).
 */
function folderOf(path: string): string | undefined {
  const parts = path.split('/');
  if (parts.length < 2) return undefined;
  if (parts[0] === 'handlers') return parts.length > 2 ? `handlers/${parts[1] ?? ''}` : undefined;
  return parts[0];
}

describe('module boundaries of @disarm/core', () => {
  const graph = importGraph();

  it('keeps _internal a leaf: it imports nothing of the engine but the rejection reasons', () => {
    const outward = [...graph].flatMap(([file, imports]) =>
      file.startsWith('_internal/')
        ? imports
            .filter((target) => !target.startsWith('_internal/'))
            .filter((target) => !INTERNAL_MAY_IMPORT.has(target))
            .map((target) => `${file} -> ${target}`)
        : [],
    );
    expect(outward).toEqual([]);
  });

  it('has no import cycle between files', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('has no import cycle between _internal, detect, scan, verify and the handler folders', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, imports] of graph) {
      const from = folderOf(file);
      if (from === undefined) continue;
      const targets = folders.get(from) ?? new Set<string>();
      folders.set(from, targets);
      for (const target of imports) {
        const to = folderOf(target);
        if (to !== undefined && to !== from) targets.add(to);
      }
    }
    expect(cycles(folders)).toEqual([]);
  });
});
