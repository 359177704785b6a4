/**
 * Runs the disarm API inside an Express, Fastify or Hono app, next to the app's own `GET /hello`:
 *
 * ```sh
 * npx tsx --conditions=@disarm/source examples/src/main.ts express|fastify|hono
 * ```
 *
 * Environment: `PORT` (app, default 3000), `STORAGE_PORT` (storage origin, default 3001), `HOST`
 * (default 127.0.0.1), `DISARM_DATA_DIR` (default `.data/examples`). Stop it with Ctrl-C.
 */
import { createEmbeddedDisarm, listen, SHUTDOWN_GRACE_MS } from '@disarm/node';

import { closeServer, FRAMEWORKS, isFramework, listenOn, mountApp } from './mount.ts';

/** Signed upload links stay valid 60 minutes, so a slow staged upload may take that long. */
const STORAGE_REQUEST_TIMEOUT_MS = 60 * 60 * 1000;
/** `EX_USAGE` of sysexits(3). */
const EXIT_USAGE = 64;

const framework = process.argv[2];
if (!isFramework(framework)) {
  process.stderr.write(`usage: main.ts ${FRAMEWORKS.join('|')}\n`);
  process.exit(EXIT_USAGE);
}
const port = portFrom('PORT', 3000);
const storagePort = portFrom('STORAGE_PORT', 3001);
const host = process.env.HOST ?? '127.0.0.1';
const dataDir = process.env.DISARM_DATA_DIR ?? '.data/examples';

// The app and the storage origin listen where these say: the API puts them in every link.
const disarm = await createEmbeddedDisarm({
  dataDir,
  publicBaseUrl: `http://localhost:${port}`,
  storageBaseUrl: `http://localhost:${storagePort}`,
});
const storage = await listen(disarm.storage, {
  port: storagePort,
  hostname: host,
  requestTimeoutMs: STORAGE_REQUEST_TIMEOUT_MS,
}).catch(async (error: unknown) => {
  await disarm.close();
  throw error;
});
const app = await mountApp(framework, disarm);
const { server } = await listenOn(port, host, app.listener).catch(async (error: unknown) => {
  await storage.close();
  await disarm.close();
  throw error;
});
await disarm.start();

process.stdout.write(
  [
    `${framework} app:   ${disarm.apiUrl}/hello`,
    `disarm API:    ${disarm.apiUrl}/v1 (reference: ${disarm.apiUrl}/docs)`,
    `storage:       ${disarm.storageUrl}`,
    ...(disarm.demo ? [`demo API key:  ${disarm.demo.apiKey} (shown once)`] : []),
    '',
  ].join('\n'),
);

/** The port in environment variable `name`, or `fallback`; exits on anything but 1-65535. */
function portFrom(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined) return fallback;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < 1 || port > 65_535) {
    process.stderr.write(`${name} must be a port number from 1 to 65535 (got "${text}")\n`);
    process.exit(EXIT_USAGE);
  }
  return port;
}

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  // Stop accepting; requests in flight drain while the documents they wait for finish.
  const drained = Promise.all([
    closeServer(server, SHUTDOWN_GRACE_MS),
    storage.close({ graceMs: SHUTDOWN_GRACE_MS }),
  ]);
  await disarm.stop();
  await drained;
  await app.close();
  await disarm.close();
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stop();
  });
}
