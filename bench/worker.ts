/**
 * Our side of the bench: one process per format, so its peak RSS is the engine's own. Disarms the
 * job's files one after another, writes every rebuilt file, and prints one {@link WorkerReport}
 * line of JSON. Run by `run.ts` as
 * `node --import tsx --conditions=@disarm/source bench/worker.ts '<job json>'`, so it uses the
 * engine's source.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';

import { disarm, isDisarmError } from '@disarm/core';

import type { WorkerFileResult, WorkerJob, WorkerReport } from './types.ts';

const job = parseJob(process.argv[2]);
await mkdir(job.outDir, { recursive: true });
const startupPeakKib = readPeakKib();
const results: WorkerFileResult[] = [];
const started = performance.now();
for (const [index, file] of job.files.entries()) {
  results.push(await disarmOne(file, index));
}
const elapsedMs = performance.now() - started;
const report: WorkerReport = { elapsedMs, startupPeakKib, peakKib: readPeakKib(), files: results };
process.stdout.write(`${JSON.stringify(report)}\n`);

async function disarmOne(file: string, index: number): Promise<WorkerFileResult> {
  try {
    const outcome = await disarm({ path: file, fileName: basename(file) });
    if (outcome.status === 'rejected') {
      return {
        file,
        status: 'rejected',
        output: null,
        detail: `${outcome.reason}: ${outcome.detail}`,
      };
    }
    // The index keeps outputs apart should two inputs map to one output name.
    const output = join(job.outDir, `${String(index).padStart(3, '0')}-${outcome.fileName}`);
    await writeFile(output, outcome.bytes);
    return { file, status: 'cleaned', output, detail: null };
  } catch (error) {
    const code = isDisarmError(error) ? error.code : 'thrown';
    const message = error instanceof Error ? error.message : String(error);
    return { file, status: 'failed', output: null, detail: `${code}: ${message}` };
  }
}

function parseJob(text: string | undefined): WorkerJob {
  const value: unknown = JSON.parse(text ?? 'null');
  if (typeof value === 'object' && value !== null && 'files' in value && 'outDir' in value) {
    const files: unknown = value.files;
    const { outDir } = value;
    if (Array.isArray(files) && typeof outDir === 'string') {
      const names = files.filter((file): file is string => typeof file === 'string');
      if (names.length === files.length) return { files: names, outDir };
    }
  }
  throw new TypeError('usage: worker.ts \'{"files":["..."],"outDir":"..."}\'');
}

/** Peak resident set size of this process in KiB: VmHWM, or getrusage where /proc is absent. */
function readPeakKib(): number {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status);
    if (match?.[1] !== undefined) return Number(match[1]);
  } catch {
    // Not Linux: fall through to getrusage.
  }
  return process.resourceUsage().maxRSS;
}
