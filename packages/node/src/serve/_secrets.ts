import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Length of a newly made link-signing secret. */
export const LINK_SECRET_BYTES = 32;

/**
 * The link-signing secret of a data folder (`secrets/link-signing.key`), made on first start:
 * 32 random bytes, mode 0600 in a 0700 folder. Written to a temporary name and hard-linked into
 * place, so two first starts cannot each see half a file.
 * @throws {Error} when the file exists but is shorter than {@link LINK_SECRET_BYTES}.
 */
export async function loadLinkSecret(dataDir: string): Promise<Uint8Array> {
  const folder = join(dataDir, 'secrets');
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const path = join(folder, 'link-signing.key');
  if (!(await exists(path))) {
    const temp = `${path}.${randomBytes(8).toString('hex')}.tmp`;
    await writeFile(temp, randomBytes(LINK_SECRET_BYTES), { mode: 0o600, flag: 'wx', flush: true });
    try {
      await link(temp, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await rm(temp, { force: true });
    }
  }
  const secret = await readFile(path);
  if (secret.length < LINK_SECRET_BYTES) {
    throw new Error(
      `${path} holds ${secret.length} bytes; a link-signing secret needs ${LINK_SECRET_BYTES}`,
    );
  }
  return new Uint8Array(secret);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
