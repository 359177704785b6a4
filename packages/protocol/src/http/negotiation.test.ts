import { describe, expect, it } from 'vitest';

import { negotiateJson } from './negotiation.ts';

describe('negotiateJson', () => {
  it.each([
    [null, 'application/json'],
    ['', 'application/json'],
    ['*/*', 'application/json'],
    ['application/json', 'application/json'],
    ['text/json', 'text/json'],
    ['text/plain', 'text/plain'],
    ['text/*', 'text/json'],
    ['text/plain;q=0.9, text/json;q=0.5', 'text/plain'],
    ['application/json;q=0, text/plain', 'text/plain'],
    ['text/html, text/plain;q=0.1', 'text/plain'],
    ['application/xml', 'application/json'],
    ['TEXT/PLAIN', 'text/plain'],
    ['text/plain;q=abc, text/json', 'text/json'],
  ])('Accept %j answers %s', (accept, expected) => {
    expect(negotiateJson(accept)).toBe(expected);
  });
});
