import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { buildOdt, buildWordDocument } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { formatForFileName } from '../../formats.ts';
import { checkOdfStream } from '../odf/part-check.ts';
import { rebuildOdf } from '../odf/rebuild.ts';
import { verifyOdf } from '../odf/verify.ts';
import { rebuildOoxml } from '../ooxml/rebuild.ts';
import { checkXmlPart } from '../ooxml/part-check.ts';
import { verifyOoxml } from '../ooxml/verify.ts';
import type { DetectedFile, PartCheckResult } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { cleaned, engineContext } from '../../test-support.ts';
import { sha256Hex } from '../../_internal/bytes.ts';
import { startPartCheck, WORKER_OPTIONS } from './part-checks.ts';
import type { PartCheckKind, PartCheckSession, PartReport } from './part-checks.ts';
import { openZip, readMember } from '../../_internal/zip-reader.ts';

/** The worker as the package ships it (`npm test` builds before it tests). */
const BUILT_WORKER = fileURLToPath(new URL('../../../dist/check-worker.mjs', import.meta.url));

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

const documentXml = (body: string): Buffer =>
  Buffer.from(
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="${W}" xmlns:r="${R}"><w:body>${body}</w:body></w:document>`,
  );

function session(name = '/word/document.xml', kind: PartCheckKind = 'ooxml-xml'): PartCheckSession {
  const started = startPartCheck(kind, name);
  if (!started) throw new Error('check workers must start here');
  return started;
}

/** A worker's verdict on `bytes` handed on in chunks of `size`. */
async function verdict(bytes: Uint8Array, size: number): Promise<PartCheckResult> {
  const check = session();
  for (let at = 0; at < bytes.length; at += size) await check.write(bytes.subarray(at, at + size));
  check.end();
  return check.result;
}

/** The local check's verdict on the same bytes, in the worker's terms. */
function localVerdict(
  bytes: Uint8Array,
  check: (bytes: Uint8Array) => PartReport = (part) => checkXmlPart(part, '/word/document.xml'),
): PartCheckResult {
  try {
    const report = check(bytes);
    return {
      status: 'checked',
      size: bytes.length,
      sha256: sha256Hex(bytes),
      references: report.references,
    };
  } catch (error) {
    if (!(error instanceof VerifyFailure)) throw error;
    return { status: 'failed', check: error.check, message: error.message };
  }
}

describe('part checks in worker threads', () => {
  const parts: Record<string, Buffer> = {
    benign: documentXml(
      '<w:p><w:hyperlink r:id="rId7"><w:r><w:t>Grüße, 東京 🎉</w:t></w:r></w:hyperlink></w:p>',
    ),
    ole: documentXml('<w:p><w:r><w:object><w:objectEmbed r:id="rId2"/></w:object></w:r></w:p>'),
    field: documentXml('<w:p><w:fldSimple w:instr=" INCLUDETEXT &quot;http://x/a&quot; "/></w:p>'),
    malformed: documentXml('<w:p><w:r></w:p>'),
    doctype: Buffer.from(`<!DOCTYPE d [<!ENTITY e "x">]><w:document xmlns:w="${W}"/>`),
    utf16: Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`<w:document xmlns:w="${W}"><w:body><w:p/></w:body></w:document>`, 'utf16le'),
    ]),
  };

  it.each(Object.keys(parts))(
    'reaches the verdict the main thread reaches on the %s part, whatever the chunk boundaries',
    async (kind) => {
      const bytes = parts[kind] ?? Buffer.alloc(0);
      const expected = localVerdict(bytes);
      // One byte at a time splits every multi-byte character and the byte-order mark.
      for (const size of [1, 3, 64, bytes.length]) {
        expect(await verdict(bytes, size), `chunks of ${size}`).toEqual(expected);
      }
    },
  );

  it('reports the hash and size of what it parsed, and the relationship ids the part names', async () => {
    const bytes = parts.benign ?? Buffer.alloc(0);
    const result = await verdict(bytes, 100);
    expect(result).toMatchObject({
      status: 'checked',
      size: bytes.length,
      sha256: sha256Hex(bytes),
    });
    expect(result.status === 'checked' && [...result.references]).toEqual([
      ['rId7', 'w:hyperlink'],
    ]);
  });

  it('checks a part larger than the high-water mark without losing a chunk', async () => {
    const body = '<w:p><w:r><w:t>text text text</w:t></w:r></w:p>'.repeat(400_000);
    const bytes = documentXml(`${body}<w:p><w:r><w:object><w:objectEmbed/></w:object></w:r></w:p>`);
    expect(bytes.length).toBeGreaterThan(16 * 1024 * 1024);
    expect(await verdict(bytes, 256 * 1024)).toMatchObject({
      status: 'failed',
      check: 'ooxml.active-content',
    });
  });

  it.skipIf(!existsSync(BUILT_WORKER))(
    'the built worker starts whatever options the process was started with (`node --input-type=module -e`)',
    () => {
      // A worker inherits its parent's command line unless told otherwise; `--input-type` stops
      // a worker module from loading.
      const script = [
        "import { Worker } from 'node:worker_threads';",
        `const worker = new Worker(new URL(${JSON.stringify(pathToFileURL(BUILT_WORKER).href)}), ${JSON.stringify(WORKER_OPTIONS)});`,
        "worker.on('error', (error) => { process.stdout.write(error.message); process.exit(1); });",
        "worker.on('message', (reply) => { if (reply.type === 'done') { process.stdout.write(reply.result.status); process.exit(0); } });",
        "worker.postMessage({ type: 'start', id: 1, kind: 'ooxml-xml', name: '/a.xml' });",
        "worker.postMessage({ type: 'chunk', id: 1, bytes: new TextEncoder().encode('<a/>') });",
        "worker.postMessage({ type: 'end', id: 1 });",
      ].join('\n');
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.stdout).toBe('checked');
    },
  );

  it('gives no verdict on an aborted part, and keeps serving the next', async () => {
    const aborted = session();
    await aborted.write(documentXml('<w:p/>').subarray(0, 20));
    aborted.abort();
    await expect(aborted.result).rejects.toThrow(/aborted/);
    expect(await verdict(parts.benign ?? Buffer.alloc(0), 50)).toMatchObject({ status: 'checked' });
  });
});

describe('ODF stream checks in worker threads', () => {
  const NS =
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:field="urn:openoffice:names:experimental:ooo-ms-interop:xmlns:field:1.0" xmlns:xforms="http://www.w3.org/2002/xforms"';
  const fieldmark = (code: string): string =>
    `<text:p><field:fieldmark-start text:name="F" field:type="vnd.oasis.opendocument.field.UNHANDLED"><field:param field:name="vnd.oasis.opendocument.field.code" field:value="${code}"/></field:fieldmark-start><field:fieldmark-separator/>result<field:fieldmark-end/></text:p>`;
  const content = (body: string): Buffer =>
    Buffer.from(
      `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NS}><office:body><office:text>${body}</office:text></office:body></office:document-content>`,
    );
  const streams: Record<string, Buffer> = {
    benign: content(
      '<text:p>Grüße <text:a xlink:href="https://example.com/">link</text:a></text:p><draw:frame><draw:image xlink:href="Pictures/a.png"/></draw:frame>',
    ),
    scriptUrl: content(
      '<text:p><text:a xlink:href="vnd.sun.star.script:Standard.Module1.Main?language=Basic">x</text:a></text:p>',
    ),
    listeners: content('<office:event-listeners/><text:p/>'),
    fileLink: content('<text:p><text:a xlink:href="file:///etc/passwd">x</text:a></text:p>'),
    activeField: content(fieldmark('DDEAUTO cmd &quot;/c calc&quot;')),
    safeField: content(fieldmark('PAGEREF _Toc1 \\h')),
    xformsUrl: content(
      '<office:forms><xforms:model><xforms:instance src="http://attacker.example/d.xml"/></xforms:model></office:forms>',
    ),
    malformed: content('<text:p>'),
  };

  it.each(Object.keys(streams))(
    'reaches the verdict the main thread reaches on the %s stream, whatever the chunk boundaries',
    async (kind) => {
      const bytes = streams[kind] ?? Buffer.alloc(0);
      const expected = localVerdict(bytes, (part) => checkOdfStream(part, 'content.xml'));
      for (const size of [1, 7, bytes.length]) {
        const check = session('content.xml', 'odf-xml');
        for (let at = 0; at < bytes.length; at += size) {
          await check.write(bytes.subarray(at, at + size));
        }
        check.end();
        expect(await check.result, `chunks of ${size}`).toEqual(expected);
      }
      if (kind === 'activeField' || kind === 'xformsUrl') {
        expect(expected).toMatchObject({ status: 'failed', check: 'odf.active-content' });
      }
      if (kind === 'safeField') expect(expected).toMatchObject({ status: 'checked' });
      if (kind === 'benign') {
        expect(expected).toMatchObject({
          references: new Map([['Pictures/a.png', 'Pictures/a.png']]),
        });
      }
    },
  );

  it('the rebuild of a long text has content.xml checked by a worker, and verify takes it', async () => {
    const texts = Array.from({ length: 20_000 }, (_, i) => `paragraph ${i} of the long text`);
    const input = await buildOdt({ texts, scripts: true, basic: true });
    const format = formatForFileName('a.odt');
    if (!format) throw new Error('odt is allowlisted');
    const output = await rebuildOdf({ bytes: input, fileName: 'a.odt', format }, engineContext());
    const listing = await openZip(output.bytes, 100);
    const member = listing.members.find((m) => m.name === 'content.xml');
    if (!member) throw new Error('no content.xml');
    const written = await readMember(listing, member, 1 << 26, member.name);
    listing.file.close();
    expect(written.length).toBeGreaterThan(256 * 1024);
    expect(await output.checkedParts?.get('content.xml')).toMatchObject({
      status: 'checked',
      size: written.length,
      sha256: sha256Hex(written),
    });
    const verdicts = output.checkedParts;
    await expect(
      verifyOdf(
        verdicts ? { bytes: output.bytes, findings: [], checkedParts: verdicts } : output,
        { bytes: input, fileName: 'a.odt', format },
        engineContext(),
      ),
    ).resolves.toBeUndefined();
    // A verdict on other bytes fails verify.
    const other = session('content.xml', 'odf-xml');
    await other.write(
      Buffer.from(Buffer.from(written).toString().replace('paragraph 7 ', 'paragraph X ')),
    );
    other.end();
    await expect(
      verifyOdf(
        {
          bytes: output.bytes,
          findings: [],
          checkedParts: new Map([['content.xml', other.result]]),
        },
        { bytes: input, fileName: 'a.odt', format },
        engineContext(),
      ),
    ).rejects.toMatchObject({ check: 'odf.zip' });
  });
});

describe("verify before release and the workers' verdicts", () => {
  const verifyCheck = async (
    bytes: Uint8Array,
    checkedParts?: ReadonlyMap<string, Promise<PartCheckResult>>,
  ): Promise<string> => {
    try {
      await verifyOoxml(
        checkedParts ? { bytes, findings: [], checkedParts } : { bytes, findings: [] },
        {} as DetectedFile,
        engineContext(),
      );
      return 'passed';
    } catch (error) {
      if (error instanceof VerifyFailure) return error.check;
      throw error;
    }
  };

  it('the rebuild has every XML part of more than one chunk checked by a worker while it is written', async () => {
    // A document part of about 2 MB (several 256 KB chunks); its other parts are one chunk.
    const texts = Array.from({ length: 20_000 }, (_, i) => `paragraph ${i} of the long document`);
    const input = await buildWordDocument('docx', { texts, dde: true, vba: true });
    const format = formatForFileName('a.docx');
    if (!format) throw new Error('docx is allowlisted');
    const output = await rebuildOoxml(
      { bytes: input, fileName: 'a.docx', format },
      engineContext(),
    );
    const listing = await openZip(output.bytes, 100);
    const checked: string[] = [];
    try {
      for (const member of listing.members) {
        const written = await readMember(listing, member, 1 << 26, member.name);
        const result = await output.checkedParts?.get(member.name.toLowerCase());
        if (written.length <= 256 * 1024) {
          // Left to verify on the main thread.
          expect(result, member.name).toBeUndefined();
          continue;
        }
        checked.push(member.name);
        expect(result, member.name).toEqual({
          status: 'checked',
          size: written.length,
          sha256: sha256Hex(written),
          references: expect.any(Map) as unknown,
        });
      }
    } finally {
      listing.file.close();
    }
    expect(checked).toEqual(['word/document.xml']);
    expect(await verifyCheck(output.bytes, output.checkedParts)).toBe('passed');
  });

  it('takes a verdict only for the very bytes in the package, and checks the part itself where there is none', async () => {
    const input = await buildWordDocument('docx', { texts: ['one', 'two'] });
    const { bytes } = cleaned(await disarm({ bytes: input, fileName: 'a.docx' }));
    const listing = await openZip(bytes, 100);
    const member = listing.members.find((m) => m.name === 'word/document.xml');
    if (!member) throw new Error('no document part');
    const written = await readMember(listing, member, 1 << 26, member.name);
    listing.file.close();
    const on = async (part: Uint8Array): Promise<Map<string, Promise<PartCheckResult>>> => {
      const check = session();
      await check.write(part);
      check.end();
      return new Map([['word/document.xml', check.result]]);
    };

    expect(await verifyCheck(bytes, await on(written))).toBe('passed');
    // A verdict on other bytes, even harmless ones, is not a verdict on this part.
    const other = Buffer.from(Buffer.from(written).toString().replace('>one<', '>uno<'));
    expect(await verifyCheck(bytes, await on(other))).toBe('ooxml.zip');
    // The worker's failure decides, whatever the main thread would have found.
    const withOle = Buffer.from(
      Buffer.from(written)
        .toString()
        .replace('<w:body>', '<w:body><w:p><w:r><w:object><w:objectEmbed/></w:object></w:r></w:p>'),
    );
    expect(await verifyCheck(bytes, await on(withOle))).toBe('ooxml.active-content');
    // No verdict (the worker broke, or none was reached): the part is checked here.
    const broken = Promise.reject(new Error('the check worker is gone'));
    broken.catch(() => undefined);
    expect(await verifyCheck(bytes, new Map([['word/document.xml', broken]]))).toBe('passed');
    // A worker that never answers holds verify no longer than the file's deadline.
    const never = new Promise<PartCheckResult>(() => undefined);
    const started = Date.now();
    await expect(
      verifyOoxml(
        { bytes, findings: [], checkedParts: new Map([['word/document.xml', never]]) },
        {} as DetectedFile,
        engineContext(300),
      ),
    ).rejects.toMatchObject({ code: 'ERR_TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
