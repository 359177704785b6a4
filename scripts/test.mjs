#!/usr/bin/env node
// `npm test`: every gate CI holds main to, in order, stopping at the first failure.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const steps = [
  ['system packages', 'bash', ['scripts/ensure-system-deps.sh']],
  ['build', 'npm', ['run', '--silent', 'build']],
  ['format', 'npx', ['prettier', '--check', '--log-level', 'warn', '.']],
  ['lint', 'npx', ['eslint', '.']],
  ['typecheck', 'npx', ['tsc', '-p', 'tsconfig.json']],
  ['package exports', 'node', ['scripts/check-packages.mjs']],
  ['licences', 'node', ['scripts/check-licenses.mjs']],
  [
    'tests',
    'npx',
    [
      'vitest',
      'run',
      '--reporter=default',
      '--reporter=json',
      '--outputFile.json=test-results.json',
    ],
  ],
];

for (const [name, command, args] of steps) {
  const started = performance.now();
  process.stdout.write(`\n── ${name} ──\n`);
  const result = spawnSync(command, args, { stdio: 'inherit' });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    process.stdout.write(`\n✗ ${name} failed after ${seconds}s\n`);
    process.exit(result.status ?? 1);
  }
  process.stdout.write(`✓ ${name} (${seconds}s)\n`);
}
