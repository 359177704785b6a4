import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { DisarmError } from '../errors.ts';
import { createClamdScanner } from './clamd.ts';
import type { ScanContext } from './scanner.ts';

/**
 * The adapter's own behaviour against a stand-in daemon: what a real clamd cannot be made to do on
 * demand (stay silent, hold connections). What clamd says is tested against clamd itself in
 * `test/clamd.test.ts`.
 */
const servers: Server[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    await new Promise((resolve) => server.close(resolve));
  }
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

/** A Unix-socket server running `onConnection` for each client. */
async function standIn(onConnection: (socket: Socket) => void): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'disarm-clamd-unit-'));
  folders.push(folder);
  const path = join(folder, 'clamd.sock');
  const server = createServer(onConnection);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return path;
}

function scanContext(): ScanContext {
  return { fileName: 'upload.pdf', signal: new AbortController().signal };
}

/** Reads a client's `zINSTREAM` request to its zero-length chunk, then calls `done`. */
function onStreamEnd(socket: Socket, done: () => void): void {
  let received = Buffer.alloc(0);
  socket.on('data', (data: Buffer) => {
    received = Buffer.concat([received, data]);
    if (received.subarray(-4).equals(Buffer.alloc(4))) done();
  });
}

describe('createClamdScanner (against a stand-in daemon)', () => {
  it('fails closed when clamd accepts the file and never answers', async () => {
    const held: Socket[] = [];
    const socket = await standIn((client) => held.push(client));
    const scanner = createClamdScanner({ socket, readTimeoutMs: 200 });
    const scanning = scanner.scan(Buffer.from('%PDF-1.7'), scanContext());
    await expect(scanning).rejects.toBeInstanceOf(DisarmError);
    await expect(scanning).rejects.toMatchObject({
      code: 'ERR_INTERNAL',
      message: 'the antivirus scanner could not scan the file: clamd did not answer within 200 ms',
    });
    for (const client of held) client.destroy();
  });

  it('goes on when configured to fail open, and says so', async () => {
    const held: Socket[] = [];
    const socket = await standIn((client) => held.push(client));
    const skipped: string[] = [];
    const scanner = createClamdScanner({
      socket,
      readTimeoutMs: 200,
      failOpen: true,
      onSkipped: (error, context) => skipped.push(`${context.fileName}: ${error.message}`),
    });
    expect(await scanner.scan(Buffer.from('%PDF-1.7'), scanContext())).toEqual([]);
    expect(skipped).toEqual([
      'upload.pdf: the antivirus scanner could not scan the file: clamd did not answer within 200 ms',
    ]);
    for (const client of held) client.destroy();
  });

  it('holds at most maxConnections connections open; further scans wait their turn', async () => {
    // Connections not answered yet: a client frees its slot only after the answer.
    let waiting = 0;
    let mostWaiting = 0;
    const socket = await standIn((client) => {
      waiting += 1;
      mostWaiting = Math.max(mostWaiting, waiting);
      onStreamEnd(client, () => {
        // Answer a little later, so that unbounded clients would all be connected meanwhile.
        setTimeout(() => {
          waiting -= 1;
          client.end('stream: OK\0');
        }, 20);
      });
    });
    const scanner = createClamdScanner({ socket, maxConnections: 2 });
    const results = await Promise.all(
      Array.from({ length: 6 }, () => scanner.scan(Buffer.from('data'), scanContext())),
    );
    expect(results).toEqual(Array.from({ length: 6 }, () => []));
    expect(mostWaiting).toBe(2);
  });

  it('does not send a file over the configured stream limit', async () => {
    let connections = 0;
    const socket = await standIn((client) => {
      connections += 1;
      client.end('stream: OK\0');
    });
    const scanner = createClamdScanner({ socket, streamMaxLengthBytes: 4 });
    await expect(scanner.scan(Buffer.from('12345'), scanContext())).rejects.toMatchObject({
      code: 'ERR_INTERNAL',
      message:
        "the antivirus scanner could not scan the file: the file is 5 bytes, over clamd's stream limit of 4 bytes (StreamMaxLength)",
    });
    expect(connections).toBe(0);
  });

  it('refuses options that name no clamd, or two', () => {
    expect(() => createClamdScanner({})).toThrow(TypeError);
    expect(() => createClamdScanner({ socket: '/run/clamd.sock', host: '127.0.0.1' })).toThrow(
      TypeError,
    );
    expect(() => createClamdScanner({ socket: '/run/clamd.sock', port: 3310 })).toThrow(TypeError);
    expect(() => createClamdScanner({ host: '127.0.0.1', port: 70_000 })).toThrow(TypeError);
    expect(() => createClamdScanner({ host: '127.0.0.1', readTimeoutMs: 0 })).toThrow(TypeError);
  });
});
