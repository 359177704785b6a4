/**
 * Test harness: a small tmpfs that a test fills to the last byte, as a data folder's disk fills
 * in production (`mount -t tmpfs -o size=…`; needs root, or the test skips saying so).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Chunk sizes the filler writes, largest first, down to the file system's block. */
const FILL_CHUNK_BYTES = [1024 * 1024, 64 * 1024, 4096, 512, 1] as const;

/** A mounted tmpfs; see {@link mountTmpfs}. */
export interface Tmpfs {
  /** The mount point. */
  readonly path: string;
  /** Writes a filler file until the file system refuses with ENOSPC; resolves its size. */
  fill(): Promise<number>;
  /** Removes the filler file: the space is back. */
  free(): Promise<void>;
  /** Bytes the file system still has for files. */
  availableBytes(): Promise<number>;
  /** Unmounts and removes the mount point (best effort; safe to call twice). */
  unmount(): Promise<void>;
}

/**
 * Mounts a tmpfs of `sizeBytes` at `at` (created when missing) or at a fresh folder, or resolves
 * why it cannot (not root, no mount permission), for the test to skip with that reason.
 */
export async function mountTmpfs(
  sizeBytes: number,
  at?: string,
): Promise<Tmpfs | { readonly unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: 'tmpfs mounts need Linux' };
  if (process.getuid?.() !== 0) return { unavailable: 'mounting a tmpfs needs root' };
  const path = at ?? (await mkdtemp(join(tmpdir(), 'disarm-tmpfs-')));
  await mkdir(path, { recursive: true });
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes},mode=0700`, 'tmpfs', path]);
  } catch (error) {
    await rm(path, { recursive: true, force: true });
    return { unavailable: `mount -t tmpfs is not permitted here: ${String(error)}` };
  }
  const filler = join(path, '.filler');
  let mounted = true;
  return {
    path,
    async fill() {
      const handle = await open(filler, 'a');
      let written = 0;
      try {
        for (const size of FILL_CHUNK_BYTES) {
          const chunk = Buffer.alloc(size, 0x5a);
          for (;;) {
            try {
              const { bytesWritten } = await handle.write(chunk);
              written += bytesWritten;
              if (bytesWritten < size) break;
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
              break;
            }
          }
        }
      } finally {
        await handle.close();
      }
      return written;
    },
    async free() {
      await rm(filler, { force: true });
    },
    async availableBytes() {
      const stats = await statfs(path);
      return stats.bavail * stats.bsize;
    },
    async unmount() {
      if (!mounted) return;
      mounted = false;
      // Lazy: a process that still holds a file there (a server being stopped) cannot keep it.
      await run('umount', ['-l', path]).catch(() => undefined);
      if (at === undefined) await rm(path, { recursive: true, force: true });
    },
  };
}
