import { createEmbeddedDisarm } from './dist/index.mjs';
import { rmSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
rmSync('/tmp/prof/inproc', { recursive: true, force: true });
const token = 'x'.repeat(40);
const d = await createEmbeddedDisarm({ dataDir: '/tmp/prof/inproc', publicBaseUrl: 'http://localhost:1', storageBaseUrl: 'http://localhost:2', adminTokenHashes: [createHash('sha256').update(token).digest('hex')], demo: false, processing: true, workers: 1 });
const admin = (path, body) => d.api(new Request('http://localhost:1' + path, { method: 'POST', headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).then((r) => r.json());
await d.start(); const org = await admin('/v1/admin/organisations', { name: 'b', plan: 'internal', terms: { rateLimitPerMinute: 100000000 } });
const key = (await admin(`/v1/admin/organisations/${org.id}/keys`, { name: 'k' })).key;
console.log('key', !!key); const fd = new FormData(); fd.append('file', new Blob([readFileSync('/tmp/prof/x.png')]), 'x.png');
const doc = await (await d.api(new Request('http://localhost:1/v1/documents?wait=true', { method: 'POST', headers: { 'X-Api-Key': key }, body: fd }))).json();
console.log(doc.status, doc.id);
const reqs = { status: new Request('http://localhost:1/v1/documents/' + doc.id, { headers: { 'X-Api-Key': key } }), account: new Request('http://localhost:1/v1/account', { headers: { 'X-Api-Key': key } }) };
for (let r = 0; r < 6; r++) for (const [name, req] of Object.entries(reqs).filter(([n]) => n === 'status')) {
  const n = 20000; const t = process.hrtime.bigint(); let p = [];
  for (let i = 0; i < n; i++) { p.push(d.api(req).then((x) => { if (x.status !== 200) throw new Error(String(x.status)); return x; })); if (p.length === 16) { await Promise.all(p); p = []; await new Promise((res) => setImmediate(res)); } }
  await Promise.all(p);
  console.log(name, (Number(process.hrtime.bigint() - t) / n / 1000).toFixed(1), 'us/req');
}
process.exit(0);
