import {
  buildHtmlPage,
  buildSvgDrawing,
  EXECUTION_MARKER,
  markupVectors,
  svgEntityVectors,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { Rejection } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import { formatForFileName } from '../../formats.ts';
import type { DetectedFile } from '../types.ts';
import { findForbiddenHtml, findForbiddenSvg } from './check.ts';
import { sanitiseMarkup } from './handler.ts';
import { MAX_MARKUP_DEPTH, MAX_MARKUP_ELEMENTS, MAX_SVG_SIDE_PX } from './limits.ts';

const ORIGIN = 'http://127.0.0.1:9';

/** Vectors whose unclosed markup runs on to the end of the page, text and all, by design. */
const SWALLOWING_TEXT = new Set(['html/mathml-mglyph', 'html/svg-style-mxss']);

function file(bytes: Uint8Array, extension: 'html' | 'htm' | 'svg'): DetectedFile {
  const format = formatForFileName(`f.${extension}`);
  if (format === undefined) throw new Error(extension);
  return { bytes, fileName: `f.${extension}`, format };
}

function sanitise(bytes: Uint8Array, extension: 'html' | 'svg') {
  const findings = new FindingTally();
  const rendered = sanitiseMarkup(file(bytes, extension), findings);
  return { markup: rendered.markup, findings: findings.toArray() };
}

function rejectionOf(run: () => unknown): Rejection {
  try {
    run();
  } catch (error) {
    if (error instanceof Rejection) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

describe('the markup sanitiser', () => {
  describe.each(markupVectors(ORIGIN).map((vector) => [vector.name, vector] as const))(
    '%s',
    (_, vector) => {
      it('leaves no address, script or forbidden construct, and keeps the text', () => {
        const { markup } = sanitise(vector.bytes, vector.kind);
        expect(markup).not.toContain('127.0.0.1');
        expect(markup).not.toMatch(/<script|javascript:|vbscript:|\son\w+=/i);
        expect(markup).not.toContain(EXECUTION_MARKER);
        const check = vector.kind === 'svg' ? findForbiddenSvg : findForbiddenHtml;
        expect(check(markup)).toBeUndefined();
        if (!SWALLOWING_TEXT.has(vector.name)) expect(markup).toContain('Quarterly figures');
      });
    },
  );

  it('reports what it removed by kind', () => {
    const page = buildHtmlPage(
      `<script>x()</script><img src="${ORIGIN}/a.png" onerror="x()"><iframe src="${ORIGIN}/f"></iframe><a href="javascript:x()">a</a>`,
    );
    const kinds = Object.fromEntries(
      sanitise(Buffer.from(page), 'html').findings.map((finding) => [finding.kind, finding.count]),
    );
    expect(kinds).toEqual({
      script: 2,
      'event-handler': 1,
      'external-resource': 1,
      'embedded-object': 1,
    });
  });

  it('keeps inline raster images, links to the web and the page styles', () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    const page = buildHtmlPage(
      `<img src="${png}" alt="chart"><a href="https://example.com/q3">source</a><table><tr><td style="color:#c00;background:url(${png})">1</td></tr></table>`,
      '<style>@page { size: A5; margin: 1cm } td { border: 1px solid }</style>',
    );
    const { markup, findings } = sanitise(Buffer.from(page), 'html');
    expect(findings).toEqual([]);
    expect(markup).toContain(`src="${png}"`);
    expect(markup).toContain('href="https://example.com/q3"');
    expect(markup).toContain('@page { size: A5; margin: 1cm }');
    expect(markup).toContain(`background:url(${png})`);
    expect(markup.startsWith('<!DOCTYPE html>')).toBe(true);
  });

  it('passes the check before release with CSS that only names an active word', () => {
    const page = buildHtmlPage(
      '<p class="behavior-note">x</p>',
      '<style>.behavior-note { color: #c00 } .src-image { margin: 0 }</style>',
    );
    const { markup } = sanitise(Buffer.from(page), 'html');
    expect(markup).toContain('.behavior-note { color: #c00 }');
    expect(findForbiddenHtml(markup)).toBeUndefined();
  });

  it('keeps an SVG drawing, written at its size in pixels', () => {
    const svg = buildSvgDrawing(
      '<defs><linearGradient id="g"><stop offset="0" stop-color="red"/></linearGradient></defs><circle cx="50" cy="50" r="20" fill="url(#g)"/><use href="#g"/>',
    ).replace('width="400" height="200"', 'width="4in" height="50mm"');
    const { markup, findings } = sanitise(Buffer.from(svg), 'svg');
    expect(findings).toEqual([]);
    expect(markup).toContain('<linearGradient id="g">');
    expect(markup).toContain('fill="url(#g)"');
    expect(markup).toContain('href="#g"');
    expect(markup).toMatch(
      /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]* width="384" height="188\.97/,
    );
  });

  it('draws an <svg> root in a foreign default namespace as the empty page a browser shows', () => {
    const svg =
      '<svg xmlns="http://www.w3.org/1337/svg" width="128" viewBox="0 0 64 32"><script/><rect width="9" height="9"/></svg>';
    const { markup } = sanitise(Buffer.from(svg), 'svg');
    expect(markup).toBe(
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="128" height="64" viewBox="0 0 64 32"></svg>',
    );
    expect(findForbiddenSvg(markup)).toBeUndefined();
  });

  it('refuses an SVG whose DOCTYPE declares entities, never expanding them', () => {
    for (const vector of svgEntityVectors(ORIGIN)) {
      const rejection = rejectionOf(() => sanitise(vector.bytes, 'svg'));
      expect(rejection.reason, vector.name).toBe('invalid_file');
      expect(rejection.message).toMatch(/internal subset|DOCTYPE|entity/i);
    }
  });

  it('decodes per the HTML rules: BOM, then <meta charset>, never UTF-7', () => {
    const latin = Buffer.concat([
      Buffer.from('<html><head><meta charset="windows-1252"></head><body>caf'),
      Buffer.from([0xe9]),
      Buffer.from('</body></html>'),
    ]);
    expect(sanitise(latin, 'html').markup).toContain('café');
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from('<p>naïve</p>', 'utf16le'),
    ]);
    expect(sanitise(utf16, 'html').markup).toContain('<p>naïve</p>');
    const utf7 = Buffer.from(
      '<html><head><meta charset="utf-7"></head><body>+ADw-script+AD4-x()+ADw-/script+AD4-</body></html>',
    );
    const { markup } = sanitise(utf7, 'html');
    expect(markup).toContain('+ADw-script+AD4-');
    expect(markup).toContain('<meta charset="utf-8">');
  });

  describe('budgets before rendering', () => {
    it('refuses more elements than the limit as file_too_large', () => {
      const page = buildHtmlPage('<b>x</b>'.repeat(MAX_MARKUP_ELEMENTS + 1));
      expect(rejectionOf(() => sanitise(Buffer.from(page), 'html')).reason).toBe('file_too_large');
    });

    it('refuses HTML and SVG nested deeper than the limit as file_too_large', () => {
      const depth = MAX_MARKUP_DEPTH + 5;
      const page = buildHtmlPage('<div>'.repeat(depth) + 'x' + '</div>'.repeat(depth));
      expect(rejectionOf(() => sanitise(Buffer.from(page), 'html')).reason).toBe('file_too_large');
      const svg = buildSvgDrawing('<g>'.repeat(depth) + '</g>'.repeat(depth));
      expect(rejectionOf(() => sanitise(Buffer.from(svg), 'svg')).reason).toBe('file_too_large');
    });

    it('refuses an SVG drawn larger than the largest PDF page as file_too_large', () => {
      const svg = buildSvgDrawing('').replace('width="400"', `width="${MAX_SVG_SIDE_PX + 1}"`);
      const rejection = rejectionOf(() => sanitise(Buffer.from(svg), 'svg'));
      expect(rejection.reason).toBe('file_too_large');
      expect(rejection.message).toContain(`${MAX_SVG_SIDE_PX} px`);
    });
  });
});
