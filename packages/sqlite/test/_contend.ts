/**
 * A second process for the contention tests: opens the store at argv[2], prints `ready`, waits for
 * a line on stdin (so every process starts together), then submits argv[4] documents (ids from
 * argv[3]) for organisation `org_a` as fast as it can, leasing one document after each, and
 * prints the result kinds and the leased ids as JSON. Run with
 * `node --import tsx --conditions=@disarm/source`.
 */
import { once } from 'node:events';

import { createSqliteStore } from '../src/index.ts';
import { rawDocument } from './_documents.ts';

const [path, first, count] = process.argv.slice(2);
if (path === undefined || first === undefined || count === undefined) {
  throw new TypeError('usage: _contend.ts <path> <first-index> <count>');
}
const AT = new Date('2025-01-15T10:00:00.000Z');
const store = createSqliteStore({ path, busyTimeoutMs: 30_000 });
process.stdout.write('ready\n');
await once(process.stdin, 'data');
process.stdin.pause();
const kinds: string[] = [];
const leased: string[] = [];
for (let index = Number(first); index < Number(first) + Number(count); index += 1) {
  const result = await store.acceptDocument(rawDocument(`doc_${index}`, `intake/${index}`), AT);
  kinds.push(result.kind);
  const document = await store.leaseDocument(`worker-${first}`, AT, 60_000);
  if (document !== undefined) leased.push(document.id);
}
await store.close();
process.stdout.write(JSON.stringify({ kinds, leased }));
