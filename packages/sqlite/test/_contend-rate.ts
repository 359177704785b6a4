/**
 * A second process for the rate-limit contention test: opens the store at argv[2], prints
 * `ready`, waits for a line on stdin (so every process starts together), then hits the bucket
 * `org_a:submission` argv[3] times in one window as fast as it can and prints the counts it was
 * given as JSON. Run with `node --import tsx --conditions=@disarm/source`.
 */
import { once } from 'node:events';

import { createSqliteStore } from '../src/index.ts';

const [path, count] = process.argv.slice(2);
if (path === undefined || count === undefined) {
  throw new TypeError('usage: _contend-rate.ts <path> <count>');
}
const AT = new Date('2025-01-15T10:00:00.000Z');
const store = createSqliteStore({ path, busyTimeoutMs: 30_000 });
process.stdout.write('ready\n');
await once(process.stdin, 'data');
process.stdin.pause();
const counts: number[] = [];
for (let index = 0; index < Number(count); index += 1) {
  counts.push(await store.hitRateLimit('org_a:submission', AT, AT));
}
await store.close();
process.stdout.write(JSON.stringify({ counts }));
