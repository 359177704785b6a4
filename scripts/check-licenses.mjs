#!/usr/bin/env node
// Every package that ships with a published @disarm package (the production dependency closure
// of each non-private workspace) must carry a permissive, Apache-2.0-compatible licence.
// Copyleft that would bind the product (GPL, AGPL, SSPL, MPL) fails. Private workspaces
// (fixtures, bench, examples) and dev tooling are not shipped and are not checked.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const PERMISSIVE = new Set([
  'MIT',
  'ISC',
  'Apache-2.0',
  'BSD-2-Clause',
  'BSD-3-Clause',
  '0BSD',
  'BlueOak-1.0.0',
  'CC0-1.0',
  'Unlicense',
  'Zlib',
]);
/**
 * sharp's prebuilt libvips (and the platform packages bundling it) is loaded as a separate shared
 * library, which the LGPL permits in an Apache-2.0 product; nothing else may be LGPL.
 */
const isPrebuiltLibvips = (name) => /^@img\/sharp-(libvips-|wasm32|win32-)/.test(name);

function allowed(licence) {
  if (typeof licence !== 'string') return false;
  // SPDX expressions: an OR is fine when one side is permissive; an AND needs both.
  if (/\bOR\b/.test(licence))
    return licence
      .replace(/[()]/g, '')
      .split(/\s+OR\s+/)
      .some(allowed);
  if (/\bAND\b/.test(licence))
    return licence
      .replace(/[()]/g, '')
      .split(/\s+AND\s+/)
      .every(allowed);
  return PERMISSIVE.has(licence.trim());
}

/** The lockfile path a dependency `name` of the package at `from` resolves to (node's lookup). */
function resolve(from, name) {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir === '.' ? '' : dir, 'node_modules', name);
    const entry = lock.packages[candidate];
    if (entry) return entry.link === true ? entry.resolved : candidate;
    if (dir === '.' || dir === '') return undefined;
  }
}

const published = Object.entries(lock.packages).filter(
  ([path, entry]) =>
    path.startsWith('packages/') && !path.includes('node_modules') && entry.private !== true,
);
const seen = new Set();
const queue = published.map(([path]) => path);
const problems = [];
while (queue.length > 0) {
  const path = queue.shift();
  if (seen.has(path)) continue;
  seen.add(path);
  const entry = lock.packages[path];
  if (!entry) continue;
  const name = path.includes('node_modules/')
    ? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
    : entry.name;
  if (path.includes('node_modules/')) {
    const licence = entry.license;
    const ok =
      allowed(licence) || (isPrebuiltLibvips(name) && /LGPL-3\.0-or-later/.test(String(licence)));
    if (!ok) problems.push(`${name}@${entry.version}: ${String(licence)}`);
  }
  for (const dependency of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
    const target = resolve(path, dependency);
    if (target !== undefined) queue.push(target);
  }
}
if (problems.length > 0) {
  console.error(`Shipped dependencies without a permissive licence:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log(`${seen.size - published.length} shipped dependencies, all with permissive licences`);
