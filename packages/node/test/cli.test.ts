import { mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';

import { FINDING_KINDS } from '@disarm/core';
import sharp from 'sharp';
import { beforeEach, describe, expect, it } from 'vitest';

import {
  EICAR,
  jpegWithMetadata,
  pngWithMetadata,
  tempDir,
  writeTree,
  zipOf,
} from './_fixtures.ts';
import { runDisarm } from './_server.ts';
import type { CliRun } from './_server.ts';

/** Runs the real CLI from source in `cwd`, as a user would from a shell. */
function disarm(cwd: string, ...args: string[]): Promise<CliRun> {
  return runDisarm(args, process.env, cwd);
}

/** Every stdout line as JSON, keyed by input path. */
function parseLines(stdout: string): Map<string, Record<string, unknown>> {
  const records = new Map<string, Record<string, unknown>>();
  for (const line of stdout.trimEnd().split('\n')) {
    const record = JSON.parse(line) as Record<string, unknown>;
    records.set(String(record.input), record);
  }
  return records;
}

async function exifOf(path: string): Promise<Buffer | undefined> {
  return (await sharp(await readFile(path)).metadata()).exif;
}

let cwd: string;

beforeEach(async () => {
  cwd = await tempDir();
  const png = await pngWithMetadata();
  await writeTree(join(cwd, 'in'), {
    'photo.png': png,
    '.hidden.png': png,
    'eicar.com': EICAR,
    'notes.txt': 'plain text',
    'nested/deeper/photo.jpg': await jpegWithMetadata(),
    'nested/bundle.zip': await zipOf({ 'inside.png': png }),
  });
  await symlink('../photo.png', join(cwd, 'in/nested/link.png'));
});

describe('disarm clean', () => {
  it('cleans a folder tree in parallel: one JSON line per file, structure kept, exit 1', async () => {
    const run = await disarm(cwd, 'clean', 'in', '--out', 'out', '--json', '--concurrency', '2');
    expect(run.code).toBe(1);
    const records = parseLines(run.stdout);
    expect([...records.keys()].sort()).toEqual([
      'in/.hidden.png',
      'in/eicar.com',
      'in/nested/bundle.zip',
      'in/nested/deeper/photo.jpg',
      'in/notes.txt',
      'in/photo.png',
    ]);
    expect(records.get('in/photo.png')).toEqual({
      input: 'in/photo.png',
      status: 'cleaned',
      output: 'out/photo.png',
      outputFormat: 'png',
      modifications: ['rebuilt'],
      findings: [{ kind: 'image-metadata', count: 1 }],
    });
    expect(records.get('in/nested/deeper/photo.jpg')).toMatchObject({
      status: 'cleaned',
      output: 'out/nested/deeper/photo.jpg',
      outputFormat: 'jpg',
    });
    expect(records.get('in/nested/bundle.zip')).toMatchObject({
      status: 'cleaned',
      output: 'out/nested/bundle.zip',
      outputFormat: 'zip',
      // Inside an archive, a finding names the member it was found in.
      findings: [
        { kind: 'image-metadata', count: 1, locations: [{ member: ['inside.png'], count: 1 }] },
      ],
    });
    expect(records.get('in/eicar.com')).toEqual({
      input: 'in/eicar.com',
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
      detail: expect.stringContaining('EICAR') as string,
    });
    expect(records.get('in/notes.txt')).toEqual({
      input: 'in/notes.txt',
      status: 'rejected',
      reason: 'unsupported_file_type',
      detail: expect.any(String) as string,
    });

    const written = await readdir(join(cwd, 'out'), { recursive: true });
    expect(written.sort()).toEqual([
      '.hidden.png',
      'nested',
      'nested/bundle.zip',
      'nested/deeper',
      'nested/deeper/photo.jpg',
      'photo.png',
    ]);
    expect(await exifOf(join(cwd, 'out/photo.png'))).toBeUndefined();
    expect(await exifOf(join(cwd, 'out/nested/deeper/photo.jpg'))).toBeUndefined();
    expect(await exifOf(join(cwd, 'in/photo.png'))).toBeDefined();
    expect(run.stderr).toBe('');
  });

  it('prints one human line per file and exits 0 when everything was cleaned', async () => {
    const run = await disarm(cwd, 'clean', 'in/photo.png', 'in/nested/deeper', '--out', 'out');
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n').sort()).toEqual([
      'cleaned  in/nested/deeper/photo.jpg -> out/photo.jpg (findings: image-metadata×1)',
      'cleaned  in/photo.png -> out/photo.png (findings: image-metadata×1)',
    ]);
    expect(run.stderr).toContain('2 cleaned, 0 rejected, 0 failed');
  });

  it('checks --out before processing anything: an existing copy stops the run (64), --overwrite replaces it', async () => {
    await mkdir(join(cwd, 'out'));
    await writeFile(join(cwd, 'out/photo.png'), 'earlier copy');
    const run = await disarm(
      cwd,
      'clean',
      'in/photo.png',
      'in/nested/deeper',
      'in/notes.txt',
      '--out',
      'out',
    );
    expect(run.code).toBe(64);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'a cleaned copy already exists in --out out (out/photo.png); nothing was processed. Use --overwrite to replace them, or another --out',
    );
    // Checked first: not one file was processed, the other copy was never written.
    expect(await readdir(join(cwd, 'out'))).toEqual(['photo.png']);
    expect(await readFile(join(cwd, 'out/photo.png'), 'utf8')).toBe('earlier copy');

    const replaced = await disarm(cwd, 'clean', 'in/photo.png', '--out', 'out', '--overwrite');
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain('cleaned  in/photo.png -> out/photo.png');
    const copy = await readFile(join(cwd, 'out/photo.png'));
    expect(copy.subarray(1, 4).toString('latin1')).toBe('PNG');
  });

  it('plans every copy before processing: inputs whose copies would take one path stop the run (64)', async () => {
    const png = await pngWithMetadata();
    await writeTree(cwd, {
      'dupA/x.png': png,
      'dupB/x.png': png,
      'mail/a.gz': gzipSync(png),
      'mail/a.zip': await zipOf({ 'b.png': png }),
      'tree/x.zip/inside.png': png,
      'attachments/x.zip': await zipOf({ 'c.png': png }),
    });
    const [twoFiles, folderAndFile, converted, fileAndFolder] = await Promise.all([
      disarm(cwd, 'clean', 'dupA/x.png', 'dupB/x.png', '--out', 'out'),
      // --overwrite replaces copies of an earlier run, never one of this run's own.
      disarm(cwd, 'clean', 'dupA', 'dupB/x.png', 'in/photo.png', '--out', 'out', '--overwrite'),
      disarm(cwd, 'clean', 'mail', '--out', 'out'),
      disarm(cwd, 'clean', 'tree', 'attachments/x.zip', '--out', 'out'),
    ]);
    for (const run of [twoFiles, folderAndFile, converted, fileAndFolder]) {
      expect(run.code, run.stderr).toBe(64);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('Nothing was processed. Clean them into separate --out folders');
    }
    expect(twoFiles.stderr).toContain(
      'error: inputs would be cleaned to the same place in --out out: dupA/x.png and dupB/x.png -> out/x.png.',
    );
    expect(folderAndFile.stderr).toContain(
      'dupA/x.png and dupB/x.png -> out/x.png. Nothing was processed. Clean them into separate --out folders, or name a folder that holds them all, so each keeps its path below it',
    );
    // A gzip comes back as a zip: its copy is named like the zip beside it.
    expect(converted.stderr).toContain(
      'mail/a.gz (cleaned as a.zip) and mail/a.zip -> out/a.zip. Nothing was processed. Clean them into separate --out folders\n',
    );
    expect(fileAndFolder.stderr).toContain(
      'attachments/x.zip -> out/x.zip, which tree/x.zip/inside.png needs as its folder.',
    );
    await expect(readdir(join(cwd, 'out'))).rejects.toThrow();

    // Named from their common folder, each keeps its path.
    await rm(join(cwd, 'mail'), { recursive: true });
    const apart = await disarm(cwd, 'clean', '.', '--out', 'out', '--json');
    expect(apart.stderr).not.toContain('error');
    expect(await readdir(join(cwd, 'out/dupB'))).toEqual(['x.png']);
  });

  it('checks the folders a copy goes into: an earlier copy in the way stops the run, a folder always', async () => {
    const png = await pngWithMetadata();
    await writeTree(cwd, {
      'tree/x.zip/inside.png': png,
      'attachments/x.zip': await zipOf({ 'c.png': png }),
      // An earlier run's copy of a file named like the folder this run needs.
      'out/x.zip': 'earlier copy',
    });
    const inTheWay = await disarm(cwd, 'clean', 'tree', '--out', 'out');
    expect(inTheWay.code, inTheWay.stderr).toBe(64);
    expect(inTheWay.stderr).toContain(
      'a cleaned copy already exists in --out out (out/x.zip); nothing was processed.',
    );
    const replaced = await disarm(cwd, 'clean', 'tree', '--out', 'out', '--overwrite');
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stdout).toContain('cleaned  tree/x.zip/inside.png -> out/x.zip/inside.png');

    // Now out/x.zip is a folder: a copy named x.zip cannot replace it, --overwrite or not.
    const folder = await disarm(cwd, 'clean', 'attachments', '--out', 'out', '--overwrite');
    expect(folder.code, folder.stderr).toBe(64);
    expect(folder.stderr).toContain(
      'error: out/x.zip is a folder, where the copy of attachments/x.zip goes; nothing was processed. Move it away, or use another --out',
    );
    expect(await readdir(join(cwd, 'out/x.zip'))).toEqual(['inside.png']);
  });

  it('passes --policy and the limits to the engine', async () => {
    const policed = await disarm(
      cwd,
      'clean',
      'in/photo.png',
      '--out',
      'out',
      '--policy',
      'script=strip,image-metadata=reject',
    );
    expect(policed.code).toBe(1);
    expect(policed.stdout).toMatch(/^rejected in\/photo\.png: policy_violation — .*image-metadata/);
    const tooBig = await disarm(
      cwd,
      'clean',
      'in/photo.png',
      '--out',
      'out',
      '--json',
      '--max-bytes',
      '10',
    );
    expect(parseLines(tooBig.stdout).get('in/photo.png')).toMatchObject({
      status: 'rejected',
      reason: 'file_too_large',
    });
    expect(tooBig.code).toBe(1);
  });

  it('skips --out when it lies inside the folder being cleaned', async () => {
    await writeTree(join(cwd, 'in/clean'), { 'earlier.png': await pngWithMetadata() });
    const run = await disarm(cwd, 'clean', 'in', '--out', 'in/clean', '--json');
    expect(run.code).toBe(1);
    const inputs = [...parseLines(run.stdout).keys()];
    expect(inputs).toHaveLength(6);
    expect(inputs.filter((input) => input.startsWith('in/clean'))).toEqual([]);
    expect(await readdir(join(cwd, 'in/clean'))).toContain('photo.png');
  });

  it('exits 64 on usage errors, before touching any file', async () => {
    await mkdir(join(cwd, 'empty'));
    const runs = await Promise.all([
      disarm(cwd),
      disarm(cwd, 'clean', 'in'),
      disarm(cwd, 'clean', '--out', 'out'),
      disarm(cwd, 'clean', 'missing.png', '--out', 'out'),
      disarm(cwd, 'clean', 'empty', '--out', 'out'),
      disarm(cwd, 'clean', 'in', '--out', '.'),
      disarm(cwd, 'clean', 'in', '--out', 'in/photo.png'),
      disarm(cwd, 'clean', 'in', '--out', 'out', '--policy', 'no-such-kind=reject'),
      disarm(cwd, 'clean', 'in', '--out', 'out', '--max-bytes', '1.5'),
      disarm(cwd, 'clean', 'in', '--out', 'out', '--no-such-flag'),
    ]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(64);
      expect(run.stdout).toBe('');
    }
    expect(runs[3].stderr).toContain('cannot read missing.png');
    expect(runs[5].stderr).toContain('must not contain the input in');
    await expect(readdir(join(cwd, 'out'))).rejects.toThrow();
  });

  it('documents every option, the exit status, the policy kinds and the limits in --help', async () => {
    const help = await disarm(cwd, 'clean', '--help');
    expect(help.code).toBe(0);
    for (const option of [
      '--out <dir>',
      '--json',
      '--concurrency <n>',
      '--policy <kind=action>',
      '--max-bytes <n>',
      '--timeout-ms <n>',
      '--max-depth <n>',
      '--no-progress',
    ]) {
      expect(help.stdout).toContain(option);
    }
    for (const code of ['0 ', '1 ', '2 ', '64 ']) expect(help.stdout).toContain(`\n  ${code}`);
    for (const kind of Object.keys(FINDING_KINDS)) expect(help.stdout).toContain(`  ${kind} `);
    expect(help.stdout).toContain('104857600');
    // What happens to copies already in --out, said once and as the code does it.
    expect(help.stdout).toContain(
      'a copy already in DIR\n  stops the run (exit 64) unless --overwrite is given; two inputs whose copies would\n  take one path',
    );
    expect(help.stdout).not.toMatch(/never replaced/);

    const version = await disarm(cwd, '--version');
    const manifest = JSON.parse(
      await readFile(new URL('../package.json', import.meta.url), 'utf8'),
    ) as { version: string };
    expect(version).toEqual({ code: 0, stdout: `${manifest.version}\n`, stderr: '' });
  });
});

describe('disarm admin --help', () => {
  it('lists every subcommand of every resource', async () => {
    const overview = await disarm(cwd, 'admin', '--help');
    expect(overview.code).toBe(0);
    const resources = [...overview.stdout.matchAll(/^ {2}([a-z-]+) +([^\n]*)$/gm)]
      .map(([, name = '', summary = '']) => ({ name, summary }))
      .filter(({ name }) => name !== 'help');
    expect(resources.map(({ name }) => name)).toEqual(['org', 'key', 'client', 'signing-key']);
    for (const { name, summary } of resources) {
      const help = await disarm(cwd, 'admin', name, '--help');
      const actions = [...help.stdout.matchAll(/^ {2}([a-z-]+) \[options\]/gm)].map(
        ([, action = '']) => action,
      );
      expect(actions.length, name).toBeGreaterThan(1);
      expect(summary, name).toMatch(new RegExp(`: ${actions.join(', ')}$`));
    }
    expect(overview.stdout).toContain('create, list, show, suspend, activate, update');
  });
});
