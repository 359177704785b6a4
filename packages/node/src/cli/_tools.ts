/** The external programs the engine uses, found or not, for `disarm doctor`. */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';

import { builtinRenderer, createClamdScanner } from '@disarm/core';

import type { ClamdConfig } from '../pool/types.ts';

/** How long one program may take to tell its version (LibreOffice starts in about a second). */
const VERSION_TIMEOUT_MS = 20_000;
/** Most output read from a program telling its version. */
const MAX_VERSION_OUTPUT_BYTES = 64 * 1024;

const execFileAsync = promisify(execFile);

/** What `disarm doctor` found of one program. */
export interface ToolReport {
  /** `chromium`, `soffice`, `python3-uno`, `clamd` or `sharp`. */
  readonly name: string;
  /** What the engine uses it for. */
  readonly use: string;
  /** `not configured`: an optional service no option points at (clamd without `--clamd`). */
  readonly state: 'found' | 'missing' | 'not configured';
  readonly version?: string;
  /** The executable, module or address used. */
  readonly path?: string;
  /** Why it is missing, or what else is worth knowing. */
  readonly detail?: string;
}

/** Every program the engine uses, probed side by side. */
export function probeTools(clamd: ClamdConfig | undefined): Promise<ToolReport[]> {
  return Promise.all([
    probeProgram({
      name: 'chromium',
      use: 'renders html and svg (Debian package chromium)',
      candidates: ['/usr/bin/chromium', 'chromium', 'chromium-browser'],
      args: ['--version'],
      version: /Chromium\s+([\d.]+)/,
    }),
    probeProgram({
      name: 'soffice',
      use: 'renders ods and odp (Debian package libreoffice-calc-nogui, libreoffice-impress-nogui)',
      candidates: ['soffice', '/usr/lib/libreoffice/program/soffice'],
      args: ['--version'],
      version: /LibreOffice\s+([\d.]+)/,
    }),
    // LibreOffice's UNO bridge is built for the system Python, not one earlier on the PATH.
    probeProgram({
      name: 'python3-uno',
      use: 'drives LibreOffice over UNO (Debian package python3-uno)',
      candidates: ['/usr/bin/python3', 'python3'],
      args: ['-c', 'import sys, uno; print("Python " + sys.version.split()[0], uno.__file__)'],
      version: /^(Python [\d.]+)/,
    }),
    probeClamd(clamd),
    probeSharp(),
  ]);
}

interface ProgramProbe {
  readonly name: string;
  readonly use: string;
  /** Absolute paths, or names looked up on the PATH, first found first. */
  readonly candidates: readonly string[];
  readonly args: readonly string[];
  /** Its first group is the version in the program's output. */
  readonly version: RegExp;
}

async function probeProgram(probe: ProgramProbe): Promise<ToolReport> {
  const { name, use } = probe;
  let failure: string | undefined;
  for (const candidate of probe.candidates) {
    const path = await findExecutable(candidate);
    if (path === undefined) continue;
    try {
      const { stdout } = await execFileAsync(path, [...probe.args], {
        timeout: VERSION_TIMEOUT_MS,
        maxBuffer: MAX_VERSION_OUTPUT_BYTES,
        encoding: 'utf8',
      });
      const version = probe.version.exec(stdout.trim())?.[1];
      if (version !== undefined) return { name, use, state: 'found', version, path };
      failure = `${path} did not tell its version`;
    } catch (error) {
      failure = `${path} failed: ${firstLine(error)}`;
    }
  }
  return {
    name,
    use,
    state: 'missing',
    detail: failure ?? `not found (looked for ${probe.candidates.join(', ')})`,
  };
}

/** `name` as an absolute path when it is executable, or the first executable of that name on the PATH. */
async function findExecutable(name: string): Promise<string | undefined> {
  const candidates = isAbsolute(name)
    ? [name]
    : (process.env.PATH ?? '')
        .split(delimiter)
        .filter((folder) => folder !== '')
        .map((folder) => join(folder, name));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; the next folder of the PATH may have it.
    }
  }
  return undefined;
}

async function probeClamd(clamd: ClamdConfig | undefined): Promise<ToolReport> {
  const name = 'clamd';
  const use = 'scans every file, member and embedded object (ClamAV)';
  if (clamd === undefined) {
    return { name, use, state: 'not configured', detail: 'only the built-in EICAR scanner runs' };
  }
  const path = clamd.socket ?? `${clamd.host ?? ''}:${clamd.port ?? ''}`;
  try {
    const version = await createClamdScanner(clamd).version();
    return { name, use, state: 'found', version, path };
  } catch (error) {
    return { name, use, state: 'missing', path, detail: firstLine(error) };
  }
}

async function probeSharp(): Promise<ToolReport> {
  const status = await builtinRenderer.status();
  return {
    name: 'sharp',
    use: 'rebuilds images and draws the built-in renderer (libvips, librsvg)',
    state: 'found',
    ...(status.version === undefined ? {} : { version: status.version }),
  };
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}
