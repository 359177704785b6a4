import { createServer } from 'node:http';
import { createListener, sendResponse } from './dist/index.mjs';
import { bufferedResponse } from '@disarm/protocol';
const mode = process.argv[2];
const obj = { id: 'doc_x', status: 'completed', outcome: 'cleaned', fileName: 'x.png', links: { self: 'http://localhost/v1/documents/doc_x' } };
const bytes = Buffer.from(JSON.stringify(obj));
const hdrs = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', vary: 'Accept', 'ratelimit-policy': '"status-reads";q=1000;w=60', ratelimit: '"status-reads";r=999;t=30' };
let handler;
if (mode === 'bare') handler = (req, res) => { res.writeHead(200, { ...hdrs, 'content-length': bytes.length }); res.end(bytes); };
if (mode === 'json') handler = async (req, res) => { await Promise.resolve(); await sendResponse(res, bufferedResponse(JSON.stringify(obj), { headers: hdrs })); };
if (mode === 'listener') handler = createListener(async (request) => { request.headers.get('x-api-key'); return bufferedResponse(JSON.stringify(obj), { headers: hdrs }); }, { baseUrl: 'http://localhost' });
class BR extends Request { constructor(u, i) { super(u, i); } get signal() { return undefined; } }
if (mode === 'close') handler = async (req, res) => { res.once('close', () => { if (!res.writableFinished) console.log('x'); }); await Promise.resolve(); await sendResponse(res, bufferedResponse(JSON.stringify(obj), { headers: hdrs })); };
if (mode === 'urlhdr') handler = async (req, res) => { const origin = new URL('http://localhost').origin; const url = new URL(origin + req.url); const h = new Headers(); const raw = req.rawHeaders; for (let i = 0; i < raw.length; i += 2) h.append(raw[i], raw[i + 1]); h.get('x-api-key'); await Promise.resolve(); await sendResponse(res, bufferedResponse(JSON.stringify(obj), { headers: hdrs })); };
if (mode === 'req') handler = async (req, res) => { const h = new Headers(); const raw = req.rawHeaders; for (let i = 0; i < raw.length; i += 2) h.append(raw[i], raw[i + 1]); const r = new BR('http://localhost' + req.url, { method: req.method, headers: h }); r.headers.get('x-api-key'); await Promise.resolve(); await sendResponse(res, bufferedResponse(JSON.stringify(obj), { headers: hdrs })); };
createServer(handler).listen(Number(process.argv[3]));
