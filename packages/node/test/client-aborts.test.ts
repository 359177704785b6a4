/**
 * Clients that hang up are the client's fault, not ours: over a real loopback server and raw
 * `node:net` sockets, a body shorter than its `Content-Length`, chunked-encoding garbage and a
 * reset connection are counted as `499` (nginx's "client closed request") in
 * `disarm_http_requests_total` and the request log, logged below warning with what happened, and
 * store and bill nothing. A client leaving during a sync wait or during a download is no server
 * error either.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';

import { buildImage } from '@disarm/fixtures';
import type { Logger } from '@disarm/protocol';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { hashAdminToken, startServer } from '../src/index.ts';
import type { RunningDisarm } from '../src/index.ts';
import { tempDir } from './_fixtures.ts';

const ADMIN_TOKEN = randomBytes(32).toString('hex');
const METRICS_TOKEN = randomBytes(32).toString('hex');
const PRICE_PENCE = 10;
const CREDIT_PENCE = 1000;

type Line = Record<string, unknown> & { level: string; msg: string | undefined };

/** A logger that keeps every line and lets a test wait for the one it expects. */
function capturingLogger(): Logger & {
  lines: Line[];
  next(predicate: (line: Line) => boolean): Promise<Line>;
} {
  const lines: Line[] = [];
  const waiters: { predicate: (line: Line) => boolean; resolve: (line: Line) => void }[] = [];
  const push = (level: string, object: Record<string, unknown>, msg?: string): void => {
    const line: Line = { ...object, level, msg };
    lines.push(line);
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(line)) waiter.resolve(line);
      else waiters.push(waiter);
    }
  };
  return {
    lines,
    debug: (object, msg) => {
      push('debug', object, msg);
    },
    info: (object, msg) => {
      push('info', object, msg);
    },
    warn: (object, msg) => {
      push('warn', object, msg);
    },
    error: (object, msg) => {
      push('error', object, msg);
    },
    next(predicate) {
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
  };
}

interface Service {
  readonly server: RunningDisarm;
  readonly logger: ReturnType<typeof capturingLogger>;
  readonly key: string;
  readonly port: number;
}

async function startService(processing: boolean): Promise<Service> {
  const logger = capturingLogger();
  const dataDir = await tempDir();
  const server = await startServer({
    dataDir,
    port: 0,
    storagePort: 0,
    workers: 1,
    processing,
    demo: false,
    adminTokenHashes: [hashAdminToken(ADMIN_TOKEN)],
    metricsToken: METRICS_TOKEN,
    logger,
  });
  const admin = (path: string, body: unknown): Promise<Response> =>
    fetch(`${server.apiUrl}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const created = await admin('/v1/admin/organisations', {
    name: 'Flaky clients',
    plan: 'payg',
    creditPence: CREDIT_PENCE,
    terms: { pricePerDocumentPence: PRICE_PENCE },
  });
  const { id } = (await created.json()) as { id: string };
  const { key } = (await (
    await admin(`/v1/admin/organisations/${id}/keys`, { name: 'flaky' })
  ).json()) as {
    key: string;
  };
  return { server, logger, key, port: server.apiPort };
}

async function scrape(service: Service): Promise<string> {
  const response = await fetch(`${service.server.apiUrl}/metrics`, {
    headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
  });
  return response.text();
}

/** The value of one series, 0 when it was never written. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const POST_DOCUMENTS = (status: number): string =>
  `disarm_http_requests_total{server="api",method="POST",route="/v1/documents",status="${status}"}`;

/** Opens a raw connection to `port` and writes `bytes`; resolves once they are on the wire. */
async function openAndSend(port: number, bytes: string | Uint8Array): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  // What the server answers (node's own 400 to a malformed body) or a reset is not the point.
  socket.on('error', () => undefined);
  socket.resume();
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    socket.write(bytes, (error) => {
      if (error) reject(error);
      else resolve();
    });
  });
  return socket;
}

function head(service: Service, target: string, headers: Record<string, string>): string {
  const lines = Object.entries({ Host: '127.0.0.1', 'X-Api-Key': service.key, ...headers }).map(
    ([name, value]) => `${name}: ${value}\r\n`,
  );
  return `POST ${target} HTTP/1.1\r\n${lines.join('')}\r\n`;
}

const BOUNDARY = 'client-abort-boundary';
const MULTIPART_HEAD = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="photo.png"\r\nContent-Type: image/png\r\n\r\n`;

async function intakeFiles(service: Service): Promise<string[]> {
  try {
    const names = await readdir(join(service.server.blobDirectory ?? '', 'intake'));
    return names.filter((name) => !name.startsWith('.'));
  } catch {
    return [];
  }
}

async function account(
  service: Service,
): Promise<{ periodUsedSubmissions: number; creditBalancePence: number }> {
  const response = await fetch(`${service.server.apiUrl}/v1/account`, {
    headers: { 'X-Api-Key': service.key },
  });
  return (await response.json()) as { periodUsedSubmissions: number; creditBalancePence: number };
}

const isSubmission = (line: Line): boolean =>
  line.msg === 'request' && line.path === '/v1/documents' && line.method === 'POST';

/** Lines at warning or above since `from`. */
function loudLines(service: Service, from: number): Line[] {
  return service.logger.lines.slice(from).filter((line) => ['warn', 'error'].includes(line.level));
}

describe('a client that hangs up mid-body (no processing)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService(false);
  });
  afterAll(async () => {
    await service.server.close();
  });

  const faults: {
    name: string;
    disconnect: string;
    send(service: Service): Promise<void>;
  }[] = [
    {
      name: 'a multipart body shorter than its Content-Length, then a clean close',
      disconnect: 'closed_mid_body',
      async send(target) {
        const socket = await openAndSend(
          target.port,
          head(target, '/v1/documents', {
            'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`,
            'Content-Length': String(MULTIPART_HEAD.length + 64 * 1024),
          }) +
            MULTIPART_HEAD +
            'x'.repeat(1024),
        );
        socket.end();
      },
    },
    {
      name: 'chunked-encoding garbage in a multipart body',
      disconnect: 'bad_framing',
      async send(target) {
        const chunk = `${MULTIPART_HEAD}${'x'.repeat(1024)}`;
        await openAndSend(
          target.port,
          `${head(target, '/v1/documents', {
            'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`,
            'Transfer-Encoding': 'chunked',
          })}${chunk.length.toString(16)}\r\n${chunk}\r\nnot-a-chunk-size\r\n`,
        );
      },
    },
    {
      name: 'a raw body cut off by a connection reset',
      disconnect: 'reset',
      async send(target) {
        const socket = await openAndSend(
          target.port,
          head(target, '/v1/documents?filename=photo.png', {
            'Content-Type': 'application/octet-stream',
            'Content-Length': String(1024 * 1024),
          }) + 'x'.repeat(4096),
        );
        socket.resetAndDestroy();
      },
    },
  ];

  for (const fault of faults) {
    it(`counts ${fault.name} as 499, logs it below warning and bills nothing`, async () => {
      const before = await scrape(service);
      const from = service.logger.lines.length;
      const logged = service.logger.next(isSubmission);
      await fault.send(service);
      const line = await logged;

      expect(line).toMatchObject({ level: 'info', status: 499, disconnect: fault.disconnect });
      const said = service.logger.lines
        .slice(from)
        .find((candidate) => candidate.msg === 'client closed the request');
      expect(said).toMatchObject({ disconnect: fault.disconnect, path: '/v1/documents' });
      expect(['debug', 'info']).toContain(said?.level);
      expect(loudLines(service, from)).toEqual([]);

      const after = await scrape(service);
      expect(sample(after, POST_DOCUMENTS(499)) - sample(before, POST_DOCUMENTS(499))).toBe(1);
      expect(sample(after, POST_DOCUMENTS(500))).toBe(0);

      expect(await intakeFiles(service)).toEqual([]);
      expect(await account(service)).toMatchObject({
        periodUsedSubmissions: 0,
        creditBalancePence: CREDIT_PENCE,
      });
    });
  }

  it('counts a client that leaves during the sync wait as 499 (its document stays accepted)', async () => {
    const png = await buildImage('png');
    const before = await scrape(service);
    const from = service.logger.lines.length;
    const accepted = service.logger.next((line) => line.msg === 'document accepted');
    const logged = service.logger.next(isSubmission);
    const socket = await openAndSend(
      service.port,
      head(service, '/v1/documents?filename=photo.png&wait=true', {
        'Content-Type': 'application/octet-stream',
        'Content-Length': String(png.length),
      }),
    );
    await new Promise<void>((resolve) =>
      socket.write(png, () => {
        resolve();
      }),
    );
    // Nothing processes here: the request is in its sync wait once the document is accepted.
    const { documentId, requestId } = await accepted;
    socket.resetAndDestroy();
    const line = await logged;

    expect(line).toMatchObject({ level: 'info', status: 499, disconnect: 'reset', requestId });
    expect(loudLines(service, from)).toEqual([]);
    const after = await scrape(service);
    expect(sample(after, POST_DOCUMENTS(499)) - sample(before, POST_DOCUMENTS(499))).toBe(1);
    expect(sample(after, POST_DOCUMENTS(500))).toBe(0);
    // The document was accepted before the client left: it is kept, charged once, and can be read.
    const status = await fetch(`${service.server.apiUrl}/v1/documents/${String(documentId)}`, {
      headers: { 'X-Api-Key': service.key },
    });
    expect(status.status).toBe(200);
    expect((await account(service)).creditBalancePence).toBe(CREDIT_PENCE - PRICE_PENCE);
  });
});

describe('a client that hangs up during a download (processing)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService(true);
  });
  afterAll(async () => {
    await service.server.close();
  });

  it('is no server error: nothing logged at warning or above, no 5xx, and the service keeps serving', async () => {
    // Noise does not compress: a cleaned file larger than the loopback socket buffers.
    const side = 1600;
    const noise = await sharp(randomBytes(side * side * 3), {
      raw: { width: side, height: side, channels: 3 },
    })
      .png({ compressionLevel: 0 })
      .toBuffer();
    const submitted = await fetch(
      `${service.server.apiUrl}/v1/documents?filename=noise.png&wait=true`,
      {
        method: 'POST',
        headers: { 'X-Api-Key': service.key, 'Content-Type': 'application/octet-stream' },
        body: noise,
      },
    );
    expect(submitted.status).toBe(200);
    const { downloadUrl } = (await submitted.json()) as { downloadUrl: string };
    const link = new URL(downloadUrl);

    const from = service.logger.lines.length;
    const logged = service.logger.next(
      (line) => line.msg === 'request' && line.server === 'storage',
    );
    const socket = connect(Number(link.port), link.hostname);
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(`GET ${link.pathname}${link.search} HTTP/1.1\r\nHost: ${link.host}\r\n\r\n`);
    const first = await new Promise<Buffer>((resolve) => socket.once('data', resolve));
    expect(first.toString('latin1')).toMatch(/^HTTP\/1\.1 200 /);
    const closed = new Promise<void>((resolve) =>
      socket.once('close', () => {
        resolve();
      }),
    );
    socket.resetAndDestroy();
    await closed;
    // The head went out: the line says what the client was sent (as nginx logs it).
    expect(await logged).toMatchObject({ status: 200 });

    // The next request on the storage origin is answered, and nothing was logged as a fault.
    const again = await fetch(downloadUrl);
    expect(again.status).toBe(200);
    expect((await again.arrayBuffer()).byteLength).toBeGreaterThan(1024 * 1024);
    expect(loudLines(service, from)).toEqual([]);
    const text = await scrape(service);
    expect(text).not.toMatch(/disarm_http_requests_total\{[^}]*status="5\d\d"\}/);
  });
});
