/**
 * Proves a runtime tree (what `scripts/build-runtime-tree.mjs` builds, what the image runs) by
 * running it: `disarm doctor`, then `disarm clean` of one file of every format family, with
 * `NODE_ENV=production`, from a folder outside this checkout so nothing resolves from its
 * `node_modules`. The files are made by `@disarm/fixtures`, so this runs from the checkout:
 *
 *   node --import tsx --conditions=@disarm/source scripts/check-runtime-tree.ts <tree> [--node <node>]
 *
 * `--node` runs the tree with another Node (the tree's native modules must have been built for
 * it). Exits 0 when every file is cleaned; prints what each became.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  buildGzip,
  buildHtmlPage,
  buildImage,
  buildOdp,
  buildOds,
  buildOdt,
  buildOfficeDocument,
  buildRtf,
  buildSvgDrawing,
  buildTextPdf,
  buildWordBinary,
  buildZip,
} from '@disarm/fixtures';

/** One file of each family the engine rebuilds, and of each kind a renderer draws. */
async function samples(): Promise<Record<string, Uint8Array>> {
  const png = await buildImage('png', { width: 32, height: 32 });
  return {
    'photo.png': png,
    'photo.jpg': await buildImage('jpeg', { width: 32, height: 32 }),
    'report.pdf': buildTextPdf(),
    'bundle.zip': await buildZip([{ name: 'inner/photo.png', data: png }]),
    'photo.png.gz': buildGzip(png),
    'letter.docx': await buildOfficeDocument('docx'),
    'sheet.xlsx': await buildOfficeDocument('xlsx'),
    'letter.odt': await buildOdt(),
    'old.doc': await buildWordBinary({ texts: ['a', 'b'] }),
    'memo.rtf': buildRtf(),
    'page.html': new TextEncoder().encode(buildHtmlPage('<p>Hello</p>')),
    'drawing.svg': new TextEncoder().encode(buildSvgDrawing('')),
    'budget.ods': await buildOds(),
    'slides.odp': await buildOdp(),
  };
}

interface Result {
  readonly input: string;
  readonly status: string;
  readonly output?: string;
  readonly outputFormat?: string;
  readonly reason?: string;
  readonly detail?: string;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const nodeAt = args.indexOf('--node');
  const node = nodeAt === -1 ? process.execPath : resolve(args.splice(nodeAt, 2)[1] ?? '');
  const [tree] = args;
  if (tree === undefined) {
    console.error('usage: check-runtime-tree.ts <tree> [--node <node>]');
    return 2;
  }
  const cli = join(resolve(tree), 'packages/node/bin/disarm.mjs');
  const work = mkdtempSync(join(tmpdir(), 'disarm-check-'));
  try {
    const inbox = join(work, 'inbox');
    const files = await samples();
    spawnSync('mkdir', ['-p', inbox]);
    for (const [name, bytes] of Object.entries(files)) writeFileSync(join(inbox, name), bytes);
    // Only what the tree brings: no tsx, no source condition, no NODE_OPTIONS of this shell.
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
    };
    const run = (command: string[]): ReturnType<typeof spawnSync> =>
      spawnSync(node, [cli, ...command], { cwd: work, env, encoding: 'utf8' });

    console.log(
      `node ${spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()}, tree ${resolve(tree)}`,
    );
    const doctor = run(['doctor']);
    console.log(String(doctor.stdout).trim());
    const cleaned = run(['clean', 'inbox', '--out', 'clean', '--json', '--no-progress']);
    const results = String(cleaned.stdout)
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Result);
    for (const result of results) {
      console.log(
        `${result.status.padEnd(8)} ${result.input} -> ${result.output ?? `${result.reason ?? ''}: ${result.detail ?? ''}`}`,
      );
    }
    const missing = Object.keys(files).filter(
      (name) => !results.some((result) => result.input.endsWith(name)),
    );
    const notCleaned = results.filter((result) => result.status !== 'cleaned');
    if (cleaned.status !== 0 || missing.length > 0 || notCleaned.length > 0) {
      console.error(String(cleaned.stderr));
      console.error(`FAILED: exit ${cleaned.status}, missing ${missing.join(', ') || 'none'}`);
      return 1;
    }
    console.log(`all ${results.length} files cleaned`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

process.exitCode = await main();
