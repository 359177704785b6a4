import { u16le, u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import type { FindingKind } from '../../../findings.ts';
import { classifyField } from '../../office/fields.ts';
import { FC_LCB, fcLcb } from './fib.ts';
import type { Fib } from './fib.ts';

/** [MS-DOC] 2.8.25 field characters in the text: begin, separator, end. */
const FIELD_BEGIN = 0x13;
const FIELD_SEPARATOR = 0x14;
const FIELD_END = 0x15;
/** [MS-DOC] 2.9.91 grffldEnd bits. */
const GRFFLD_ZOMBIE_EMBED = 0x02;
const GRFFLD_RESULT_DIRTY = 0x04;
const GRFFLD_LOCKED = 0x10;
/** [MS-DOC] 2.9.177 Pcd.fc: bit 30 marks 8-bit (compressed) text. */
const FC_COMPRESSED = 0x40000000;
const FC_MASK = 0x3fffffff;
/** [MS-DOC] 2.9.38 Clx: a Prc (formatting) or the Pcdt (piece table). */
const CLX_PRC = 0x01;
const CLX_PCDT = 0x02;
const PCD_BYTES = 8;
/** Fields nested inside one another; Word itself stops at 20 levels. */
export const MAX_WORD_FIELD_DEPTH = 64;
/** Instruction characters judged per field; a keyword is at its start. */
const MAX_INSTRUCTION_CHARS = 4096;
/** Stands in a field's instruction for a nested field that computes part of it. */
const NESTED_MARK = '\u0013';
/**
 * [MS-DOC] 2.9.158: an EMBED field's result is the embedded object, whose storage is in
 * `ObjectPool`; its finding is the object's.
 */
const EMBED_FIELD = /^\s*EMBED\b/i;

/** [MS-DOC] 2.4.1: the PlcFld of each sub-document, in the order of the sub-documents' text. */
const FIELD_PLCS = [
  FC_LCB.plcfFldMom,
  FC_LCB.plcfFldFtn,
  FC_LCB.plcfFldHdr,
  FC_LCB.plcfFldMcr,
  FC_LCB.plcfFldAtn,
  FC_LCB.plcfFldEdn,
  FC_LCB.plcfFldTxbx,
  FC_LCB.plcfFldHdrTxbx,
] as const;

/** A run of text: CPs `[cpStart, cpEnd)` stored from `offset` in the WordDocument stream. */
interface Piece {
  readonly cpStart: number;
  readonly cpEnd: number;
  readonly offset: number;
  readonly compressed: boolean;
}

interface Field {
  endCp: number | undefined;
  inInstruction: boolean;
  instruction: string;
  /** Stream offsets of the instruction's own characters, and whether each is 16-bit. */
  readonly positions: number[];
  readonly wide: boolean[];
  /** Fields begun inside this field's instruction. */
  readonly nested: Field[];
}

/** What {@link neutraliseFields} did. */
export interface FieldReport {
  /** The finding of each field neutralised, outermost fields only. */
  readonly removed: readonly FindingKind[];
}

/**
 * Finds every field in the document's text ([MS-DOC] 2.8.25: 0x13 instruction 0x14 result 0x15,
 * nested) through the piece table, and judges each instruction with the rules OOXML fields are
 * judged by ({@link classifyField}). A refused field keeps its result text; its instruction
 * characters become spaces and its PlcFld end mark is locked ([MS-DOC] 2.9.91 fLocked), so an
 * update has nothing to fetch or run, and every field nested in its instruction is neutralised
 * with it. The begin mark keeps its field type (flt): LibreOffice shows the result of a field
 * whose type it knows, and drops it for flt 0x01 ("unable to be parsed"). A nested field that
 * leaves text in an instruction counts as part of the keyword, so a keyword assembled by nested
 * fields is refused. An EMBED field is refused as an `embedded-object`: its result, the object's
 * preview picture, stays.
 * Characters are overwritten in place rather than removed: removing them would move every
 * character position that the formatting, bookmark and sub-document tables hold.
 * @param word the WordDocument stream, changed in place when `apply`.
 * @param table the table stream, changed in place when `apply`.
 * @throws {Rejection} `invalid_file` for a piece table that does not fit its streams;
 *   `policy_violation` past {@link MAX_WORD_FIELD_DEPTH}.
 */
export function neutraliseFields(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  what: string,
  apply: boolean,
): FieldReport {
  const pieces = readPieces(word, table, fib, what);
  const removed: FindingKind[] = [];
  const neutralised: Field[] = [];
  const open: Field[] = [];
  const close = (field: Field): void => {
    const verdict = EMBED_FIELD.test(field.instruction)
      ? 'embedded-object'
      : classifyField(field.instruction);
    if (verdict !== undefined) {
      removed.push(verdict);
      neutralised.push(field);
    }
    const parent = open.at(-1);
    // A nested field that was or now is blank leaves nothing in its parent's instruction.
    if (parent?.instruction.endsWith(NESTED_MARK) === true && isBlank(field, verdict)) {
      parent.instruction = parent.instruction.slice(0, -1);
    }
  };
  for (const piece of pieces) {
    const step = piece.compressed ? 1 : 2;
    const end = piece.offset + (piece.cpEnd - piece.cpStart) * step;
    for (let offset = piece.offset; offset < end; offset += step) {
      // Outside every field only a begin mark counts: the text up to it is skipped at once.
      if (open.length === 0) offset = nextFieldBegin(word, offset, end, step);
      if (offset >= end) break;
      const char = piece.compressed ? (word[offset] ?? 0) : u16le(word, offset);
      const top = open.at(-1);
      if (char === FIELD_BEGIN) {
        if (open.length >= MAX_WORD_FIELD_DEPTH) {
          throw new Rejection(
            'policy_violation',
            `${what} nests fields more than ${MAX_WORD_FIELD_DEPTH} deep`,
          );
        }
        const field: Field = {
          endCp: undefined,
          inInstruction: true,
          instruction: '',
          positions: [],
          wide: [],
          nested: [],
        };
        if (top?.inInstruction === true) {
          top.nested.push(field);
          top.instruction += NESTED_MARK;
        }
        open.push(field);
      } else if (char === FIELD_SEPARATOR) {
        if (top) top.inInstruction = false;
      } else if (char === FIELD_END) {
        const field = open.pop();
        if (field) {
          field.endCp = piece.cpStart + (offset - piece.offset) / step;
          close(field);
        }
      } else if (top?.inInstruction === true) {
        top.positions.push(offset);
        top.wide.push(!piece.compressed);
        if (top.instruction.length < MAX_INSTRUCTION_CHARS) {
          top.instruction += String.fromCharCode(char);
        }
      }
    }
  }
  // Fields never closed are judged on what their instruction holds.
  while (open.length > 0) {
    const field = open.pop();
    if (field) close(field);
  }
  if (apply && neutralised.length > 0) {
    const ends = new Set<number>();
    const blank = (field: Field): void => {
      field.positions.forEach((offset, i) => {
        word[offset] = 0x20;
        if (field.wide[i] === true) word[offset + 1] = 0;
      });
      if (field.endCp !== undefined) ends.add(field.endCp);
      field.nested.forEach(blank);
    };
    neutralised.forEach(blank);
    lockFields(table, word, fib, ends);
  }
  return { removed };
}

/**
 * The offset of the first field begin mark (0x13) from `from` to `end` of a piece of 8-bit
 * (`step` 1) or UTF-16LE (`step` 2) text, or `end`.
 */
function nextFieldBegin(word: Uint8Array, from: number, end: number, step: number): number {
  const text = word.subarray(from, end);
  for (let at = text.indexOf(FIELD_BEGIN); at !== -1; at = text.indexOf(FIELD_BEGIN, at + 1)) {
    if (step === 1 || (at % 2 === 0 && text[at + 1] === 0)) return from + at;
  }
  return end;
}

/** A field leaves nothing in its parent's instruction once its own instruction is blank. */
function isBlank(field: Field, verdict: FindingKind | undefined): boolean {
  return verdict !== undefined || field.instruction.trim() === '';
}

/** Locks neutralised fields at their PlcFld end marks, in every sub-document. */
function lockFields(
  table: Uint8Array,
  word: Uint8Array,
  fib: Fib,
  ends: ReadonlySet<number>,
): void {
  let base = 0;
  FIELD_PLCS.forEach((plc, document) => {
    const { fc, lcb } = fcLcb(word, fib, plc);
    // [MS-DOC] 2.8.25 PlcFld: n + 1 CPs, then n two-byte Fld.
    const count = lcb >= 10 && (lcb - 4) % 6 === 0 ? (lcb - 4) / 6 : 0;
    if (count > 0 && fc + lcb <= table.length) {
      for (let i = 0; i < count; i += 1) {
        const cp = base + u32le(table, fc + i * 4);
        const fld = fc + (count + 1) * 4 + i * 2;
        const ch = (table[fld] ?? 0) & 0x1f;
        if (ch === FIELD_END && ends.has(cp)) {
          const flags = table[fld + 1] ?? 0;
          table[fld + 1] = (flags | GRFFLD_LOCKED) & ~(GRFFLD_ZOMBIE_EMBED | GRFFLD_RESULT_DIRTY);
        }
      }
    }
    base += fib.ccp[document] ?? 0;
  });
}

/** [MS-DOC] 2.9.38 Clx: skips the Prcs and reads the PlcPcd of the Pcdt. */
function readPieces(word: Uint8Array, table: Uint8Array, fib: Fib, what: string): Piece[] {
  const invalid = (fault: string): never => {
    throw new Rejection('invalid_file', `${what} is not a readable Word document: ${fault}`);
  };
  const { fc, lcb } = fcLcb(word, fib, FC_LCB.clx);
  if (lcb === 0 || fc + lcb > table.length)
    invalid('its piece table (Clx) is outside the table stream');
  const end = fc + lcb;
  let offset = fc;
  while (offset < end && table[offset] === CLX_PRC) {
    const size = u16le(table, offset + 1);
    // [MS-DOC] 2.9.209 Prc: cbGrpprl is a signed 16-bit size of at most 0x3FA2.
    if (size > 0x3fa2) invalid('a formatting run in its piece table is too long');
    offset += 3 + size;
  }
  if (offset + 5 > end || table[offset] !== CLX_PCDT) invalid('its piece table has no Pcdt');
  const plcBytes = u32le(table, offset + 1);
  const plc = offset + 5;
  if (plc + plcBytes > end || plcBytes < 4 + 4 + PCD_BYTES || (plcBytes - 4) % 12 !== 0) {
    invalid('its piece table size does not fit');
  }
  const count = (plcBytes - 4) / 12;
  const pieces: Piece[] = [];
  for (let i = 0; i < count; i += 1) {
    const cpStart = u32le(table, plc + i * 4);
    const cpEnd = u32le(table, plc + (i + 1) * 4);
    const pcd = plc + (count + 1) * 4 + i * PCD_BYTES;
    const raw = u32le(table, pcd + 2);
    const compressed = (raw & FC_COMPRESSED) !== 0;
    const start = compressed ? (raw & FC_MASK) / 2 : raw & FC_MASK;
    const length = (cpEnd - cpStart) * (compressed ? 1 : 2);
    if (cpEnd < cpStart || (i > 0 && cpStart !== pieces[i - 1]?.cpEnd)) {
      invalid('the character positions of its piece table do not follow one another');
    }
    if (!Number.isInteger(start) || start + length > word.length) {
      invalid('a piece of its text lies outside the WordDocument stream');
    }
    pieces.push({ cpStart, cpEnd, offset: start, compressed });
  }
  return pieces;
}
