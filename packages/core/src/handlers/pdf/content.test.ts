import { describe, expect, it } from 'vitest';

import { Rejection } from '../../_internal/rejection.ts';
import { salvageContent } from './content.ts';

const salvage = (content: string): string | undefined => {
  const result = salvageContent(Buffer.from(content, 'latin1'));
  return result === undefined ? undefined : Buffer.from(result.data).toString('latin1');
};

describe('salvageContent', () => {
  it.each([
    ['text with escaped and nested parentheses', 'BT (a \\) b (c) d) Tj ET'],
    ['a comment holding a parenthesis', '% (not a string\nBT (x) Tj ET'],
    ['hex strings and dictionaries', '/P << /MCID 0 >> BDC BT <48 65> Tj ET EMC'],
    ['an inline image whose data holds delimiters', 'q BI /W 2 /H 1 /CS /G /BPC 8 ID )(<[ EI Q'],
    ['operands left after the last operator', 'BT (x) Tj ET 1 0 0'],
    ['stray closing brackets', 'BT (x) Tj ] >> ET'],
  ])('leaves an intact stream alone: %s', (_, content) => {
    expect(salvage(content)).toBeUndefined();
  });

  it.each([
    ['an unterminated string', 'q BT /F1 9 Tf (kept) Tj (lost', 'q BT /F1 9 Tf (kept) Tj\nET\nQ\n'],
    ['an unterminated hex string', 'BT (kept) Tj <4142', 'BT (kept) Tj\nET\n'],
    ['a hex string that is not hex', 'BT (kept) Tj <41 zz> Tj ET', 'BT (kept) Tj\nET\n'],
    ['a ")" outside a string', 'q (kept) Tj (a)) Tj Q', 'q (kept) Tj\nQ\n'],
    ['an array open at the end', 'BT (kept) Tj [(a) -20 (b) Tj', 'BT (kept) Tj\nET\n'],
    [
      'an inline image without EI',
      'q 1 0 0 1 0 0 cm BI /W 2 ID \u0001\u0002',
      'q 1 0 0 1 0 0 cm\nQ\n',
    ],
    [
      'marked content and states nested several levels',
      'q /P <<>> BDC q BT (kept) Tj (lost',
      'q /P <<>> BDC q BT (kept) Tj\nET\nQ\nEMC\nQ\n',
    ],
    ['openings already closed', 'q BT (a) Tj ET Q q (lost', 'q BT (a) Tj ET Q q\nQ\n'],
  ])('cuts at %s after the last complete operator and closes what is open', (_, input, output) => {
    expect(salvage(input)).toBe(output);
  });

  it('names the damage and where it is', () => {
    const damageOf = (content: string): string | undefined =>
      salvageContent(Buffer.from(content, 'latin1'))?.damage;
    expect(damageOf('BT (kept) Tj ET (lost')).toBe('an unterminated string at byte 16');
    expect(damageOf('BT (kept) Tj ET [(a) [1] 2')).toBe(
      'an array or dictionary left open at the end at byte 16',
    );
  });

  it('refuses a stream with no complete operator before the damage', () => {
    expect(() => salvage('[(a) (b) Tj')).toThrow(Rejection);
    expect(() => salvage('  % comment\n<41 zz>')).toThrow(/before any complete operator/);
  });

  it('closes at most 256 openings, however deep hostile nesting goes', () => {
    const deep = `${'q '.repeat(100_000)}(lost`;
    const result = salvage(deep) ?? '';
    expect(result.match(/Q/g)).toHaveLength(256);
    expect(salvage(`BT ${'['.repeat(100_000)} Tj`)).toBe('BT\nET\n');
  });
});
