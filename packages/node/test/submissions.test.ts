/**
 * Submissions over a real socket against the real `disarm serve`: bodies at the lane ceiling,
 * idempotent retries whose framing differs, file names long in UTF-8, one member-name rule for
 * every lane.
 */
import { connect } from 'node:net';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildImage } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(90_000) });

/** The multipart lane's ceiling on every plan (README "Plans, metering and usage": 100 MiB). */
const MAX_FILE_SIZE_BYTES = 100 * 1024 * 1024;
/** Well under the server's 120 s idle timeout: an answer slower than this is a hang. */
const PROMPT_ANSWER_MS = 15_000;

/** A step of a hand-written request: bytes to write, or a pause (a separate socket read). */
type Step = Uint8Array | { readonly pauseMs: number };

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** Milliseconds from the last written byte to the complete response (negative: before it). */
  readonly afterLastWriteMs: number;
}

/**
 * Writes `steps` on a fresh socket (honouring back-pressure and pauses) and resolves the
 * response, read by its Content-Length. The socket stays open until the answer, like a client.
 */
function exchange(url: string, steps: readonly Step[]): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let received = Buffer.alloc(0);
    let lastWriteAt: number | undefined;
    let answeredAt: number | undefined;
    let answer: Omit<RawResponse, 'afterLastWriteMs'> | undefined;
    const finish = (): void => {
      if (!answer || lastWriteAt === undefined || answeredAt === undefined) return;
      socket.destroy();
      resolve({ ...answer, afterLastWriteMs: answeredAt - lastWriteAt });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer within ${PROMPT_ANSWER_MS} ms of the request`));
    }, PROMPT_ANSWER_MS + 30_000);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0 || answer) return;
      const [statusLine = '', ...lines] = received
        .subarray(0, end)
        .toString('latin1')
        .split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = bodyOf(received.subarray(end + 4), headers);
      if (body === undefined) return;
      clearTimeout(timer);
      answeredAt = Date.now();
      answer = { status: Number(statusLine.split(' ')[1]), headers, body };
      finish();
    });
    socket.on('error', (error) => {
      // The server may close after answering early; what matters is the answer.
      if (answer) finish();
      else reject(error);
    });
    socket.on('connect', () => {
      void (async () => {
        for (const step of steps) {
          if (socket.destroyed) break;
          if (step instanceof Uint8Array) {
            if (!socket.write(step)) await new Promise((drained) => socket.once('drain', drained));
          } else {
            await new Promise((resume) => setTimeout(resume, step.pauseMs));
          }
        }
        lastWriteAt = Date.now();
        finish();
      })().catch(reject);
    });
  });
}

/** The whole body after the head, or `undefined` while more is to come (RFC 9112 6.3, 7.1). */
function bodyOf(rest: Buffer, headers: Record<string, string>): string | undefined {
  if (headers['transfer-encoding']?.toLowerCase() !== 'chunked') {
    const length = Number(headers['content-length'] ?? '0');
    return rest.length < length ? undefined : rest.subarray(0, length).toString('utf8');
  }
  const chunks: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = rest.indexOf('\r\n', offset);
    if (lineEnd < 0) return undefined;
    const size = parseInt(rest.subarray(offset, lineEnd).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(chunks).toString('utf8');
    if (rest.length < lineEnd + 2 + size + 2) return undefined;
    chunks.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
}

function requestHead(
  server: TestServer,
  path: string,
  headers: Record<string, string | number>,
): Uint8Array {
  const { host } = new URL(server.apiUrl);
  const lines = [`POST ${path} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}

async function intakeTempFiles(server: TestServer): Promise<string[]> {
  const entries = await readdir(join(server.dataDir, 'blobs'), { recursive: true }).catch(() => []);
  return entries.filter((name) => name.endsWith('.tmp'));
}

let server: TestServer;
let apiKey: string;

beforeAll(async () => {
  server = await startTestServer({ args: ['--no-processing'] });
  ({ apiKey } = await server.createOrganisation('internal'));
});
afterAll(async () => {
  await server.stop();
});

describe('a multipart body just over the lane ceiling', () => {
  const boundary = 'ceiling-boundary-7f3a';
  const partHead = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`,
  );
  const closing = Buffer.from(`\r\n--${boundary}--\r\n`);
  const fileBytes = MAX_FILE_SIZE_BYTES + 1;

  function bodySteps(split: 'excess-before-pause' | 'excess-with-boundary'): Step[] {
    const mebibyte = Buffer.alloc(1024 * 1024);
    const steps: Step[] = [
      requestHead(server, '/v1/documents', {
        'X-Api-Key': apiKey,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
        // Exact, and within the allowance for multipart framing: the early check passes it.
        'Content-Length': partHead.length + fileBytes + closing.length,
      }),
      partHead,
    ];
    for (let i = 0; i < MAX_FILE_SIZE_BYTES / mebibyte.length; i += 1) steps.push(mebibyte);
    if (split === 'excess-before-pause') {
      steps.push(Buffer.alloc(1), { pauseMs: 1000 }, closing);
    } else {
      steps.push({ pauseMs: 1000 }, Buffer.concat([Buffer.alloc(1), closing]));
    }
    return steps;
  }

  for (const split of ['excess-before-pause', 'excess-with-boundary'] as const) {
    it(`answers 413 FileTooLargeForPlan at once and leaves no temporary file (${split})`, async () => {
      const loggedBefore = server.logs().length;
      const response = await exchange(server.apiUrl, bodySteps(split));
      expect(response.status).toBe(413);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = JSON.parse(response.body) as { code: string; maxSizeBytes: number };
      expect(problem.code).toBe('FileTooLargeForPlan');
      expect(problem.maxSizeBytes).toBe(MAX_FILE_SIZE_BYTES);
      expect(response.afterLastWriteMs).toBeLessThan(PROMPT_ANSWER_MS);
      // The temporary file goes with the refusal, not at the next sweep.
      await expect.poll(() => intakeTempFiles(server), { timeout: scaledMs(5_000) }).toEqual([]);
      await expect
        .poll(() =>
          server
            .logs()
            .slice(loggedBefore)
            .filter((line) => line.msg === 'request' && line.path === '/v1/documents')
            .map((line) => line.status),
        )
        .toEqual([413]);
    });
  }

  it('still takes a file under the ceiling', async () => {
    const png = await buildImage('png');
    expect(png.length).toBeLessThan(MAX_FILE_SIZE_BYTES);
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(png)]), 'small.png');
    const response = await fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey },
      body: form,
    });
    expect(response.status).toBe(202);
  });
});

describe('idempotent retries fingerprint what a submission means, not its framing', () => {
  interface Part {
    readonly headers: readonly string[];
    readonly content: Uint8Array | string;
  }
  function multipart(boundary: string, parts: readonly Part[]): Uint8Array {
    const pieces: Uint8Array[] = [];
    for (const part of parts) {
      pieces.push(Buffer.from(`--${boundary}\r\n${part.headers.join('\r\n')}\r\n\r\n`));
      pieces.push(typeof part.content === 'string' ? Buffer.from(part.content) : part.content);
      pieces.push(Buffer.from('\r\n'));
    }
    pieces.push(Buffer.from(`--${boundary}--\r\n`));
    return Buffer.concat(pieces);
  }
  const submitMultipart = (key: string, boundary: string, parts: readonly Part[]) =>
    fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: {
        'X-Api-Key': apiKey,
        'Idempotency-Key': key,
        'Content-Type': `multipart/form-data; boundary=${boundary}`,
      },
      body: new Uint8Array(multipart(boundary, parts)),
    });
  const filePart = (png: Uint8Array, name = 'photo.png', style: 'curl' | 'browser' = 'curl') =>
    style === 'curl'
      ? {
          headers: [
            `Content-Disposition: form-data; name="file"; filename="${name}"`,
            'Content-Type: image/png',
          ],
          content: png,
        }
      : {
          headers: [
            `content-disposition: form-data; filename="${name}"; name="file"`,
            'content-type: application/octet-stream',
          ],
          content: png,
        };
  const deleteField = (style: 'curl' | 'browser' = 'curl') => ({
    headers: [
      style === 'curl'
        ? 'Content-Disposition: form-data; name="deleteAfterDownload"'
        : 'CONTENT-DISPOSITION: form-data; name=deleteAfterDownload',
    ],
    content: 'true',
  });

  it('replays a multipart retry with a new boundary, reordered parts and other header spelling', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const first = await submitMultipart('mp-1', '----curl1d2f', [deleteField(), filePart(png)]);
    expect(first.status).toBe(202);
    const firstBody = await first.text();
    const retry = await submitMultipart('mp-1', '----WebKitFormBoundaryQ9x', [
      filePart(png, 'photo.png', 'browser'),
      deleteField('browser'),
    ]);
    expect(retry.status).toBe(202);
    expect(retry.headers.get('Idempotency-Replayed')).toBe('true');
    expect(await retry.text()).toBe(firstBody);
  });

  it('still refuses the key for a different file, file name or field (422 IdempotencyKeyReused)', async () => {
    const png = new Uint8Array(await buildImage('png'));
    expect((await submitMultipart('mp-2', 'b1', [filePart(png)])).status).toBe(202);
    const changes: Part[][] = [
      [filePart(new Uint8Array([...png, 0]))],
      [filePart(png, 'other.png')],
      [filePart(png), deleteField()],
    ];
    for (const parts of changes) {
      const changed = await submitMultipart('mp-2', 'b2', parts);
      expect(changed.status).toBe(422);
      expect(((await changed.json()) as { code: string }).code).toBe('IdempotencyKeyReused');
    }
  });

  it('replays a raw retry with the same bytes and parameters, in any parameter order', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const raw = (query: string) =>
      fetch(`${server.apiUrl}/v1/documents?${query}`, {
        method: 'POST',
        headers: {
          'X-Api-Key': apiKey,
          'Idempotency-Key': 'raw-1',
          'Content-Type': 'application/octet-stream',
        },
        body: png,
      });
    const first = await raw('filename=a.png&deleteAfterDownload=true');
    expect(first.status).toBe(202);
    const retry = await raw('deleteAfterDownload=true&filename=a.png');
    expect(retry.headers.get('Idempotency-Replayed')).toBe('true');
    expect(await retry.text()).toBe(await first.text());
    const renamed = await raw('deleteAfterDownload=true&filename=b.png');
    expect(renamed.status).toBe(422);
  });

  it('replays a JSON retry whatever its spacing and key order', async () => {
    const upload = (body: string) =>
      fetch(`${server.apiUrl}/v1/uploads`, {
        method: 'POST',
        headers: {
          'X-Api-Key': apiKey,
          'Idempotency-Key': 'json-1',
          'Content-Type': 'application/json; charset=utf-8',
        },
        body,
      });
    const first = await upload('{"fileName":"big.png"}');
    expect(first.status).toBe(201);
    const retry = await upload('{\n  "fileName" : "big.png"\n}\n');
    expect(retry.headers.get('Idempotency-Replayed')).toBe('true');
    expect(await retry.text()).toBe(await first.text());
    expect((await upload('{"fileName":"big2.png"}')).status).toBe(422);
  });
});

describe('file names long in UTF-8 work end to end (a name is data, never a path)', () => {
  /** 84 CJK characters: 88 characters with `.png`, 256 bytes in UTF-8. */
  const CJK_NAME = `${'漢'.repeat(84)}.png`;
  /** 200 emoji: 204 characters, 804 bytes in UTF-8 (and 404 UTF-16 units). */
  const EMOJI_NAME = `${'😀'.repeat(200)}.png`;
  let processing: TestServer;
  let key: string;

  beforeAll(async () => {
    processing = await startTestServer();
    ({ apiKey: key } = await processing.createOrganisation('internal'));
  });
  afterAll(async () => {
    await processing.stop();
  });

  /** RFC 8187 / RFC 5987 ext-value: the name decodes exactly; the ASCII fallback is ASCII. */
  function expectAttachmentNamed(header: string | null, name: string): void {
    const match =
      /^attachment; filename="([\x20-\x7e]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+\-.^_`|~%]+)$/.exec(
        header ?? '',
      );
    expect(match, header ?? '(none)').not.toBeNull();
    expect(decodeURIComponent(match?.[2] ?? '')).toBe(name);
  }

  async function downloadOf(id: string): Promise<Response> {
    const redirect = await fetch(`${processing.apiUrl}/v1/documents/${id}/download`, {
      headers: { 'X-Api-Key': key },
      redirect: 'manual',
    });
    expect(redirect.status).toBe(302);
    return fetch(redirect.headers.get('Location') ?? '');
  }

  async function terminal(id: string): Promise<Record<string, unknown>> {
    for (let attempt = 0; attempt < 600; attempt += 1) {
      const envelope = (await (
        await fetch(`${processing.apiUrl}/v1/documents/${id}`, { headers: { 'X-Api-Key': key } })
      ).json()) as Record<string, unknown>;
      if (envelope.status !== 'pending' && envelope.status !== 'processing') return envelope;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`document ${id} never finished`);
  }

  for (const name of [CJK_NAME, EMOJI_NAME]) {
    expect(Buffer.byteLength(name)).toBeGreaterThan(255);
    expect(Array.from(name).length).toBeLessThanOrEqual(255);

    it(`multipart, sync: ${Array.from(name).length} characters, ${Buffer.byteLength(name)} bytes`, async () => {
      const png = new Uint8Array(await buildImage('png'));
      const form = new FormData();
      form.append('file', new Blob([png]), name);
      const response = await fetch(`${processing.apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers: { 'X-Api-Key': key },
        body: form,
      });
      const envelope = (await response.json()) as { id: string; status: string };
      expect(envelope.status).toBe('completed');
      const file = await downloadOf(envelope.id);
      expect(file.status).toBe(200);
      expectAttachmentNamed(file.headers.get('Content-Disposition'), name);
      expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0);
    });

    it(`raw lane, async: ${Buffer.byteLength(name)} bytes`, async () => {
      const png = new Uint8Array(await buildImage('png'));
      const response = await fetch(
        `${processing.apiUrl}/v1/documents?filename=${encodeURIComponent(name)}`,
        {
          method: 'POST',
          headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
          body: png,
        },
      );
      expect(response.status).toBe(202);
      const { id } = (await response.json()) as { id: string };
      expect(await terminal(id)).toMatchObject({ status: 'completed' });
      expectAttachmentNamed((await downloadOf(id)).headers.get('Content-Disposition'), name);
    });

    it(`upload lane: ${Buffer.byteLength(name)} bytes`, async () => {
      const png = new Uint8Array(await buildImage('png'));
      const created = await fetch(`${processing.apiUrl}/v1/uploads`, {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ fileName: name }),
      });
      expect(created.status).toBe(201);
      const upload = (await created.json()) as {
        uploadId: string;
        uploadUrl: string;
        requiredHeaders: Record<string, string>;
      };
      const put = await fetch(upload.uploadUrl, {
        method: 'PUT',
        headers: upload.requiredHeaders,
        body: png,
      });
      expect(put.status).toBeLessThan(300);
      const submitted = await fetch(`${processing.apiUrl}/v1/documents?wait=true`, {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ uploadId: upload.uploadId }),
      });
      const { id } = (await submitted.json()) as { id: string };
      expect(await terminal(id)).toMatchObject({ status: 'completed' });
      expectAttachmentNamed((await downloadOf(id)).headers.get('Content-Disposition'), name);
    });
  }

  it('says a file removed by DELETE was deleted, not deleted after download', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const response = await fetch(
      `${processing.apiUrl}/v1/documents?wait=true&filename=a.png&deleteAfterDownload=true`,
      {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
        body: png,
      },
    );
    const { id } = (await response.json()) as { id: string };
    expect(await terminal(id)).toMatchObject({ status: 'completed' });
    const deleted = await fetch(`${processing.apiUrl}/v1/documents/${id}`, {
      method: 'DELETE',
      headers: { 'X-Api-Key': key },
    });
    expect(deleted.status).toBe(204);
    const gone = await fetch(`${processing.apiUrl}/v1/documents/${id}/download`, {
      headers: { 'X-Api-Key': key },
      redirect: 'manual',
    });
    expect(gone.status).toBe(410);
    expect(((await gone.json()) as { detail: string }).detail).toBe(
      'The cleaned file was deleted by a DELETE request on this document.',
    );
  });

  it("percent-encodes RFC 5987's reserved characters in filename*", async () => {
    const name = "it's (final) *draft*.png";
    const png = new Uint8Array(await buildImage('png'));
    const response = await fetch(
      `${processing.apiUrl}/v1/documents?wait=true&filename=${encodeURIComponent(name)}`,
      {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
        body: png,
      },
    );
    const { id } = (await response.json()) as { id: string };
    expect(await terminal(id)).toMatchObject({ status: 'completed' });
    expectAttachmentNamed((await downloadOf(id)).headers.get('Content-Disposition'), name);
  });
});

describe('one member-name rule, and the storage origin', () => {
  it('refuses a multipart file name with a path as the raw and upload lanes do, never shortening it', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const form = new FormData();
    form.append('file', new Blob([png]), '../../x.png');
    const multipart = await fetch(`${server.apiUrl}/v1/documents`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey },
      body: form,
    });
    const raw = await fetch(`${server.apiUrl}/v1/documents?filename=..%2F..%2Fx.png`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/octet-stream' },
      body: png,
    });
    const upload = await fetch(`${server.apiUrl}/v1/uploads`, {
      method: 'POST',
      headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ fileName: '../../x.png' }),
    });
    const answers = [];
    for (const response of [multipart, raw, upload]) {
      const problem = (await response.json()) as {
        code: string;
        errors: { message: string }[];
      };
      answers.push([response.status, problem.code, problem.errors[0]?.message]);
    }
    expect(answers[0]).toEqual([
      400,
      'ValidationFailed',
      'the file name must not contain control characters or path separators',
    ]);
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });

  it('answers 404 for an unknown storage path, with a problem type link that resolves', async () => {
    const response = await fetch(`${server.storageUrl}/no/such/path`);
    expect(response.status).toBe(404);
    const problem = (await response.json()) as { type: string; code: string };
    expect(problem.code).toBe('NotFound');
    const catalogue = await fetch(problem.type);
    expect(catalogue.status).toBe(200);
    expect(await catalogue.text()).toContain('NotFound');
    const unsigned = await fetch(`${server.storageUrl}/blobs/output/doc_x`);
    const unsignedProblem = (await unsigned.json()) as { type: string };
    expect((await fetch(unsignedProblem.type)).status).toBe(200);
  });
});

describe('usage headers of a sync document that failed', () => {
  let processing: TestServer;
  beforeAll(async () => {
    // A clamd that is not there: every file fails closed (internal_error), credited back.
    processing = await startTestServer({
      args: ['--clamd', join(tmpdir(), `disarm-no-clamd-${process.pid}.sock`)],
    });
  });
  afterAll(async () => {
    await processing.stop();
  });

  it('do not count a failed, refunded document (tier and pay-as-you-go)', async () => {
    const png = new Uint8Array(await buildImage('png'));
    const submit = (key: string) =>
      fetch(`${processing.apiUrl}/v1/documents?wait=true&filename=photo.png`, {
        method: 'POST',
        headers: { 'X-Api-Key': key, 'Content-Type': 'application/octet-stream' },
        body: png,
      });
    const tier = await processing.createOrganisation('starter');
    const tierResponse = await submit(tier.apiKey);
    expect(await tierResponse.json()).toMatchObject({ status: 'failed' });
    const allowance = tierResponse.headers.get('X-CDR-Usage-Allowance');
    expect(tierResponse.headers.get('X-CDR-Usage-Used')).toBe('0');
    expect(tierResponse.headers.get('X-CDR-Usage-Remaining')).toBe(allowance);

    const payg = await processing.createOrganisation('payg', { creditPence: 100, pricePence: 10 });
    const paygResponse = await submit(payg.apiKey);
    expect(await paygResponse.json()).toMatchObject({ status: 'failed' });
    expect(paygResponse.headers.get('X-CDR-Credit-Balance-Pence')).toBe('100');
  });
});
