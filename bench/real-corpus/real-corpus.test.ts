import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

import { buildImage, buildOoxml, buildRawZip, buildZip, EICAR_TEST_FILE } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { judge } from './judge.ts';
import { ManifestError, parseManifest } from './manifest.ts';
import { findLeaks } from './verify.ts';
import type { ManifestRow } from './manifest.ts';

const REPO_DIR = resolve(import.meta.dirname, '..', '..');
const HEADER = 'file\tformat\tcategory\twhat_it_contains\texpected_outcome\tnotes';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the command the way `npm run corpus` does. */
function runCorpus(args: readonly string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=@disarm/source',
        'bench/real-corpus/main.ts',
        '--workers',
        '1',
        ...args,
      ],
      { cwd: REPO_DIR, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        done({ code, stdout, stderr });
      },
    );
  });
}

interface Line {
  file: string;
  got: string;
  verdict: string;
  opens?: boolean | null;
}

function parseLines(stdout: string): Map<string, Line> {
  const lines = stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Line);
  return new Map(lines.map((line) => [line.file, line]));
}

describe('npm run corpus', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'corpus-test-'));
    const png = await buildImage('png', { width: 16, height: 12 });
    const gif = await buildImage('gif', { width: 8, height: 8 });
    const files: Record<string, Uint8Array> = {
      'benign/photo.png': png,
      'benign/album.zip': await buildZip([{ name: 'photo.png', data: png }]),
      'hostile/eicar.zip': await buildZip([{ name: 'eicar.com.png', data: EICAR_TEST_FILE }]),
      'hostile/slip.zip': buildRawZip([{ name: '../../evil.png', data: png }]),
      'malformed/truncated.png': png.subarray(0, 40),
      'malformed/gif-named-png.png': gif,
      'active/letter.docx': await buildOoxml('docx'),
      // Listed as a threat on purpose: the engine rightly cleans it, and the run must call it unsafe.
      'hostile/not-really.png': png,
    };
    for (const [path, bytes] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), bytes);
    }
    const rows = [
      ['benign/photo.png', 'png', 'benign', 'a photo', 'completed-cleaned'],
      ['benign/album.zip', 'zip', 'benign', 'a zip of a photo', 'completed-cleaned'],
      ['hostile/eicar.zip', 'zip', 'hostile', 'EICAR member', 'rejected:threat_detected'],
      ['hostile/slip.zip', 'zip', 'hostile', 'zip-slip', 'rejected:policy_violation'],
      ['malformed/truncated.png', 'png', 'malformed', 'cut short', 'rejected:invalid_file'],
      ['malformed/gif-named-png.png', 'png', 'malformed', 'a GIF', 'rejected:invalid_file'],
      ['active/letter.docx', 'docx', 'active', 'a letter', 'completed-cleaned'],
      ['hostile/not-really.png', 'png', 'hostile', 'mislabelled row', 'rejected:threat_detected'],
    ];
    await writeFile(
      join(dir, 'manifest.tsv'),
      [HEADER, ...rows.map((row) => [...row, ''].join('\t'))].join('\n') + '\n',
    );
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('judges every row, checks cleaned copies with an independent reader, and exits 1 on unsafe', async () => {
    const run = await runCorpus([dir, '--json']);
    expect(run.code).toBe(1);
    const lines = parseLines(run.stdout);
    expect(Object.fromEntries([...lines].map(([file, line]) => [file, line.verdict]))).toEqual({
      'benign/photo.png': 'match',
      'benign/album.zip': 'match',
      'hostile/eicar.zip': 'match',
      'hostile/slip.zip': 'match',
      'malformed/truncated.png': 'match',
      'malformed/gif-named-png.png': 'match',
      'active/letter.docx': 'match',
      'hostile/not-really.png': 'unsafe',
    });
    // unzip is a system dependency of the tests, so the zip is always opened by it.
    expect(lines.get('benign/album.zip')?.opens).toBe(true);
    expect(run.stderr).toMatch(/^all\s+8\s+7\s+1\s+0\s+0\s+0$/m);
    expect(run.stderr).toContain('unsafe  png   expected rejected:threat_detected');
  });

  it('filters by format and exits 0 when nothing is unsafe or broken', async () => {
    const run = await runCorpus([dir, '--formats', 'zip,docx']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/: 4 files in /);
    expect(run.stdout).toMatch(/^zip\s+3\s+3\s/m);
    expect(run.stdout).not.toContain('Differences:');
  });

  it('exits 2 with a reason for a folder without a manifest', async () => {
    const run = await runCorpus([join(dir, 'benign')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('cannot read the corpus');
  });

  it('exits 2 on bad arguments, before reading anything', async () => {
    const run = await runCorpus([dir, '--workers', 'many']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--workers takes a whole number');
  });
});

describe('the manifest', () => {
  it('reads rows by column name and refuses malformed ones with the line', () => {
    const rows = parseManifest(
      `${HEADER}\nfiles/a.PNG\tPNG\tbenign\ta\tcompleted-cleaned\tnote\n\n`,
    );
    expect(rows).toEqual([
      {
        file: 'files/a.PNG',
        format: 'png',
        category: 'benign',
        what: 'a',
        expected: 'completed-cleaned',
        notes: 'note',
      },
    ]);
    expect(() => parseManifest('file\tformat\n')).toThrow(ManifestError);
    expect(() =>
      parseManifest(`${HEADER}\n../x.png\tpng\tbenign\ta\tcompleted-cleaned\t\n`),
    ).toThrow(/line 2: bad file/);
    expect(() => parseManifest(`${HEADER}\nx.png\tpng\tbenign\ta\tcleaned\t\n`)).toThrow(
      /line 2: bad expected_outcome/,
    );
  });
});

describe('findLeaks', () => {
  it('names exiftool tags outside the allowlist and a copy equal to its input', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'corpus-leaks-'));
    try {
      const plain = await buildImage('jpeg', { width: 8, height: 8 });
      const tagged = await buildImage('jpeg', { width: 8, height: 8, exif: { Make: 'Canon' } });
      await writeFile(join(dir, 'plain.jpg'), plain);
      await writeFile(join(dir, 'tagged.jpg'), tagged);
      expect(await findLeaks(join(dir, 'plain.jpg'), join(dir, 'tagged.jpg'), 'jpg')).toContain(
        'IFD0:Make',
      );
      expect(await findLeaks(join(dir, 'plain.jpg'), join(dir, 'plain.jpg'), 'jpg')).toEqual([
        'identical to the input',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('judge', () => {
  const row = (expected: string): ManifestRow => ({
    file: 'x.png',
    format: 'png',
    category: 'hostile',
    what: '',
    expected,
    notes: '',
  });
  const cleaned = {
    status: 'cleaned',
    outputPath: '/tmp/x.png',
    fileName: 'x.png',
    format: 'png',
    mediaType: 'image/png',
    modifications: ['rebuilt'],
    findings: [],
    bytes: 10,
  } as const;

  it('calls a copy the reader cannot open broken, even when cleaned was expected', () => {
    expect(
      judge(row('completed-cleaned'), cleaned, { ok: false, reader: 'vips avg', detail: 'bad' }),
    ).toBe('broken');
    expect(judge(row('completed-cleaned'), cleaned, { ok: undefined, reader: 'none' })).toBe(
      'match',
    );
  });

  it('calls a copy a scanner flags unsafe, and a copy with other text differs', () => {
    expect(
      judge(row('completed-cleaned'), cleaned, {
        ok: false,
        unsafe: true,
        reader: 'clamscan',
        detail: 'Heuristics.OLE2.ContainsMacros.VBA',
      }),
    ).toBe('unsafe');
    expect(
      judge(row('completed-cleaned'), cleaned, {
        ok: true,
        textDiffers: true,
        reader: 'clamscan + LibreOffice',
      }),
    ).toBe('differs');
  });

  it('calls a cleaned file unsafe only when a refusal for what it carries was expected', () => {
    for (const reason of [
      'threat_detected',
      'policy_violation',
      'password_protected',
      'file_too_large',
    ]) {
      expect(judge(row(`rejected:${reason}`), cleaned, { ok: true, reader: 'vips avg' })).toBe(
        'unsafe',
      );
    }
    expect(judge(row('rejected:invalid_file'), cleaned, { ok: true, reader: 'vips avg' })).toBe(
      'differs',
    );
  });

  it('calls a cleaned copy that leaks metadata or equals its input unsafe', () => {
    for (const leaks of [['EXIF:Make'], ['identical to the input']]) {
      expect(
        judge(row('completed-cleaned'), cleaned, { ok: true, reader: 'vips avg', leaks }),
      ).toBe('unsafe');
    }
  });

  it('calls a cleaned copy unsafe when an independent reader still finds active content', () => {
    expect(
      judge(row('completed-cleaned'), cleaned, {
        ok: true,
        reader: 'qpdf --check',
        activeContent: ['/JS', '/S /Launch'],
      }),
    ).toBe('unsafe');
  });

  it('tells a format without a rebuilder from other failures', () => {
    const failed = (detail: string) =>
      ({ status: 'failed', reason: 'internal_error', detail }) as const;
    expect(
      judge(
        row('completed-cleaned'),
        failed('rebuilding .pdf files is not yet supported'),
        undefined,
      ),
    ).toBe('unbuilt');
    expect(judge(row('completed-cleaned'), failed('the worker crashed'), undefined)).toBe(
      'differs',
    );
    expect(
      judge(
        row('rejected:invalid_file'),
        { status: 'rejected', reason: 'invalid_file', detail: 'cut short' },
        undefined,
      ),
    ).toBe('match');
  });
});
