import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

import pg from 'pg';

const run = promisify(execFile);

/** Where Debian's `postgresql-15` puts the server binaries. */
export const POSTGRES_BIN_DIR = '/usr/lib/postgresql/15/bin';

/** The cluster's owner when the tests run as root: PostgreSQL refuses to run as root. */
const SYSTEM_USER = 'postgres';

/** How long `pg_ctl` waits for the server to start or stop: 60 s on a loaded machine. */
const PG_CTL_WAIT_S = 60;

/** A PostgreSQL server started for tests; {@link TemporaryCluster.stop} removes every trace. */
export interface TemporaryCluster {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication, loopback only). */
  readonly url: string;
  readonly port: number;
  /** Creates a database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /**
   * Stops the server at once, as a crash or a failover does (`pg_ctl stop -m immediate`), keeping
   * its data: open connections break and new ones are refused until {@link resume}. What it had
   * acknowledged survives, as on a server with `synchronous_commit` on (this cluster runs it off,
   * so the write-ahead log is flushed first).
   */
  interrupt(): Promise<void>;
  /** Starts the server again, on the same port and data, after {@link interrupt}. */
  resume(): Promise<void>;
  /** Stops the server at once and deletes its data directory. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

/**
 * Starts a throwaway PostgreSQL 15 cluster on loopback: `initdb` into a temporary folder, then
 * `pg_ctl start` on a free port with the Unix socket in that folder. Durability is off (`fsync`,
 * `synchronous_commit`): the data is thrown away, and the tests judge behaviour, not disks.
 * As root, the server runs as the `postgres` system user (`runuser`), which owns the folder.
 *
 * @example
 * ```ts
 * const cluster = await startTemporaryCluster();
 * const url = await cluster.createDatabase('contract');
 * // … tests …
 * await cluster.stop();
 * ```
 * @throws {Error} when the Debian `postgresql` package is missing or the server does not start.
 */
export async function startTemporaryCluster(): Promise<TemporaryCluster> {
  const root = await mkdtemp(join(tmpdir(), 'disarm-pg-'));
  const asRoot = process.getuid?.() === 0;
  const exec = async (command: string, args: readonly string[]): Promise<void> => {
    const binary = join(POSTGRES_BIN_DIR, command);
    await (asRoot
      ? run('runuser', ['-u', SYSTEM_USER, '--', binary, ...args])
      : run(binary, [...args]));
  };
  const data = join(root, 'data');
  try {
    if (asRoot) {
      const { stdout } = await run('id', ['-u', SYSTEM_USER]);
      const { stdout: group } = await run('id', ['-g', SYSTEM_USER]);
      await chown(root, Number(stdout.trim()), Number(group.trim()));
    }
    await exec('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--no-sync',
    ]);
    const port = await freePort();
    const settings = [
      `-p ${port}`,
      '-h 127.0.0.1',
      `-k ${root}`,
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
    ].join(' ');
    const start = (): Promise<void> =>
      exec('pg_ctl', [
        'start',
        '-D',
        data,
        '-w',
        '-t',
        String(PG_CTL_WAIT_S),
        '-l',
        join(root, 'server.log'),
        '-o',
        settings,
      ]);
    await start();
    const stopAtOnce = (): Promise<void> =>
      exec('pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w', '-t', String(PG_CTL_WAIT_S)]);
    const base = `postgres://postgres@127.0.0.1:${port}`;
    return {
      url: `${base}/postgres`,
      port,
      async createDatabase(name) {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) {
          throw new TypeError('createDatabase: `name` must be a lower-case identifier');
        }
        const client = new pg.Client({ connectionString: `${base}/postgres` });
        await client.connect();
        try {
          await client.query(`CREATE DATABASE ${name}`);
        } finally {
          await client.end();
        }
        return `${base}/${name}`;
      },
      async interrupt() {
        const client = new pg.Client({ connectionString: `${base}/postgres` });
        await client.connect();
        try {
          await client.query('CHECKPOINT');
        } finally {
          await client.end();
        }
        await stopAtOnce();
      },
      resume: start,
      async stop() {
        await stopAtOnce().catch(() => undefined);
        await rm(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await exec('pg_ctl', ['stop', '-D', data, '-m', 'immediate']).catch(() => undefined);
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}
