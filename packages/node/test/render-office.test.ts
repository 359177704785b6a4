/**
 * Spreadsheets and presentations through the v1 API over loopback (`startServer`, a real worker
 * process keeping LibreOffice warm): completed, `converted`, `outputFormat: "pdf"`, downloaded
 * under a `.pdf` name, and the local server the fixtures point at never contacted.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { buildOdp, buildOds, buildZip } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { multipart } from './conformance/_harness.ts';
import type { Client, Envelope } from './conformance/_harness.ts';
import { startLoopbackApi } from './_loopback.ts';
import type { LoopbackApi } from './_loopback.ts';

/** The real engine, with the renderers this machine has, warm across documents. */
const OFFICE_WORKER = new URL('./fixtures/office-worker.ts', import.meta.url);

describe('ods and odp through the API, returned as PDF', () => {
  let api: LoopbackApi;
  let client: Client;
  let key: string;
  let target: Server;
  let base: string;
  const requests: string[] = [];

  beforeAll(async () => {
    target = createServer((request, response) => {
      requests.push(request.url ?? '');
      response.end('x');
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const address = target.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${address.port}`;
    api = await startLoopbackApi('render-office', OFFICE_WORKER);
    ({ client, key } = api);
  });
  afterAll(async () => {
    await api.close();
    await new Promise((resolve) => target.close(resolve));
  });

  /** Submits and waits; then downloads the cleaned file, returning it and its name. */
  async function convert(
    name: string,
    bytes: Uint8Array,
  ): Promise<{ envelope: Envelope; fileName: string; text: string }> {
    const response = await client.api('/v1/documents?wait=true', {
      method: 'POST',
      headers: { 'X-Api-Key': key },
      body: multipart({ name, bytes }),
    });
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as Envelope;
    const download = await client.api(`/v1/documents/${envelope.id}/download`, {
      headers: { 'X-Api-Key': key },
    });
    expect(download.status).toBe(302);
    const link = download.headers.get('Location') ?? '';
    const file = await client.raw(link, { headers: { 'X-Api-Key': key } });
    const path = join(api.dataDir, `${envelope.id}.bin`);
    await writeFile(path, new Uint8Array(await file.arrayBuffer()));
    execFileSync('qpdf', ['--check', path], { stdio: 'ignore' });
    return {
      envelope,
      fileName: new URL(link).searchParams.get('filename') ?? '',
      text: execFileSync('pdftotext', [path, '-'], { encoding: 'utf8' }),
    };
  }

  it('a spreadsheet that fetches, links and runs macros completes as a PDF of its sheets', async () => {
    const ods = await buildOds({
      sheets: [
        { name: 'Prices', rows: [['Item', 'Price']] },
        { name: 'Terms', rows: [['net 30 days']] },
      ],
      macros: `${base}/macro`,
      webservice: `${base}/webservice`,
      dde: `${base}/dde.ods`,
      linkedSheet: `${base}/linked.ods`,
      linkedImage: `${base}/picture.png`,
    });
    const { envelope, fileName, text } = await convert('prices.ods', ods);
    expect(envelope).toMatchObject({
      status: 'completed',
      modifications: ['rebuilt', 'converted'],
      outputFormat: 'pdf',
    });
    expect(envelope.findings?.map((finding) => finding.kind)).toEqual(
      expect.arrayContaining(['odf-macro', 'dde-link', 'external-relationship']),
    );
    expect(fileName).toBe('prices.pdf');
    for (const expected of ['Item', 'Price', 'net 30 days', 'cached quote', 'linked copy']) {
      expect(text).toContain(expected);
    }
    expect(requests).toEqual([]);
  });

  it('a presentation with linked media completes as a PDF of its slides', async () => {
    const odp = await buildOdp({
      slides: [{ title: 'Launch plan' }, { title: 'Next steps', texts: ['ship it'] }],
      linkedMedia: base,
      sounds: base,
    });
    const { envelope, fileName, text } = await convert('plan.odp', odp);
    expect(envelope).toMatchObject({
      status: 'completed',
      modifications: ['rebuilt', 'converted'],
      outputFormat: 'pdf',
    });
    expect(fileName).toBe('plan.pdf');
    for (const expected of ['Launch plan', 'Next steps', 'ship it']) {
      expect(text).toContain(expected);
    }
    expect(requests).toEqual([]);
  });

  it('a spreadsheet inside a zip is listed under its .pdf name', async () => {
    const zip = await buildZip([
      {
        name: 'reports/q1.ods',
        data: await buildOds({ sheets: [{ name: 'Q1', rows: [['q1 total']] }] }),
      },
    ]);
    const response = await client.api('/v1/documents?wait=true', {
      method: 'POST',
      headers: { 'X-Api-Key': key },
      body: multipart({ name: 'reports.zip', bytes: zip }),
    });
    const envelope = (await response.json()) as Envelope;
    expect(envelope.status).toBe('completed');
    const download = await client.api(`/v1/documents/${envelope.id}/download`, {
      headers: { 'X-Api-Key': key },
    });
    const file = await client.raw(download.headers.get('Location') ?? '', {
      headers: { 'X-Api-Key': key },
    });
    const path = join(api.dataDir, 'reports.zip');
    await writeFile(path, new Uint8Array(await file.arrayBuffer()));
    expect(execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' }).trim().split('\n')).toEqual([
      'reports/q1.pdf',
    ]);
    const text = execFileSync('sh', ['-c', `unzip -p '${path}' reports/q1.pdf | pdftotext - -`], {
      encoding: 'utf8',
    });
    expect(text).toContain('q1 total');
  });
});
