import { randomBytes } from 'node:crypto';
import { readFile, readlink } from 'node:fs/promises';
import { hostname } from 'node:os';

import type { ProcessIdentity } from '@disarm/protocol';

/*
 * Who runs this process, so that an Idempotency-Key claim left by a process that died is freed
 * at once (README "Idempotency"). An identity names the kernel instance (`boot`, a random id
 * per boot), the pid namespace (`pidns`, so pids of different containers are never compared),
 * the pid and the process's start time in clock ticks since boot (`start`, so a pid reused by
 * another process is not mistaken for the owner). The hostname is for the operator reading it.
 */

/** Longest identity accepted from a stored claim; ours is far shorter. */
const MAX_IDENTITY_CHARS = 512;
/** Field of `/proc/<pid>/stat` holding the start time (proc(5), counted from 1). */
const STAT_START_TIME_FIELD = 22;
/** Field of `/proc/<pid>/stat` holding the state (proc(5)). */
const STAT_STATE_FIELD = 3;

/** The parts of an identity that say whether two processes share a pid space. */
interface Identity {
  readonly boot: string;
  readonly pidns: string;
  readonly pid: number;
  readonly start: string;
}

function format(host: string, identity: Identity): string {
  return `host=${host};boot=${identity.boot};pidns=${identity.pidns};pid=${identity.pid};start=${identity.start}`;
}

function parse(text: string): Identity | undefined {
  if (text.length > MAX_IDENTITY_CHARS) return undefined;
  const fields = new Map<string, string>();
  for (const part of text.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) fields.set(part.slice(0, at), part.slice(at + 1));
  }
  const boot = fields.get('boot');
  const pidns = fields.get('pidns');
  const pid = Number(fields.get('pid'));
  const start = fields.get('start');
  if (!boot || !pidns || !start || !Number.isSafeInteger(pid) || pid < 1) return undefined;
  return { boot, pidns, pid, start };
}

/**
 * The state and start time of `pid` from `/proc/<pid>/stat`, or `undefined` when there is no
 * such process. The command name (field 2) may hold spaces and parentheses: the fields after it
 * are read from its last `)`.
 */
async function statOf(pid: number): Promise<{ state: string; start: string } | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const after = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // `after` starts at field 3.
  const state = after[STAT_STATE_FIELD - 3];
  const start = after[STAT_START_TIME_FIELD - 3];
  return state === undefined || start === undefined ? undefined : { state, start };
}

/**
 * This process's {@link ProcessIdentity}, read from `/proc` (Linux). Elsewhere, or when `/proc`
 * cannot be read, an identity no check can answer: claims are then freed by their lease alone.
 */
export async function createProcessIdentity(): Promise<ProcessIdentity> {
  const host = hostname();
  let own: Identity | undefined;
  try {
    const [boot, pidns, stat] = await Promise.all([
      readFile('/proc/sys/kernel/random/boot_id', 'utf8'),
      readlink('/proc/self/ns/pid'),
      statOf(process.pid),
    ]);
    if (stat !== undefined) {
      own = { boot: boot.trim(), pidns, pid: process.pid, start: stat.start };
    }
  } catch {
    own = undefined;
  }
  if (own === undefined) {
    const unknowable = `host=${host};pid=${process.pid};nonce=${randomBytes(8).toString('hex')}`;
    return { id: unknowable, isGone: () => Promise.resolve(false) };
  }
  const self = own;
  return {
    id: format(host, self),
    async isGone(id) {
      const other = parse(id);
      // Another kernel or pid namespace: its pids mean nothing here (the lease decides).
      if (other?.boot !== self.boot || other.pidns !== self.pidns) return false;
      const stat = await statOf(other.pid);
      // No such pid, a pid now another process's, or a process already dead (a zombie
      // waiting for its parent, `Z`, or one being reaped, `X`).
      return stat?.start !== other.start || stat.state === 'Z' || stat.state === 'X';
    },
  };
}
