import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import sharp from 'sharp';
import yazl from 'yazl';

/** The EICAR anti-virus test file (eicar.org). */
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';

/** A small PNG carrying EXIF metadata the rebuild must strip. */
export async function pngWithMetadata(): Promise<Buffer> {
  return sharp({ create: { width: 16, height: 12, channels: 3, background: '#3a7' } })
    .withExif({ IFD0: { Copyright: 'secret owner', Artist: 'someone' } })
    .png()
    .toBuffer();
}

/** A small JPEG carrying EXIF metadata. */
export async function jpegWithMetadata(): Promise<Buffer> {
  return sharp({ create: { width: 20, height: 10, channels: 3, background: '#a37' } })
    .withExif({ IFD0: { Copyright: 'secret owner' } })
    .jpeg()
    .toBuffer();
}

/** A zip of the given members. */
export async function zipOf(
  members: Readonly<Record<string, Uint8Array | string>>,
): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(members)) {
    zip.addBuffer(Buffer.from(content), name);
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A fresh temporary folder. */
export function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'disarm-node-test-'));
}

/** Writes `files` (relative path -> content) under `root`, creating folders. */
export async function writeTree(
  root: string,
  files: Readonly<Record<string, Uint8Array | string>>,
): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
}

/** Whether a process with this id exists (a reaped child no longer does). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Whether process `pid` runs: alive and, where `/proc` tells, not a zombie waiting for reaping. */
export function isRunning(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    // proc(5): "pid (comm) state ...", and comm may itself contain ") ".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return process.platform !== 'linux';
  }
}
