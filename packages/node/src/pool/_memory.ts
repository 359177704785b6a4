import { readFile } from 'node:fs/promises';

/** Whether the resident set of another process can be read from `/proc/<pid>/status`. */
export const CAN_READ_PROC_STATUS = process.platform === 'linux';

const KIB_BYTES = 1024;

/**
 * Resident set size of process `pid` in bytes, from the `VmRSS` line of `/proc/<pid>/status`
 * (proc(5)); `undefined` when the process is gone or the line is missing.
 */
export async function readRssBytes(pid: number): Promise<number | undefined> {
  let status: string;
  try {
    status = await readFile(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match?.[1] === undefined ? undefined : Number(match[1]) * KIB_BYTES;
}
