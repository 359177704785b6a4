import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ANALYSIS_MARKER, writeResultsFile } from './results-file.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'results-file-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('a bench results file', () => {
  it('starts with the marker where none was written by hand yet', async () => {
    const path = join(dir, 'RESULTS-new.md');
    await writeResultsFile(path, '# Results\n\n| a | b |\n| --- | --- |\n| 1 | 2 |');
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('# Results\n')).toBe(true);
    expect(text.trimEnd().endsWith(ANALYSIS_MARKER)).toBe(true);
  });

  it('keeps the analysis written below the marker, and replaces what is above it', async () => {
    const path = join(dir, 'RESULTS-old.md');
    const analysis = `${ANALYSIS_MARKER}\n\nThe floor is unzip + zip; ours is slower on small files.\n`;
    await writeFile(path, `# Results\n\n| a |\n| --- |\n| old |\n\n${analysis}`);
    await writeResultsFile(path, '# Results\n\n| a |\n| --- |\n| new |');
    const text = await readFile(path, 'utf8');
    expect(text).toContain('| new |');
    expect(text).not.toContain('| old |');
    expect(text.endsWith(analysis)).toBe(true);
  });
});
