/**
 * The LibreOffice pool drawing real disarmed spreadsheets and presentations: one warm pool for the
 * file, a local HTTP server every hostile fixture points at, and qpdf, pdftotext and pdfinfo as
 * judges of what comes out.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { disarm, isDisarmError } from '@disarm/core';
import type { CleanedOutcome, Outcome, Renderer } from '@disarm/core';
import { buildOdp, buildOds } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createLibreOfficeRenderer } from '../src/index.ts';

const run = promisify(execFile);

let dir: string;
let renderer: Renderer;
let server: Server;
let base: string;
/** Every request the local server received. */
const requests: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'libreoffice-test-'));
  renderer = createLibreOfficeRenderer({ poolSize: 1, tempDir: dir, renderTimeoutMs: 30_000 });
  server = createServer((request, response) => {
    requests.push(request.url ?? '');
    response.end('<price>1</price>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  base = `http://127.0.0.1:${address.port}`;
});

afterAll(async () => {
  await renderer.close();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

function cleaned(outcome: Outcome): CleanedOutcome {
  if (outcome.status !== 'cleaned') throw new Error(`${outcome.reason}: ${outcome.detail}`);
  return outcome;
}

/** The PDF judged by poppler and qpdf: its text, page count and what its objects hold. */
async function judged(bytes: Uint8Array): Promise<{ text: string; pages: number; json: string }> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(path, bytes);
  // qpdf --check exits non-zero on any error or warning.
  execFileSync('qpdf', ['--check', path], { stdio: 'ignore' });
  const text = execFileSync('pdftotext', ['-layout', path, '-'], { encoding: 'utf8' });
  const info = execFileSync('pdfinfo', [path], { encoding: 'utf8' });
  const json = execFileSync('qpdf', ['--json', path], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  return { text, pages: Number(/Pages:\s+(\d+)/.exec(info)?.[1]), json };
}

/** No JavaScript, launch, attachment, or action other than an http(s) link. */
function expectInert(json: string): void {
  expect(json).not.toMatch(/\/JavaScript|"\/JS"|\/Launch|\/EmbeddedFile|\/SubmitForm|\/GoToR/);
  for (const [, action] of json.matchAll(/"\/S": "\/(\w+)"/g)) expect(action).toBe('URI');
  for (const [, uri] of json.matchAll(/"\/URI": "u:([^"]*)"/g)) expect(uri).toMatch(/^https?:/);
}

const render = async (bytes: Uint8Array, fileName: string): Promise<CleanedOutcome> =>
  cleaned(await disarm({ bytes, fileName }, { renderers: [renderer] }));

describe('the LibreOffice renderer', () => {
  it('reports itself ready, with its version, pool and network namespace', async () => {
    const status = await renderer.status();
    expect(status).toMatchObject({
      name: 'libreoffice',
      kinds: ['spreadsheet', 'presentation'],
      ready: true,
      version: expect.stringMatching(/^\d+\.\d+/) as unknown,
    });
    // This machine runs the tests as root: soffice gets a namespace of its own.
    expect(status.detail).toMatch(
      /pool of 1 \((started on the first document|warm)\); network: own namespace/,
    );
  });

  it('prints every sheet whole, a print range notwithstanding, and every slide', async () => {
    const ods = await buildOds({
      sheets: [
        {
          name: 'Budget',
          rows: [
            ['Quarter', 'Sales'],
            ['Q1', 'beyond the range'],
          ],
          printRangeA1: true,
        },
        { name: 'Notes', rows: [['second sheet text']] },
        { name: 'Plan', rows: [['third sheet text']] },
      ],
    });
    const sheets = await judged((await render(ods, 'budget.ods')).bytes);
    for (const text of [
      'Quarter',
      'Sales',
      'beyond the range',
      'second sheet text',
      'third sheet text',
    ]) {
      expect(sheets.text).toContain(text);
    }
    expect(sheets.pages).toBe(3);
    const odp = await buildOdp({
      slides: [
        { title: 'Opening slide', texts: ['first point'] },
        { title: 'Middle slide' },
        { title: 'Closing slide', texts: ['last point'] },
      ],
    });
    const outcome = await render(odp, 'deck.odp');
    expect(outcome.fileName).toBe('deck.pdf');
    const slides = await judged(outcome.bytes);
    for (const text of [
      'Opening slide',
      'first point',
      'Middle slide',
      'Closing slide',
      'last point',
    ]) {
      expect(slides.text).toContain(text);
    }
    expect(slides.pages).toBe(3);
  });

  it('never reaches the network and runs no macro, whatever the spreadsheet asks', async () => {
    const ods = await buildOds({
      sheets: [{ name: 'Prices', rows: [['Item', 'Price']] }],
      macros: `${base}/macro`,
      webservice: `${base}/webservice`,
      dde: `${base}/dde.ods`,
      externalReference: `${base}/external.ods`,
      linkedSheet: `${base}/linked.ods`,
      linkedRange: `${base}/range.html`,
      linkedImage: `${base}/picture.png`,
      hyperlinks: ['https://example.com/report', 'file:///etc/passwd'],
    });
    const { text, json } = await judged((await render(ods, 'prices.ods')).bytes);
    expect(requests).toEqual([]);
    expect(text).not.toContain('PWNED');
    for (const cached of [
      'cached quote',
      'cached price',
      'dde cached',
      'external cached',
      'linked copy',
    ]) {
      expect(text).toContain(cached);
    }
    expectInert(json);
    expect(json).toContain('u:https://example.com/report');
  });

  it('never reaches the network and runs no macro or program, whatever the presentation asks', async () => {
    const odp = await buildOdp({
      slides: [{ title: 'Roadmap' }],
      macros: `${base}/macro`,
      linkedMedia: base,
      sounds: base,
      hyperlinks: ['https://example.com/deck', 'file:///etc/passwd'],
    });
    const { text, json } = await judged((await render(odp, 'roadmap.odp')).bytes);
    expect(requests).toEqual([]);
    expect(text).toContain('Roadmap');
    expectInert(json);
    expect(json).toContain('u:https://example.com/deck');
  });

  it('draws even an undisarmed hostile spreadsheet without reaching the server: the namespace and profile hold alone', async () => {
    const raw = await buildOds({
      macros: `${base}/raw-macro`,
      webservice: `${base}/raw-webservice`,
      linkedImage: `${base}/raw-picture.png`,
      linkedSheet: `${base}/raw-linked.ods`,
    });
    const pdf = await renderer.render(
      { kind: 'spreadsheet', bytes: raw },
      { signal: new AbortController().signal, timeoutMs: 60_000 },
    );
    const { text } = await judged(pdf);
    expect(text).toContain('Hello');
    expect(text).not.toContain('PWNED');
    expect(requests).toEqual([]);
  });

  it('the same spreadsheet opened as it is by LibreOffice reaches the server (the fixture is live)', async () => {
    const ods = await buildOds({ linkedImage: `${base}/control.png` });
    const path = join(dir, 'control.ods');
    await writeFile(path, ods);
    // Asynchronously: the server answers in this process while soffice runs.
    await run('soffice', [
      `-env:UserInstallation=file://${join(dir, 'control-profile')}`,
      '--headless',
      '--convert-to',
      'pdf',
      '--outdir',
      dir,
      path,
    ]);
    expect(requests).toContain('/control.png');
    requests.length = 0;
  });

  it('stops a document past its time with ERR_TIMEOUT and draws the next one with a fresh instance', async () => {
    const ods = await buildOds({ sheets: [{ name: 'S', rows: [['after the timeout']] }] });
    const input = { kind: 'spreadsheet', bytes: ods } as const;
    const error: unknown = await renderer
      .render(input, { signal: new AbortController().signal, timeoutMs: 1 })
      .catch((caught: unknown) => caught);
    expect(isDisarmError(error, 'ERR_TIMEOUT')).toBe(true);
    const { text } = await judged((await render(ods, 'next.ods')).bytes);
    expect(text).toContain('after the timeout');
  });

  it('replaces an instance that was killed, and the next document is drawn', async () => {
    await render(await buildOds(), 'warm.ods');
    // The soffice processes of this pool: their profile lies under this file's folder.
    const pids = execFileSync('pgrep', ['-f', `UserInstallation=file://${dir}`], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .map(Number);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const ods = await buildOds({ sheets: [{ name: 'S', rows: [['after the crash']] }] });
    // The render that finds its instance dead fails as a fault or draws on the replacement.
    const first = await disarm(
      { bytes: ods, fileName: 'crash.ods' },
      { renderers: [renderer] },
    ).catch((caught: unknown) => caught);
    if (!(first instanceof Error)) expect(cleaned(first as Outcome).fileName).toBe('crash.pdf');
    const { text } = await judged((await render(ods, 'again.ods')).bytes);
    expect(text).toContain('after the crash');
  });

  it('fails as a fault on bytes LibreOffice cannot open, and stays usable', async () => {
    const error: unknown = await renderer
      .render(
        { kind: 'presentation', bytes: new Uint8Array([0x50, 0x4b, 3, 4, 0, 0]) },
        { signal: new AbortController().signal, timeoutMs: 60_000 },
      )
      .catch((caught: unknown) => caught);
    expect(isDisarmError(error, 'ERR_INTERNAL')).toBe(true);
    const { text } = await judged((await render(await buildOds(), 'after.ods')).bytes);
    expect(text).toContain('Hello');
  });
});

/** Processes whose command line names `folder` (soffice names its profile there). */
function processesUsing(folder: string): { pid: number; args: string[] }[] {
  const found: { pid: number; args: string[] }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (args.some((arg) => arg.includes(folder))) found.push({ pid: Number(name), args });
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/**
 * The pipe sockets soffice made for a profile folder, worked out from its command line the way
 * LibreOffice names them (the UNO pipe; the single-instance pipe: MD5 of the profile URL in
 * UTF-16, bytes in hex without leading zeros).
 */
function socketsOf(args: readonly string[]): string[] {
  const uid = process.getuid?.() ?? 0;
  const profile = args.find((arg) => arg.startsWith('-env:UserInstallation='))?.split('=')[1];
  const pipe = /--accept=pipe,name=([^;]+);/.exec(args.join(' '))?.[1];
  if (profile === undefined || pipe === undefined) return [];
  const digest = createHash('md5').update(Buffer.from(profile, 'utf16le')).digest();
  const single = `SingleOfficeIPC_${[...digest].map((byte) => byte.toString(16)).join('')}`;
  return [pipe, single].map((name) => `/tmp/OSL_PIPE_${uid}_${name}`);
}

/** Resolves once no process names `folder` any more (the test's timeout bounds the wait). */
async function untilNoProcessUses(folder: string): Promise<void> {
  while (processesUsing(folder).length > 0) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the LibreOffice renderer leaves nothing behind', () => {
  it('close(): no soffice process, no profile folder, no pipe socket', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'libreoffice-close-'));
    const own = createLibreOfficeRenderer({ poolSize: 1, tempDir: folder });
    try {
      await disarm({ bytes: await buildOds(), fileName: 'a.ods' }, { renderers: [own] });
      const office = processesUsing(folder).find((found) => socketsOf(found.args).length > 0);
      const sockets = socketsOf(office?.args ?? []);
      expect(sockets.every((socket) => existsSync(socket))).toBe(true);
      await own.close();
      await untilNoProcessUses(folder);
      expect(readdirSync(folder)).toEqual([]);
      expect(sockets.filter((socket) => existsSync(socket))).toEqual([]);
    } finally {
      await own.close();
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('a process that drives it and dies by SIGKILL takes soffice, its folder and sockets along', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'libreoffice-orphan-'));
    const script = `
      import { disarm } from '@disarm/core';
      import { buildOds } from '@disarm/fixtures';
      import { createLibreOfficeRenderer } from ${JSON.stringify(pathToFileURL(fileURLToPath(new URL('../src/index.ts', import.meta.url))).href)};
      const renderer = createLibreOfficeRenderer({ poolSize: 1, tempDir: ${JSON.stringify(folder)} });
      const outcome = await disarm({ bytes: await buildOds(), fileName: 'a.ods' }, { renderers: [renderer] });
      process.stdout.write(outcome.status + '\\n');
      setInterval(() => undefined, 60_000);
    `;
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
    const child = spawn(
      process.execPath,
      ['--import', tsx, '--conditions=@disarm/source', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      const status = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8').once('data', (chunk: string) => {
          resolve(chunk.trim());
        });
        child.once('exit', (code) => {
          reject(new Error(`the driver exited early (${code})`));
        });
      });
      expect(status).toBe('cleaned');
      const office = processesUsing(folder).find((found) => socketsOf(found.args).length > 0);
      const sockets = socketsOf(office?.args ?? []);
      expect(sockets.length).toBe(2);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      // Nobody closes the renderer: its guardian notices its driver is gone.
      await untilNoProcessUses(folder);
      expect(readdirSync(folder)).toEqual([]);
      expect(sockets.filter((socket) => existsSync(socket))).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await rm(folder, { recursive: true, force: true });
    }
  });
});
