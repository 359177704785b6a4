import { u16le, u32le } from '../../../_internal/bytes.ts';
import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import type { MetafileLimits } from '../../image/metafile/types.ts';
import type { EngineContext, HandlerOutput } from '../../types.ts';
import { VerifyFailure } from '../../types.ts';
import {
  ART,
  checkBlip,
  FBSE_CB_NAME_OFFSET,
  FBSE_DELAY_OFFSET,
  FBSE_FIXED_BYTES,
  FBSE_SIZE_OFFSET,
  isBlipType,
  NOT_DELAYED,
  readArtRecord,
} from '../office-art.ts';
import { neutraliseFields } from './fields.ts';
import { FC_LCB, fcLcb, parseFib } from './fib.ts';
import type { Fib } from './fib.ts';
import { clearObjectCharacters } from './objects.ts';
import { clearPictureSources } from './shapes.ts';
import {
  clearDrawingSources,
  DATA_ALIGNMENT,
  dataReferences,
  drawingBlipEntries,
  MM_SHAPE,
  PICF_BYTES,
} from './pictures.ts';

/**
 * Word 97-2003 checks of verify before release. The written compound file is read back from its
 * bytes by the strict reader (not by the writer that laid it out): every chain, the directory
 * and every stream must hold together; the root holds nothing but `WordDocument`, the table
 * stream the FIB names and `Data`, all of them streams; the FIB is a Word 97 FIB; no field in
 * the text has an instruction the rules refuse (EMBED and LINK included); no character is an
 * OLE object (`sprmCFOle2`, `sprmCFObj` in the character formatting pages); the macro tables and customisations are empty
 * and the attached template is blank. (The `cfb` package, the other reader at hand, accepts
 * broken chains and takes over a second on a 20 MB file; the tests judge outputs with it and
 * with python-olefile.)
 */
export function verifyWordBinary(output: HandlerOutput, context: EngineContext): Promise<void> {
  return Promise.resolve().then(() => {
    checkWordBinary(output, context);
  });
}

function checkWordBinary(output: HandlerOutput, context: EngineContext): void {
  let root;
  try {
    ({ root } = parseCompoundFile(output.bytes, {
      what: 'the written document',
      maxBytes: context.limits.maxBytes,
    }));
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    throw new VerifyFailure('cfb.container', error.message);
  }
  const streams = new Map<string, Uint8Array>();
  for (const entry of root.children) {
    if (entry.kind !== 'stream') {
      throw new VerifyFailure('cfb.entries', `the written file holds the storage "${entry.name}"`);
    }
    streams.set(entry.name, entry.content);
  }
  const word = streams.get('WordDocument');
  if (!word) throw new VerifyFailure('cfb.entries', 'the written file has no WordDocument stream');
  const fib = parseFib(word, 'the written document');
  const table = streams.get(fib.tableName);
  const allowed = new Set(['WordDocument', fib.tableName, 'Data']);
  const extra = [...streams.keys()].filter((name) => !allowed.has(name));
  if (!table || extra.length > 0) {
    throw new VerifyFailure(
      'cfb.entries',
      `the written file holds ${extra.join(', ') || `no ${fib.tableName}`}`,
    );
  }
  if (neutraliseFields(word, table, fib, 'the written document', false).removed.length > 0) {
    throw new VerifyFailure(
      'word.fields',
      'a field in the written document still fetches, runs or links',
    );
  }
  if (clearObjectCharacters(word, table, fib, 'the written document', false) > 0) {
    throw new VerifyFailure(
      'word.objects',
      'a character of the written document is still an OLE object',
    );
  }
  for (const index of [FC_LCB.cmds, FC_LCB.plcMcr, FC_LCB.sttbfMcr]) {
    if (fcLcb(word, fib, index).lcb !== 0) {
      throw new VerifyFailure('word.macros', 'the written document still points at macro tables');
    }
  }
  checkPictures(word, table, streams.get('Data') ?? new Uint8Array(0), fib, context.limits);
  const assoc = fcLcb(word, fib, FC_LCB.sttbfAssoc);
  for (let i = 0; assoc.lcb > 0 && i < 18; i += 1) {
    if (u16le(table, assoc.fc + 6 + i * 2) !== 0) {
      throw new VerifyFailure(
        'word.template',
        'the written document still names an attached template',
      );
    }
  }
}

/**
 * Every picture in the written document is one the rebuild wrote, read back from the bytes: the
 * Data stream is exactly the entries the characters point at, back to back on 4-byte
 * boundaries with zeros between, each a NilPICFAndBinData within its size or a PICF (MM_SHAPE)
 * followed by a shape and BLIP store entries with no name, each holding one picture that passes
 * {@link checkBlip}; every BLIP store entry of the drawings has no name, holds no picture itself,
 * and names either nothing or a picture in the WordDocument stream that passes it too.
 */
function checkPictures(
  word: Uint8Array,
  table: Uint8Array,
  data: Uint8Array,
  fib: Fib,
  limits: MetafileLimits,
): void {
  const fail = (detail: string): never => {
    throw new VerifyFailure('word.pictures', `the written document has ${detail}`);
  };
  const what = 'the written document';
  const kinds = new Map<number, boolean>();
  for (const reference of dataReferences(word, table, fib, what)) {
    const location = u32le(word, reference.operand);
    if (location >= data.length) continue;
    if ((kinds.get(location) ?? reference.binData) !== reference.binData) {
      fail(`a Data stream entry at ${location} read both as a picture and as field data`);
    }
    kinds.set(location, reference.binData);
  }
  let expected = 0;
  for (const [location, binData] of [...kinds].sort(([a], [b]) => a - b)) {
    const gap = data.subarray(expected, location);
    if (location < expected || gap.length >= DATA_ALIGNMENT || gap.some((byte) => byte !== 0)) {
      fail(`Data stream bytes at ${expected} that no character points at`);
    }
    const lcb = u32le(data, location);
    if (
      location + PICF_BYTES > data.length ||
      u16le(data, location + 4) !== PICF_BYTES ||
      lcb < PICF_BYTES ||
      location + lcb > data.length
    ) {
      fail(`a Data stream entry at ${location} that does not fit its stream`);
    }
    expected = location + lcb;
    if (binData) continue;
    if (u16le(data, location + 6) !== MM_SHAPE) {
      fail(`a picture at ${location} of the Data stream that is not an OfficeArt shape`);
    }
    const records = [];
    for (let at = location + PICF_BYTES; at < expected;) {
      const record = readArtRecord(data, at, expected, what);
      records.push(record);
      at = record.end;
    }
    const [shape, ...entries] = records;
    if (shape?.recType !== ART.spContainer) {
      return fail(`a picture at ${location} with no shape`);
    }
    if (clearPictureSources(data, { start: shape.offset, end: shape.end }, what, undefined) > 0) {
      fail(`a picture at ${location} of the Data stream that names or links its source`);
    }
    for (const entry of entries) {
      if (entry.recType !== ART.fbse || entry.end - entry.body < FBSE_FIXED_BYTES) {
        fail(`a record of type 0x${entry.recType.toString(16)} in a picture at ${location}`);
      }
      if (data[entry.body + FBSE_CB_NAME_OFFSET] !== 0) fail('a named picture');
      const blip = readArtRecord(data, entry.body + FBSE_FIXED_BYTES, entry.end, what);
      if (
        blip.end !== entry.end ||
        u32le(data, entry.body + FBSE_SIZE_OFFSET) !== blip.end - blip.offset
      ) {
        fail(
          `a BLIP store entry at ${entry.offset} of the Data stream whose size is not its picture's`,
        );
      }
      const fault = checkBlip(data, blip, limits);
      if (fault !== undefined) fail(`${fault} in the Data stream`);
    }
  }
  if (expected !== data.length)
    fail(`Data stream bytes from ${expected} that no character points at`);

  if (clearDrawingSources({ word, table, fib }, what, undefined) > 0) {
    fail('a shape in the drawings whose picture names or links its source');
  }
  for (const entry of drawingBlipEntries(word, table, fib, what)) {
    const nameEnd = entry.body + FBSE_FIXED_BYTES + (table[entry.body + FBSE_CB_NAME_OFFSET] ?? 0);
    if (
      nameEnd !== entry.end &&
      !(nameEnd < entry.end && table.subarray(nameEnd, entry.end).every((byte) => byte === 0))
    ) {
      fail('a BLIP store entry of the drawings that holds its picture');
    }
    if (table.subarray(entry.body + FBSE_FIXED_BYTES, nameEnd).some((byte) => byte !== 0)) {
      fail('a named picture in the drawings');
    }
    const size = u32le(table, entry.body + FBSE_SIZE_OFFSET);
    const delay = u32le(table, entry.body + FBSE_DELAY_OFFSET);
    if (size === 0 || delay === NOT_DELAYED) continue;
    const blip = readArtRecord(word, delay, Math.min(word.length, delay + size), what);
    if (blip.end !== delay + size || !isBlipType(blip.recType)) {
      fail(`a BLIP store entry whose picture at ${delay} is not the size it gives`);
    }
    const fault = checkBlip(word, blip, limits);
    if (fault !== undefined) fail(`${fault} in the WordDocument stream`);
  }
}
