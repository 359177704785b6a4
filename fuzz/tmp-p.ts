import { readFileSync } from 'node:fs';
import { disarm } from '@disarm/core';
const bytes = readFileSync(process.argv[2]!);
const a = await disarm({ bytes, fileName: process.argv[3]! }, { renderers: [] });
console.log(a.status, a.status === 'cleaned' ? a.findings : a);
if (a.status === 'cleaned') { console.log(Buffer.from(a.bytes).toString('latin1'));
const b = await disarm({ bytes: a.bytes, fileName: a.fileName }, { renderers: [] });
console.log(b.status, b.status === 'cleaned' ? b.findings : b);
if (b.status === 'cleaned') console.log(Buffer.from(b.bytes).toString('latin1')); }
