/**
 * The independent checks of a rebuilt Office, ODT or RTF copy: ClamAV (`--alert-macros`, plus the
 * active-content signatures of `@disarm/fixtures`) must find nothing in it, and headless
 * LibreOffice must convert it to PDF with the same text as the input.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { ACTIVE_CONTENT_SIGNATURES } from '@disarm/fixtures';

import type { Verification } from './verify.ts';

const run = promisify(execFile);

/** Output formats these checks apply to. */
export const OFFICE_FORMATS: ReadonlySet<string> = new Set([
  'docx', 'docm', 'dotx', 'dotm', 'xlsx', 'xlsm', 'xltx', 'xltm', 'xlam', 'xlsb', 'pptx', 'pptm',
  'potx', 'potm', 'ppam', 'ppsx', 'ppsm', 'odt', 'rtf',
]); // prettier-ignore

const CONVERT_TIMEOUT_MS = 180_000;

let workDir: Promise<string> | undefined;
/** LibreOffice runs one conversion at a time per profile; the corpus shares one profile. */
let queue: Promise<unknown> = Promise.resolve();

function scratch(): Promise<string> {
  workDir ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'corpus-office-'));
    await writeFile(join(dir, 'active.ndb'), ACTIVE_CONTENT_SIGNATURES);
    process.once('exit', () => {
      void rm(dir, { recursive: true, force: true });
    });
    return dir;
  })();
  return workDir;
}

/** Checks one cleaned copy against its input. */
export async function verifyOffice(
  outputPath: string,
  inputPath: string,
  format: string,
): Promise<Verification> {
  const dir = await scratch();
  try {
    await run('clamscan', [
      '--no-summary',
      '--alert-macros=yes',
      '-d',
      join(dir, 'active.ndb'),
      outputPath,
    ]);
  } catch (error) {
    const { code, stdout } = error as { code?: unknown; stdout?: unknown };
    if (code === 'ENOENT') return { ok: undefined, reader: 'clamscan (not installed)' };
    if (code === 1) {
      const said = typeof stdout === 'string' ? stdout.trim() : '';
      return {
        ok: false,
        unsafe: true,
        reader: 'clamscan',
        detail: said.slice(said.lastIndexOf(': ') + 2),
      };
    }
    return { ok: false, reader: 'clamscan', detail: String(error) };
  }
  const task = queue.then(() => compareText(dir, inputPath, outputPath, format));
  queue = task.catch(() => undefined);
  return task;
}

async function compareText(
  dir: string,
  inputPath: string,
  outputPath: string,
  format: string,
): Promise<Verification> {
  const reader = 'clamscan + LibreOffice';
  const job = await mkdtemp(join(dir, 'job-'));
  try {
    await copyFile(inputPath, join(job, `input.${format}`));
    await copyFile(outputPath, join(job, `output.${format}`));
    await run(
      'soffice',
      [
        `-env:UserInstallation=file://${join(dir, 'profile')}`,
        '--headless',
        '--convert-to',
        'pdf',
        '--outdir',
        job,
        join(job, `input.${format}`),
        join(job, `output.${format}`),
      ],
      { timeout: CONVERT_TIMEOUT_MS },
    );
    const text = async (name: string): Promise<string | undefined> => {
      const pdf = join(job, `${name}.pdf`);
      if (
        !(await readFile(pdf).then(
          () => true,
          () => false,
        ))
      )
        return undefined;
      const { stdout } = await run('pdftotext', [pdf, '-'], { maxBuffer: 64 * 1024 * 1024 });
      return stdout.replace(/\s+/g, ' ').trim();
    };
    const before = await text('input');
    const after = await text('output');
    if (after === undefined) {
      // LibreOffice cannot open some kinds at all (an Excel add-in): no verdict then.
      return before === undefined
        ? { ok: undefined, reader: `${reader} (cannot open the input either)` }
        : { ok: false, reader, detail: 'LibreOffice cannot convert the copy' };
    }
    if (before !== undefined && before !== after) {
      return {
        ok: true,
        textDiffers: true,
        reader,
        detail: `text differs from the input's (${before.length} vs ${after.length} characters)`,
      };
    }
    return { ok: true, reader };
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT')
      return { ok: undefined, reader: `${reader} (not installed)` };
    return { ok: false, reader, detail: error instanceof Error ? error.message : String(error) };
  } finally {
    await rm(job, { recursive: true, force: true });
  }
}
