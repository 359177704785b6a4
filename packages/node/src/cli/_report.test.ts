import { describe, expect, it } from 'vitest';

import { renderProgress } from './_progress.ts';
import { toCleanRecord, toHumanLine } from './_report.ts';

describe('toCleanRecord()', () => {
  it('omits the fields a status does not have', () => {
    expect(
      toCleanRecord(
        'in/a.gz',
        {
          status: 'cleaned',
          outputPath: '/abs/out/a.zip',
          fileName: 'a.zip',
          format: 'zip',
          mediaType: 'application/zip',
          modifications: ['rebuilt', 'converted'],
          findings: [],
          bytes: 22,
        },
        'out/a.zip',
      ),
    ).toEqual({
      input: 'in/a.gz',
      status: 'cleaned',
      output: 'out/a.zip',
      outputFormat: 'zip',
      modifications: ['rebuilt', 'converted'],
      findings: [],
    });
    expect(
      Object.keys(
        toCleanRecord('x', { status: 'rejected', reason: 'invalid_file', detail: 'd' }, ''),
      ),
    ).toEqual(['input', 'status', 'reason', 'detail']);
  });
});

describe('toHumanLine()', () => {
  it('aligns the status and lists findings', () => {
    expect(
      toHumanLine({
        input: 'in/a.png',
        status: 'cleaned',
        output: 'out/a.png',
        findings: [
          { kind: 'image-metadata', count: 2 },
          { kind: 'trailing-data', count: 1 },
        ],
      }),
    ).toBe('cleaned  in/a.png -> out/a.png (findings: image-metadata×2, trailing-data×1)');
    expect(
      toHumanLine({ input: 'b', status: 'failed', reason: 'timeout', detail: 'too slow' }),
    ).toBe('failed   b: timeout — too slow');
  });

  it('escapes control characters from hostile names so they cannot drive the terminal', () => {
    expect(
      toHumanLine({
        input: 'in/\u001b]0;owned\u0007.zip',
        status: 'rejected',
        reason: 'invalid_file',
        detail: 'member "\r\nevil" is broken',
      }),
    ).toBe('rejected in/\\x1b]0;owned\\x07.zip: invalid_file — member "\\x0d\\x0aevil" is broken');
  });
});

describe('renderProgress()', () => {
  it('draws a bar proportional to the files done', () => {
    expect(renderProgress(0, 4)).toBe(`[${'.'.repeat(30)}] 0/4 files`);
    expect(renderProgress(2, 4)).toBe(`[${'#'.repeat(15)}${'.'.repeat(15)}] 2/4 files`);
    expect(renderProgress(4, 4)).toBe(`[${'#'.repeat(30)}] 4/4 files`);
  });
});
