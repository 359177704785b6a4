import { readFileSync, writeFileSync } from 'node:fs';
import { disarm } from '@disarm/core';
const [input, n] = process.argv.slice(2);
const warm = readFileSync('.out/office-bench/docx-text-100-.docx');
await disarm({ bytes: warm, fileName: 'w.docx' });
const bytes = readFileSync(input);
for (let i = 0; i < Number(n ?? 3); i++) {
  const t = performance.now();
  const o = await disarm({ bytes, fileName: 'x.' + input.split('.').pop() }, { limits: { timeoutMs: 900000, maxBytes: 512*1024*1024 } });
  console.log(o.status, ((performance.now() - t)/1000).toFixed(3));
}
