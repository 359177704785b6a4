/**
 * `npm run fuzz -- [target...] [--seconds N] [--seed S] [--findings DIR] [--json FILE]`
 * `npm run fuzz -- --replay FILE --file-name NAME` (or `--target http` for a request program)
 *
 * Runs each named target (all of them by default) for N seconds, coverage-guided, and prints what
 * it measured; findings are saved under `--findings` (default `fuzz/findings/`). Exits 1 when
 * anything was found.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { runCampaign } from './campaign.ts';
import type { CampaignResult } from './campaign.ts';
import { Executor } from './exec/executor.ts';
import { TARGETS, targetNamed } from './targets.ts';

const DEFAULT_SECONDS = 60;

function heapText(heap: CampaignResult['retainedHeap']): string {
  if (!heap) return 'not measured';
  const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);
  return `${mib(heap.first)} -> ${mib(heap.last)} MiB`;
}
const DEFAULT_FINDINGS_DIR = fileURLToPath(new URL('../findings/', import.meta.url));

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string' },
    seed: { type: 'string' },
    findings: { type: 'string' },
    json: { type: 'string' },
    replay: { type: 'string' },
    'file-name': { type: 'string' },
    target: { type: 'string' },
    'no-coverage': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help === true) {
  process.stdout.write(
    `npm run fuzz -- [target...] [--seconds N] [--seed S] [--findings DIR] [--json FILE] [--no-coverage]\n` +
      `npm run fuzz -- --replay FILE [--file-name NAME | --target http]\n\ntargets:\n` +
      TARGETS.map((target) => `  ${target.name.padEnd(8)} ${target.description}\n`).join(''),
  );
  process.exit(0);
}

if (values.replay !== undefined) {
  const bytes = new Uint8Array(await readFile(values.replay));
  const target = targetNamed(values.target ?? 'image');
  if (!target) throw new Error(`no target ${values.target ?? ''}`);
  const fileName = values['file-name'] ?? basename(values.replay).replace(/\.bin$/, '');
  const executor = new Executor({ scope: target.kind, hangMs: 60_000 });
  try {
    const execution = await executor.run(target.toJob(bytes, fileName));
    process.stdout.write(`${JSON.stringify(execution.verdict, null, 2)}\n`);
    process.exitCode = execution.verdict.ok ? 0 : 1;
  } finally {
    await executor.close();
  }
} else {
  const names = positionals.length > 0 ? positionals : TARGETS.map((target) => target.name);
  const targets = names.map((name) => {
    const target = targetNamed(name);
    if (!target)
      throw new Error(`no fuzz target "${name}" (one of ${TARGETS.map((t) => t.name).join(', ')})`);
    return target;
  });
  const seconds = Number(values.seconds ?? DEFAULT_SECONDS);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new Error('--seconds must be a positive number');
  const seed = Number(values.seed ?? Date.now() % 2 ** 31);
  const findingsDir = values.findings ?? DEFAULT_FINDINGS_DIR;
  const results: CampaignResult[] = [];
  process.stdout.write(
    `fuzzing ${names.join(', ')} for ${seconds} s each, seed ${seed}, findings in ${findingsDir}\n`,
  );
  for (const target of targets) {
    const result = await runCampaign({
      target,
      seconds,
      seed,
      findingsDir,
      coverageGuided: values['no-coverage'] !== true,
      log: (line) => process.stdout.write(`${line}\n`),
    });
    results.push(result);
    process.stdout.write(
      `${target.name}: ${result.executions} executions in ${result.seconds.toFixed(0)} s (${result.executionsPerSecond.toFixed(1)}/s), ` +
        `blocks ${result.blocksAfterSeeds} -> ${result.blocks}, corpus ${result.corpusEntries}, ` +
        `peak RSS growth ${Math.round(result.maxRssGrowthBytes / 2 ** 20)} MiB, ` +
        `heap after GC ${heapText(result.retainedHeap)}, ` +
        `${result.meanExecutionMs.toFixed(1)} ms per run + ${result.meanCoverageMs.toFixed(1)} ms coverage, ` +
        `findings ${result.findings.length}\n`,
    );
    for (const finding of result.findings) {
      process.stdout.write(`  ${finding.kind}: ${finding.message}\n    ${finding.savedAs ?? ''}\n`);
    }
  }
  if (values.json !== undefined) {
    const plain = results.map((result) => ({
      ...result,
      findings: result.findings.map(({ bytes: _bytes, ...finding }) => finding),
    }));
    await writeFile(
      values.json,
      `${JSON.stringify({ seed, seconds, loadAverage: (await import('node:os')).loadavg(), results: plain }, null, 2)}\n`,
    );
  }
  process.exitCode = results.some((result) => result.findings.length > 0) ? 1 : 0;
}
