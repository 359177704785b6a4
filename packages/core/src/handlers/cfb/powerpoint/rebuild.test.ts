/**
 * PowerPoint 97-2003 rebuild through the whole engine, on presentations LibreOffice exports and
 * then edited in code the way PowerPoint and attackers edit them. python-olefile and headless
 * LibreOffice judge the outputs independently.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

import {
  ACTIVE_CONTENT_SIGNATURES,
  buildCompoundFile,
  buildImage,
  buildOfficeDocument,
  clamscanVerdicts,
  buildVbaProject,
  insertRecord,
  nextPersistId,
  oleObjectStorage,
  pngBlip,
  olefileListing,
  PPT_RECORD,
  pptRecord,
  pptString,
  readPowerPoint,
  recordBody,
  seededRandom,
  withDocumentStream,
  withHeaderToken,
  writePowerPoint,
  convertWithLibreOffice,
} from '@disarm/fixtures';
import type { PowerPointModel } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { disarm } from '../../../disarm.ts';
import { scaledMs } from '@disarm/fixtures/time-budget';

// These tests run for minutes on a busy machine: one hang guard for the file, scaled by the
// machine's load when it starts, so that load makes them slower, never red.
vi.setConfig({ testTimeout: scaledMs(240_000) });

const REPO = resolve(import.meta.dirname, '..', '..', '..', '..', '..', '..');
const TEXTS = ['Quarterly numbers are up', 'Second slide speaks of costs'];
/** Text an older edit holds and the current edit replaced: it must never reach the output. */
const HIDDEN = 'HIDDEN-OLDER-EDIT-PAYLOAD';
const PACKAGE_SCRIPT = 'CreateObject("WScript.Shell").Run "calc.exe"';
const FILE_TARGET = 'file:///\\\\attacker.example\\share\\x.exe';
/** ClamAV signatures for the PowerPoint records no heuristic of its own names. */
const PPT_SIGNATURES = [
  // [MS-PPT] 2.10.34 ExOleObjStg record header, compressed or not.
  'Disarm.Ppt.ExOleObjStg:0:*:(00|10)001110',
  // [MS-PPT] 2.13.14 InteractiveInfoAtom whose action runs a program.
  'Disarm.Ppt.RunProgram:0:*:0000f30f10000000{8}02',
  // The file target, UTF-16 as a CString holds it.
  `Disarm.Ppt.FileHyperlink:0:*:${Buffer.from('file:///', 'utf16le').toString('hex')}`,
].join('\n');

let dir: string;
let deck: Buffer;

beforeAll(async () => {
  execFileSync('bash', [join(REPO, 'scripts', 'ensure-system-deps.sh')], { stdio: 'ignore' });
  dir = await mkdtemp(join(tmpdir(), 'ppt-rebuild-'));
  await writeFile(
    join(dir, 'deck.pptx'),
    await buildOfficeDocument('pptx', { texts: [...TEXTS, HIDDEN] }),
  );
  libreOffice('ppt', dir, [join(dir, 'deck.pptx')]);
  deck = await readFile(join(dir, 'deck.ppt'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function libreOffice(format: string, out: string, files: readonly string[]): void {
  convertWithLibreOffice({ to: format, outDir: out, files, profileDir: join(dir, 'profile') });
}

/** LibreOffice's text of each file, through PDF and pdftotext. */
async function libreOfficeText(files: Record<string, Uint8Array>): Promise<Record<string, string>> {
  const folder = await mkdtemp(join(dir, 'text-'));
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(folder, name), bytes);
  libreOffice(
    'pdf',
    folder,
    Object.keys(files).map((name) => join(folder, name)),
  );
  const texts: Record<string, string> = {};
  for (const name of await readdir(folder)) {
    if (!name.endsWith('.pdf')) continue;
    texts[name.replace(/\.pdf$/, '.ppt')] = execFileSync('pdftotext', [join(folder, name), '-'], {
      encoding: 'utf8',
    });
  }
  return texts;
}

async function cleaned(bytes: Uint8Array, fileName = 'deck.ppt'): Promise<Uint8Array> {
  const outcome = await disarm({ bytes, fileName });
  if (outcome.status !== 'cleaned') throw new Error(`${outcome.reason}: ${outcome.detail}`);
  return outcome.bytes;
}

/** The persist id of the object whose record holds `text` in UTF-16 or 8-bit form. */
function objectHolding(model: ReturnType<typeof readPowerPoint>, text: string): number {
  for (const [id, record] of model.objects) {
    if (
      record.includes(Buffer.from(text, 'latin1')) ||
      record.includes(Buffer.from(text, 'utf16le'))
    )
      return id;
  }
  throw new Error(`no object holds ${text}`);
}

/** `record` with every occurrence of `text` (8-bit and UTF-16) overwritten by `x` of equal length. */
function overwritten(record: Buffer, text: string): Buffer {
  let hex = record.toString('hex');
  for (const encoding of ['latin1', 'utf16le'] as const) {
    const from = Buffer.from(text, encoding).toString('hex');
    const to = Buffer.from('x'.repeat(text.length), encoding).toString('hex');
    hex = hex.split(from).join(to);
  }
  return Buffer.from(hex, 'hex');
}

/** A full save of `deck` with a VBA project: ExOleObjStg of the VBA storage, VBAInfoAtom naming it. */
function withVba(bytes: Uint8Array): Buffer {
  const model = readPowerPoint(bytes);
  const id = nextPersistId(model);
  model.objects.set(
    id,
    oleObjectStorage(buildVbaProject('Sub AutoOpen()\r\n  Shell "calc.exe"\r\nEnd Sub')),
  );
  const atom = recordBody(
    model.objects.get(model.docPersistIdRef) ?? Buffer.alloc(8),
    PPT_RECORD.vbaInfoAtom,
  );
  if (!atom) throw new Error('no VBAInfoAtom');
  // [MS-PPT] 2.4.11 VBAInfoAtom: persistIdRef, fHasMacros, version.
  atom.writeUInt32LE(id, 0);
  atom.writeUInt32LE(1, 4);
  return writePowerPoint(model);
}

/** A full save of `bytes` with `child` in a new ExObjList of the document ([MS-PPT] 2.4.14). */
function withExObject(bytes: Uint8Array, child: (model: PowerPointModel) => Buffer): Buffer {
  const model = readPowerPoint(bytes);
  const list = pptRecord(
    PPT_RECORD.exObjList,
    Buffer.concat([pptRecord(PPT_RECORD.exObjListAtom, Buffer.from([1, 0, 0, 0])), child(model)]),
    { container: true },
  );
  const doc = model.objects.get(model.docPersistIdRef) ?? Buffer.alloc(8);
  model.objects.set(model.docPersistIdRef, insertRecord(doc, [], list));
  return writePowerPoint(model);
}

/** An embedded OLE Package holding a script, as PowerPoint stores one: ExOleObjStg + container. */
function withEmbeddedObject(bytes: Uint8Array): Buffer {
  return withExObject(bytes, (model) => {
    const id = nextPersistId(model);
    const native = Buffer.from(`\u0000\u0000PAYLOAD.vbs\u0000${PACKAGE_SCRIPT}`);
    model.objects.set(id, oleObjectStorage(buildCompoundFile({ '\u0001Ole10Native': native })));
    // [MS-PPT] 2.10.12 ExOleObjAtom: drawAspect, type (0 embedded), exObjId, subType, persistIdRef.
    const atom = Buffer.alloc(24);
    atom.writeUInt32LE(1, 8);
    atom.writeUInt32LE(id, 16);
    return pptRecord(
      PPT_RECORD.exEmbed,
      Buffer.concat([
        pptRecord(PPT_RECORD.exEmbedAtom, Buffer.alloc(8)),
        pptRecord(PPT_RECORD.exOleObjAtom, atom, { instance: 1 }),
        pptString('Package', 2),
      ]),
      { container: true },
    );
  });
}

/** A hyperlink to a file on a share ([MS-PPT] 2.10.x ExHyperlinkContainer). */
function withFileHyperlink(bytes: Uint8Array): Buffer {
  return withExObject(bytes, () =>
    pptRecord(
      PPT_RECORD.exHyperlink,
      Buffer.concat([
        pptRecord(PPT_RECORD.exHyperlinkAtom, Buffer.from([2, 0, 0, 0])),
        pptString('report', 0),
        pptString(FILE_TARGET, 1),
      ]),
      { container: true },
    ),
  );
}

/** A full save of `deck` whose last shape on the first slide runs a program when clicked. */
function withRunProgram(bytes: Uint8Array): Buffer {
  const model = readPowerPoint(bytes);
  const slide =
    [...model.objects].find(([, record]) => record.readUInt16LE(2) === PPT_RECORD.slide)?.[0] ?? 0;
  const atom = Buffer.alloc(16);
  atom[8] = 2; // [MS-PPT] 2.13.14 action: run program
  const info = pptRecord(
    PPT_RECORD.interactiveInfo,
    pptRecord(PPT_RECORD.interactiveInfoAtom, atom),
    {
      container: true,
    },
  );
  const record = model.objects.get(slide) ?? Buffer.alloc(8);
  // [MS-PPT] 2.9.x: the action sits in the shape's OfficeArtClientData.
  const clientData = pptRecord(PPT_RECORD.clientData, info, { container: true });
  const path = [
    PPT_RECORD.ppDrawing,
    PPT_RECORD.dgContainer,
    PPT_RECORD.spgrContainer,
    PPT_RECORD.spContainer,
  ];
  model.objects.set(slide, insertRecord(record, path, clientData));
  return writePowerPoint(model);
}

describe('PowerPoint 97-2003 rebuild', () => {
  it('rebuilds a LibreOffice presentation into the three streams a presentation needs', async () => {
    const output = await cleaned(deck);
    const listing = olefileListing(output);
    expect(listing.issues).toEqual([]);
    expect(listing.entries.map((entry) => entry.path).sort()).toEqual(
      ['Current User', 'PowerPoint Document', 'Pictures'].filter((name) =>
        listing.entries.some((entry) => entry.path === name),
      ),
    );
    expect(listing.entries.map((entry) => entry.path)).not.toContain('\u0005SummaryInformation');
    // A rebuilt file rebuilds to itself: the layout is the writer's own.
    expect(Buffer.compare(Buffer.from(await cleaned(output)), Buffer.from(output))).toBe(0);
    const texts = await libreOfficeText({ 'in.ppt': deck, 'out.ppt': output });
    expect(texts['out.ppt']).toBe(texts['in.ppt']);
    expect(texts['out.ppt']).toContain(TEXTS[0]);
  });

  it('rebuilds an incremental save from its current edit only', async () => {
    const model = readPowerPoint(deck);
    const slide = objectHolding(model, HIDDEN);
    const record = model.objects.get(slide);
    if (!record) throw new Error('no object');
    // The fast save replaces the object (the document, whose slide list holds the text): the
    // old one stays in the stream, shadowed.
    model.objects.set(slide, overwritten(record, HIDDEN));
    const saved = writePowerPoint(model, { incremental: true, changed: new Set([slide]) });
    expect(
      saved.includes(Buffer.from(HIDDEN, 'latin1')) ||
        saved.includes(Buffer.from(HIDDEN, 'utf16le')),
    ).toBe(true);
    const outcome = await disarm({ bytes: saved, fileName: 'deck.ppt' });
    if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
    // Against the same presentation saved in full: one more edit removed.
    const full = await disarm({ bytes: writePowerPoint(model), fileName: 'deck.ppt' });
    if (full.status !== 'cleaned') throw new Error(full.detail);
    const hidden = (findings: typeof full.findings): number =>
      findings.find((finding) => finding.kind === 'hidden-data')?.count ?? 0;
    expect(hidden(outcome.findings)).toBe(hidden(full.findings) + 1);
    const output = Buffer.from(outcome.bytes);
    expect(output.includes(Buffer.from(HIDDEN, 'latin1'))).toBe(false);
    expect(output.includes(Buffer.from(HIDDEN, 'utf16le'))).toBe(false);
    const texts = await libreOfficeText({ 'in.ppt': saved, 'out.ppt': output });
    expect(texts['out.ppt']).toBe(texts['in.ppt']);
  });

  it.each([
    ['a VBA project', withVba, 'vba-macro'],
    ['an embedded OLE object', withEmbeddedObject, 'embedded-object'],
    ['an action that runs a program', withRunProgram, 'vba-macro'],
    ['a hyperlink to a file on a share', withFileHyperlink, 'external-relationship'],
  ])(
    'removes %s and keeps the slides',
    async (_name, build, kind) => {
      const input = build(deck);
      const outcome = await disarm({ bytes: input, fileName: 'deck.ppt' });
      if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
      expect(outcome.findings).toContainEqual({ kind, count: 1 });
      const listing = olefileListing(outcome.bytes);
      expect(listing.entries.map((entry) => entry.path).sort()).toEqual(
        ['Current User', 'PowerPoint Document', 'Pictures'].filter((name) =>
          listing.entries.some((entry) => entry.path === name),
        ),
      );
      expect(listing.entries).toHaveLength(
        listing.entries.filter((entry) => entry.kind === 'stream').length,
      );
      const folder = await mkdtemp(join(dir, 'clam-'));
      await writeFile(join(folder, 'in.ppt'), input);
      await writeFile(join(folder, 'out.ppt'), outcome.bytes);
      const signatures = join(dir, `${basename(folder)}.ndb`);
      await writeFile(signatures, `${ACTIVE_CONTENT_SIGNATURES}${PPT_SIGNATURES}\n`);
      const verdicts = clamscanVerdicts(folder, signatures);
      expect(verdicts['in.ppt']).toMatch(/^Disarm\.|Heuristics\.OLE2\.ContainsMacros/);
      expect(verdicts['out.ppt']).toBe('OK');
      const texts = await libreOfficeText({ 'in.ppt': input, 'out.ppt': outcome.bytes });
      expect(texts['out.ppt']).toBe(texts['in.ppt']);
    },
    120_000,
  );

  it('rebuilds or rejects every damage to the PowerPoint Document stream, never failing', async () => {
    const base = withVba(deck);
    const { stream } = readPowerPoint(base);
    const random = seededRandom(stream.length);
    const statuses = new Set<string>();
    for (let round = 0; round < 60; round += 1) {
      const damaged = Buffer.from(stream);
      for (let flip = 0; flip < 1 + Math.floor(random() * 3); flip += 1) {
        damaged[Math.floor(random() * damaged.length)] = Math.floor(random() * 256);
      }
      const outcome = await disarm({
        bytes: withDocumentStream(base, damaged),
        fileName: 'deck.ppt',
      });
      statuses.add(outcome.status);
      if (outcome.status === 'cleaned') {
        expect(
          olefileListing(outcome.bytes).entries.every((entry) => entry.kind === 'stream'),
        ).toBe(true);
      }
    }
    expect([...statuses].sort()).toEqual(['cleaned', 'rejected']);
  });

  it('rebuilds the pictures the picture store references and drops the others', async () => {
    const model = readPowerPoint(deck);
    const png = await buildImage('png', { width: 24, height: 24, exif: { Artist: HIDDEN } });
    const { blip, entry } = pngBlip(png, 0);
    // Bytes after the referenced picture that no entry names.
    const pictures = Buffer.concat([blip, Buffer.from(`unreferenced ${HIDDEN}`)]);
    const doc = model.objects.get(model.docPersistIdRef) ?? Buffer.alloc(8);
    const store = [PPT_RECORD.drawingGroup, PPT_RECORD.officeArtDgg, PPT_RECORD.officeArtBStore];
    model.objects.set(model.docPersistIdRef, insertRecord(doc, store, entry));
    const input = writePowerPoint(model, { pictures });
    const submitted = Buffer.from(input);
    const outcome = await disarm({ bytes: input, fileName: 'deck.ppt' });
    // The caller's bytes are read, never written: the same file again gives the same result.
    expect(Buffer.compare(input, submitted)).toBe(0);
    if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
    expect(outcome.findings).toContainEqual(expect.objectContaining({ kind: 'image-metadata' }));
    const kept = olefileListing(outcome.bytes).entries.find((item) => item.path === 'Pictures');
    const stream = Buffer.from(kept?.hex ?? '', 'hex');
    expect(stream.includes(Buffer.from(HIDDEN))).toBe(false);
    // One PNG picture record, its size what the store entry says.
    expect(stream.readUInt16LE(2)).toBe(0xf01e);
    expect(stream.readUInt32LE(4) + 8).toBe(stream.length);
    expect(stream.subarray(25, 33)).toEqual(png.subarray(0, 8));
    const texts = await libreOfficeText({ 'in.ppt': input, 'out.ppt': outcome.bytes });
    expect(texts['out.ppt']).toBe(texts['in.ppt']);
  });

  it('keeps the rebuilt pictures in picture store order, each entry pointing at its own', async () => {
    const model = readPowerPoint(deck);
    const widths = [96, 8, 40, 24];
    const blips: Buffer[] = [];
    const entries: Buffer[] = [];
    let offset = 0;
    for (const [index, width] of widths.entries()) {
      // The second picture is damaged: it is refused and its entry names no picture.
      const png =
        index === 1
          ? Buffer.from('\x89PNG\r\n\x1a\n not a picture', 'latin1')
          : await buildImage('png', { width, height: 16 });
      const { blip, entry } = pngBlip(png, offset);
      blips.push(blip);
      entries.push(entry);
      offset += blip.length;
    }
    let doc = model.objects.get(model.docPersistIdRef) ?? Buffer.alloc(8);
    const store = [PPT_RECORD.drawingGroup, PPT_RECORD.officeArtDgg, PPT_RECORD.officeArtBStore];
    for (const entry of entries) doc = insertRecord(doc, store, entry);
    model.objects.set(model.docPersistIdRef, doc);
    const outcome = await disarm({
      bytes: writePowerPoint(model, { pictures: Buffer.concat(blips) }),
      fileName: 'deck.ppt',
    });
    if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
    expect(outcome.findings).toContainEqual({ kind: 'hidden-data', count: 1 });
    const kept = olefileListing(outcome.bytes).entries.find((item) => item.path === 'Pictures');
    const stream = Buffer.from(kept?.hex ?? '', 'hex');
    // Each record's PNG width (IHDR, 16 bytes into the PNG after 8 + 16 + 1 bytes of record).
    const found: { offset: number; size: number; width: number }[] = [];
    for (let at = 0; at < stream.length; at += stream.readUInt32LE(at + 4) + 8) {
      const size = stream.readUInt32LE(at + 4) + 8;
      found.push({ offset: at, size, width: stream.readUInt32BE(at + 25 + 16) });
    }
    expect(found.map((picture) => picture.width)).toEqual([96, 40, 24]);
    // The store entries in order: [MS-ODRAW] 2.2.32 size at 20 and foDelay at 28 of the body.
    const written = readPowerPoint(outcome.bytes);
    const document = written.objects.get(written.docPersistIdRef) ?? Buffer.alloc(0);
    const named: [number, number][] = [];
    for (let at = 0; at + 8 <= document.length; at += 1) {
      if (document.readUInt16LE(at + 2) !== 0xf007 || document.readUInt32LE(at + 4) !== 36)
        continue;
      named.push([document.readUInt32LE(at + 8 + 28), document.readUInt32LE(at + 8 + 20)]);
    }
    const none = 0xffffffff;
    expect(named).toEqual([
      [found[0]?.offset, found[0]?.size],
      [none, 0],
      [found[1]?.offset, found[1]?.size],
      [found[2]?.offset, found[2]?.size],
    ]);
  });

  it('refuses an encrypted presentation as password_protected', async () => {
    const outcome = await disarm({
      bytes: withHeaderToken(deck, 0xf3d1c4df),
      fileName: 'deck.ppt',
    });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'password_protected' });
  });

  it('refuses an edit chain that runs forwards as invalid_file', async () => {
    const { stream, currentEditOffset } = readPowerPoint(deck);
    const looped = Buffer.from(stream);
    // UserEditAtom.offsetLastEdit naming the edit itself: a reader that follows it loops.
    looped.writeUInt32LE(currentEditOffset, currentEditOffset + 8 + 8);
    const outcome = await disarm({ bytes: withDocumentStream(deck, looped), fileName: 'deck.ppt' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/edit chain/);
  });

  it('refuses a persist directory pointing past the stream as invalid_file', async () => {
    const { stream, currentEditOffset } = readPowerPoint(deck);
    const broken = Buffer.from(stream);
    const directory = broken.readUInt32LE(currentEditOffset + 8 + 12);
    broken.writeUInt32LE(broken.length + 100, directory + 12);
    const outcome = await disarm({ bytes: withDocumentStream(deck, broken), fileName: 'deck.ppt' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/persist directory/);
  });

  it('refuses a record whose length runs past its container as invalid_file', async () => {
    const model = readPowerPoint(deck);
    const doc = model.objects.get(model.docPersistIdRef);
    const atom = doc && recordBody(doc, PPT_RECORD.vbaInfoAtom);
    if (!doc || !atom) throw new Error('no VBAInfoAtom');
    // The atom's recLen, in the header just before its body, made to run past the document.
    doc.writeUInt32LE(doc.length, atom.byteOffset - doc.byteOffset - 4);
    const outcome = await disarm({ bytes: writePowerPoint(model), fileName: 'deck.ppt' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
  });
});
