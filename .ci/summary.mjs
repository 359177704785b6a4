#!/usr/bin/env node
// Prints "N passed, N failed" from vitest's JSON report. A run that failed before the tests
// (install, format, lint, typecheck) counts as one failure so CI never reads it as green.
import { existsSync, readFileSync } from 'node:fs';

const [file = 'test-results.json', status = '0'] = process.argv.slice(2);
let passed = 0;
let failed = 0;
if (existsSync(file)) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = (report.numFailedTests ?? 0) + (report.numRuntimeErrorTestSuites ?? 0);
  if (report.numFailedTestSuites > 0 && failed === 0) failed = report.numFailedTestSuites;
}
if (status !== '0' && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
