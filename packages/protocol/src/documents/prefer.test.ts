import { describe, expect, it } from 'vitest';

import { parsePrefer } from './prefer.ts';

describe('parsePrefer', () => {
  it.each([
    [null, { respondSync: false, waitSeconds: undefined }],
    ['respond-sync', { respondSync: true, waitSeconds: undefined }],
    ['wait=10', { respondSync: false, waitSeconds: 10 }],
    ['respond-async, wait=5', { respondSync: false, waitSeconds: 5 }],
    ['Respond-Sync; foo=bar, wait="7"', { respondSync: true, waitSeconds: 7 }],
    ['wait=-1, wait=abc', { respondSync: false, waitSeconds: undefined }],
    ['handling=lenient', { respondSync: false, waitSeconds: undefined }],
  ])('%j', (header, expected) => {
    expect(parsePrefer(header)).toEqual(expected);
  });
});
