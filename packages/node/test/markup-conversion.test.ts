/**
 * html, htm and svg through the real HTTP API and the real worker pool, whose workers keep
 * headless Chromium warm: each comes back converted to a PDF, the envelope says so, the download
 * is named `.pdf`, and an svg inside a zip is listed under its `.pdf` name.
 */
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { buildHtmlPage, buildSvgDrawing, buildZip, EXECUTION_MARKER } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { multipart } from './conformance/_harness.ts';
import type { Client, Envelope } from './conformance/_harness.ts';
import { startLoopbackApi } from './_loopback.ts';
import type { LoopbackApi } from './_loopback.ts';

describe('html, htm and svg returned as PDF over the API', () => {
  let api: LoopbackApi;
  let client: Client;
  let key: string;

  beforeAll(async () => {
    api = await startLoopbackApi('markup');
    ({ client, key } = api);
  });
  afterAll(async () => {
    await api.close();
  });

  /** Submits in sync mode and downloads the result: the envelope, the file name, the bytes. */
  async function convert(
    name: string,
    bytes: Uint8Array,
  ): Promise<{ envelope: Envelope; fileName: string; path: string }> {
    const response = await client.api('/v1/documents?wait=true', {
      method: 'POST',
      headers: { 'X-Api-Key': key },
      body: multipart({ name, bytes }),
    });
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as Envelope;
    const redirect = await client.api(`/v1/documents/${envelope.id}/download`, {
      headers: { 'X-Api-Key': key },
    });
    const file = await client.raw(redirect.headers.get('Location') ?? '', {
      headers: { 'X-Api-Key': key },
    });
    const fileName =
      /filename="([^"]+)"/.exec(file.headers.get('Content-Disposition') ?? '')?.[1] ?? '';
    const path = join(api.dataDir, `${envelope.id}-${fileName}`);
    await writeFile(path, new Uint8Array(await file.arrayBuffer()));
    return { envelope, fileName, path };
  }

  it.each([
    ['report.html', buildHtmlPage('<h1>Annual report</h1><script>document.write("x")</script>')],
    ['report.htm', buildHtmlPage('<h1>Annual report</h1>')],
    ['drawing.svg', buildSvgDrawing('<script>alert(1)</script>')],
  ])('%s: completed, converted to pdf, downloaded as .pdf', async (name, markup) => {
    const { envelope, fileName, path } = await convert(name, new TextEncoder().encode(markup));
    expect(envelope).toMatchObject({
      status: 'completed',
      outcome: 'cleaned',
      modifications: expect.arrayContaining(['rebuilt', 'converted']) as unknown,
      outputFormat: 'pdf',
    });
    expect(fileName).toBe(name.replace(/\.\w+$/, '.pdf'));
    const text = execFileSync('pdftotext', [path, '-']).toString();
    expect(text).toMatch(/Annual report|Quarterly figures/);
    expect(text).not.toContain(EXECUTION_MARKER);
  });

  it('an svg inside a zip comes back as a PDF member under its .pdf name', async () => {
    const zip = await buildZip([
      { name: 'art/drawing.svg', data: Buffer.from(buildSvgDrawing('')) },
      { name: 'notes/page.html', data: Buffer.from(buildHtmlPage('<p>notes</p>')) },
    ]);
    const { envelope, fileName, path } = await convert('bundle.zip', new Uint8Array(zip));
    expect(envelope).toMatchObject({ status: 'completed', outcome: 'cleaned' });
    expect(fileName).toBe('bundle.zip');
    const listing = execFileSync('unzip', ['-Z1', path]).toString().trim().split('\n');
    expect(listing.filter((entry) => !entry.endsWith('/'))).toEqual([
      'art/drawing.pdf',
      'notes/page.pdf',
    ]);
    const member = execFileSync('unzip', ['-p', path, 'art/drawing.pdf']);
    expect(member.subarray(0, 5).toString('latin1')).toBe('%PDF-');
  });
});
