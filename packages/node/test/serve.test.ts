import { spawn } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { createLinkSigner, cryptoRandom, newId } from '@disarm/protocol';
import type { Logger } from '@disarm/protocol';
import { createSqliteStore } from '@disarm/sqlite';
import { afterEach, describe, expect, it } from 'vitest';

import { createLocalBlobStore, startServer } from '../src/index.ts';
import type { RunningDisarm, ServerOptions } from '../src/index.ts';
import { pngWithMetadata, tempDir } from './_fixtures.ts';
import { CLI_PATH, runDisarm, startTestServer } from './_server.ts';
import type { TestServer } from './_server.ts';

const running: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const server of running.splice(0).reverse()) await server.close();
});

function recordingLogger(): Logger & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const record = (object: Record<string, unknown>, msg?: string): void => {
    lines.push({ ...object, msg });
  };
  return { lines, info: record, warn: record, error: record };
}

async function start(
  options: Partial<ServerOptions> & { dataDir: string },
): Promise<RunningDisarm> {
  const server = await startServer({ port: 0, storagePort: 0, workers: 1, ...options });
  running.push(server);
  return server;
}

describe('startServer()', () => {
  it('listens on free ports, answers health and readiness, logs each request, and stops cleanly', async () => {
    const logger = recordingLogger();
    const server = await start({ dataDir: await tempDir(), logger });
    expect(server.apiUrl).toBe(`http://localhost:${server.apiPort}`);
    expect(server.storageUrl).toBe(`http://localhost:${server.storagePort}`);
    expect(server.apiPort).not.toBe(server.storagePort);

    expect(await (await fetch(`${server.apiUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.apiUrl}/readyz?probe=secret-value`);
    expect(ready.status).toBe(200);
    const storage = await fetch(`${server.storageUrl}/blobs/output/doc_x?sig=secret-value`);
    expect(storage.status).toBe(403);
    await storage.body?.cancel();

    const requests = logger.lines.filter((line) => line.msg === 'request');
    expect(requests).toEqual([
      expect.objectContaining({ server: 'api', method: 'GET', path: '/healthz', status: 200 }),
      expect.objectContaining({ server: 'api', method: 'GET', path: '/readyz', status: 200 }),
      expect.objectContaining({
        server: 'storage',
        method: 'GET',
        path: '/blobs/output/doc_x',
        status: 403,
      }),
    ]);
    expect(JSON.stringify(logger.lines)).not.toContain('secret-value');
    expect(typeof requests[0]?.ms).toBe('number');

    await server.close();
    await server.close();
    await expect(fetch(`${server.apiUrl}/healthz`)).rejects.toThrow();
    await expect(fetch(`${server.storageUrl}/`)).rejects.toThrow();
  });

  it('reports on /readyz how its storage stands and which renderer draws each format returned as PDF', async () => {
    const server = await start({ dataDir: await tempDir(), renderers: ['builtin'] });
    const ready = await fetch(`${server.apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', blobs: 'ok' },
      renderers: {
        ods: 'builtin',
        odp: 'builtin',
        svg: 'builtin',
        html: 'builtin',
        htm: 'builtin',
      },
    });
    await server.close();
    await expect(
      startServer({ port: 0, storagePort: 0, dataDir: await tempDir(), renderers: ['gotenberg'] }),
    ).rejects.toThrow('unknown renderer "gotenberg"');
  });

  it('creates the demo organisation only on an empty store, and keeps its link secret', async () => {
    const dataDir = await tempDir();
    const first = await start({ dataDir });
    expect(first.demo?.organisationId).toMatch(/^org_/);
    expect(first.demo?.apiKey).toMatch(/^dsm_live_/);
    await first.close();
    const secretPath = join(dataDir, 'secrets', 'link-signing.key');
    const secret = await readFile(secretPath);
    expect(secret).toHaveLength(32);
    expect((await stat(secretPath)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'secrets'))).mode & 0o777).toBe(0o700);

    const second = await start({ dataDir });
    expect(second.demo).toBeUndefined();
    expect(await readFile(secretPath)).toEqual(secret);
    const store = createSqliteStore({ path: join(dataDir, 'disarm.sqlite') });
    try {
      const organisations = await store.listOrganisations(new Date());
      expect(organisations).toEqual([
        expect.objectContaining({ id: first.demo?.organisationId, plan: 'internal' }),
      ]);
    } finally {
      await store.close();
    }
    const none = await start({ dataDir: await tempDir(), demo: false });
    expect(none.demo).toBeUndefined();
  });

  it('processes a document queued in its store and serves the result on a signed link', async () => {
    const dataDir = await tempDir();
    const logger = recordingLogger();
    const server = await start({ dataDir, logger, demo: false });
    const store = createSqliteStore({ path: join(dataDir, 'disarm.sqlite') });
    running.push(store);
    const signer = createLinkSigner(
      await readFile(join(dataDir, 'secrets', 'link-signing.key')),
      server.storageUrl,
    );
    const blobs = createLocalBlobStore({ directory: join(dataDir, 'blobs'), signer });

    const org = await store.createOrganisation(
      { id: newId('org', cryptoRandom), name: 'Org', plan: 'starter' },
      new Date(),
    );
    const id = newId('doc', cryptoRandom);
    await blobs.put(`intake/${id}`, new Response(new Uint8Array(await pngWithMetadata())).body!, {
      maxBytes: 1_000_000,
    });
    const accepted = await store.acceptDocument(
      {
        id,
        organisationId: org.id,
        lane: 'multipart',
        fileName: 'photo.png',
        sizeBytes: 1,
        intakeKey: `intake/${id}`,
        deleteAfterDownload: false,
        statusStyle202: false,
      },
      new Date(),
    );
    expect(accepted.kind).toBe('accepted');
    // No event reaches the server from this process: its dispatcher finds the document by polling.
    let document = await store.getDocument(org.id, id);
    // Completion is recorded first; the intake bytes are deleted (and the key cleared) after.
    for (
      let tries = 0;
      tries < 300 && (document?.status !== 'completed' || document.intakeKey !== null);
      tries += 1
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      document = await store.getDocument(org.id, id);
    }
    expect(document).toMatchObject({ status: 'completed', intakeKey: null });

    const url = await blobs.signedDownloadUrl(`output/${id}`, {
      expiresAt: new Date(Date.now() + 60_000),
      fileName: 'photo.png',
      contentType: 'image/png',
    });
    const download = await fetch(url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect((await download.arrayBuffer()).byteLength).toBe(document?.output?.sizeBytes);
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        server: 'storage',
        path: `/blobs/output/${id}`,
        status: 200,
        documentId: id,
      }),
    );
    expect(logger.lines).toContainEqual(
      expect.objectContaining({ documentId: id, status: 'completed', msg: 'document processed' }),
    );
    expect(JSON.stringify(logger.lines)).not.toContain('sig=');
  });

  it('fails to start on a port in use, and releases what it had opened', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const dataDir = await tempDir();
    try {
      await expect(startServer({ dataDir, port, storagePort: 0, workers: 1 })).rejects.toThrow(
        /EADDRINUSE/,
      );
      // Released: the same folder starts fine (the store is not held open).
      const server = await start({ dataDir, port: 0 });
      expect(server.apiPort).not.toBe(port);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('moves its clock only in test mode, sweeping at the new time', async () => {
    const normal = await start({ dataDir: await tempDir() });
    await expect(normal.advanceClock(1000)).rejects.toThrow(/test mode/);
    const test = await start({ dataDir: await tempDir(), testMode: true });
    const before = test.clock.now().getTime();
    expect((await test.advanceClock(86_400_000)).getTime()).toBe(before + 86_400_000);
    expect(test.clock.now().getTime()).toBe(before + 86_400_000);
  });
});

describe('disarm serve', () => {
  it('--help documents every flag and environment variable', async () => {
    const help = await runDisarm(['serve', '--help']);
    expect(help.code).toBe(0);
    for (const flag of [
      '--port',
      '--storage-port',
      '--host',
      '--data-dir',
      '--public-base-url',
      '--storage-base-url',
      '--sync-wait-seconds',
      '--workers',
      '--grace-seconds',
      '--admin-token',
      '--test-mode',
      '--log-level',
      '--no-demo',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    for (const env of [
      'DISARM_PORT',
      'DISARM_STORAGE_PORT',
      'DISARM_HOST',
      'DISARM_DATA_DIR',
      'DISARM_PUBLIC_BASE_URL',
      'DISARM_STORAGE_BASE_URL',
      'DISARM_SYNC_WAIT_SECONDS',
      'DISARM_WORKERS',
      'DISARM_GRACE_SECONDS',
      'DISARM_ADMIN_TOKEN',
      'DISARM_TEST_MODE',
      'DISARM_LOG_LEVEL',
    ]) {
      expect(help.stdout).toContain(env);
    }
    const text = help.stdout.replace(/\s+/g, ' ');
    for (const shown of [
      '(default: 8080, env: DISARM_PORT)',
      '(default: 8081, env: DISARM_STORAGE_PORT)',
      '(default: "127.0.0.1", env: DISARM_HOST)',
      '(default: "./.data", env: DISARM_DATA_DIR)',
      '(default: 45, env: DISARM_SYNC_WAIT_SECONDS)',
      '(default: 300, env: DISARM_GRACE_SECONDS)',
    ]) {
      expect(text).toContain(shown);
    }
  });

  it('refuses bad configuration with exit status 64', async () => {
    const dataDir = await tempDir();
    for (const args of [
      ['--port=70000'],
      ['--public-base-url=not a url'],
      ['--log-level=loud'],
      ['--workers=0'],
      ['--admin-token=short'],
    ]) {
      const run = await runDisarm(['serve', `--data-dir=${dataDir}`, ...args]);
      expect(run.code, args.join(' ')).toBe(64);
    }
    // The roles and the database are known options, refused for what they say.
    for (const [args, said] of [
      [['--database=mysql://db.internal/disarm'], 'sqlite:<path> or postgres://'],
      [['--role=primary'], 'Allowed choices are all, api, worker'],
      [['--role=worker', '--no-processing'], '--role worker processes documents'],
    ] as const) {
      const run = await runDisarm(['serve', `--data-dir=${dataDir}`, ...args]);
      expect(run.code, args.join(' ')).toBe(64);
      expect(run.stderr, args.join(' ')).toContain(said);
    }
    // A switch in the environment takes 1, true, 0 or false: a misspelt "off" turns nothing on.
    for (const name of ['DISARM_TEST_MODE', 'DISARM_OAUTH_EXTERNAL_ALLOW_ADMIN']) {
      const badEnv = await runDisarm(['serve', `--data-dir=${dataDir}`], {
        ...process.env,
        [name]: 'off',
      });
      expect(badEnv.code, name).toBe(64);
      expect(badEnv.stderr).toContain(`${name} must be 1, true, 0 or false`);
    }
  });

  it('reads its configuration from the environment, a flag winning', async () => {
    const dataDir = await tempDir();
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--conditions=@disarm/source',
        CLI_PATH,
        'serve',
        '--public-base-url=http://flag.example',
      ],
      {
        cwd: join(CLI_PATH, '..', '..'),
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          ...process.env,
          DISARM_PORT: '0',
          DISARM_STORAGE_PORT: '0',
          DISARM_DATA_DIR: dataDir,
          DISARM_WORKERS: '1',
          DISARM_PUBLIC_BASE_URL: 'http://env.example',
          DISARM_STORAGE_BASE_URL: 'http://storage.example/',
          DISARM_TEST_MODE: '1',
          // Off: it must not turn the outside issuer's admin switch on (nor need an issuer).
          DISARM_OAUTH_EXTERNAL_ALLOW_ADMIN: '0',
        },
      },
    );
    // Not left running if an assertion below fails.
    running.push({
      close: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        return Promise.resolve();
      },
    });
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    // The demo text is the last thing a start prints.
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', () => {
        if (stderr.includes('curl')) resolve();
      });
      child.once('exit', () => {
        reject(new Error(stderr));
      });
    });
    const line = stdout.split('\n').find((text) => text.includes('disarm serve listening'));
    const listening = JSON.parse(line ?? '{}') as Record<string, unknown>;
    expect(listening).toMatchObject({
      apiUrl: 'http://flag.example',
      storageUrl: 'http://storage.example',
      testMode: true,
    });
    // The demo key went to stderr, never to the JSON log.
    const key = /dsm_live_[0-9a-z]+/.exec(stderr)?.[0];
    expect(key).toBeDefined();
    expect(stderr).toContain(
      `curl -H "X-Api-Key: ${key}" -F file=@photo.png "http://flag.example/v1/documents?wait=true"`,
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stdout).not.toContain(key);
    expect(stdout).toContain('"msg":"stopped"');
  });
});

describe('startTestServer()', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('runs the real process: provisions, moves the clock, and exits 0 on SIGTERM', async () => {
    server = await startTestServer();
    expect(server.apiUrl).toMatch(/^http:\/\/localhost:\d+$/);
    expect(server.storageUrl).toMatch(/^http:\/\/localhost:\d+$/);
    expect(server.adminToken).toMatch(/^[0-9a-f]{64}$/);
    expect((await fetch(`${server.apiUrl}/healthz`)).status).toBe(200);

    const { organisationId, apiKey } = await server.createOrganisation('payg', {
      creditPence: 250,
      policy: { 'vba-macro': 'reject' },
    });
    expect(organisationId).toMatch(/^org_/);
    expect(apiKey).toMatch(/^dsm_live_/);
    const shown = await server.admin('org', 'show', `--org=${organisationId}`, '--json');
    expect(JSON.parse(shown.stdout)).toMatchObject({
      plan: 'payg',
      creditBalancePence: 250,
      policy: { 'vba-macro': 'reject' },
    });

    const first = await server.advanceClock(60_000);
    const second = await server.advanceClock(86_400_000);
    expect(second.getTime() - first.getTime()).toBe(86_400_000);

    expect(server.logs()).toContainEqual(
      expect.objectContaining({ msg: 'request', path: '/healthz', status: 200 }),
    );
    expect(server.stderr()).not.toContain(server.adminToken);
    expect(JSON.stringify(server.logs())).not.toContain(apiKey);
    const dataDir = server.dataDir;
    expect(await server.stop()).toBe(0);
    await expect(stat(dataDir)).rejects.toThrow();
  });
});
