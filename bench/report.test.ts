/**
 * A bench's figures live in the file its run writes. The main report links the benches that have
 * a runner of their own instead of quoting them, so a new run of one cannot leave another file
 * telling older numbers (the Office figures once disagreed in three places).
 */
import { readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import { OTHER_BENCHMARKS } from './report.ts';

/** A ratio or a duration: `1.4×`, `3-16x`, `0.5 s`, `11.4 s`. */
const FIGURE = /\d(?:\.\d+)?(?:\s?[x×]|\s?s\b)/;

describe('the bench report', () => {
  it('links the other benches without quoting their figures', () => {
    expect(OTHER_BENCHMARKS).toContain('[RESULTS-office.md](RESULTS-office.md)');
    expect(OTHER_BENCHMARKS).toContain('[RESULTS-pdf.md](RESULTS-pdf.md)');
    expect(OTHER_BENCHMARKS).toContain('[RESULTS-cfb.md](RESULTS-cfb.md)');
    expect(OTHER_BENCHMARKS).toContain('[RESULTS-render.md](RESULTS-render.md)');
    expect(OTHER_BENCHMARKS).not.toMatch(FIGURE);
  });

  it('is what RESULTS.md holds', async () => {
    const results = await readFile(new URL('RESULTS.md', import.meta.url), 'utf8');
    expect(results).toContain(`## Other benchmarks\n\n${OTHER_BENCHMARKS}\n`);
  });
});
