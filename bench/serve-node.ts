/**
 * A `disarm serve` process started from source for a bench, on free ports, and the admin calls
 * that set up its organisation. Shared by the benches that measure the service end to end.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';

const REPO_DIR = resolve(import.meta.dirname, '..');
const CLI_SOURCE = join(REPO_DIR, 'packages', 'node', 'src', 'cli.ts');
/** A node that has not printed its API address by then is broken, not slow. */
const STARTUP_TIMEOUT_MS = 120_000;

/** A running `disarm serve`: its process and the address of its API. */
export interface ServeNode {
  readonly child: ChildProcess;
  readonly apiUrl: string;
}

/**
 * Starts `disarm serve` with `flags` (besides free ports, no demo and warn-level logs) and the
 * admin bearer token `adminToken`; resolves once it prints its API address.
 * @throws {Error} (rejected) when it exits or does not start within two minutes.
 */
export async function startServeNode(
  flags: readonly string[],
  adminToken: string,
): Promise<ServeNode> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--conditions=@disarm/source',
      CLI_SOURCE,
      'serve',
      ...flags,
      '--port=0',
      '--storage-port=0',
      '--no-demo',
      '--log-level=warn',
    ],
    {
      cwd: REPO_DIR,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DISARM_ADMIN_TOKEN: adminToken },
    },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const apiUrl = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`disarm serve did not start:\n${stderr}`));
    }, STARTUP_TIMEOUT_MS);
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const found = /API on (http:\/\/\S+),/.exec(stderr);
      if (found?.[1] !== undefined) {
        clearTimeout(timer);
        resolveUrl(found[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`disarm serve exited with ${String(code)}:\n${stderr}`));
    });
  });
  return { child, apiUrl };
}

/**
 * POSTs `body` to an admin route of the node with the admin token; its JSON answer.
 * @throws {Error} (rejected) for an answer that is not a success.
 */
export async function postAdmin(
  apiUrl: string,
  adminToken: string,
  path: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}
