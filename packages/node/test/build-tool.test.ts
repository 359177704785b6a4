/**
 * The build runs quietly on the Node floor: every `npm run build` (and so every `npm run serve`
 * and `npm test`) starts tsdown once per package, and tsdown 0.21 printed "Node.js v20… is
 * deprecated" on each start although the repository supports Node 20.19 and later.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Manifest {
  readonly version: string;
  readonly engines?: { readonly node?: string };
  readonly bin?: Record<string, string>;
}

async function manifestOf(path: string): Promise<Manifest> {
  return JSON.parse(await readFile(path, 'utf8')) as Manifest;
}

describe('the build tool', () => {
  it('supports the Node floor of the repository and starts without a warning', async () => {
    const root = await manifestOf(join(ROOT, 'package.json'));
    const tsdownManifest = createRequire(join(ROOT, 'package.json')).resolve('tsdown/package.json');
    const tsdown = await manifestOf(tsdownManifest);
    // Same floor, so the build never runs on a Node its tool has dropped.
    expect(tsdown.engines?.node).toBe(root.engines?.node);

    const cli = join(tsdownManifest, '..', tsdown.bin?.tsdown ?? 'missing');
    const child = spawn(process.execPath, [cli, '--version'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain(tsdown.version);
  });
});
