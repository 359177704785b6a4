import { constants } from 'node:fs';
import type { Dirent } from 'node:fs';
import { access, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

import { UsageError } from './_exit-codes.ts';

/** One regular file to clean, and where its copy goes. */
export interface InputFile {
  /** Absolute path to read. */
  readonly path: string;
  /** The path as the user named it (argument, plus the path inside a walked folder). */
  readonly display: string;
  /** Declared name given to the engine. */
  readonly fileName: string;
  /** Absolute folder the cleaned copy is written to. */
  readonly outputDir: string;
}

/**
 * Expands the command's path arguments into files. A file argument lands directly in `out`; a
 * folder is walked recursively (hidden files included, symbolic links inside it not followed,
 * `out` skipped when it lies inside) and its files keep their path relative to the folder.
 * A file named twice is cleaned once.
 * @throws {UsageError} for a missing or unreadable path, or an `out` that contains an input.
 */
export async function collectInputs(
  paths: readonly string[],
  out: { readonly path: string; readonly display: string },
): Promise<InputFile[]> {
  const outDir = out.path;
  const outReal = await realpathOfNew(outDir);
  const files = new Map<string, InputFile>();
  for (const arg of paths) {
    const absolute = resolve(arg);
    // A path named on the command line is followed even when it is a link, like `find -H`.
    const info = await stat(absolute).catch((error: unknown) => {
      throw new UsageError(`cannot read ${arg} (${errorCode(error)})`);
    });
    const real = await realpath(absolute);
    if (isWithin(real, outReal)) {
      throw new UsageError(`--out ${out.display} must not contain the input ${arg}`);
    }
    if (info.isFile()) {
      await assertReadable(absolute, arg);
      if (!files.has(real)) {
        files.set(real, {
          path: real,
          display: arg,
          fileName: basename(absolute),
          outputDir: outDir,
        });
      }
    } else if (info.isDirectory()) {
      for (const file of await walk(real, arg, outDir, outReal)) {
        if (!files.has(file.path)) files.set(file.path, file);
      }
    } else {
      throw new UsageError(`${arg} is neither a file nor a folder`);
    }
  }
  return [...files.values()];
}

async function walk(
  root: string,
  displayRoot: string,
  outDir: string,
  outReal: string,
): Promise<InputFile[]> {
  const files: InputFile[] = [];
  const pending = [''];
  for (let folder = pending.pop(); folder !== undefined; folder = pending.pop()) {
    const entries = await readdir(join(root, folder), { withFileTypes: true }).catch(
      (error: unknown) => {
        throw new UsageError(`cannot read ${join(displayRoot, folder)} (${errorCode(error)})`);
      },
    );
    const subfolders: string[] = [];
    for (const entry of entries.sort(byName)) {
      const rel = join(folder, entry.name);
      const path = join(root, rel);
      if (entry.isDirectory()) {
        // The copies are written here: never walk into them.
        if (path !== outReal) subfolders.push(rel);
      } else if (entry.isFile()) {
        const display = join(displayRoot, rel);
        await assertReadable(path, display);
        files.push({ path, display, fileName: entry.name, outputDir: join(outDir, dirname(rel)) });
      }
      // Symbolic links, sockets, FIFOs and devices are not files to clean.
    }
    pending.push(...subfolders.reverse());
  }
  return files;
}

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

async function assertReadable(path: string, display: string): Promise<void> {
  await access(path, constants.R_OK).catch((error: unknown) => {
    throw new UsageError(`cannot read ${display} (${errorCode(error)})`);
  });
}

/** The real path of `path`, which may not exist yet: its deepest existing ancestor, resolved. */
async function realpathOfNew(path: string): Promise<string> {
  const absolute = resolve(path);
  let existing = absolute;
  for (;;) {
    try {
      return join(await realpath(existing), relative(existing, absolute));
    } catch {
      const parent = dirname(existing);
      if (parent === existing) return absolute;
      existing = parent;
    }
  }
}

function isWithin(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

function errorCode(error: unknown): string {
  return typeof error === 'object' && error !== null && 'code' in error
    ? String(error.code)
    : 'unknown error';
}
