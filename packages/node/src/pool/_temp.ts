import { mkdtempSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Each worker process gets a temporary folder of its own, which becomes its `TMPDIR`: whatever it
 * and the programs it starts leave in temporary folders (Chromium's profile, LibreOffice's
 * instance folders, their own scratch files) lies inside it, and goes with it. The name carries
 * the pid of the process that made it, so a later start can prove a folder left by a process
 * that was killed outright is nobody's any more.
 */
const WORKER_FOLDER_PREFIX = 'disarm-worker-';
/** `disarm-worker-<owner pid>-<random>`. */
const WORKER_FOLDER = /^disarm-worker-(\d{1,10})-[A-Za-z0-9]+$/;

/** Makes the temporary folder of a worker about to be started (mode 0700). */
export function makeWorkerFolder(): string {
  return mkdtempSync(join(tmpdir(), `${WORKER_FOLDER_PREFIX}${process.pid}-`));
}

/** Removes a worker's folder once the worker has exited; a failure is left to the next start. */
export async function removeWorkerFolder(folder: string): Promise<void> {
  await rm(folder, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
}

/**
 * Removes the worker folders in the temporary folder whose owner process is gone: those a
 * process killed outright (SIGKILL, a power cut) could not remove. A folder whose owner pid is
 * alive, or belongs to another user's process, is kept.
 */
export async function removeStaleWorkerFolders(): Promise<void> {
  const root = tmpdir();
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return;
  }
  await Promise.all(
    names.map(async (name) => {
      const owner = WORKER_FOLDER.exec(name)?.[1];
      if (owner === undefined || isAlive(Number(owner))) return;
      await rm(join(root, name), { recursive: true, force: true }).catch(() => undefined);
    }),
  );
}

/** Whether process `pid` exists (ours or another user's: `EPERM` says it does). */
function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
