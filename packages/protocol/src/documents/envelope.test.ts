import type { Finding } from '@disarm/core';
import { describe, expect, it } from 'vitest';

import { toEnvelopeFinding } from './envelope.ts';

describe('toEnvelopeFinding()', () => {
  it('gives a finding stored before locations were recorded an empty list', () => {
    expect(toEnvelopeFinding({ kind: 'vba-macro', count: 1 })).toEqual({
      kind: 'vba-macro',
      count: 1,
      locations: [],
    });
  });

  it('shows the documented members of a location and nothing else', () => {
    const stored = {
      kind: 'pdf-javascript',
      count: 3,
      locations: [
        { member: ['bundle.zip', 'a.pdf'], page: 2, count: 1, internal: 'x' },
        { part: 'xl/worksheets/sheet1.xml', sheet: 'Sheet1', count: 2 },
      ],
    } as Finding;
    expect(toEnvelopeFinding(stored)).toEqual({
      kind: 'pdf-javascript',
      count: 3,
      locations: [
        { member: ['bundle.zip', 'a.pdf'], page: 2, count: 1 },
        { part: 'xl/worksheets/sheet1.xml', sheet: 'Sheet1', count: 2 },
      ],
    });
  });
});
