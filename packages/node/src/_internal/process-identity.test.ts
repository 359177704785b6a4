import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { createProcessIdentity } from './process-identity.ts';

/** The start time (`/proc/<pid>/stat` field 22) of `pid`. */
function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

/** Our identity with another pid and start time: a process in our pid namespace. */
function identityOf(own: string, pid: number, start: string): string {
  return own.replace(/;pid=\d+;start=\d+$/, `;pid=${pid};start=${start}`);
}

describe.runIf(process.platform === 'linux')('createProcessIdentity()', () => {
  it('names this process by boot, pid namespace, pid and start time; it is not gone', async () => {
    const identity = await createProcessIdentity();
    expect(identity.id).toMatch(
      new RegExp(`^host=[^;]+;boot=[0-9a-f-]+;pidns=pid:\\[\\d+\\];pid=${process.pid};start=\\d+$`),
    );
    expect(await identity.isGone(identity.id)).toBe(false);
  });

  it('tells a process that ended, or whose pid now names another process, from a live one', async () => {
    const identity = await createProcessIdentity();
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    const pid = child.pid ?? 0;
    const start = startTimeOf(pid);
    const childIdentity = identityOf(identity.id, pid, start);
    expect(await identity.isGone(childIdentity)).toBe(false);
    // The same pid, started at another time: another process has it now.
    expect(await identity.isGone(identityOf(identity.id, pid, `${Number(start) + 1}`))).toBe(true);
    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(await identity.isGone(childIdentity)).toBe(true);
  });

  it('never calls gone what it cannot see: another kernel, pid namespace, or a foreign identity', async () => {
    const identity = await createProcessIdentity();
    const gone = identityOf(identity.id, 2 ** 22 + 1, '1');
    expect(await identity.isGone(gone)).toBe(true);
    expect(await identity.isGone(gone.replace(/boot=[^;]+/, 'boot=another-boot'))).toBe(false);
    expect(await identity.isGone(gone.replace(/pidns=[^;]+/, 'pidns=pid:[1]'))).toBe(false);
    for (const foreign of ['', 'api_x', 'host=a;pid=1;nonce=00', 'x'.repeat(10_000)]) {
      expect(await identity.isGone(foreign)).toBe(false);
    }
  });
});
