import { describe, expect, it } from 'vitest';

import { mayHoldRefusedField } from './content.ts';

const instruction = (text: string, element = 'w:instrText'): string =>
  `<w:r><${element} xml:space="preserve">${text}</${element}></w:r>`;

describe('mayHoldRefusedField (whether a part needs the first walk for its fields)', () => {
  it('is false when every instruction piece is kept on its own and cannot join the next', () => {
    expect(
      mayHoldRefusedField(instruction(' PAGE ') + instruction(' TOC \\o "1-3" \\h \\z \\u ')),
    ).toBe(false);
    expect(
      mayHoldRefusedField(instruction(' HYPERLINK \\l "_Toc1" ') + instruction(' = 1+2 ')),
    ).toBe(false);
    expect(mayHoldRefusedField(instruction(' HYPERLINK "https://example.com/" '))).toBe(false);
    expect(mayHoldRefusedField('<w:instrText/>' + instruction(''))).toBe(false);
  });

  it('is true for an instruction that is removed, also deleted or under another prefix', () => {
    expect(mayHoldRefusedField(instruction(' PAGE ') + instruction(' DDEAUTO cmd '))).toBe(true);
    expect(mayHoldRefusedField(instruction(' INCLUDETEXT "http://x/" ', 'w:delInstrText'))).toBe(
      true,
    );
    expect(mayHoldRefusedField(instruction(' MACROBUTTON Run text ', 'word:instrText'))).toBe(true);
    expect(mayHoldRefusedField(instruction(' HYPERLINK "file:///c:/x" '))).toBe(true);
  });

  it('is true when a piece cannot be judged alone', () => {
    // Split keyword: " PA" + "GE " is PAGE, but " INCLU" + "DETEXT " would not be.
    expect(mayHoldRefusedField(instruction(' PA') + instruction('GE '))).toBe(true);
    // A continuation piece without a keyword of its own.
    expect(mayHoldRefusedField(instruction(' PAGEREF _Toc1 ') + instruction('\\h '))).toBe(true);
    // A reference can spell anything; markup inside joins text around it.
    expect(mayHoldRefusedField(instruction(' &#68;DE cmd '))).toBe(true);
    expect(mayHoldRefusedField('<w:instrText> PAGE <!-- x --> </w:instrText>')).toBe(true);
    // Never closed.
    expect(mayHoldRefusedField('<w:instrText> PAGE ')).toBe(true);
  });
});
