import { describe, expect, it } from 'vitest';

import type { InputFile } from './_inputs.ts';
import { planOutputs } from './_outputs.ts';

const OUT = { path: '/work/out', display: 'out' };

/** A file named `display` on the command line, its copy going to `outputDir` under --out. */
function input(display: string, outputDir = OUT.path): InputFile {
  const fileName = display.slice(display.lastIndexOf('/') + 1);
  return { path: `/work/${display}`, display, fileName, outputDir };
}

describe('planOutputs()', () => {
  it('gives each copy the name the engine returns it under', () => {
    expect(
      planOutputs([input('mail/a.gz'), input('mail/B.PNG'), input('mail/notes.txt')], OUT).map(
        (file) => file.outputPath,
      ),
    ).toEqual(['/work/out/a.zip', '/work/out/B.PNG', undefined]);
  });

  it('lets files that get no copy share a name', () => {
    expect(planOutputs([input('a/notes.txt'), input('b/notes.txt')], OUT)).toHaveLength(2);
  });

  it('names five collisions and counts the rest', () => {
    const files = Array.from({ length: 7 }, (_, index) => [
      input(`a/${index}.png`),
      input(`b/${index}.png`),
    ]).flat();
    expect(() => planOutputs(files, OUT)).toThrow(
      'inputs would be cleaned to the same place in --out out: a/0.png and b/0.png -> out/0.png; a/1.png and b/1.png -> out/1.png; a/2.png and b/2.png -> out/2.png; a/3.png and b/3.png -> out/3.png; a/4.png and b/4.png -> out/4.png; and 2 more. Nothing was processed.',
    );
  });
});
