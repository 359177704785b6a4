/**
 * Checks a rebuilt file with a reader that is not our engine, so "cleaned" also means "opens":
 * the distribution's libvips (a different build from the one sharp bundles) decodes every pixel
 * of an image, ImageMagick reads BMP (libvips has no BMP loader), Info-ZIP tests every member of a
 * zip (CRC included), and qpdf checks a PDF's structure.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';

import { exiftoolTags, findPdfActiveContent, unexpectedImageTags } from '@disarm/fixtures';

/** What the independent reader said of one output; `ok: undefined` when no reader is there. */
export interface Verification {
  readonly ok: boolean | undefined;
  /** The reader, e.g. `vips avg`. */
  readonly reader: string;
  /** The reader's complaint when it refused the file. */
  readonly detail?: string;
  /**
   * What the copy still carries that a rebuilt file must not: exiftool tags outside the image
   * allowlist, or `identical to the input`. Any entry makes the verdict `unsafe`.
   */
  readonly leaks?: readonly string[];
  /** The reader found active content in the copy (a virus scanner's verdict): never released. */
  readonly unsafe?: boolean;
  /** The copy opens, but its text is not the input's (visible active content was removed). */
  readonly textDiffers?: boolean;
  /**
   * Active content an independent reader still finds in the copy (PDF: a walk of every object
   * of `qpdf --json` for the keys, action types and annotation subtypes a disarm removes).
   * Anything here makes the verdict `unsafe`.
   */
  readonly activeContent?: readonly string[];
}

const IMAGE_EXTENSIONS = new Set(['jpg', 'jpeg', 'png', 'gif', 'tif', 'tiff', 'webp', 'bmp']);

/**
 * What a cleaned copy leaks: for images every exiftool tag outside the structural allowlist
 * (`@disarm/fixtures` `unexpectedImageTags`), for any format a copy byte-equal to its input.
 */
export async function findLeaks(
  inputPath: string,
  outputPath: string,
  format: string,
): Promise<string[]> {
  const [input, output] = await Promise.all([readFile(inputPath), readFile(outputPath)]);
  const leaks: string[] = [];
  if (input.equals(output)) leaks.push('identical to the input');
  const extension = format.toLowerCase();
  if (IMAGE_EXTENSIONS.has(extension)) {
    leaks.push(...unexpectedImageTags(exiftoolTags(output, extension)));
  }
  return leaks;
}

interface Reader {
  readonly name: string;
  readonly command: string;
  readonly args: (path: string) => string[];
  /** Whether a non-zero exit is still a pass (e.g. a warning that says nothing is wrong). */
  readonly tolerates?: (exitCode: number, output: string) => boolean;
}

const VIPS: Reader = { name: 'vips avg', command: 'vips', args: (path) => ['avg', path] };

/**
 * python-olefile (Debian `python3-olefile`, the reader of oletools) at its strict level: every
 * stream read whole, and a macro, VBA or object storage left in the copy is a failure.
 */
const OLEFILE_CHECK = String.raw`
import sys, olefile
ole = olefile.OleFileIO(sys.argv[1], raise_defects=olefile.DEFECT_INCORRECT)
active = []
for path in ole.listdir(streams=True, storages=True):
    if path[0].lower() in ('macros', '_vba_project_cur', 'vba', 'objectpool'):
        active.append('/'.join(path))
    if ole.get_type('/'.join(path)) == olefile.STGTY_STREAM:
        ole.openstream('/'.join(path)).read()
if active:
    sys.exit('macro or object storages left: ' + ', '.join(active))
`;
const OLEFILE: Reader = {
  name: 'olefile',
  command: '/usr/bin/python3',
  args: (path) => ['-c', OLEFILE_CHECK, path],
};
const READERS: Readonly<Record<string, Reader>> = {
  jpg: VIPS,
  jpeg: VIPS,
  png: VIPS,
  gif: VIPS,
  tif: VIPS,
  tiff: VIPS,
  webp: VIPS,
  bmp: {
    name: 'identify',
    command: 'identify',
    args: (path) => ['-regard-warnings', '-format', '%wx%h\n', path],
  },
  zip: {
    name: 'unzip -t',
    command: 'unzip',
    args: (path) => ['-tqq', path],
    // Exit 1 is unzip's "warning"; for a zip without members it is the only thing it says.
    tolerates: (exitCode, output) => exitCode === 1 && output.includes('zipfile is empty'),
  },
  pdf: { name: 'qpdf --check', command: 'qpdf', args: (path) => ['--check', path] },
  doc: OLEFILE,
  dot: OLEFILE,
};

const READER_TIMEOUT_MS = 120_000;

/** Runs the reader for `format` (the output's extension) on `path`, plus the active-content walk. */
export async function verifyOutput(path: string, format: string): Promise<Verification> {
  const verification = await runReader(path, format);
  const lower = format.toLowerCase();
  if (lower !== 'pdf' && lower !== 'fdf') return verification;
  try {
    const activeContent = findPdfActiveContent(path);
    return activeContent.length === 0 ? verification : { ...verification, activeContent };
  } catch (error) {
    return { ok: false, reader: 'qpdf --json', detail: String(error).split('\n')[0] ?? '' };
  }
}

async function runReader(path: string, format: string): Promise<Verification> {
  const reader = READERS[format.toLowerCase()];
  if (reader === undefined) return { ok: undefined, reader: 'none' };
  return new Promise((resolve) => {
    execFile(
      reader.command,
      reader.args(path),
      { timeout: READER_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const exitCode = typeof error?.code === 'number' ? error.code : undefined;
        if (
          error === null ||
          (exitCode !== undefined && reader.tolerates?.(exitCode, `${stdout}${stderr}`) === true)
        ) {
          resolve({ ok: true, reader: reader.name });
        } else if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          resolve({ ok: undefined, reader: `${reader.name} (not installed)` });
        } else {
          const said = `${stderr}${stdout}`.trim().split('\n')[0] ?? '';
          resolve({ ok: false, reader: reader.name, detail: said === '' ? error.message : said });
        }
      },
    );
  });
}
