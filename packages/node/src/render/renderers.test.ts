import { describe, expect, it } from 'vitest';

import {
  createRenderers,
  parseRendererSelection,
  RENDERER_NAMES,
  renderersByFormat,
} from './renderers.ts';

describe('parseRendererSelection()', () => {
  it('reads auto, or names in order with the built-in renderer last', () => {
    expect(parseRendererSelection('auto')).toBe('auto');
    expect(parseRendererSelection(' builtin ')).toEqual(['builtin']);
    expect(RENDERER_NAMES.at(-1)).toBe('builtin');
  });

  it.each([
    ['', 'comma-separated'],
    ['builtin,', 'comma-separated'],
    ['gotenberg', 'unknown renderer "gotenberg" (known: auto, chromium, libreoffice, builtin)'],
    ['builtin,builtin', 'named twice'],
  ])('refuses %j', (value, message) => {
    expect(() => parseRendererSelection(value)).toThrow(message);
  });
});

describe('createRenderers()', () => {
  it('leaves the built-in renderer to the engine, which always appends it', async () => {
    expect(await createRenderers({ selection: ['builtin'] })).toEqual([]);
  });

  it('refuses a name that is no renderer', async () => {
    await expect(createRenderers({ selection: ['gotenberg'] })).rejects.toThrow(TypeError);
  });
});

describe('renderersByFormat()', () => {
  it('names the first renderer listing each kind, and builtin for the rest', () => {
    expect(renderersByFormat([])).toEqual({
      ods: 'builtin',
      odp: 'builtin',
      svg: 'builtin',
      html: 'builtin',
      htm: 'builtin',
    });
    expect(
      renderersByFormat([
        { name: 'browser', kinds: ['html'] },
        { name: 'office', kinds: ['spreadsheet', 'presentation', 'html'] },
      ]),
    ).toEqual({ ods: 'office', odp: 'office', svg: 'builtin', html: 'browser', htm: 'browser' });
  });
});
