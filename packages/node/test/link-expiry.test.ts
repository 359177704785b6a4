/**
 * A signed link works up to the instant the contract gives it, to the millisecond: the 24-hour
 * window of a cleaned file, and the grace after the first download of a delete-after-download
 * document. Links carry whole seconds, so the instant is rounded up, never down. The server's
 * manual clock (test mode) is set to a fraction of a second so that rounding down would show.
 */
import { randomBytes } from 'node:crypto';

import { buildImage } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hashAdminToken, startServer } from '../src/index.ts';
import type { RunningDisarm } from '../src/index.ts';
import { tempDir } from './_fixtures.ts';

const ADMIN_TOKEN = randomBytes(32).toString('hex');
const GRACE_SECONDS = 60;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Where in its second the clock is put: any fraction a floor would lose. */
const FRACTION_MS = 300;

let server: RunningDisarm;
let key: string;

beforeAll(async () => {
  server = await startServer({
    dataDir: await tempDir(),
    port: 0,
    storagePort: 0,
    workers: 1,
    demo: false,
    testMode: true,
    graceSeconds: GRACE_SECONDS,
    adminTokenHashes: [hashAdminToken(ADMIN_TOKEN)],
  });
  const admin = (path: string, body: unknown): Promise<Response> =>
    fetch(`${server.apiUrl}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const created = await admin('/v1/admin/organisations', { name: 'Links', plan: 'internal' });
  const { id } = (await created.json()) as { id: string };
  ({ key } = (await (
    await admin(`/v1/admin/organisations/${id}/keys`, { name: 'links' })
  ).json()) as {
    key: string;
  });
});

afterAll(async () => {
  await server.close();
});

/** Moves the manual clock to {@link FRACTION_MS} into a second; returns that instant. */
async function toFractionOfSecond(): Promise<number> {
  const now = server.clock.now().getTime();
  const step = (FRACTION_MS - (now % 1000) + 1000) % 1000;
  return (await server.advanceClock(step)).getTime();
}

async function submit(query: string): Promise<{ id: string; downloadUrl?: string }> {
  const response = await fetch(`${server.apiUrl}/v1/documents?filename=a.png&wait=true${query}`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(await buildImage('png')),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { id: string; downloadUrl?: string };
}

describe('signed download links', () => {
  it('work until the last millisecond of the 24-hour window', async () => {
    const completedAt = await toFractionOfSecond();
    const { downloadUrl } = await submit('');
    await server.advanceClock(DAY_MS - 1);
    expect(server.clock.now().getTime()).toBe(completedAt + DAY_MS - 1);
    expect((await fetch(downloadUrl ?? '')).status).toBe(200);
    // Rounding up gives under a second more, never a second beyond the window.
    await server.advanceClock(1000);
    expect((await fetch(downloadUrl ?? '')).status).not.toBe(200);
  });

  it('of a delete-after-download document work until the last millisecond of the grace', async () => {
    const { id } = await submit('&deleteAfterDownload=true');
    const firstDownloadAt = await toFractionOfSecond();
    const redirect = await fetch(`${server.apiUrl}/v1/documents/${id}/download`, {
      headers: { 'X-Api-Key': key },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    const link = redirect.headers.get('Location') ?? '';
    await server.advanceClock(GRACE_SECONDS * 1000 - 1);
    expect(server.clock.now().getTime()).toBe(firstDownloadAt + GRACE_SECONDS * 1000 - 1);
    expect((await fetch(link)).status).toBe(200);
    // Once the grace is over the sweep deletes the file: the link serves nothing any more.
    await server.advanceClock(1000);
    expect((await fetch(link)).status).not.toBe(200);
  });
});
