/**
 * `reasonDetail` over real HTTP (loopback, `startServer`): rejections carry the engine's precise
 * sentence, failures a fixed one that never shows internals; sync and async; every response is
 * validated against the served OpenAPI document.
 */

import { buildImage, buildRawZip, buildZip, EICAR_TEST_FILE } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { multipart, waitForTerminal } from './conformance/_harness.ts';
import type { Client, Envelope } from './conformance/_harness.ts';
import { startLoopbackApi } from './_loopback.ts';
import type { LoopbackApi } from './_loopback.ts';

/** Runs the real engine, but crashes the worker on names starting with `exit`. */
const MISBEHAVING_WORKER = new URL('./fixtures/misbehaving-worker.ts', import.meta.url);

describe('reasonDetail: why a document was rejected or failed', () => {
  let api: LoopbackApi;
  let client: Client;
  let key: string;
  let png: Uint8Array<ArrayBuffer>;

  beforeAll(async () => {
    api = await startLoopbackApi('reason-detail', MISBEHAVING_WORKER);
    ({ client, key } = api);
    png = new Uint8Array(await buildImage('png', { width: 8, height: 8 }));
  });
  afterAll(async () => {
    await api.close();
  });

  async function submit(name: string, bytes: Uint8Array, query = ''): Promise<Response> {
    return client.api(`/v1/documents${query}`, {
      method: 'POST',
      headers: { 'X-Api-Key': key },
      body: multipart({ name, bytes }),
    });
  }

  it('sync: EICAR inside a zip is threat_detected, and the detail names it', async () => {
    const zip = await buildZip([{ name: 'docs/eicar.com', data: EICAR_TEST_FILE }]);
    const response = await submit('bundle.zip', zip, '?wait=true');
    expect(response.status).toBe(200);
    const envelope = (await response.json()) as Envelope;
    expect(envelope).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
      reasonDetail: expect.stringContaining('EICAR-Test-File') as unknown,
    });
    // The same sentence on every later read.
    const read = await client.api(`/v1/documents/${envelope.id}`, {
      headers: { 'X-Api-Key': key },
    });
    expect(((await read.json()) as Envelope).reasonDetail).toBe(envelope.reasonDetail);
  });

  it('async: a zip-slip member is policy_violation, and the detail names the member', async () => {
    const zip = buildRawZip([{ name: '../../etc/cron.d/evil.png', data: png }]);
    const response = await submit('bundle.zip', zip);
    expect(response.status).toBe(202);
    const accepted = (await response.json()) as Envelope;
    expect(accepted.reasonDetail).toBeUndefined();
    const envelope = await waitForTerminal(client, key, accepted.id);
    expect(envelope).toMatchObject({ status: 'rejected', reason: 'policy_violation' });
    expect(envelope.reasonDetail).toBe(
      'Member "../../etc/cron.d/evil.png" escapes the archive with a ".." path segment.',
    );
  });

  it('sync and async: a failure shows its reason’s fixed sentence, never what happened inside', async () => {
    const sync = (await (await submit('exit-now.png', png, '?wait=true')).json()) as Envelope;
    const queued = (await (await submit('exit-later.png', png)).json()) as Envelope;
    const async = await waitForTerminal(client, key, queued.id);
    for (const envelope of [sync, async]) {
      expect(envelope).toMatchObject({ status: 'failed', reason: 'internal_error' });
      expect(envelope.reasonDetail).toBe(
        'The service failed while processing this file; the charge was credited back. Submit it again; if it keeps failing, contact the operator.',
      );
      expect(envelope.reasonDetail).not.toMatch(/exit|worker|code 3|\/|signal/i);
    }
  });

  it('a completed document has no reasonDetail', async () => {
    const envelope = (await (await submit('photo.png', png, '?wait=true')).json()) as Envelope;
    expect(envelope.status).toBe('completed');
    expect(envelope).not.toHaveProperty('reasonDetail');
  });
});
