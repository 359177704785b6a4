/**
 * Test harness: a memory cgroup, so that the kernel's OOM killer — not the test — kills a process
 * that outgrows its limit, as it does on a host under memory pressure. cgroup v2 (`memory.max`)
 * where the unified hierarchy has the memory controller, else v1 (`memory.limit_in_bytes`); as
 * root only, or the test skips saying why.
 */
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import { join } from 'node:path';

const CGROUP_ROOT = '/sys/fs/cgroup';
const CGROUP_V1_MEMORY = join(CGROUP_ROOT, 'memory');

/** A memory cgroup; see {@link createMemoryCgroup}. */
export interface MemoryCgroup {
  /** `v2` or `v1`: which hierarchy it lives in. */
  readonly version: 'v1' | 'v2';
  /** Moves `pid` into the cgroup; its children are born there. */
  addProcess(pid: number): Promise<void>;
  /** Bytes the cgroup's processes are charged now (page cache included). */
  usageBytes(): Promise<number>;
  /** Sets the limit past which the kernel reclaims, then kills. */
  setLimit(bytes: number): Promise<void>;
  /** How many processes the OOM killer killed in it so far. */
  oomKills(): Promise<number>;
  /** Removes it (its processes must have exited); safe to call twice. */
  remove(): Promise<void>;
}

interface Layout {
  readonly version: 'v1' | 'v2';
  readonly parent: string;
  readonly limit: string;
  readonly usage: string;
  readonly events: string;
}

async function writable(path: string): Promise<boolean> {
  try {
    await access(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

async function layout(): Promise<Layout | undefined> {
  const controllers = await readFile(join(CGROUP_ROOT, 'cgroup.controllers'), 'utf8').catch(
    () => '',
  );
  if (controllers.split(/\s+/).includes('memory') && (await writable(CGROUP_ROOT))) {
    return {
      version: 'v2',
      parent: CGROUP_ROOT,
      limit: 'memory.max',
      usage: 'memory.current',
      events: 'memory.events',
    };
  }
  if (await writable(CGROUP_V1_MEMORY)) {
    return {
      version: 'v1',
      parent: CGROUP_V1_MEMORY,
      limit: 'memory.limit_in_bytes',
      usage: 'memory.usage_in_bytes',
      events: 'memory.oom_control',
    };
  }
  return undefined;
}

/**
 * Creates the memory cgroup `name` (unlimited until {@link MemoryCgroup.setLimit}), or resolves
 * why it cannot, for the test to skip with that reason.
 */
export async function createMemoryCgroup(
  name: string,
): Promise<MemoryCgroup | { readonly unavailable: string }> {
  if (process.platform !== 'linux') return { unavailable: 'memory cgroups need Linux' };
  if (process.getuid?.() !== 0) return { unavailable: 'creating a memory cgroup needs root' };
  const found = await layout();
  if (found === undefined) {
    return { unavailable: 'no writable memory cgroup hierarchy (v2 or v1) under /sys/fs/cgroup' };
  }
  const path = join(found.parent, name);
  try {
    await mkdir(path);
    // Fails where the controller exists but this process may not use it (a container).
    await readFile(join(path, found.limit), 'utf8');
  } catch (error) {
    await rmdir(path).catch(() => undefined);
    return { unavailable: `cannot create a memory cgroup: ${String(error)}` };
  }
  const read = async (file: string): Promise<string> => readFile(join(path, file), 'utf8');
  let removed = false;
  return {
    version: found.version,
    async addProcess(pid) {
      await writeFile(join(path, 'cgroup.procs'), String(pid));
    },
    async usageBytes() {
      return Number((await read(found.usage)).trim());
    },
    async setLimit(bytes) {
      await writeFile(join(path, found.limit), String(bytes));
    },
    async oomKills() {
      const match = /^oom_kill (\d+)$/m.exec(await read(found.events));
      return Number(match?.[1] ?? 0);
    },
    async remove() {
      if (removed) return;
      removed = true;
      await rmdir(path).catch(() => undefined);
    },
  };
}
