import { buildHtmlPage, buildImage, buildSvgDrawing, buildTextPdf } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import type { RenderInput, Renderer } from '../../render/renderer.ts';
import { cleaned, findingsOf } from '../../test-support.ts';
import { MAX_INLINE_IMAGES } from './images.ts';

const PAYLOAD = '<script>alert(1)</script>';

/** A renderer that keeps what it was given and draws one fixed page. */
function capturing(): Renderer & { readonly given: RenderInput[] } {
  const given: RenderInput[] = [];
  return {
    name: 'capturing',
    kinds: ['html', 'svg'],
    given,
    render: (input) => {
      given.push(input);
      return Promise.resolve(buildTextPdf({ pages: ['Figures'] }));
    },
    status: () => Promise.resolve({ name: 'capturing', kinds: ['html', 'svg'], ready: true }),
    close: () => Promise.resolve(),
  };
}

function markupOf(renderer: ReturnType<typeof capturing>): string {
  const input = renderer.given.at(-1);
  if (input === undefined || !('markup' in input)) throw new Error('nothing rendered');
  return input.markup;
}

/** The bytes of every inline image of `markup`. */
function inlineImages(markup: string): Buffer[] {
  return [...markup.matchAll(/data:image\/\w+;base64,([A-Za-z0-9+/=]+)/g)].map((match) =>
    Buffer.from(match[1] ?? '', 'base64'),
  );
}

describe('inline images of html and svg', () => {
  it('reach the renderer rebuilt, without their metadata', async () => {
    const jpeg = await buildImage('jpeg', { exif: { Artist: PAYLOAD } });
    const png = await buildImage('png', { width: 16, height: 16 });
    const page = buildHtmlPage(
      `<img src="data:image/jpeg;base64,${jpeg.toString('base64')}"><p style="background:url('data:image/png;base64,${png.toString('base64')}')">x</p>`,
    );
    const renderer = capturing();
    const outcome = cleaned(
      await disarm({ bytes: Buffer.from(page), fileName: 'p.html' }, { renderers: [renderer] }),
    );
    expect(findingsOf(outcome)).toMatchObject({ 'image-metadata': 1 });
    const images = inlineImages(markupOf(renderer));
    expect(images).toHaveLength(2);
    expect(images.some((image) => image.includes(Buffer.from(PAYLOAD)))).toBe(false);
    expect(images.some((image) => image.equals(jpeg))).toBe(false);
  });

  it('leave out an image that is no image, as damaged content', async () => {
    const svg = buildSvgDrawing(
      `<image width="9" height="9" href="data:image/png;base64,${Buffer.from(PAYLOAD).toString('base64')}"/>`,
    );
    const renderer = capturing();
    const outcome = cleaned(
      await disarm({ bytes: Buffer.from(svg), fileName: 'd.svg' }, { renderers: [renderer] }),
    );
    expect(findingsOf(outcome)).toMatchObject({ 'damaged-content': 1 });
    const markup = markupOf(renderer);
    const [nothing] = inlineImages(markup);
    expect(inlineImages(markup)).toHaveLength(1);
    // The one-pixel transparent GIF that stands in for it.
    expect(nothing?.subarray(0, 6).toString('latin1')).toBe('GIF89a');
    expect(nothing?.length).toBeLessThan(64);
    expect(markup).not.toContain(Buffer.from(PAYLOAD).toString('base64'));
  });

  it('refuse more than the limit as file_too_large', async () => {
    const images = Array.from(
      { length: MAX_INLINE_IMAGES + 1 },
      (_, index) => `<img src="data:image/gif;base64,R0lGOD${index.toString(36)}">`,
    );
    const outcome = await disarm(
      { bytes: Buffer.from(buildHtmlPage(images.join(''))), fileName: 'p.html' },
      { renderers: [capturing()] },
    );
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
  });
});
