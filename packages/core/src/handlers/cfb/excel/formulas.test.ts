import { describe, expect, it } from 'vitest';

import { refusedBiffFormula } from './formulas.ts';

/** [MS-XLS] PtgFunc (value class) calling EXEC (Ftab 0x006E), and SUM(1, 2) through PtgFuncVar. */
const EXEC_CUT_SHORT = [0x41, 0x6e];
const SUM = [0x1e, 0x01, 0x00, 0x1e, 0x02, 0x00, 0x22, 0x02, 0x04, 0x00];

describe('BIFF8 formula screening', () => {
  it('judges tokens read in place in their record as it judges them in a view of their own', () => {
    // A record's field: other bytes before and after the formula, which the walk must not read.
    const record = Uint8Array.from([0xff, 0x01, ...EXEC_CUT_SHORT, 0x01, 0x80, ...SUM, 0x17]);
    const cut = { start: 2, end: 2 + EXEC_CUT_SHORT.length };
    const sum = { start: 6, end: 6 + SUM.length };
    // The missing byte of the function index reads as 0: EXEC, as in a view that ends there.
    expect(refusedBiffFormula(Uint8Array.from(EXEC_CUT_SHORT))).toBe('xlm-macro');
    expect(refusedBiffFormula(record, undefined, cut.start, cut.end)).toBe('xlm-macro');
    expect(refusedBiffFormula(Uint8Array.from(SUM))).toBeUndefined();
    expect(refusedBiffFormula(record, undefined, sum.start, sum.end)).toBeUndefined();
  });
});
