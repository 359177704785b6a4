import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Length of a newly made link-signing secret. */
export const LINK_SECRET_BYTES = 32;

/** Length of the key-encryption key that seals the token signing keys (AES-256-GCM). */
export const TOKEN_SIGNING_KEK_BYTES = 32;

/**
 * The link-signing secret of a data folder (`secrets/link-signing.key`), made on first start:
 * 32 random bytes, mode 0600 in a 0700 folder.
 * @throws {Error} when the file exists but is shorter than {@link LINK_SECRET_BYTES}.
 */
export async function loadLinkSecret(dataDir: string): Promise<Uint8Array> {
  const secret = await loadOrCreateSecret(dataDir, 'link-signing.key', LINK_SECRET_BYTES);
  if (secret.length < LINK_SECRET_BYTES) {
    throw new Error(
      `${secretPath(dataDir, 'link-signing.key')} holds ${secret.length} bytes; a link-signing secret needs ${LINK_SECRET_BYTES}`,
    );
  }
  return secret;
}

/**
 * The key-encryption key of a data folder (`secrets/token-signing.kek`) that seals the OAuth
 * signing keys in the state store, made on first start like the link secret: 32 random bytes,
 * mode 0600. Every process sharing the store needs this same file.
 * @throws {Error} when the file exists but is not exactly {@link TOKEN_SIGNING_KEK_BYTES} long.
 */
export async function loadTokenSigningKek(dataDir: string): Promise<Uint8Array> {
  const key = await loadOrCreateSecret(dataDir, 'token-signing.kek', TOKEN_SIGNING_KEK_BYTES);
  if (key.length !== TOKEN_SIGNING_KEK_BYTES) {
    throw new Error(
      `${secretPath(dataDir, 'token-signing.kek')} holds ${key.length} bytes; the token-signing key-encryption key is ${TOKEN_SIGNING_KEK_BYTES}`,
    );
  }
  return key;
}

function secretPath(dataDir: string, name: string): string {
  return join(dataDir, 'secrets', name);
}

/**
 * Reads `secrets/<name>`, first making it from `bytes` random bytes (mode 0600 in a 0700
 * folder) when absent. Written to a temporary name and hard-linked into place, so two first
 * starts cannot each see half a file.
 */
async function loadOrCreateSecret(
  dataDir: string,
  name: string,
  bytes: number,
): Promise<Uint8Array> {
  await mkdir(join(dataDir, 'secrets'), { recursive: true, mode: 0o700 });
  const path = secretPath(dataDir, name);
  if (!(await exists(path))) {
    const temp = `${path}.${randomBytes(8).toString('hex')}.tmp`;
    await writeFile(temp, randomBytes(bytes), { mode: 0o600, flag: 'wx', flush: true });
    try {
      await link(temp, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await rm(temp, { force: true });
    }
  }
  return new Uint8Array(await readFile(path));
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
