#!/usr/bin/env node
// Every package that ships with a published @disarm package must carry a permissive licence
// (Apache-2.0 compatible). Copyleft that would bind the product (GPL, AGPL, SSPL) fails.
import { readFileSync } from 'node:fs';

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
  'Python-2.0',
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

const problems = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  if (!path.includes('node_modules/') || entry.dev === true || entry.link === true) continue;
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const licence = entry.license;
  if (isPrebuiltLibvips(name) && /^[\w.\-() ]*LGPL-3\.0-or-later[\w.\-() ]*$/.test(String(licence)))
    continue;
  if (!allowed(licence)) problems.push(`${name}@${entry.version}: ${String(licence)}`);
}
if (problems.length > 0) {
  console.error(`Dependencies without a permissive licence:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log('all production dependencies carry permissive licences');
